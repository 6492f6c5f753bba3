"""Binomial trees and the double binary tree: correctness for every p and root, tree
structure, the complementary-interior property, step counts and per-rank bytes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _refcheck import assert_correct, sent

from topocoll.errors import NotSupportedError
from topocoll.selection import find_algorithm
from topocoll.synth import (
    binary_tree_parents,
    binomial_tree_allreduce,
    binomial_tree_broadcast,
    binomial_tree_reduce,
    double_binary_tree_allreduce,
    double_binary_tree_parents,
)
from topocoll.topology import ring

BINOMIAL = (binomial_tree_broadcast, binomial_tree_reduce, binomial_tree_allreduce)
PS = list(range(2, 40)) + [64, 65, 100]


def _children(parent: np.ndarray) -> np.ndarray:
    return np.bincount(parent[parent >= 0], minlength=len(parent))


def _depths(parent: np.ndarray) -> list[int]:
    """Depth of every node by walking to the root; fails on a cycle or a forest."""
    out = []
    for x in range(len(parent)):
        d, y = 0, x
        while parent[y] >= 0:
            y, d = parent[y], d + 1
            assert d <= len(parent), "cycle"
        assert parent[y] == -1 and y == int(np.flatnonzero(parent < 0)[0])
        out.append(d)
    return out


@pytest.mark.parametrize("func", BINOMIAL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("p", PS)
def test_binomial_correct_for_every_p_and_root(func, p):
    t = ring(p)
    for root in sorted({0, 1 % p, p // 2, p - 1}):
        s = func(t, root=root)
        assert_correct(s, t)
        assert s.num_steps == math.ceil(math.log2(p)) * (2 if func is binomial_tree_allreduce
                                                         else 1)
        f = sent(s, p)
        assert math.isclose(f.sum(), (p - 1) * (2 if func is binomial_tree_allreduce else 1))
        if func is binomial_tree_broadcast:
            assert f[root] == math.ceil(math.log2(p))  # the root sends to one child per step
            assert s.collective.root == root


def test_binomial_reduce_is_reversed_broadcast():
    bc = binomial_tree_broadcast(ring(6), root=4)
    red = binomial_tree_reduce(ring(6), root=4)
    assert [[(x.dst, x.src) for x in st] for st in bc.steps][::-1] == \
        [[(x.src, x.dst) for x in st] for st in red.steps]
    assert red.collective.kind == "reduce" and red.collective.root == 4


@pytest.mark.parametrize("func", BINOMIAL, ids=lambda f: f.__name__)
def test_binomial_subgroup_and_single_rank(func):
    t = ring(10)
    group = [7, 3, 9, 0, 5]
    s = func(t, ranks=group, root=9)
    assert set(s.participants().tolist()) == set(group)
    assert_correct(s, t)
    assert func(t, ranks=[4]).num_steps == 0
    with pytest.raises(NotSupportedError):
        func(t, ranks=group, root=1)


@pytest.mark.parametrize("p", range(1, 301))
def test_double_binary_trees_are_binary_trees(p):
    for parent in double_binary_tree_parents(p):
        assert (parent < 0).sum() == 1
        assert _children(parent).max(initial=0) <= 2
        _depths(parent)
    t1 = binary_tree_parents(p)
    if p > 1:
        assert _children(t1)[0] == 1 and t1[1 << (p - 1).bit_length() - 1] == 0
    assert _children(t1)[1::2].sum() == 0  # odd positions are leaves (in-order tree)
    assert max(_depths(t1)) == math.ceil(math.log2(p))  # height


@pytest.mark.parametrize("p", range(2, 301))
def test_complementary_interior(p):
    t1, t2 = double_binary_tree_parents(p)
    both = np.flatnonzero((_children(t1) > 0) & (_children(t2) > 0))
    if p % 2 == 0:
        assert len(both) == 0  # mirror: every rank interior in at most one tree
    else:
        assert both.tolist() == ([0] if p > 1 else [])  # shift: only position 0 in both


@pytest.mark.parametrize("pipeline", [1, 2, 3, 8])
@pytest.mark.parametrize("p", PS)
def test_double_binary_tree_correct_and_formulas(p, pipeline):
    t = ring(p)
    s = double_binary_tree_allreduce(t, pipeline=pipeline)
    assert_correct(s, t)
    assert s.collective.num_chunks == 2 * pipeline
    assert s.num_steps == pipeline + 2 * math.ceil(math.log2(p)) - 1
    f = sent(s, p)
    assert math.isclose(f.sum(), 2 * (p - 1))
    expect = np.zeros(p)
    for parent in double_binary_tree_parents(p):
        expect += 0.5 * (_children(parent) + (parent >= 0))
    np.testing.assert_allclose(f, expect)


def test_double_binary_tree_pipelining_timeline():
    """Piece j leaves a node of height h at step j + h; the root forwards it at j + H."""
    s = double_binary_tree_allreduce(ring(8), pipeline=4)
    t1, _ = double_binary_tree_parents(8)  # 0 -> 4 -> {2, 6}, 2 -> {1, 3}, 6 -> {5, 7}
    up = {(x.src, x.dst, c): k for k, st in enumerate(s.steps) for x in st
          for c in x.chunks if x.op.name == "REDUCE"}
    down = {(x.src, x.dst, c): k for k, st in enumerate(s.steps) for x in st
            for c in x.chunks if x.op.name == "COPY"}
    for j in range(4):
        assert up[(1, 2, j)] == j and up[(2, 4, j)] == j + 1 and up[(4, 0, j)] == j + 2
        assert down[(0, 4, j)] == j + 3 and down[(4, 2, j)] == j + 4 and down[(2, 1, j)] == j + 5
    assert t1.tolist() == [-1, 2, 4, 2, 0, 6, 4, 6]


def test_double_binary_tree_subgroup_single_rank_and_errors():
    t = ring(12)
    group = [11, 0, 5, 3, 8, 2, 9]
    s = double_binary_tree_allreduce(t, ranks=group, pipeline=2)
    assert set(s.participants().tolist()) == set(group)
    assert_correct(s, t)
    assert double_binary_tree_allreduce(t, ranks=[3], pipeline=4).num_steps == 0
    with pytest.raises(NotSupportedError):
        double_binary_tree_allreduce(t, pipeline=0)


def test_registry_entries():
    for kind, func in [("broadcast", binomial_tree_broadcast), ("reduce", binomial_tree_reduce),
                       ("allreduce", binomial_tree_allreduce)]:
        entry = find_algorithm("binomial_tree", kind)
        assert entry.func is func
        assert_correct(entry(ring(5), root=3), ring(5))
    entry = find_algorithm("double_binary_tree", "allreduce")
    assert entry.func is double_binary_tree_allreduce
    assert entry.tunables == {"pipeline": (1, 2, 4, 8, 16, 32)}
    for value in entry.tunables["pipeline"]:
        assert_correct(entry(ring(6), pipeline=value), ring(6))


def test_double_binary_tree_scales():
    t = ring(4096)
    s = double_binary_tree_allreduce(t, pipeline=32)
    assert s.num_steps == 32 + 2 * 12 - 1
