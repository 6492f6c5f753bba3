"""``topocoll demo``: the main job leads with which fabric to build, then the collectives."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.cli.demo import DEMO_DESIGN, DEMO_FABRICS


def test_demo_leads_with_the_design_then_the_collectives(tmp_path):
    report = tmp_path / "r.md"
    r = CliRunner().invoke(app, ["demo", "-o", str(report), "--json"])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    design = d["design"]
    assert design["gpus"] == DEMO_DESIGN["gpus"] and design["mode"] == "equal-cost"
    fams = {x["family"] for x in design["designs"]}
    assert fams == {"fat-tree", "rail", "rail-only", "torus", "topoopt", "libra"}
    ref = design["reference"]["cost_usd"]
    assert all(abs(x["cost_usd"] - ref) <= 0.02 * ref for x in design["designs"])
    assert len(d["collectives"]) == len(DEMO_FABRICS)
    text = report.read_text()
    first, second = text.index("## Which fabric for"), text.index("## allreduce on")
    assert first < second and "Best: **" in text
