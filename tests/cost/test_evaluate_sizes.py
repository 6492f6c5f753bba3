"""AlphaBeta.evaluate_sizes agrees with evaluate at every size, on every evaluation path."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.cost import AlphaBeta
from topocoll.cost import alphabeta as ab
from topocoll.synth import (
    bucket_allreduce,
    direct_alltoall,
    rabenseifner_allreduce,
    ring_allreduce,
    swing_allreduce,
)
from topocoll.topology.spec import parse_spec

SIZES = [0.0, 32.0, 1000.0, 2.0**20, 3.0e8]


def _same(schedule, topo, model):
    many = model.evaluate_sizes(schedule, topo, SIZES)
    for r, n in zip(many, SIZES, strict=True):
        one = model.evaluate(schedule, topo, n)
        assert r.time == pytest.approx(one.time, rel=1e-12, abs=1e-18)
        assert np.allclose(r.step_times, one.step_times, rtol=1e-12, atol=1e-18)
        assert np.allclose(r.link_load, one.link_load, rtol=1e-12)
        assert r.bound == pytest.approx(one.bound)
        assert r.message_bytes == n


@pytest.mark.parametrize("spec", ["torus:4x4,routing=spray", "torus:3x5", "ring:9",
                                  "fattree:k=4,routing=ecmp", "hier:fc(4)x fc(3)"])
def test_matches_evaluate(spec):
    topo = parse_spec(spec)
    for fn in (swing_allreduce, ring_allreduce, rabenseifner_allreduce):
        _same(fn(topo), topo, AlphaBeta(alpha=2e-7))
    if topo.dims:
        _same(bucket_allreduce(topo), topo, AlphaBeta())


def test_matches_evaluate_on_big_steps(monkeypatch):
    # force the path for a step with more transfers than one batch
    monkeypatch.setattr(ab, "TRANSFERS_PER_BATCH", 7)
    topo = parse_spec("torus:3x3,routing=spray")
    _same(direct_alltoall(topo), topo, AlphaBeta(alpha=1e-7))
    _same(swing_allreduce(topo), topo, AlphaBeta())


def test_pareto_keeps_the_envelope():
    # segment 0: (0.4, 1.5) is dominated by (0.5, 2.0); segment 1: (0, 0.05) by (0, 0.1)
    lat = np.array([1.0, 2.0, 0.5, 3.0, 0.4, 0.0, 5.0, 0.0])
    slope = np.array([1.0, 0.5, 2.0, 0.1, 1.5, 0.1, 0.0, 0.05])
    ptr = np.array([0, 5, 8])
    cbs = np.array([0.0, 1.0, 10.0, 100.0])
    env = ab._envelope(lat, slope, ptr, cbs)
    brute = np.array([[max(lat[i] + c * slope[i] for i in range(a, b)) for c in cbs]
                      for a, b in ((0, 5), (5, 8))])
    assert np.array_equal(env, brute)
    klat, kslope, kptr = ab._pareto(lat, slope, ptr)
    assert kptr.tolist() == [0, 4, 6]
    assert (0.4, 1.5) not in set(zip(klat.tolist(), kslope.tolist(), strict=True))


def test_rejects_bad_sizes():
    topo = parse_spec("ring:4")
    with pytest.raises(ValueError, match="message_bytes"):
        AlphaBeta().evaluate_sizes(ring_allreduce(topo), topo, [1.0, -2.0])
