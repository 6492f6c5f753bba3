"""topology_adaptive allreduce (exact and multiplicative-weights forests) and best_ring."""

from __future__ import annotations

import pytest

from topocoll.cost import AlphaBeta
from topocoll.errors import NotSupportedError
from topocoll.optimum.bounds import lower_bound
from topocoll.synth.adaptive import mwu_gap, mwu_packing, topology_adaptive_allreduce
from topocoll.synth.forest import optimal_allreduce
from topocoll.synth.ring import bidirectional_ring_allreduce
from topocoll.synth.ring_order import (
    best_ring_allgather,
    best_ring_allreduce,
    best_ring_order,
    best_ring_reduce_scatter,
    hop_bandwidth,
)
from topocoll.topology import parse_spec, ring
from topocoll.verification import verify

M = 2.0**30


@pytest.mark.parametrize("spec", ["ring:6", "dgx:2,gpus=4", "random:8,spread=30,seed=2",
                                  "twotier:racks=2,hosts=3,oversub=3"])
def test_exact_forests_verify_and_overlap_helps(spec):
    t = parse_spec(spec)
    s = topology_adaptive_allreduce(t, batches=8, partition="fixed")
    assert s.meta["forests"] == "exact" and verify(s, t).ok
    seq = optimal_allreduce(t, batches=8)
    model = AlphaBeta(bound=False)
    # overlapping the two pipelines never costs more than running them back to back
    assert model.evaluate(s, t, M).time <= model.evaluate(seq, t, M).time * (1 + 1e-9)


def test_mwu_fallback_on_contended_switches_reports_gap():
    t = parse_spec("twotier:racks=3,hosts=2,oversub=2,contention=0.5,keep=0.25,seed=1")
    s = topology_adaptive_allreduce(t, batches=4, partition="fixed")
    assert s.meta["forests"] == "mwu"
    assert verify(s, t).ok
    g1, g2 = float(s.meta["gap_allgather"]), float(s.meta["gap_reduce_scatter"])
    assert 1 - 1e-9 <= g1 < 3 and 1 - 1e-9 <= g2 < 3
    r = AlphaBeta().evaluate(s, t, M)
    assert r.time >= lower_bound(s.collective, t, M).time * (1 - 1e-9)


def test_mwu_is_near_optimal_where_the_exact_packing_exists():
    t = ring(6, bandwidth=1e9)
    p = mwu_packing(t, rounds=24)
    assert 1 - 1e-9 <= mwu_gap(t, p) <= 1.25
    forced = topology_adaptive_allreduce(t, batches=2, method="mwu", partition="fixed")
    assert forced.meta["forests"] == "mwu" and verify(forced, t).ok


def test_mwu_stops_at_a_certified_gap_and_survives_long_runs():
    t = ring(6, bandwidth=1e9)
    full = mwu_packing(t, rounds=96)
    early = mwu_packing(t, rounds=96, gap=1.01)
    assert full.per_root[0] == 96
    assert early.per_root[0] < 96 and mwu_gap(t, early) <= 1.01
    # lengths used to overflow to inf after a few hundred trees (networkx then raised a
    # bare Exception); log-domain lengths keep long runs exact
    s = parse_spec("star:6")
    assert 1 - 1e-9 <= mwu_gap(s, mwu_packing(s, rounds=400)) <= 1.01
    with pytest.raises(NotSupportedError, match="gap"):
        mwu_packing(t, gap=0.5)


def test_auto_partition_skips_the_lp_when_fixed_reaches_its_floor():
    for spec in ("torus:4x4", "fc:6", "hypercube:3"):
        s = topology_adaptive_allreduce(parse_spec(spec), batches=2)
        assert s.meta["partition"] == "fixed" and "fluid_free_s_per_B" not in s.meta
        assert float(s.meta["fluid_fixed_s_per_B"]) <= float(s.meta["free_floor_s_per_B"]) \
            * (1 + 1e-9)
    # a slow host makes the floor loose: the LP runs (and wins)
    from topocoll.topology.explicit import from_edges
    t = from_edges([(i, 4, b) for i, b in enumerate([1e9, 8e9, 8e9, 8e9])],
                   num_ranks=4, num_switches=1, bidirectional=True)
    s = topology_adaptive_allreduce(t, batches=2)
    assert s.meta["partition"] == "free" and "fluid_free_s_per_B" in s.meta


def test_best_ring_order_avoids_slow_cables():
    t = parse_spec("bimodal:10,frac=0.3,slow=1Gbps,seed=4")
    order = best_ring_order(t)
    assert sorted(order) == list(range(10)) and order[0] == 0
    W = hop_bandwidth(t, tuple(range(10)))
    worst = min(min(W[a, b], W[b, a]) for a, b in zip(order, order[1:] + order[:1], strict=True))
    naive = min(min(W[a, b], W[b, a]) for a, b in zip(range(10), [*range(1, 10), 0], strict=True))
    assert worst >= naive
    model = AlphaBeta(bound=False)
    best = model.evaluate(best_ring_allreduce(t), t, M).time
    plain = model.evaluate(bidirectional_ring_allreduce(t), t, M).time
    assert best <= plain and verify(best_ring_allreduce(t), t).ok
    for fn in (best_ring_allgather, best_ring_reduce_scatter):
        s = fn(t)
        assert s.meta["order"] == ",".join(map(str, order)) and verify(s, t).ok


def test_bad_method_is_reported():
    from topocoll.errors import NotSupportedError
    with pytest.raises(NotSupportedError, match="method"):
        topology_adaptive_allreduce(ring(4), method="magic")


def _complete(n: int, slow: dict, bw: float = 100e9 / 8):
    import itertools

    from topocoll.topology.explicit import from_edges

    return from_edges([(i, j, slow.get((min(i, j), max(i, j)), 1.0) * bw)
                       for i, j in itertools.permutations(range(n), 2)], num_ranks=n)


def test_float_noise_in_bandwidths_keeps_the_exact_forests_small():
    # 10% of 100 Gb/s computes as 1.2499999999999998e9 B/s; read exactly, the capacities
    # would be 17-digit integers and the forests' quantum ~1e16 chunks (a MemoryError)
    t = _complete(5, {(0, 1): 1 - 0.9, (2, 3): 1 - 0.9})
    assert t.links[0].bandwidth != 1.25e9
    s = topology_adaptive_allreduce(t, message_bytes=2.0 ** 20, partition="fixed")
    assert verify(s, t).ok and s.num_transfers < 10_000
    from topocoll.selection import find_algorithm
    ag = find_algorithm("optimal", "allgather")(t, message_bytes=2.0 ** 20)
    assert verify(ag, t).ok


def test_capacities_without_a_small_common_unit_are_refused_up_front():
    from topocoll.errors import OverBudgetError

    t = _complete(4, {(0, 1): 1 / 3})          # 1/3 read to 12 digits: no small unit
    with pytest.raises(OverBudgetError, match="chunks"):
        topology_adaptive_allreduce(t, message_bytes=2.0 ** 20, partition="fixed")
    s = topology_adaptive_allreduce(t, message_bytes=2.0 ** 20)     # auto: the free partitions
    assert s.meta["partition"] == "free" and verify(s, t).ok
