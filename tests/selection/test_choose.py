"""selection.choose: the fastest verified schedule, its result, ranked alternatives, bound."""

from __future__ import annotations

import pytest

from topocoll.collective import make_collective
from topocoll.cost import AlphaBeta
from topocoll.errors import NotSupportedError
from topocoll.optimum import lower_bound
from topocoll.selection import choose, find_algorithm
from topocoll.sim import FlowSim
from topocoll.topology import fat_tree, ring, torus


def test_fastest_first_and_schedules_kept():
    t = torus((4, 4), latency=1e-6)
    c = choose("allreduce", t, 2**26)
    times = [a.time for a in c.ranked]
    assert times == sorted(times) and c.time == times[0]
    assert c.schedule is not None and c.schedule.collective.kind == "allreduce"
    assert all(a.schedule is not None for a in c.ranked[:3])
    assert all(a.schedule is None for a in c.ranked[3:])
    # the result is the cost model's, and the schedule can be re-made from the options
    again = find_algorithm(c.best.algorithm, "allreduce")(t, **c.best.options)
    assert again.fingerprint() == c.schedule.fingerprint()
    assert AlphaBeta().evaluate(again, t, 2**26).time == pytest.approx(c.time)
    assert 0 < c.bound_fraction <= 1
    assert c.bound.time == lower_bound(make_collective("allreduce", tuple(range(16))), t,
                                       2**26).time


def test_small_messages_choose_latency_optimal_algorithms():
    t = ring(16, latency=1e-6)
    small = choose("allreduce", t, 64, candidates=["ring", "recursive_doubling"])
    large = choose("allreduce", t, 2**28, candidates=["ring", "recursive_doubling"])
    assert small.best.algorithm == "recursive_doubling" and large.best.algorithm == "ring"


def test_subgroup_root_and_other_models():
    t = fat_tree(4)
    c = choose(make_collective("broadcast", (0, 1, 4, 5), root=4), t, 2**20)
    assert c.schedule.collective.root == 4 and set(c.schedule.collective.ranks) == {0, 1, 4, 5}
    f = choose("allgather", ring(6), 2**20, model=FlowSim(), candidates=["ring", "direct"])
    assert f.result.model == "flow"


def test_nothing_applies():
    with pytest.raises(NotSupportedError, match="hamiltonian_rings"):
        choose("allreduce", fat_tree(4), 2**20, candidates=["hamiltonian_rings"])
    with pytest.raises(NotSupportedError, match="no algorithm"):
        choose("allreduce", ring(4), 2**20, candidates=["teleport"])
