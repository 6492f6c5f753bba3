"""Two-level pipelined direct collectives (rails overlapped with the in-group exchange)."""

from __future__ import annotations

import numpy as np
import pytest
from _refcheck import assert_correct

from topocoll.collective import make_collective
from topocoll.cost import AlphaBeta
from topocoll.cost.kernel import model_time, step_loads
from topocoll.errors import NotSupportedError, TopologyError
from topocoll.optimum.cuts import cut_bound
from topocoll.selection import find_algorithm
from topocoll.synth import (
    direct_allgather,
    two_level_allgather,
    two_level_allreduce,
    two_level_reduce_scatter,
)
from topocoll.synth.two_level import two_level_groupings, two_level_groups
from topocoll.synth.two_level_plan import Frame, Plan, overlap_lp
from topocoll.topology import Link, Topology, fat_tree, leaf_spine, ring
from topocoll.topology.scenarios import contention, mi250, two_tier
from topocoll.verification import verify

M = 2.0**30
FUNCS = {"allgather": two_level_allgather, "reduce_scatter": two_level_reduce_scatter,
         "allreduce": two_level_allreduce}


def _bound(kind: str, t: Topology, group: tuple[int, ...]) -> float:
    parts = ("reduce_scatter", "allgather") if kind == "allreduce" else (kind,)
    return sum(cut_bound(make_collective(k, group), t, M, method="exact").time for k in parts)


def test_groups_from_switches_and_from_meta():
    assert two_level_groups(two_tier(3, 2), range(6)) == [[0, 1], [2, 3], [4, 5]]
    ls = leaf_spine(3, 2, 2)            # meta groups: one per leaf
    assert two_level_groups(ls, range(6)) == [[0, 1], [2, 3], [4, 5]]
    assert two_level_groups(mi250(2), range(16))[1] == list(range(8, 16))
    # a subgroup keeps the members' order inside each group
    assert two_level_groups(two_tier(2, 3), [5, 0, 4, 1]) == [[5, 4], [0, 1]]


def test_groupings_per_source_and_the_faster_one_kept():
    from topocoll.topology import parse_spec

    found = two_level_groupings(fat_tree(4), range(16))
    assert found["meta"][0] == [0, 1, 2, 3] and found["switch"][0] == [0, 1]
    assert two_level_groupings(fat_tree(4), range(16), "switch").keys() == {"switch"}
    # an oversubscribed fat-tree binds at the edge switches: pods are the wrong groups
    t = parse_spec("fattree:k=4,oversub=2")
    g = tuple(range(16))
    times = {}
    for by in ("meta", "switch"):
        s = two_level_allgather(t, groups=by)
        assert s.meta["grouping"] == by
        times[by] = AlphaBeta(bound=False).evaluate(s, t, M).time
    auto = two_level_allgather(t)
    assert auto.meta["grouping"] == min(times, key=times.get) == "switch"
    assert times["meta"] > 1.2 * times["switch"]
    assert times["switch"] <= _bound("allgather", t, g) * 1.01


def test_explicit_groups():
    t = two_tier(2, 3)
    s = two_level_allgather(t, groups=[[3, 4, 5], [0, 1, 2]])
    assert s.meta["grouping"] == "given" and s.meta["groups"] == "2x3"
    assert_correct(s)
    with pytest.raises(TopologyError, match="rank 2 is in no group"):
        two_level_allgather(t, groups=[[0, 1], [3, 4, 5]])
    with pytest.raises(TopologyError, match="rank 1 is in groups 0 and 1"):
        two_level_allgather(t, groups=[[0, 1, 2], [1, 4, 5]])
    with pytest.raises(TopologyError, match="rank 7 of group 1"):
        two_level_allgather(t, groups=[[0, 1, 2], [7, 4, 5]])
    with pytest.raises(NotSupportedError, match="groups must be one of"):
        two_level_allgather(t, groups="racks")
    with pytest.raises(NotSupportedError, match="unequal size"):
        two_level_allgather(t, groups=[[0, 1], [2, 3, 4, 5]])


@pytest.mark.parametrize("topo, group, words", [
    (ring(4), range(4), "the topology names no groups; rank 0 is not attached to exactly"),
    (two_tier(1, 4), range(4), "single group"),
    (two_tier(2, 3), [0, 1, 2, 3], "unequal size [1, 3]"),
    (two_tier(4, 1), range(4), "groups of one rank"),
])
def test_groups_refused_with_reason(topo, group, words):
    why = two_level_groups(topo, group)
    assert isinstance(why, str) and words in why
    with pytest.raises(NotSupportedError, match="two_level"):
        find_algorithm("two_level", "allgather")(topo, ranks=list(group))


def test_bad_options_and_ranks():
    t = two_tier(2, 2)
    with pytest.raises(NotSupportedError, match="steps"):
        two_level_allgather(t, steps=0)
    with pytest.raises(NotSupportedError, match="units"):
        two_level_allgather(t, units=0)
    with pytest.raises(NotSupportedError, match="message_bytes"):
        two_level_allgather(t, message_bytes=-1.0)
    with pytest.raises(TopologyError, match="rank 9"):
        two_level_allgather(t, ranks=[0, 9])


@pytest.mark.parametrize("kind", sorted(FUNCS))
@pytest.mark.parametrize("topo, ranks", [
    (two_tier(3, 2, oversubscription=2), None),
    (two_tier(2, 3), [5, 0, 4, 1]),
    (leaf_spine(2, 2, 3), None),
    (fat_tree(4), None),
    (mi250(2), None),
])
def test_correct_by_verifier_and_reference(kind, topo, ranks):
    s = FUNCS[kind](topo, ranks=ranks, units=2)
    assert s.collective.kind == kind
    assert verify(s, topo, collect=True).ok
    assert_correct(s)


def test_one_rail_step_still_waits_for_the_rails():
    s = two_level_allgather(two_tier(3, 3, oversubscription=4), steps=1, units=1)
    assert s.num_steps == 2
    assert_correct(s)


def test_lp_reaches_the_closed_form_cut_bound_on_two_tier():
    # R racks of h hosts, host links b, rack uplinks U = h b / o: the bound is the worse
    # of the host cut (N - 1 blocks in at b) and the rack cut (N - h blocks in at U)
    for R, h, o in ((4, 4, 4), (16, 8, 4), (8, 8, 4), (4, 4, 2), (3, 5, 8)):
        t = two_tier(R, h, oversubscription=o)
        N = R * h
        b = t.links[0].bandwidth
        U = sum(lk.bandwidth for lk in t.links if lk.dst == N and t.is_switch(lk.src))
        closed = max((N - 1) / b, (N - h) / U) * M / N
        assert _bound("allgather", t, tuple(range(N))) == pytest.approx(closed, rel=1e-12)
        plan = Plan(Frame(t, tuple(range(N)), two_level_groups(t, range(N))), M, 0.0,
                     None, None)
        # where the racks bind, the pipeline's tail costs a little at a finite step count
        assert closed * (1 - 1e-9) <= plan.lp_time <= closed * (1 + 1e-3), (R, h, o)
        if (N - 1) / b >= (N - h) / U:
            assert plan.lp_time == pytest.approx(closed, rel=1e-6)
        assert plan.lp_time * (1 - 1e-9) <= plan.rounded_time <= closed * 1.005


def test_schedule_loads_are_the_plans():
    # the integer program's per-step busiest link is what the built schedule puts there
    t = two_tier(4, 4, oversubscription=4)
    g = tuple(range(16))
    frame = Frame(t, g, two_level_groups(t, g))
    plan = Plan(frame, M, 0.0, None, 8)
    s = two_level_allgather(t, units=8)
    load, lat = step_loads(s, t, M)
    assert s.num_steps == plan.steps
    assert (load / t.link_bandwidth).max(axis=1).sum() == pytest.approx(plan.rounded_time,
                                                                        rel=1e-9)
    assert model_time(s, t, M, 0.0) == pytest.approx(plan.rounded_time + lat.sum(), rel=1e-9)


def test_integer_plan_never_beats_the_fractional_lp():
    t = two_tier(4, 4, oversubscription=4)
    g = tuple(range(16))
    rates, _ = Frame(t, g, two_level_groups(t, g)).unit_rates()
    for S in (2, 3, 5):
        frac, cum = overlap_lp(rates, S)
        assert np.allclose(cum[:, -1], 1.0)
        for U in (1, 4, 16):
            whole, cu = overlap_lp(rates, S, U)
            assert whole >= frac * (1 - 1e-9)
            assert (cu[:, -1] == U).all()
            assert (cu[1, 1:] <= cu[0, :-1]).all()      # received only after railed


@pytest.mark.parametrize("kind", sorted(FUNCS))
def test_within_one_percent_where_direct_and_trees_are_far(kind):
    t = two_tier(16, 8, oversubscription=4)
    g = tuple(range(t.num_ranks))
    s = FUNCS[kind](t)
    bound = _bound(kind, t, g)
    ratio = AlphaBeta(bound=False).evaluate(s, t, M).time / bound
    assert 1 - 1e-9 <= ratio <= 1.01
    d = direct_allgather(t, paths="spread")
    assert AlphaBeta(bound=False).evaluate(d, t, M).time / _bound("allgather", t, g) > 3


def test_contention_on_single_directions():
    # background traffic cuts single link directions: both parts stay within 1%
    t = contention(two_tier(4, 3, oversubscription=2), fraction=0.3, keep=0.25, seed=4)
    assert any(lk.bandwidth != t.links[0].bandwidth for lk in t.links)
    g = tuple(range(12))
    for kind in ("allgather", "reduce_scatter"):
        s = FUNCS[kind](t)
        assert verify(s, t, collect=True).ok
        ratio = AlphaBeta(bound=False).evaluate(s, t, M).time / _bound(kind, t, g)
        assert 1 - 1e-9 <= ratio <= 1.01, (kind, ratio)


def test_optimal_default_picks_two_level_on_oversubscribed_two_tier():
    # 64 ranks; the 128-rank fabric of the same shape (racks=16) is
    # tests/synth/test_timed.py::test_auto_within_one_percent_at_128_ranks, which asserted
    # the same two things here before (its tree packing alone took 30 s per copy)
    t = two_tier(8, 8, oversubscription=4)
    s = find_algorithm("optimal", "allgather")(t)
    assert s.meta["pipeline"] == "two_level"
    assert AlphaBeta(bound=False).evaluate(s, t, M).time <= _bound(
        "allgather", t, tuple(range(64))) * 1.01


def test_asymmetric_link_named_topology():
    # a hand-built fabric: two racks, one rack's uplink slower in one direction only
    links = []
    for r in range(4):
        tor = 4 + r // 2
        links += [Link(r, tor, 10e9), Link(tor, r, 10e9)]
    links += [Link(4, 6, 5e9), Link(6, 4, 20e9), Link(5, 6, 20e9), Link(6, 5, 20e9)]
    t = Topology("two racks", 4, 3, tuple(links))
    for kind, f in FUNCS.items():
        s = f(t)
        assert verify(s, t, collect=True).ok
        ratio = AlphaBeta(bound=False).evaluate(s, t, M).time / _bound(kind, t, (0, 1, 2, 3))
        assert 1 - 1e-9 <= ratio <= 1.01, (kind, ratio)


def test_in_group_exchange_stays_off_the_shared_switch():
    # DGX boxes: GPU to GPU inside a box over the NVSwitch, never through the NIC fabric
    # that the rails use (both are two hops)
    from topocoll.topology import parse_spec

    t = parse_spec("dgx:2,gpus=4,fabric=switch")       # every NIC on one switch
    g = tuple(range(8))
    box = {r: k for k, grp in enumerate(two_level_groups(t, g)) for r in grp}
    shared = {lk.dst for lk in t.links if t.is_switch(lk.dst) and not t.is_switch(lk.src)
              and {box[x.src] for x in t.links if x.dst == lk.dst and x.src < 8} == {0, 1}}
    assert shared
    s = two_level_allgather(t, units=2)
    inside = 0
    for step in s.steps:
        for tr in step:
            if box[tr.src] == box[tr.dst]:
                inside += 1
                assert tr.path is not None and not set(tr.path) & shared, tr
    assert inside
    assert_correct(s)


# ------------------------------------------------------------------ relayed in-group phases


def test_relay_parents_of_an_mi250_box():
    from topocoll.synth.two_level_plan import relay_parents, shared_switches

    t = mi250(2)
    groups = two_level_groups(t, range(16))
    shared = shared_switches(t, groups)
    assert shared == {16}                       # the NIC switch joins the boxes
    par = relay_parents(t, groups, shared)
    # every GCD reaches its twin and its three same-parity peers directly; its three
    # other peers through one relay, the peer's twin (package link) first
    assert len(par) == 2 * 8 * 3
    for (a, b), ps in par.items():
        assert a // 8 == b // 8 and a % 2 != b % 2 and a // 2 != b // 2
        assert ps == [b ^ 1, a ^ 1]
    assert relay_parents(t, groups) == {}       # through the switch every pair is direct
    assert relay_parents(two_tier(2, 3), two_level_groups(two_tier(2, 3), range(6))) == {}


@pytest.mark.parametrize("kind", sorted(FUNCS))
def test_relayed_schedules_are_correct_and_one_hop_inside(kind):
    t = mi250(2)
    s = FUNCS[kind](t, relay="on", units=2)
    assert s.meta["relay"] == "on"
    assert_correct(s)
    for step in s.steps:
        for tr in step:
            if tr.src // 8 == tr.dst // 8:      # inside a box: one link, no relay path
                assert tr.path is None or len(tr.path) == 2, tr


def test_relayed_schedule_loads_are_the_plans():
    t = mi250(2)
    g = tuple(range(16))
    frame = Frame(t, g, two_level_groups(t, g), relay=True)
    assert frame.relayed and [s for s, _ in frame.phases].count("y2") == 2
    plan = Plan(frame, M, 0.0, None, 8)
    s = two_level_allgather(t, units=8, relay="on")
    load, lat = step_loads(s, t, M)
    # 8 units over up to 20 steps: the steps where nothing moves are left out
    assert s.num_steps == int((np.diff(plan.cum, axis=1) > 0).any(axis=0).sum())
    assert (load / t.link_bandwidth).max(axis=1).sum() == pytest.approx(plan.rounded_time,
                                                                        rel=1e-9)
    # the relay steps come after the data arrived: the verifier would say otherwise
    assert verify(s, t, collect=True).ok


def test_relays_bring_mi250_clusters_within_one_percent():
    # 4 boxes: the direct in-box exchange sends cross-peer data over two fabric links
    # (1.34 of the bound); the depth-two trees use the package links instead
    t = mi250(4)
    g = tuple(range(32))
    off = two_level_allgather(t, relay="off")
    on = two_level_allgather(t)
    bound = _bound("allgather", t, g)
    r_off = AlphaBeta(bound=False).evaluate(off, t, M).time / bound
    r_on = AlphaBeta(bound=False).evaluate(on, t, M).time / bound
    assert on.meta["relay"] == "on" and r_off > 1.3
    assert 1 - 1e-9 <= r_on <= 1.01


def test_relay_option_is_checked():
    with pytest.raises(NotSupportedError, match="relay"):
        two_level_allgather(mi250(2), relay="maybe")
    # nothing to relay on a two-tier fabric: 'on' plans the direct shape
    assert two_level_allgather(two_tier(2, 2), relay="on").meta["relay"] == "off"


def test_rotated_paths_on_an_oversubscribed_fat_tree():
    # 128 hosts, 4x oversubscribed edges: with every unit cut over a pair's 16 paths the
    # chunk budget left 8 units per block (1.07); rotating path choices over the pairs
    # that share a link keeps one piece per unit, so 246 units and 32 steps fit (1.009)
    from topocoll.topology import parse_spec

    t = parse_spec("fattree:k=8,oversub=4")
    g = tuple(range(128))
    s = two_level_allgather(t)
    assert s.meta["period"] == "1" and int(s.meta["units"]) > 100
    ratio = AlphaBeta(bound=False).evaluate(s, t, M).time / _bound("allgather", t, g)
    assert 1 - 1e-9 <= ratio <= 1.01
    assert verify(s, t).ok


def test_spread_transfers_with_explicit_choices_matches_the_default():
    from topocoll.synth.direct import spread_transfers

    t = fat_tree(4)
    src, dst = np.array([0, 1, 2]), np.array([15, 14, 8])
    k = np.repeat(np.arange(3), 8)
    m = np.tile(np.arange(8), 3)
    ch = np.arange(24)
    a = spread_transfers(t, src, dst, k, m, ch, 8)
    b = spread_transfers(t, src, dst, k, m, ch, 8, choice=k * 8 + m)
    assert [p.tolist() for p in a[3]] == [p.tolist() for p in b[3]]
    assert a[2][1].tolist() == b[2][1].tolist()
    # rotated choices: pair k's piece m on choice k + m; pieces that meet merge
    c = spread_transfers(t, src, dst, k, m, ch, 8, choice=k + m)
    assert sorted(c[2][1].tolist()) == list(range(24))


def test_coarsest_units_by_bisection():
    from topocoll.synth.two_level_plan import ROUNDING_SLACK, coarsest_units

    choices = [4, 8, 16, 32, 64, 128]
    calls = []

    def solve(err_at):                 # rounding loss c / U, infeasible below 8 units
        def f(U):
            calls.append(U)
            if U < 8:
                return None
            return (1.0 + err_at / U, np.full(3, U))
        return f

    # within the slack from 32 units on: the coarsest such, in 1 + log2 solves
    t, U, cum = coarsest_units(choices, solve(ROUNDING_SLACK * 20), 1.0)
    assert U == 32 and t == pytest.approx(1.0 + ROUNDING_SLACK * 20 / 32)
    assert cum.dtype == np.int64 and len(calls) <= 4
    # never within the slack: the finest
    calls.clear()
    assert coarsest_units(choices, solve(1.0), 1.0)[1] == 128 and calls == [128]
    # the finest infeasible: the next finer feasible one is tried first
    assert coarsest_units([8, 16, 4096], lambda U: None if U > 100 else (1.0, np.zeros(1)),
                     1.0)[1] == 8
    assert coarsest_units([4], solve(1.0), 1.0) is None


@pytest.mark.parametrize("relay", [False, True])
def test_step_scan_stops_only_where_no_longer_plan_is_faster(relay):
    # the overlap LP's value never grows with the step count, so the scan may stop once
    # the longest horizon's value plus S + 1 step costs reaches the best so far: the
    # chosen count is the one a full scan picks
    from topocoll.synth.two_level_plan import MAX_STEPS, overlap_lp

    t = mi250(2)
    g = tuple(range(16))
    frame = Frame(t, g, two_level_groups(t, g), relay=relay)
    rates, lat = frame.unit_rates()
    depth = 2 if frame.relayed else 1
    vals = {S: overlap_lp(rates, S, phases=frame.phases) for S in range(depth + 1, MAX_STEPS + 1)}
    vals = {S: v[0] for S, v in vals.items() if v is not None}
    seq = [vals[S] for S in sorted(vals)]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(seq, seq[1:], strict=False))
    block, alpha = M / 16, 0.0
    full = min(vals, key=lambda S: block * vals[S] + S * (alpha + lat))
    assert Plan(frame, M, alpha, None, 8).steps == full
