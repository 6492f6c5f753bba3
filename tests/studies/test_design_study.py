"""The design study's pieces that run in seconds: rail-only's saving by cluster size
follows the tiers it saves, and the writer's tables from a small run."""

from __future__ import annotations

from topocoll.studies.design import rail_only_savings, run_design_study, write_design_study


def test_rail_only_saves_exactly_where_it_saves_a_tier():
    for x in rail_only_savings(gpus=(1024, 4096, 32768)):
        if x["rail_only_tiers"] < x["rail_tiers"]:
            assert 0 < x["cost_saving"] < x["scaleout_saving"] < 1
            assert x["power_saving"] > 0
        else:
            assert abs(x["cost_saving"]) < 1e-12


def test_a_small_study_writes_its_tables(tmp_path):
    small = "transformer:hidden=2048,ffn=8192,heads=16,layers=8,seq=2048,vocab=32000"
    res = run_design_study([("tiny", small, "dgx-h100", 2, (32,), True)], target_gpus=32)
    (rec,) = res["jobs"]
    assert {"equal_cost", "same_rate", "same_time"} <= set(rec)
    paths = write_design_study(tmp_path, res)
    text = (tmp_path / "design-results.md").read_text()
    assert "Least cost for the reference's iteration time" in text
    assert "the spine removed" in text and "Rail-only against rail-optimized" in text
    assert any(p.name == "design-results.json" for p in paths)
