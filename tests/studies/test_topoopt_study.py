"""The TopoOpt study on a small case: every design beside its cost-equivalent fat-trees
over seeds, the follow-ups (ablations, prices, split), the files written, and results that
do not depend on how many workers ran them."""

from __future__ import annotations

import json

import pytest

from topocoll.fabric import equivalent_fattree_bandwidth, topoopt_cost
from topocoll.studies.topoopt import budget, run_topoopt_study, write_topoopt_study


def _small(jobs):
    return run_topoopt_study(models=("dlrm", "resnet50"), degrees=(4,), gbps=(25, 100),
                             fattree_gbps=(25, 100), servers=16, seeds=(0, 1), steps=60,
                             price_parts=("nic", "switch_port"), price_factors=(2.0,),
                             jobs=jobs)


def test_small_study(tmp_path):
    res = _small(1)
    assert len(res["runs"]) == 8 and len(res["topoopt"]) == 4 and len(res["fattree"]) == 4
    for p in res["topoopt"]:
        assert p["cost_usd"] == topoopt_cost(16, 4, p["gbps"] * 1e9 / 8)
        bft = equivalent_fattree_bandwidth(16, p["cost_usd"])
        assert p["fattree_gbps"] == pytest.approx(bft * 8 / 1e9)
        runs = [r for r in res["runs"] if (r["model"], r["gbps"]) == (p["model"], p["gbps"])]
        sp = sorted(r["fattree_iteration_s"] / r["iteration_s"] for r in runs)
        assert p["speedup"]["min"] == sp[0] and p["speedup"]["max"] == sp[-1]
        assert p["seeds"] == 2
    # a faster fat-tree is never slower
    ft = [c for c in res["fattree"] if c["model"] == "dlrm"]
    assert ft[1]["iteration_s"] <= ft[0]["iteration_s"]
    assert {s["split"] for s in res["split"]} == {"best", "proportional", "all-reduce"}
    assert {(a["model"], a["variant"]) for a in res["ablation"]} == {
        (m, v) for m in ("dlrm", "resnet50") for v in ("no pipeline", "no overlap")}
    assert all(a["strategy"]["pipeline"] == 1 for a in res["ablation"]
               if a["variant"] == "no pipeline")
    # dearer switch ports: the same money buys a slower fat-tree, TopoOpt gains
    for m in ("dlrm", "resnet50"):
        pr = {p["part"]: p for p in res["prices"] if p["model"] == m}
        head = next(p for p in res["topoopt"] if p["model"] == m and p["gbps"] ==
                    res["max_speedup"][m]["gbps"])
        assert pr["switch_port"]["fattree_gbps"] < head["fattree_gbps"]
        assert pr["nic"]["cost_usd"] > head["cost_usd"]
    assert budget("ncf") == 8000 and budget("dlrm") == 4000
    paths = write_topoopt_study(tmp_path, res)
    assert json.loads(paths[0].read_text())["setup"]["servers"] == 16
    assert "Speedup at equal cost" in paths[1].read_text()
    assert paths[2].stat().st_size > 10_000
    assert _small(2) == res                          # workers change nothing
