"""The TopoOpt study on a small case: every design beside its cost-equivalent fat-tree,
the split comparison, and the files written."""

from __future__ import annotations

import json

import pytest

from topocoll.fabric import equivalent_fattree_bandwidth, topoopt_cost
from topocoll.studies.topoopt import run_topoopt_study, write_topoopt_study


def test_small_study(tmp_path):
    res = run_topoopt_study(models=("dlrm", "resnet50"), degrees=(4,), gbps=(25, 100),
                            fattree_gbps=(25, 100), servers=16, rounds=1, steps=60)
    assert len(res["topoopt"]) == 4 and len(res["fattree"]) == 4
    for p in res["topoopt"]:
        assert p["cost_usd"] == topoopt_cost(16, 4, p["gbps"] * 1e9 / 8)
        bft = equivalent_fattree_bandwidth(16, p["cost_usd"])
        assert p["fattree_gbps"] == pytest.approx(bft * 8 / 1e9)
        assert p["speedup"] == p["fattree_iteration_s"] / p["iteration_s"]
    # a faster fat-tree is never slower
    ft = [c for c in res["fattree"] if c["model"] == "dlrm"]
    assert ft[1]["iteration_s"] <= ft[0]["iteration_s"]
    assert {s["split"] for s in res["split"]} == {"best", "proportional", "all-reduce"}
    best = next(s for s in res["split"] if s["split"] == "best")
    assert best["iteration_s"] <= min(s["iteration_s"] for s in res["split"]) * (1 + 1e-12)
    assert set(res["max_speedup"]) == {"dlrm", "resnet50"}
    paths = write_topoopt_study(tmp_path, res)
    assert json.loads(paths[0].read_text())["setup"]["servers"] == 16
    assert paths[1].stat().st_size > 10_000
