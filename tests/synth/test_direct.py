"""Direct, pairwise and parameter-server algorithms: correctness for every p, step
counts, per-rank bytes and per-step peers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _refcheck import assert_correct, sent

from topocoll.errors import NotSupportedError
from topocoll.selection import find_algorithm
from topocoll.synth import (
    direct_allgather,
    direct_allreduce,
    direct_alltoall,
    direct_reduce_scatter,
    pairwise_alltoall,
    parameter_server_allreduce,
)
from topocoll.topology import fat_tree, fully_connected, leaf_spine, ring, star

ALL = (direct_allgather, direct_reduce_scatter, direct_allreduce, direct_alltoall,
       pairwise_alltoall, parameter_server_allreduce)
# (steps, bytes per rank as a fraction of message_bytes) for p ranks
FORMULAS = {
    direct_allgather: lambda p: (1, (p - 1) / p),
    direct_reduce_scatter: lambda p: (1, (p - 1) / p),
    direct_allreduce: lambda p: (2, 2 * (p - 1) / p),
    direct_alltoall: lambda p: (1, (p - 1) / p),
    pairwise_alltoall: lambda p: (p - 1, (p - 1) / p),
}


@pytest.mark.parametrize("func", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("p", list(range(2, 34)) + [48])
def test_correct_for_every_p(func, p):
    t = star(p)
    s = func(t)
    assert_correct(s, t)
    f = sent(s, p)
    if func in FORMULAS:
        steps, per_rank = FORMULAS[func](p)
        assert s.num_steps == steps
        np.testing.assert_allclose(f, per_rank)
    else:
        assert s.num_steps == 2
        np.testing.assert_allclose(f, [p - 1] + [1] * (p - 1))


@pytest.mark.parametrize("func", ALL, ids=lambda f: f.__name__)
def test_subgroup_and_single_rank(func):
    t = fully_connected(9)
    group = [8, 1, 4, 6]
    s = func(t, ranks=group)
    assert s.collective.ranks == tuple(group)
    assert set(s.participants().tolist()) == set(group)
    assert_correct(s, t)
    one = func(t, ranks=[5])
    assert one.num_steps == 0
    assert_correct(one)


@pytest.mark.parametrize("func", [direct_allgather, direct_reduce_scatter, direct_alltoall],
                         ids=lambda f: f.__name__)
def test_one_shot_talks_to_every_peer(func):
    p = 6
    (step,) = func(fully_connected(p)).steps
    assert sorted((t.src, t.dst) for t in step) == [(i, j) for i in range(p)
                                                    for j in range(p) if i != j]


def test_alltoall_chunk_numbering():
    p = 5
    for s in (direct_alltoall(ring(p)), pairwise_alltoall(ring(p))):
        for step in s.steps:
            assert all(t.chunks == (t.src * p + t.dst,) for t in step)


def test_pairwise_is_a_permutation_each_step():
    p = 7
    s = pairwise_alltoall(ring(p))
    for k, step in enumerate(s.steps, start=1):
        assert sorted(t.dst for t in step) == list(range(p))
        assert all(t.dst == (t.src + k) % p for t in step)


def test_parameter_server_option():
    t = star(6)
    s = parameter_server_allreduce(t, ranks=[5, 2, 0, 3], server=3)
    assert_correct(s, t)
    assert {x.dst for x in s.step(0)} == {3} and {x.src for x in s.step(1)} == {3}
    assert s.meta["server"] == "3"
    with pytest.raises(NotSupportedError):
        parameter_server_allreduce(t, ranks=[5, 2, 0], server=3)


def test_direct_allreduce_meets_bandwidth_bound():
    p = 12
    f = sent(direct_allreduce(star(p)), p)
    assert math.isclose(f.max(), 2 * (p - 1) / p)  # the flat allreduce lower bound


def test_registry_entries():
    for name, kind, func in [("direct", "allgather", direct_allgather),
                             ("direct", "reduce_scatter", direct_reduce_scatter),
                             ("direct", "allreduce", direct_allreduce),
                             ("direct", "alltoall", direct_alltoall),
                             ("pairwise", "alltoall", pairwise_alltoall),
                             ("parameter_server", "allreduce", parameter_server_allreduce)]:
        entry = find_algorithm(name, kind)
        assert entry.func is func
        assert entry.unsupported(star(5), tuple(range(5))) is None
        assert_correct(entry(star(5)), star(5))


# ------------------------------------------------------- paths="spread" (explicit ECMP)
SPREAD = (direct_allgather, direct_reduce_scatter, direct_allreduce)


@pytest.mark.parametrize("func", SPREAD, ids=lambda f: f.__name__)
@pytest.mark.parametrize("ranks", [None, (3, 0, 9, 14, 6)])
def test_spread_is_correct_and_sends_the_same_bytes(func, ranks):
    t = fat_tree(4)
    s = func(t, ranks=ranks, paths="spread")
    assert_correct(s, t)
    p = 16 if ranks is None else len(ranks)
    steps, frac = FORMULAS[func](p)
    assert s.num_steps == steps and s.meta["paths"] == "spread"
    members = list(range(16)) if ranks is None else list(ranks)
    assert np.allclose(sent(s, t.num_nodes)[members], frac)
    assert s.has_paths


@pytest.mark.parametrize("make,args", [(fat_tree, (4,)), (leaf_spine, (4, 3, 3))])
def test_spread_meets_the_cut_bound_exactly_on_full_bisection_fabrics(make, args):
    """Without latency the one step costs exactly the exact bound: every host link
    carries (p - 1) pieces' worth and no switch link more."""
    from topocoll.collective import make_collective
    from topocoll.cost import AlphaBeta
    from topocoll.optimum.cuts import cut_bound

    t = make(*args, latency=0.0)
    group = tuple(range(t.num_ranks))
    M = 2.0**30
    ag = cut_bound(make_collective("allgather", group), t, M, method="exact").time
    want = {direct_allgather: ag, direct_reduce_scatter: ag, direct_allreduce: 2 * ag}
    for func, bound in want.items():
        spread = AlphaBeta(bound=False).evaluate(func(t, paths="spread"), t, M).time
        assert spread == pytest.approx(bound, rel=1e-12)
        routed = AlphaBeta(bound=False).evaluate(func(t), t, M).time
        assert routed > 1.5 * bound          # one deterministic path: congested uplinks


def test_spread_split_covers_the_paths():
    from topocoll.synth.direct import spread_split

    assert spread_split(fat_tree(4), range(16)) == 4
    assert spread_split(fat_tree(6), range(54)) == 9           # 3 aggs x 3 cores
    assert spread_split(leaf_spine(4, 3, 2), range(8)) == 3
    assert spread_split(fat_tree(4), [5]) == 1
    s = direct_allgather(fat_tree(4), paths="spread", split=2)
    assert s.collective.split == 2 and s.meta["split"] == "2"


def test_spread_bad_input_names_the_field():
    t = star(4)
    with pytest.raises(NotSupportedError, match="paths"):
        direct_allgather(t, paths="ecmp")
    with pytest.raises(NotSupportedError, match="split"):
        direct_allgather(t, paths="spread", split=0)
    with pytest.raises(NotSupportedError, match="split"):
        direct_allreduce(t, split=4)
