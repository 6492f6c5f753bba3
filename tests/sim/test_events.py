"""The event core: ordering, deterministic ties, run(until), misuse."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topocoll.sim.events import EventQueue, heap_pop, heap_push, new_heap


def test_pops_in_time_order_with_ties_in_push_order():
    q = EventQueue(capacity=2)          # forces growth
    rng = np.random.default_rng(0)
    times = rng.integers(0, 5, size=200).astype(float)
    for k, t in enumerate(times):
        q.push(t, k)
    got = [q.pop() for _ in range(len(q))]
    expected = sorted(((t, k) for k, t in enumerate(times)), key=lambda x: (x[0], x[1]))
    assert got == expected


def test_compiled_heap_matches_sorting_with_counter():
    ht, hs, hk = new_heap(64)
    size = 0
    events = [(1.0, 9), (0.5, 3), (1.0, 4), (0.5, 8), (2.0, 1)]
    for seq, (t, k) in enumerate(events):
        size = heap_push(ht, hs, hk, size, t, seq, k)
    out = []
    while size:
        t, k, size = heap_pop(ht, hs, hk, size)
        out.append((t, k))
    assert out == [(0.5, 3), (0.5, 8), (1.0, 9), (1.0, 4), (2.0, 1)]


def test_run_until_stops_and_advances_clock():
    q = EventQueue()
    seen = []
    q.push(1.0, 1)
    q.push(3.0, 2)
    assert q.run(lambda t, k: seen.append((t, k)), until=2.0) == 2.0
    assert seen == [(1.0, 1)] and len(q) == 1 and q.peek_time() == 3.0
    q.run(lambda t, k: seen.append((t, k)))
    assert seen[-1] == (3.0, 2) and q.peek_time() == math.inf


def test_misuse_raises():
    q = EventQueue()
    with pytest.raises(IndexError, match="empty"):
        q.pop()
    q.push(2.0, 0)
    q.pop()
    with pytest.raises(ValueError, match="now"):
        q.push(1.0, 0)
    with pytest.raises(ValueError, match="finite"):
        q.push(math.nan, 0)
