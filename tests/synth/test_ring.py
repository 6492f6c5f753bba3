"""Ring and bidirectional ring: correctness for every p, step counts, per-rank bytes,
ring order and subgroups."""

from __future__ import annotations

import numpy as np
import pytest
from _refcheck import assert_correct, sent

from topocoll.errors import TopologyError
from topocoll.selection import ALGORITHMS, find_algorithm
from topocoll.synth import (
    bidirectional_ring_allgather,
    bidirectional_ring_allreduce,
    bidirectional_ring_reduce_scatter,
    ring_allgather,
    ring_allreduce,
    ring_reduce_scatter,
)
from topocoll.topology import ring

UNI = (ring_allgather, ring_reduce_scatter, ring_allreduce)
BI = (bidirectional_ring_allgather, bidirectional_ring_reduce_scatter,
      bidirectional_ring_allreduce)
ALL = UNI + BI


def _passes(func) -> int:
    return 2 if func in (ring_allreduce, bidirectional_ring_allreduce) else 1


@pytest.mark.parametrize("func", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("p", list(range(2, 41)) + [64])
def test_correct_and_formulas(func, p):
    t = ring(p)
    s = func(t)
    assert_correct(s, t)
    k = _passes(func)
    assert s.num_steps == k * (p - 1)
    np.testing.assert_allclose(sent(s, p), k * (p - 1) / p)
    halves = 2 if func in BI else 1
    assert s.collective.num_chunks == p * halves
    assert all(len(step) == p * halves for step in s.steps)


@pytest.mark.parametrize("func", ALL, ids=lambda f: f.__name__)
def test_neighbours_only(func):
    p = 9
    s = func(ring(p))
    for step in s.steps:
        assert all((t.dst - t.src) % p in ((1,) if func in UNI else (1, p - 1)) for t in step)


@pytest.mark.parametrize("func", ALL, ids=lambda f: f.__name__)
def test_order_and_subgroups(func):
    t = ring(12)
    group = [9, 4, 0, 7, 2]
    order = [0, 2, 4, 7, 9]
    s = func(t, ranks=group, order=order)
    assert s.collective.ranks == tuple(group)
    assert_correct(s, t)
    if func in UNI:
        pairs = {(x.src, x.dst) for st in s.steps for x in st}
        assert pairs == {(order[i], order[(i + 1) % 5]) for i in range(5)}
    assert func(t, ranks=[6]).num_steps == 0
    with pytest.raises(TopologyError):
        func(t, ranks=group, order=[0, 2, 4, 7, 8])


def test_registry_lists_every_ring():
    names = {(s.name, s.kind) for s in ALGORITHMS}
    for name in ("ring", "bidirectional_ring"):
        for kind in ("allgather", "reduce_scatter", "allreduce"):
            assert (name, kind) in names
            assert_correct(find_algorithm(name, kind)(ring(6)), ring(6))


# ---- variant="halfway": whole blocks half way round each direction
@pytest.mark.parametrize("func", BI, ids=lambda f: f.__name__)
@pytest.mark.parametrize("p", range(1, 10))
def test_halfway_correct_for_every_p(func, p):
    from topocoll.topology import star

    t = ring(p) if p > 1 else star(2)
    s = func(t, ranks=list(range(p)), variant="halfway")
    assert_correct(s)
    assert s.num_steps == _passes(func) * (p // 2)
    assert s.meta["variant"] == "halfway"


@pytest.mark.parametrize("p", [5, 6, 9, 16])
def test_halfway_moves_the_same_bytes_per_link_as_halves(p):
    from topocoll.cost.kernel import step_loads

    t = ring(p)
    for func in BI:
        a = step_loads(func(t, variant="halves"), t, 1.0)[0].sum(axis=0)
        b = step_loads(func(t, variant="halfway"), t, 1.0)[0].sum(axis=0)
        assert np.allclose(a, b) and np.allclose(a, a.max())   # every link equally


def test_halfway_halves_the_latency_terms_on_a_long_ring():
    from topocoll.collective import make_collective
    from topocoll.cost import AlphaBeta
    from topocoll.optimum.cuts import cut_bound

    t = ring(128)                                   # 50 GB/s, 1 us links
    M = 2.0**30
    bound = cut_bound(make_collective("allgather", tuple(range(128))), t, M,
                      method="exact").time
    ratio = {v: AlphaBeta(bound=False).evaluate(bidirectional_ring_allgather(t, variant=v),
                                                t, M).time / bound
             for v in ("halves", "halfway")}
    assert ratio["halfway"] == pytest.approx(1 + 64e-6 / bound, rel=1e-9)   # 64 hops of 1 us
    assert ratio["halves"] == pytest.approx(1 + 127e-6 / bound, rel=1e-9)
    s = find_algorithm("optimal", "allgather")(t)             # the default takes it
    assert s.meta["pipeline"] == "halfway_ring"


def test_bad_variant_names_the_field():
    from topocoll.errors import NotSupportedError

    with pytest.raises(NotSupportedError, match="variant"):
        bidirectional_ring_allgather(ring(4), variant="half")
