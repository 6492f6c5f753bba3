"""The ``topocoll design --report`` page in a real browser (Debian's Chromium driven by
Playwright): no console errors, the cost curve drawn, the tables sort."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.sweep import pareto_front

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                                          "(make test installs it)")
SMALL = "transformer:hidden=2048,ffn=8192,heads=16,layers=8,seq=2048,vocab=32000"


def test_pareto_front_keeps_what_nothing_beats():
    pts = [(3.0, 2.0), (1.0, 9.0), (2.0, 4.0), (2.5, 5.0), (4.0, 2.0)]
    assert pareto_front(pts) == [(1.0, 9.0), (2.0, 4.0), (3.0, 2.0)]


def test_design_report_renders_in_chromium(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE", str(tmp_path / "cache"))
    page_file = tmp_path / "design.html"
    r = CliRunner().invoke(app, ["design", "-m", SMALL, "--gpus", "32", "--global-batch",
                                 "64", "--families", "fat-tree,rail,topoopt", "--no-bounds",
                                 "--no-recheck", "--report", str(page_file), "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["report"] == str(page_file)
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.route("**/*", lambda r: r.abort() if not r.request.url.startswith(
                ("file:", "data:")) else r.continue_())          # no network
            page.goto(page_file.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=10_000)
            imgs = page.evaluate("Array.from(document.images).map(i => "
                                 "[i.complete, i.naturalWidth, i.getBoundingClientRect().width])")
            assert len(imgs) == 1 and imgs[0][0] and imgs[0][1] > 300, imgs
            # the curve table: 3 families x 5 budgets, sorted by cost both ways
            rows = page.evaluate("document.querySelectorAll('table.sortable')[1]"
                                 ".tBodies[0].rows.length")
            assert rows == 15
            head = page.locator("table.sortable").nth(1).locator("th", has_text="cost_usd")
            values = ("() => Array.from(document.querySelectorAll('table.sortable')[1]"
                      ".tBodies[0].rows).map(r => parseFloat(r.cells[5].dataset.v))")
            head.click()
            up = page.evaluate(values)
            head.click()
            down = page.evaluate(values)
            assert up == sorted(up) and down == sorted(up, reverse=True), (up, down)
        finally:
            browser.close()
    assert errors == []
