"""Recursive doubling / halving, Rabenseifner and Bruck: correctness for every p, step
counts and per-rank bytes against the documented formulas, subgroups, scale."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _refcheck import assert_correct, sent

from topocoll.selection import find_algorithm
from topocoll.synth import (
    bruck_allgather,
    rabenseifner_allreduce,
    recursive_doubling_allgather,
    recursive_doubling_allreduce,
    recursive_halving_reduce_scatter,
)
from topocoll.topology import hypercube, ring

ALL = (recursive_doubling_allgather, recursive_doubling_allreduce,
       recursive_halving_reduce_scatter, rabenseifner_allreduce, bruck_allgather)
PS = list(range(2, 70)) + [96, 127, 128, 129]


def _q(p: int) -> int:
    return 1 << (p.bit_length() - 1)


@pytest.mark.parametrize("func", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("p", PS)
def test_correct_for_every_p(func, p):
    t = ring(p)
    s = func(t)
    assert s.collective.ranks == tuple(range(p))
    assert_correct(s, t)


@pytest.mark.parametrize("func", ALL, ids=lambda f: f.__name__)
def test_single_rank_is_empty(func):
    s = func(ring(4), ranks=[2])
    assert s.num_steps == 0
    assert_correct(s)


@pytest.mark.parametrize("func", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("group", [[5, 2], [7, 0, 9], [11, 3, 4, 8, 1], [0, 2, 4, 6, 8, 10, 1, 3]])
def test_subgroups(func, group):
    t = ring(12)
    s = func(t, ranks=group)
    assert s.collective.ranks == tuple(group)
    assert set(s.participants().tolist()) == set(group)
    assert_correct(s, t)


@pytest.mark.parametrize("p", PS)
def test_recursive_doubling_allgather_formulas(p):
    s = recursive_doubling_allgather(ring(p))
    q = _q(p)
    f = sent(s, p)
    assert math.isclose(f.sum(), p - 1)  # (p - 1) * message_bytes in all, folded or not
    if p == q:
        assert s.num_steps == int(math.log2(p))
        np.testing.assert_allclose(f, (p - 1) / p)
    else:
        assert s.num_steps == int(math.log2(q)) + 2
        np.testing.assert_allclose(f[q:], 1 / p)  # extras only hand in their block
        last = s.step(s.num_steps - 1)
        assert [(x.src, x.dst, len(x.chunks)) for x in last] == \
            [(e - q, e, p - 1) for e in range(q, p)]


def test_recursive_doubling_allgather_exchanges_with_xor_partner():
    s = recursive_doubling_allgather(hypercube(3))
    for k, step in enumerate(s.steps):
        assert all(t.dst == t.src ^ (1 << k) and len(t.chunks) == 1 << k for t in step)


@pytest.mark.parametrize("p", PS)
def test_recursive_doubling_allreduce_formulas(p):
    s = recursive_doubling_allreduce(ring(p))
    q, m = _q(p), int(math.log2(_q(p)))
    f = sent(s, p)
    assert s.collective.num_chunks == 1
    if p == q:
        assert s.num_steps == m
        np.testing.assert_allclose(f, m)  # the whole vector every step
    else:
        assert s.num_steps == m + 2
        np.testing.assert_allclose(f[q:], 1)
        np.testing.assert_allclose(f[: p - q], m + 1)  # partners copy the result back
        np.testing.assert_allclose(f[p - q: q], m)


@pytest.mark.parametrize("p", PS)
def test_recursive_halving_reduce_scatter_formulas(p):
    s = recursive_halving_reduce_scatter(ring(p))
    q, m = _q(p), int(math.log2(_q(p)))
    f = sent(s, p)
    if p == q:
        assert s.num_steps == m
        np.testing.assert_allclose(f, (p - 1) / p)
        assert [len(t.chunks) for t in s.step(0)] == [p // 2] * p  # halving from p/2
    else:
        assert s.num_steps == m + 2
        assert math.isclose(f.sum(), p - 1 + (p - q) / p)
        np.testing.assert_allclose(f[q:], 1)  # extras reduce all p blocks into partners


@pytest.mark.parametrize("p", PS)
def test_rabenseifner_formulas(p):
    s = rabenseifner_allreduce(ring(p))
    q, m = _q(p), int(math.log2(_q(p)))
    f = sent(s, p)
    assert s.collective.num_chunks == q
    if p == q:
        assert s.num_steps == 2 * m
        np.testing.assert_allclose(f, 2 * (p - 1) / p)
    else:
        assert s.num_steps == 2 * m + 2
        np.testing.assert_allclose(f[q:], 1)
        np.testing.assert_allclose(f[: p - q], 2 * (q - 1) / q + 1)
        np.testing.assert_allclose(f[p - q: q], 2 * (q - 1) / q)


@pytest.mark.parametrize("p", PS)
def test_bruck_formulas(p):
    s = bruck_allgather(ring(p))
    assert s.num_steps == math.ceil(math.log2(p))
    np.testing.assert_allclose(sent(s, p), (p - 1) / p)
    for k, step in enumerate(s.steps):
        assert all(t.dst == (t.src - (1 << k)) % p for t in step)


def test_registry_entries():
    for name, kind, func in [("recursive_doubling", "allgather", recursive_doubling_allgather),
                             ("recursive_doubling", "allreduce", recursive_doubling_allreduce),
                             ("recursive_halving", "reduce_scatter",
                              recursive_halving_reduce_scatter),
                             ("rabenseifner", "allreduce", rabenseifner_allreduce),
                             ("bruck", "allgather", bruck_allgather)]:
        entry = find_algorithm(name, kind)
        assert entry.func is func
        for p in (5, 8):
            assert entry.unsupported(ring(p), tuple(range(p))) is None
            assert_correct(entry(ring(p)), ring(p))


@pytest.mark.parametrize("func", [recursive_doubling_allreduce, rabenseifner_allreduce],
                         ids=lambda f: f.__name__)
def test_scales_to_4096_ranks(func):
    t = ring(4096)
    s = func(t)        # how long it takes is a benchmark's question, not a test's
    assert s.num_steps == (12 if func is recursive_doubling_allreduce else 24)
    np.testing.assert_allclose(s.bytes_sent(1.0), 12 if func is recursive_doubling_allreduce
                               else 2 * 4095 / 4096)
