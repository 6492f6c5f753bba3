"""AlphaBeta: golden closed forms, congestion, latency, paths, batching, SimResult."""

from __future__ import annotations

import json

import numpy as np
import pytest

from topocoll.collective import allgather, allreduce, broadcast
from topocoll.cost import AlphaBeta, CostModel, SimResult
from topocoll.cost import alphabeta as ab
from topocoll.errors import ScheduleError, TopologyError
from topocoll.schedule import Schedule, ScheduleBuilder, Transfer
from topocoll.synth.ring import bidirectional_ring_allreduce, ring_allgather, ring_allreduce
from topocoll.topology import Link, Topology, line, ring, star, torus

B = 25e9
N = 3 * 2.0**20


def _one_step(collective, transfers, topology, n=N, **kw):
    s = Schedule.from_steps(collective, [transfers])
    return AlphaBeta(bound=False, **kw).evaluate(s, topology, n)


# ------------------------------------------------------------------ golden ring costs
@pytest.mark.parametrize("p", [2, 3, 5, 8, 16])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_ring_allreduce_closed_form(p, bidirectional):
    a = 3e-6
    t = ring(p, bandwidth=B, latency=0.0, bidirectional=bidirectional)
    r = AlphaBeta(alpha=a).evaluate(ring_allreduce(t), t, N)
    assert r.time == pytest.approx(2 * (p - 1) * (a + N / (p * B)), rel=1e-12)
    assert r.step_times.shape == (2 * (p - 1),)
    assert np.allclose(r.step_times, a + N / (p * B), rtol=1e-12)


@pytest.mark.parametrize("p", [3, 4, 7])
def test_ring_allreduce_with_link_latency(p):
    a, lat = 1e-6, 2e-6
    t = ring(p, bandwidth=B, latency=lat)
    r = AlphaBeta(alpha=a).evaluate(ring_allreduce(t), t, N)
    assert r.time == pytest.approx(2 * (p - 1) * (a + lat + N / (p * B)), rel=1e-12)


@pytest.mark.parametrize("p", [3, 4, 6, 9])
def test_bidirectional_ring_allreduce_halves_the_bandwidth_term(p):
    a = 2e-6
    t = ring(p, bandwidth=B, latency=0.0)
    r = AlphaBeta(alpha=a).evaluate(bidirectional_ring_allreduce(t), t, N)
    assert r.time == pytest.approx(2 * (p - 1) * (a + N / (2 * p * B)), rel=1e-12)


def test_ring_allreduce_link_loads():
    p = 6
    t = ring(p, bandwidth=B)
    r = AlphaBeta().evaluate(ring_allreduce(t), t, N)
    forward = r.link_load[:p]          # links i -> i+1 come first
    assert np.allclose(forward, 2 * (p - 1) * N / p, rtol=1e-12)
    assert np.all(r.link_load[p:] == 0)
    m = r.link_load_map(t)
    assert m[(0, 1, 0)] == forward[0] and m[(1, 0, p + 1)] == 0.0
    assert len(m) == len(t.links)


def test_large_ring_matches_closed_form():
    p = 512
    t = ring(p, bandwidth=B, latency=1e-6)
    r = AlphaBeta(alpha=1e-6, bound=False).evaluate(ring_allreduce(t), t, 2.0**30)
    assert r.time == pytest.approx(2 * (p - 1) * (2e-6 + 2.0**30 / (p * B)), rel=1e-12)


# ------------------------------------------------------------------ congestion, latency
def test_two_transfers_sharing_a_link_take_twice_as_long():
    t = line(3, bandwidth=B, latency=0.0)
    c = allgather(3)                    # chunk bytes N / 3
    alone = _one_step(c, [Transfer(1, 2, (0,))], t)
    shared = _one_step(c, [Transfer(0, 2, (0,)), Transfer(1, 2, (1,))], t)
    apart = _one_step(c, [Transfer(0, 1, (0,)), Transfer(1, 2, (1,))], t)
    assert alone.time == pytest.approx(N / 3 / B, rel=1e-15)
    assert shared.time == pytest.approx(2 * N / 3 / B, rel=1e-15)
    assert apart.time == pytest.approx(N / 3 / B, rel=1e-15)


def test_opposite_directions_do_not_congest():
    t = line(2, bandwidth=B, latency=0.0)
    r = _one_step(allgather(2), [Transfer(0, 1, (0,)), Transfer(1, 0, (1,))], t)
    assert r.time == pytest.approx(N / 2 / B, rel=1e-15)


def test_bytes_are_chunk_count_times_chunk_bytes():
    t = line(2, bandwidth=B, latency=0.0)
    r = _one_step(allgather(4), [Transfer(0, 1, (0, 1, 2))], t)
    assert r.time == pytest.approx(3 * N / 4 / B, rel=1e-15)
    assert r.link_load[0] == pytest.approx(3 * N / 4, rel=1e-15)


def test_multihop_latency_and_forwarding_are_cut_through():
    links = (Link(0, 1, B, 1e-6), Link(1, 2, B, 2e-6), Link(2, 1, B, 1e-6), Link(1, 0, B, 1e-6))
    t = Topology("line3", 3, 0, links, node_latency=(9e-6, 5e-7, 9e-6))
    r = _one_step(allgather(3), [Transfer(0, 2, (0,))], t, alpha=4e-6)
    # alpha + link latencies + forwarding at the middle node + one serialization
    assert r.time == pytest.approx(4e-6 + 3e-6 + 5e-7 + N / 3 / B, rel=1e-14)


def test_star_switch_latency_and_incast():
    t = star(4, bandwidth=B, latency=1e-6, switch_latency=3e-7)
    c = allgather(4)
    one = _one_step(c, [Transfer(0, 3, (0,))], t)
    assert one.time == pytest.approx(2.3e-6 + N / 4 / B, rel=1e-14)
    incast = _one_step(c, [Transfer(i, 3, (i,)) for i in range(3)], t)
    assert incast.time == pytest.approx(2.3e-6 + 3 * N / 4 / B, rel=1e-14)


def test_slowest_transfer_sets_the_step_and_steps_add():
    t = ring(4, bandwidth=B, latency=1e-6)
    c = allgather(4)
    s = Schedule.from_steps(c, [[Transfer(0, 1, (0,)), Transfer(0, 2, (0,))],
                                [],
                                [Transfer(3, 0, (3,))]])
    r = AlphaBeta(alpha=1e-6, bound=False).evaluate(s, t, N)
    # step 0: 0->2 crosses 0->1 (shared with 0->1) then 1->2
    first = 1e-6 + 2e-6 + 2 * N / 4 / B
    assert r.step_times.tolist() == pytest.approx([first, 0.0, 1e-6 + 1e-6 + N / 4 / B],
                                                  rel=1e-14)
    assert r.time == pytest.approx(r.step_times.sum(), rel=1e-15)


def test_self_transfer_costs_alpha_only():
    t = ring(3)
    r = _one_step(allgather(3), [Transfer(1, 1, (1,))], t, alpha=5e-6)
    assert r.time == 5e-6 and r.link_load.sum() == 0


# ------------------------------------------------------------------ routing and paths
def test_routing_override_uses_ecmp():
    cables = [(0, 2), (2, 1), (0, 3), (3, 1)]
    links = [Link(a, b, B, 1e-6) for a, b in cables] + [Link(b, a, B, 1e-6) for a, b in cables]
    t = Topology("two-paths", 2, 2, tuple(links))
    c = allgather(2)
    single = _one_step(c, [Transfer(0, 1, (0,))], t)
    split = _one_step(c, [Transfer(0, 1, (0,))], t, routing="ecmp")
    assert single.time == pytest.approx(2e-6 + N / 2 / B, rel=1e-14)
    assert split.time == pytest.approx(2e-6 + N / 4 / B, rel=1e-14)
    assert split.link_load[:4].tolist() == pytest.approx([N / 4] * 4, rel=1e-15)


def test_explicit_path_replaces_routing():
    t = ring(4, bandwidth=B, latency=1e-6)
    c = allgather(4)
    routed = _one_step(c, [Transfer(0, 2, (0,))], t)
    around = _one_step(c, [Transfer(0, 2, (0,), path=(0, 3, 2))], t)
    assert routed.link_load[[0, 1]].tolist() == [N / 4, N / 4]
    assert around.link_load[[4, 7]].tolist() == [N / 4, N / 4]   # 0->3 and 3->2
    assert around.link_load[[0, 1]].tolist() == [0.0, 0.0]
    mixed = _one_step(c, [Transfer(0, 2, (0,), path=(0, 1, 2)), Transfer(1, 2, (1,))], t)
    assert mixed.time == pytest.approx(2e-6 + 2 * N / 4 / B, rel=1e-14)


def test_bad_explicit_paths():
    t = ring(4)
    c = allgather(4)
    with pytest.raises(TopologyError) as e:
        _one_step(c, [Transfer(0, 2, (0,), path=(0, 2))], t)
    assert e.value.item == "link 0->2"
    with pytest.raises(ScheduleError, match="explicit path runs 0->3"):
        _one_step(c, [Transfer(0, 2, (0,), path=(0, 3))], t)


def test_nodes_outside_the_topology():
    with pytest.raises(ScheduleError, match="node 5 is not in topology"):
        _one_step(allgather(6), [Transfer(0, 5, (0,))], ring(4))


# ------------------------------------------------------------------ batching
def _random_schedule(topology, steps=12, per_step=9, seed=0, paths=False):
    rng = np.random.default_rng(seed)
    b = ScheduleBuilder(allgather(topology.num_ranks, split=4))
    for s in range(steps):
        b.new_step()
        if s % 5 == 3:
            continue  # an empty step
        for _ in range(per_step):
            u, v = (int(x) for x in rng.integers(0, topology.num_ranks, 2))
            k = int(rng.integers(1, 4))
            path = topology.path(u, v) if paths and rng.random() < 0.3 else None
            b.add(u, v, rng.integers(0, 4 * topology.num_ranks, k), path=path)
    return b.build()


@pytest.mark.parametrize("routing", ["shortest", "ecmp"])
@pytest.mark.parametrize("paths", [False, True])
def test_batching_does_not_change_results(monkeypatch, routing, paths):
    t = torus((3, 4), bandwidth=B, latency=1e-6)
    s = _random_schedule(t, paths=paths)
    ref = AlphaBeta(alpha=1e-6, routing=routing, bound=False).evaluate(s, t, N)
    monkeypatch.setattr(ab, "TRANSFERS_PER_BATCH", 4)  # multi-step batches and split steps
    monkeypatch.setattr(ab, "LOAD_CELLS_PER_BATCH", 3 * len(t.links))
    monkeypatch.setattr(ab, "DENSE_PAIR_TABLE", 0)      # the sorted pair index
    got = AlphaBeta(alpha=1e-6, routing=routing, bound=False).evaluate(s, t, N)
    assert got.step_times.tolist() == pytest.approx(ref.step_times.tolist(), rel=1e-13)
    assert got.link_load.tolist() == pytest.approx(ref.link_load.tolist(), rel=1e-13)
    assert ref.step_times[3] == 0.0 and (ref.step_times[[0, 1, 2, 4]] > 1e-6).all()


def test_explicit_shortest_paths_cost_the_same_as_routing():
    t = torus((3, 4), bandwidth=B, latency=1e-6)
    s = _random_schedule(t, seed=3, paths=True)
    plain = s.replace(path_ptr=None, path_nodes=None)
    a = AlphaBeta(bound=False).evaluate(s, t, N)
    b = AlphaBeta(bound=False).evaluate(plain, t, N)
    assert a.step_times.tolist() == pytest.approx(b.step_times.tolist(), rel=1e-13)


# ------------------------------------------------------------------ SimResult
def test_algbw_busbw_follow_nccl_tests():
    p = 8
    t = ring(p, bandwidth=B, latency=0.0)
    r = AlphaBeta().evaluate(ring_allreduce(t), t, N)
    assert r.algbw == pytest.approx(N / r.time, rel=1e-15)
    assert r.busbw == pytest.approx(r.algbw * 2 * (p - 1) / p, rel=1e-15)
    # ring allreduce on a unidirectional fabric reaches busbw = link bandwidth
    assert r.busbw == pytest.approx(B, rel=1e-12)
    g = AlphaBeta().evaluate(ring_allgather(t), t, N)
    assert g.busbw == pytest.approx(g.algbw * (p - 1) / p, rel=1e-15)
    assert g.busbw == pytest.approx(B, rel=1e-12)
    bc = SimResult(2.0, np.ones(2), np.zeros(1), "x", 10.0, "broadcast", 4)
    assert bc.busbw == bc.algbw == 5.0 and bc.bound_fraction is None


def test_result_fields_and_dict():
    t = ring(4, bandwidth=B)
    r = AlphaBeta(alpha=1e-6).evaluate(ring_allreduce(t), t, N)
    assert r.model == "alphabeta" and r.collective_kind == "allreduce" and r.num_ranks == 4
    assert r.message_bytes == N and 0 < r.bound_fraction <= 1
    d = json.loads(json.dumps(r.to_dict()))
    assert d["time_s"] == r.time and d["busbw_Bps"] == r.busbw
    assert len(d["step_times_s"]) == 6 and len(d["link_load_bytes"]) == len(t.links)
    assert isinstance(AlphaBeta(), CostModel)


def test_empty_schedule_and_zero_bytes():
    t = ring(3)
    empty = ScheduleBuilder(broadcast(3)).build()
    r = AlphaBeta(alpha=1e-6).evaluate(empty, t, N)
    assert r.time == 0.0 and r.step_times.shape == (0,) and r.algbw == float("inf")
    s = ring_allreduce(t)
    z = AlphaBeta(alpha=1e-6).evaluate(s, t, 0)
    assert z.time == pytest.approx(4 * (1e-6 + 1e-6), rel=1e-14)


def test_parameter_validation():
    with pytest.raises(ValueError):
        AlphaBeta(alpha=-1.0)
    with pytest.raises(TopologyError):
        AlphaBeta(routing="adaptive")
    with pytest.raises(ValueError):
        AlphaBeta().evaluate(ring_allreduce(ring(3)), ring(3), -5)
    assert allreduce(2).kind == "allreduce"
