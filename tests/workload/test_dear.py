"""DeAR: the data-parallel all-reduce split into a reduce-scatter hidden by the backward
and an all-gather hidden by the next forward."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.topology.spec import parse_spec
from topocoll.workload import find_device, parse_model, parse_parallel, simulate_iteration

MODEL = parse_model("transformer:hidden=2048,ffn=8192,heads=16,layers=8,seq=1024,vocab=32000")
DEV = find_device("a100-80g")
PAR = parse_parallel("tp=1,pp=1,dp=32,mb=1,gb=32")


def _run(top, **kw):
    return simulate_iteration(MODEL, PAR, parse_spec(top), DEV, algorithms=["ring", "direct"],
                              **kw)


def test_dear_hides_the_allgather_behind_the_forward():
    slow = "hier:fc(8,100GB/s)x switch(4,2GB/s)"
    bucket, dear, none = _run(slow), _run(slow, dear=True), _run(slow, overlap_dp=False)
    t_ar = bucket.collectives["dp allreduce stage 0"]["time_s"]
    t_rs = dear.collectives["dp reduce_scatter stage 0"]["time_s"]
    t_ag = dear.collectives["dp allgather stage 0"]["time_s"]
    assert t_rs + t_ag == pytest.approx(t_ar, rel=1e-9)       # ring: RS + AG = AR
    ex = {k: r.breakdown["dp_exposed_s"] for k, r in
          (("bucket", bucket), ("dear", dear), ("none", none))}
    assert ex["none"] == pytest.approx(t_ar)
    # communication-bound: bucketing hides the backward, DeAR also the forward
    fwd = (ex["bucket"] - ex["dear"])
    assert ex["dear"] < ex["bucket"] < ex["none"]
    assert fwd == pytest.approx((none.compute_s - none.breakdown["optimizer_s"]) / 3, rel=1e-6)
    assert dear.iteration_s == pytest.approx(bucket.iteration_s - fwd, rel=1e-9)


def test_dear_equals_bucketing_when_compute_covers_the_reduction():
    fast = "hier:fc(8,300GB/s)x switch(4,300GB/s)"
    b, d = _run(fast), _run(fast, dear=True)
    # both expose only their last bucket(s): 25 MB of the 2-byte gradients
    assert d.breakdown["dp_exposed_s"] == pytest.approx(b.breakdown["dp_exposed_s"], rel=1e-9)


def test_dear_on_the_command_line():
    r = CliRunner().invoke(app, ["train", "-m", "llama2-7b", "-t", "dgx-a100:1",
                                 "-p", "tp=8,dp=1", "--dear", "--no-overlap"])
    assert r.exit_code == 2 and "--dear" in r.output
