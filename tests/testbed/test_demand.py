"""Traffic phases run for real on the emulated cluster, against the fluid prediction on the
same paths; and the TopoOpt prototype end to end at a small scale.

Needs root and iproute2; skipped otherwise. Timing targets live in the study
(``docs/studies/topoopt.md``); here only what physics guarantees is asserted: no phase
beats its busiest link's shaped rate."""

from __future__ import annotations

import itertools
import os
import shutil

import numpy as np
import pytest

from topocoll.testbed.demand import WIRE_OVERHEAD, path_loads, predict_phase, run_phases
from topocoll.testbed.netns import STATE_DIR, TestbedError, down, up
from topocoll.topology.spec import parse_spec

_NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                 reason="needs root and iproute2")

_COUNTER = itertools.count()


@pytest.fixture
def name():
    n = f"d{os.getpid()}{next(_COUNTER)}"[:12]
    yield n
    down(n)
    assert not list(STATE_DIR.glob(f"{n}.*"))


def test_prediction_on_the_testbeds_paths():
    topo = parse_spec("ring:4,bw=10Mbps,lat=0s")
    D = np.zeros((4, 4))
    D[0, 2] = 1e6                                    # two hops along one path
    loads = path_loads(topo, D)
    assert sorted(loads.values()) == [1e6, 1e6] and len(loads) == 2
    assert predict_phase(topo, D) == pytest.approx(1e6 * WIRE_OVERHEAD / (10e6 / 8))
    assert predict_phase(topo, np.zeros((4, 4))) == 0.0


@_NEEDS_ROOT
def test_phases_run_for_real(name):
    topo = parse_spec("ring:4,bw=40Mbps,lat=0s")
    tb = up(topo, name=name, delay="off")
    a = np.zeros((4, 4), dtype=np.int64)
    a[0, 1] = a[1, 0] = 1_500_000                    # both ways on one cable
    b = np.zeros((4, 4), dtype=np.int64)
    b[0, 2] = b[3, 1] = 1_000_000                    # two hops each
    times = run_phases(tb, [a, b, np.zeros((4, 4), dtype=np.int64)])
    assert len(times) == 3
    d = run_phases(tb, [b], detail=True)[0]
    assert 0 <= d["first_byte_s"] <= d["s"] == max(d["ends_s"]) and len(d["ends_s"]) == 4
    for t, M in zip(times, (a, b), strict=False):
        assert t >= 0.95 * predict_phase(topo, M), (t, predict_phase(topo, M))
    with pytest.raises(TestbedError, match="phase 0"):
        run_phases(tb, [np.ones((3, 3))])


@_NEEDS_ROOT
def test_prototype_end_to_end_small(name):
    from topocoll.studies.topoopt_prototype import run_prototype

    r = run_prototype(name=name, repeats=1, target_s=0.5)
    assert [p["phase"] for p in r["phases"]] == ["embedding", "tensor", "allreduce"]
    assert r["matchings"] and r["jumps"]             # both kinds of port carry traffic
    for p in r["phases"]:
        assert p["measured_s"][0] >= 0.95 * p["predicted_s"]
    assert r["measured_total_s"] > 0 and np.isfinite(r["error"])


def test_maxmin_is_never_below_the_fluid_time():
    from topocoll.testbed.demand import maxmin_phase

    topo = parse_spec("ring:4,bw=10Mbps,lat=0s")
    D = np.zeros((4, 4))
    D[0, 1], D[3, 1] = 2e6, 1e6          # two flows into rank 1 on different links
    assert maxmin_phase(topo, D) == pytest.approx(predict_phase(topo, D))
    rng = np.random.default_rng(7)
    topo = parse_spec("torus:3x3,bw=10Mbps,lat=0s")
    for _ in range(5):
        D = rng.random((9, 9)) * (rng.random((9, 9)) < 0.4) * 1e6
        np.fill_diagonal(D, 0)
        assert maxmin_phase(topo, D) >= predict_phase(topo, D) * (1 - 1e-9)
    assert maxmin_phase(topo, np.zeros((9, 9))) == 0.0
