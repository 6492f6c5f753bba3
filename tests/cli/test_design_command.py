"""``topocoll design``: the table, --json with a designs list, one-line errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topocoll.cli import app

runner = CliRunner()
SMALL = "transformer:hidden=2048,ffn=8192,heads=16,layers=8,seq=2048,vocab=32000"
BASE = ("design", "-m", SMALL, "--gpus", "32", "--global-batch", "64", "--no-bounds",
        "--no-recheck")


def run(*args, code=0):
    r = runner.invoke(app, list(args))
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    return r


def test_json_has_a_design_per_family_at_the_budget():
    d = json.loads(run(*BASE, "--budget", "$400k", "--json").stdout)
    assert d["mode"] == "budget" and d["budget_usd"] == 4e5
    fams = [x["family"] for x in d["designs"]]
    assert fams == ["fat-tree", "rail", "rail-only", "torus", "topoopt", "libra"]
    for x in d["designs"]:
        assert x["feasible"] and abs(x["cost_usd"] - 4e5) <= 0.02 * 4e5
        assert x["iteration_s"] > 0 and x["power_w"] > 0 and x["parallel"]
        assert {"part", "count", "usd_each", "watts_each"} <= set(x["bill"][0])
    assert d["winner"]["family"] in fams


def test_table_names_the_reference_and_the_best():
    r = run(*BASE, "--families", "rail,rail-only")
    assert "equal cost to dgx-h100" in r.stdout and "best:" in r.stdout


def test_prices_file_changes_the_bill(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("switch_port: {usd: {400: 2800}, source: a quote}\n")
    cheap = json.loads(run(*BASE, "--families", "rail", "--budget", "1e6", "--json").stdout)
    dear = json.loads(run(*BASE, "--families", "rail", "--budget", "1e6", "--prices", str(f),
                          "--json").stdout)
    assert dear["designs"][0]["rate_gbps"] < cheap["designs"][0]["rate_gbps"]


@pytest.mark.parametrize("args, item", [
    (("--families", "rail,dragonfly"), "dragonfly"),
    (("--budget", "1000"), "--budget"),
    (("--budget", "lots"), "--budget"),
    (("--time-target", "soon"), "--time-target"),
    (("--box", "dgx-h900"), "dgx-h900"),
    (("--oversubscription", "1,x"), "--oversubscription"),
])
def test_bad_inputs_are_one_line(args, item):
    r = run(*BASE, *args, code=2)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and item in lines[0] and "Traceback" not in r.stderr


def test_a_missing_price_is_one_line(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("ocs_port: null\n")
    r = run(*BASE, "--prices", str(f), code=2)
    assert "ocs_port" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_the_winner_is_rechecked_at_flow_level():
    d = json.loads(run("design", "-m", SMALL, "--gpus", "32", "--global-batch", "64",
                       "--families", "rail,topoopt", "--json").stdout)
    win = next(x for x in d["designs"] if x["family"] == d["winner"]["family"])
    rc = win["recheck"]
    assert rc["backend"] == "flow" and rc["iteration_s"] > 0
    assert rc["difference"] == pytest.approx(rc["iteration_s"] / win["iteration_s"] - 1)
    assert all(x["recheck"] is None for x in d["designs"] if x is not win)
    assert win["bound"]["fraction_of_bound"] > 0
