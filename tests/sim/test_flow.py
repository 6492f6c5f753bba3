"""Flow-level simulator: agreement with AlphaBeta, exact contended timelines, invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topocoll.collective import allgather
from topocoll.cost import AlphaBeta
from topocoll.errors import ScheduleError, TopologyError
from topocoll.schedule import Op, ScheduleBuilder
from topocoll.sim import FlowSim
from topocoll.synth.recursive import recursive_doubling_allreduce
from topocoll.synth.ring import bidirectional_ring_allreduce, ring_allgather, ring_allreduce
from topocoll.topology import from_edges, hypercube, line, ring, star, torus
from topocoll.topology.spec import parse_spec

B = 1e9      # bytes/s
C = 1e9      # bytes per chunk in the hand-built schedules


def build(n, steps):
    """Schedule over allgather(n) with chunk size C when simulated at n * C bytes."""
    b = ScheduleBuilder(allgather(n))
    for step in steps:
        b.new_step()
        for tr in step:
            src, dst, nchunks = tr[:3]
            op = tr[3] if len(tr) > 3 else Op.COPY
            b.add(src, dst, list(range(nchunks)), op)
    return b.build()


def run(sched, topo, n, **kw):
    return FlowSim(**kw).run(sched, topo, n * C)


# --------------------------------------------------------------- agreement
UNCONTENDED = [
    ("ring on ring", lambda: ring(8, bandwidth=50e9, latency=1e-6), ring_allreduce),
    ("bidir ring on ring", lambda: ring(6, bandwidth=25e9, latency=2e-6),
     bidirectional_ring_allreduce),
    ("recursive doubling on hypercube", lambda: hypercube(4, bandwidth=10e9, latency=5e-7),
     recursive_doubling_allreduce),
    ("ring on fat-tree ecmp",
     lambda: parse_spec("fattree:k=4,bw=100Gbps,lat=500ns,routing=ecmp"), ring_allreduce),
    ("ring allgather on torus", lambda: torus((4, 4), bandwidth=50e9, latency=1e-7),
     ring_allgather),
]


@pytest.mark.parametrize("name,make,synth", UNCONTENDED, ids=[u[0] for u in UNCONTENDED])
@pytest.mark.parametrize("alpha", [0.0, 3e-6])
@pytest.mark.parametrize("size", [0.0, 1e3, 2.0**26])
def test_equals_alphabeta_without_contention(name, make, synth, alpha, size):
    t = make()
    s = synth(t)
    f = FlowSim(alpha=alpha).evaluate(s, t, size)
    a = AlphaBeta(alpha=alpha).evaluate(s, t, size)
    assert math.isclose(f.time, a.time, rel_tol=1e-12, abs_tol=1e-15)
    np.testing.assert_allclose(f.step_times, a.step_times, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(f.link_load, a.link_load, rtol=1e-12)
    assert f.bound == a.bound and f.model == "flow"


# ------------------------------------------------------- exact timelines
def test_two_flows_one_link_unequal_sizes():
    # line 0-1-2: 0->2 (1 chunk) and 1->2 (2 chunks) share link 1->2
    t = line(3, bandwidth=B, latency=1e-6)
    r = run(build(3, [[(0, 2, 1), (1, 2, 2)]]), t, 3).result
    # both at B/2 until the 1-chunk flow drains at 2C/B; the other then has C left at B
    assert r.transfer_finish[0] == pytest.approx(2 * C / B + 2e-6, rel=1e-12)
    assert r.transfer_finish[1] == pytest.approx(3 * C / B + 1e-6, rel=1e-12)
    assert r.time == pytest.approx(3 * C / B + 1e-6, rel=1e-12)
    # AlphaBeta charges both the full load of the shared link
    assert AlphaBeta().evaluate(build(3, [[(0, 2, 1), (1, 2, 2)]]), t, 3 * C).time == \
        pytest.approx(3 * C / B + 2e-6, rel=1e-12)


def test_incast_on_star():
    t = star(5, bandwidth=B, latency=1e-6, switch_latency=5e-7)
    r = run(build(5, [[(i, 0, 1) for i in range(1, 5)]]), t, 5).result
    np.testing.assert_allclose(r.transfer_finish, 4 * C / B + 2.5e-6, rtol=1e-12)
    np.testing.assert_array_equal(r.transfer_start, 0.0)


def test_parking_lot_max_min():
    # 0 -> 1 at 1 GB/s, 1 -> 2 at 2 GB/s; flows A 0->2 (3 chunks), B 0->1 (1), C 1->2 (3)
    t = from_edges([(0, 1, B), (1, 2, 2 * B), (1, 0, B), (2, 1, B)], num_ranks=3, latency=0.0)
    fr = run(build(3, [[(0, 2, 3), (0, 1, 1), (1, 2, 3)]]), t, 3)
    # rates A = B = 0.5 GB/s (link 0->1), C = 1.5 GB/s (rest of 1->2); B and C drain at
    # 2 s, then A runs at 1 GB/s with 2 GB left
    at0 = fr.log_time == 0
    first = dict(zip(fr.log_flow[at0].tolist(), fr.log_rate[at0].tolist(), strict=True))
    assert first == {0: 0.5 * B, 1: 0.5 * B, 2: 1.5 * B}
    np.testing.assert_allclose(fr.result.transfer_finish, [4.0, 2.0, 2.0], rtol=1e-12)
    assert AlphaBeta().evaluate(fr.schedule, t, 3 * C).time == pytest.approx(4.0)


def test_relaxed_barrier_rule():
    # step 0: 0->1 (4 chunks); step 1: 2->3 (1 chunk) is ready at once (rank 2 had nothing
    # before), 1->2 waits for 0->1 to arrive at rank 1, and 2->3 shares no link with it.
    t = line(4, bandwidth=B, latency=0.0)
    r = run(build(4, [[(0, 1, 4)], [(2, 3, 1), (1, 2, 1)]]), t, 4).result
    np.testing.assert_allclose(r.transfer_start, [0.0, 0.0, 4.0])
    np.testing.assert_allclose(r.transfer_finish, [4.0, 1.0, 5.0])
    np.testing.assert_allclose(r.step_times, [4.0, 1.0])
    assert AlphaBeta().evaluate(build(4, [[(0, 1, 4)], [(2, 3, 1), (1, 2, 1)]]), t,
                                4 * C).time == pytest.approx(5.0)


def test_later_step_waits_for_incoming_transfer():
    # rank 1 sends in step 1 only after it has received in step 0 (into its source rank)
    t = line(3, bandwidth=B, latency=0.25)
    r = run(build(3, [[(0, 1, 2)], [(1, 2, 1)]]), t, 3).result
    np.testing.assert_allclose(r.transfer_start, [0.0, 2.25])
    np.testing.assert_allclose(r.transfer_finish, [2.25, 3.5])


def test_reduction_compute_is_fifo_per_rank():
    t = star(3, bandwidth=B, latency=0.0)
    s = build(3, [[(1, 0, 1, Op.REDUCE), (2, 0, 1, Op.REDUCE)], [(0, 1, 1)]])
    r = run(s, t, 3, reduce_bandwidth=4 * B).result
    # both arrive at 2 s (incast), reductions of 0.25 s each run back to back
    np.testing.assert_allclose(r.transfer_finish, [2.25, 2.5, 3.5], rtol=1e-12)
    free = run(s, t, 3).result
    np.testing.assert_allclose(free.transfer_finish, [2.0, 2.0, 3.0], rtol=1e-12)


def test_self_and_empty_transfers():
    t = ring(4, bandwidth=B, latency=1e-6)
    r = run(build(4, [[(0, 0, 1)], [(0, 1, 1)]]), t, 4, alpha=1e-3).result
    np.testing.assert_allclose(r.transfer_finish, [1e-3, 2e-3 + 1.0 + 1e-6], rtol=1e-12)
    empty = FlowSim().evaluate(build(4, [[]]), t, 4 * C)
    assert empty.time == 0.0 and empty.step_times.tolist() == [0.0]


# ------------------------------------------------------------- invariants
def _rates_at(fr):
    """Yield (time, rate vector) after every instant of the log."""
    rate = np.zeros(len(fr.transfer_bytes))
    times = fr.log_time
    for tm in np.unique(times):
        idx = np.flatnonzero(times == tm)
        rate[fr.log_flow[idx]] = fr.log_rate[idx]
        yield tm, rate.copy()


def _check_invariants(fr):
    bw = fr.topology.link_bandwidth
    owner = np.repeat(np.arange(len(fr.transfer_bytes)), np.diff(fr.route_ptr))
    sent = np.zeros(len(fr.transfer_bytes))
    last_t, last_rate = 0.0, np.zeros(len(sent))
    for tm, rate in _rates_at(fr):
        sent += last_rate * (tm - last_t)
        last_t, last_rate = tm, rate
        load = np.bincount(fr.route_link, weights=rate[owner] * fr.route_frac, minlength=len(bw))
        assert np.all(load <= bw * (1 + 1e-9))                     # feasible
        active = np.flatnonzero(rate > 0)
        for f in active:                                           # max-min: a bottleneck
            ls = fr.route_link[fr.route_ptr[f]:fr.route_ptr[f + 1]]
            ok = False
            for l in ls:
                on = np.unique(owner[fr.route_link == l])
                if load[l] >= bw[l] * (1 - 1e-9) and rate[f] >= rate[on].max() * (1 - 1e-9):
                    ok = True
            assert ok, f"flow {f} at t={tm} has no bottleneck link"
    np.testing.assert_allclose(sent, fr.transfer_bytes, rtol=1e-9)   # bytes conserved


CONTENDED = [
    ("ring on fat-tree shuffled",
     lambda: parse_spec("fattree:k=4,bw=8Gbps,lat=1us,routing=ecmp"),
     lambda t: ring_allreduce(t, ranks=(0, 5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12, 1, 6, 11))),
    ("bidir ring on line", lambda: line(6, bandwidth=B, latency=1e-6),
     bidirectional_ring_allreduce),
    ("recursive doubling on ring", lambda: ring(8, bandwidth=B, latency=1e-6),
     recursive_doubling_allreduce),
]


@pytest.mark.parametrize("name,make,synth", CONTENDED, ids=[c[0] for c in CONTENDED])
def test_invariants_under_contention(name, make, synth):
    t = make()
    s = synth(t)
    fr = FlowSim().run(s, t, 64e6)
    _check_invariants(fr)
    r = fr.result
    assert r.time >= r.bound * (1 - 1e-12)
    assert np.all(r.transfer_finish >= r.transfer_start)
    assert math.isclose(r.step_times.sum(), r.time, rel_tol=1e-12)
    again = FlowSim().run(s, t, 64e6)                               # deterministic
    assert np.array_equal(again.result.transfer_finish, r.transfer_finish)
    assert np.array_equal(again.log_rate, fr.log_rate)


def test_parking_lot_invariants_and_stats():
    t = from_edges([(0, 1, B), (1, 2, 2 * B), (1, 0, B), (2, 1, B)], num_ranks=3, latency=0.0)
    fr = run(build(3, [[(0, 2, 3), (0, 1, 1), (1, 2, 3)]]), t, 3)
    _check_invariants(fr)
    assert fr.stats["full_recomputes"] >= 1


# ----------------------------------------------------------------- errors
def test_bad_parameters_and_inputs():
    with pytest.raises(ValueError, match="alpha"):
        FlowSim(alpha=-1.0)
    with pytest.raises(ValueError, match="reduce_bandwidth"):
        FlowSim(reduce_bandwidth=0.0)
    with pytest.raises(TopologyError, match="routing"):
        FlowSim(routing="magic")
    t = ring(4)
    with pytest.raises(ValueError, match="message_bytes"):
        FlowSim().evaluate(ring_allreduce(t), t, -1.0)
    with pytest.raises(ScheduleError, match="node 7"):
        FlowSim().evaluate(build(8, [[(0, 7, 1)]]), t, 8.0)
