"""Ring and bidirectional ring: correctness for every p, step counts, per-rank bytes,
ring order and subgroups."""

from __future__ import annotations

import numpy as np
import pytest
from _refcheck import assert_correct, sent

from topocoll.errors import TopologyError
from topocoll.synth import (
    SYNTHESIZERS,
    bidirectional_ring_allgather,
    bidirectional_ring_allreduce,
    bidirectional_ring_reduce_scatter,
    find_synthesizer,
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
    names = {(s.name, s.kind) for s in SYNTHESIZERS}
    for name in ("ring", "bidirectional_ring"):
        for kind in ("allgather", "reduce_scatter", "allreduce"):
            assert (name, kind) in names
            assert_correct(find_synthesizer(name, kind)(ring(6)), ring(6))
