"""The sweep report in a real browser (Debian's Chromium driven by Playwright): no console
errors, every figure decoded and drawn, the tables sort, and a screenshot is saved."""

from __future__ import annotations

import shutil

import pytest

from topocoll.cli.runner import run_argv
from topocoll.sweep import SweepStore, parse_sweep, run_sweep, write_report

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                                          "(make test installs it)")


def test_report_renders_in_chromium(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE", str(tmp_path / "cache"))
    spec = parse_sweep({"command": "compare",
                        "grid": {"topology": ["ring:8", "torus:2x4"],
                                 "algorithm": ["ring", "recursive_doubling", "direct"],
                                 "size": ["1KiB", "64KiB", "1MiB", "16MiB"]},
                        "fixed": {"collective": "allreduce"}})
    store = SweepStore(tmp_path / "s.duckdb")
    run_sweep(spec, store, run_argv, workers=1)
    page_file = tmp_path / "report.html"
    write_report(store, page_file)
    store.close()
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
            assert len(imgs) >= 2
            assert all(c and w > 100 and shown > 100 for c, w, shown in imgs), imgs
            # sort the first sortable table by its first numeric column, both ways
            col = page.evaluate("""() => {
                const t = document.querySelector('table.sortable');
                const heads = Array.from(t.tHead.rows[0].cells);
                return heads.findIndex((h, i) => Array.from(t.tBodies[0].rows).every(
                    r => !isNaN(parseFloat(r.cells[i].dataset.v))));
            }""")
            assert col >= 0
            head = page.locator("table.sortable").first.locator("th").nth(col)
            values = ("() => Array.from(document.querySelector('table.sortable').tBodies[0]"
                      f".rows).map(r => parseFloat(r.cells[{col}].dataset.v))")
            head.click()
            up = page.evaluate(values)
            head.click()
            down = page.evaluate(values)
            assert up == sorted(up) and down == sorted(up, reverse=True) and len(up) > 1
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert shot.stat().st_size > 20_000
