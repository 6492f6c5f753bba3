"""TopoOpt's flow-level re-check on a small job: the record, its speedups and files."""

from __future__ import annotations

import json

import pytest

from topocoll.studies.topoopt_flow import run_flow_study, write_flow


def test_flow_study_small(tmp_path):
    res = run_flow_study((("dlrm", 4, 25),), servers=16, steps=40, hash_seeds=(0, 1))
    (p,) = res["points"]
    assert res["setup"] == {"points": [["dlrm", 4, 25]], "hash_seeds": [0, 1]}
    for key in ("topoopt", "fattree", "fattree_2to1", "fattree_2to1_even"):
        f = p[key]
        assert len(f["hashed_s"]) == 2
        # flow level never beats the fluid model
        assert f["split_s"] >= f["fluid_s"] * (1 - 1e-9)
        assert min(f["hashed_s"]) >= f["fluid_s"] * (1 - 1e-9)
        for v in f["phases"].values():
            assert v["split_ratio"] >= 1 - 1e-9 and min(v["hashed_ratio"]) >= 1 - 1e-9
    sp = p["fattree_speedup"]
    assert sp["fluid"] == pytest.approx(p["fattree"]["fluid_s"] / p["topoopt"]["fluid_s"])
    assert sp["hashed"][1] == pytest.approx(p["fattree"]["hashed_s"][1]
                                            / p["topoopt"]["hashed_s"][1])
    pj, pm = write_flow(tmp_path, res)
    assert json.loads(pj.read_text())["points"][0]["model"] == "dlrm"
    assert "| dlrm | 4 | 25 | topoopt |" in pm.read_text()
