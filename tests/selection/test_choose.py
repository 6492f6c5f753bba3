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


def test_nothing_unsupported():
    with pytest.raises(NotSupportedError, match="hamiltonian_rings"):
        choose("allreduce", fat_tree(4), 2**20, candidates=["hamiltonian_rings"])
    with pytest.raises(NotSupportedError, match="no algorithm"):
        choose("allreduce", ring(4), 2**20, candidates=["teleport"])


def test_stop_at_bound_keeps_the_choice_and_tries_fewer():
    """Issue 30: choose(stop_at_bound=True) stops at the first verified schedule within
    STOP_SLACK of the proved bound; on a rail star every later candidate is no faster."""
    from topocoll.collective import make_collective
    from topocoll.selection import choose
    from topocoll.selection.choose import STOP_SLACK
    from topocoll.topology import dgx_h100
    from topocoll.topology.subfabric import route_subfabric

    star = route_subfabric(dgx_h100(16), [r * 8 + 3 for r in range(16)]).topology
    coll = make_collective("allgather", tuple(range(16)))
    full = choose(coll, star, 2**32)
    fast = choose(coll, star, 2**32, stop_at_bound=True)
    assert len(fast.alternatives) < len(full.alternatives)
    assert fast.best.time <= fast.bound.time * (1 + STOP_SLACK)
    assert fast.best.time <= full.best.time * (1 + STOP_SLACK)
