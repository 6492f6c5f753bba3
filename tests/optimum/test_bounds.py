"""optimum.bounds: the latency, injection and cut bounds against closed forms, brute force
over cuts, and every schedule's cost."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from topocoll.collective import allgather, allreduce, broadcast, make_collective, reduce_scatter
from topocoll.cost import AlphaBeta
from topocoll.errors import NotSupportedError, TopologyError
from topocoll.optimum import (
    candidate_cuts,
    cut_bound,
    injection_bound,
    latency_bound,
    lower_bound,
)
from topocoll.selection import algorithms_for
from topocoll.topology import fat_tree, from_matrix, ring, star, torus

B, M = 1e9, 8e9


@pytest.mark.parametrize("p", [3, 4, 7, 8])
def test_injection_bound_closed_forms(p):
    t = ring(p, bandwidth=B)
    # allreduce: 2(p - 1) chunks of M / p leave each rank over egress 2B
    assert injection_bound(allreduce(p), t, M) == pytest.approx(2 * (p - 1) * M / p / (2 * B))
    # allgather: every rank receives p - 1 blocks over ingress 2B
    assert injection_bound(allgather(p), t, M) == pytest.approx((p - 1) * M / p / (2 * B))


@pytest.mark.parametrize("p", [4, 5, 8])
def test_latency_bound_is_alpha_plus_the_diameter(p):
    t = ring(p, latency=1e-6)
    assert latency_bound(allreduce(p), t, alpha=2e-6) == pytest.approx(2e-6 + (p // 2) * 1e-6)
    # broadcast from rank 0 reaches the farthest rank over p // 2 links
    assert latency_bound(broadcast(p, root=0), t) == pytest.approx((p // 2) * 1e-6)


def test_latency_bound_charges_switch_forwarding_not_relaying_ranks():
    t = star(4, latency=1e-6, switch_latency=5e-7)
    assert latency_bound(allgather(4), t) == pytest.approx(2e-6 + 5e-7)


def test_exact_allgather_cut_on_a_ring():
    # one rank against the rest is the critical cut: p - 1 blocks cross two links
    for p in (4, 6, 8):
        cb = cut_bound(allgather(p), ring(p, bandwidth=B), M, method="exact")
        assert cb.time == pytest.approx((p - 1) * M / p / (2 * B))
        assert len(cb.ranks) in (1, p - 1)


def _brute_allgather_optimum(t, members) -> float:
    """max over member subsets A of |V \\ A| blocks entering A / min cut into A (seconds per
    block byte), by networkx minimum cuts with switches free."""
    g = nx.DiGraph()
    for lk in t.links:
        cap = g.get_edge_data(lk.src, lk.dst, {"capacity": 0.0})["capacity"]
        g.add_edge(lk.src, lk.dst, capacity=cap + lk.bandwidth)
    best = 0.0
    for k in range(1, len(members)):
        for A in itertools.combinations(members, k):
            h = g.copy()
            for v in A:
                h.add_edge(v, "sink", capacity=float("inf"))
            for v in set(members) - set(A):
                h.add_edge("src", v, capacity=float("inf"))
            cap = nx.minimum_cut_value(h, "src", "sink")
            best = max(best, (len(members) - k) / cap)
    return best


@pytest.mark.parametrize("seed", range(4))
def test_exact_cut_matches_brute_force_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    n = 5
    bw = np.where(rng.random((n, n)) < 0.6, rng.integers(1, 9, (n, n)) * 1e9, 0.0)
    np.fill_diagonal(bw, 0)
    bw = np.maximum(bw, bw.T)
    for i in range(n):                       # a ring keeps it connected
        bw[i, (i + 1) % n] = bw[(i + 1) % n, i] = max(bw[i, (i + 1) % n], 1e9)
    t = from_matrix(bw)
    cb = cut_bound(allgather(n), t, M, method="exact")
    assert cb.time == pytest.approx(_brute_allgather_optimum(t, list(range(n))) * M / n,
                                    rel=1e-9)


def test_exact_cut_through_switches_on_a_fat_tree():
    t = fat_tree(4, bandwidth=B)
    cb = cut_bound(allgather(16), t, M, method="exact")
    # full bisection: each host receives 15 blocks over its one link
    assert cb.time == pytest.approx(15 * M / 16 / B)


def test_candidate_cuts_never_exceed_the_exact_maximum():
    for t, c in [(torus((4, 4), bandwidth=B), allreduce(16)),
                 (fat_tree(4, bandwidth=B), allgather(16)),
                 (ring(8, bandwidth=B), reduce_scatter(8))]:
        cand = cut_bound(c, t, M).time
        exact = cut_bound(c, t, M, method="exact").time
        assert cand <= exact * (1 + 1e-12)
        assert all(len(x) for x in candidate_cuts(t))


def test_lower_bound_takes_the_largest_part_and_names_it():
    b = lower_bound(allreduce(4), ring(4, bandwidth=B), M)
    assert b.time == max(b.latency, b.injection, b.cut) and b.binding == "injection"
    z = lower_bound(allreduce(4), ring(4, bandwidth=B, latency=1e-6), 0.0)
    assert z.time == 2e-6 and z.binding == "latency"      # no bytes, still two hops
    assert lower_bound(allreduce(4), ring(4, latency=0.0), 0.0).binding == "none"


@pytest.mark.parametrize("kind", ["allreduce", "allgather", "reduce_scatter", "broadcast"])
def test_no_schedule_beats_the_bound(kind):
    for t in (ring(6, bandwidth=B, latency=1e-6), torus((3, 3)), fat_tree(4)):
        coll = make_collective(kind, tuple(range(t.num_ranks)), 1,
                               0 if kind == "broadcast" else None)
        for n in (1e3, 1e8):
            bound = lower_bound(coll, t, n, alpha=1e-6).time
            for syn in algorithms_for(kind):
                if syn.unsupported(t, tuple(range(t.num_ranks))):
                    continue
                try:
                    s = syn(t, **({"root": 0} if kind == "broadcast" else {}))
                except NotSupportedError:
                    continue
                cost = AlphaBeta(alpha=1e-6, bound=False).evaluate(s, t, n).time
                assert cost >= bound * (1 - 1e-9), (syn.name, t.name, n)


def test_bad_input():
    with pytest.raises(TopologyError, match="rank 4"):
        lower_bound(allreduce(10), ring(4), M)
    with pytest.raises(NotSupportedError, match="method"):
        cut_bound(allreduce(4), ring(4), M, method="magic")
    with pytest.raises(NotSupportedError, match="alltoall"):
        cut_bound(make_collective("alltoall", (0, 1, 2, 3)), ring(4), M, method="exact")
    with pytest.raises(TopologyError, match="cut 0"):
        cut_bound(allreduce(4), ring(4), M, cuts=[[7]])


@pytest.mark.parametrize("kind", ["allgather", "reduce_scatter", "allreduce", "broadcast",
                                  "reduce", "alltoall"])
def test_sets_of_every_member_equal_the_collectives_csr(kind):
    """The bounds' sets, made without the collective's member list per chunk where a set
    is every member, equal :func:`member_sets` of that list, field by field."""
    from topocoll.optimum.bound_sets import collective_sets, member_sets
    from topocoll.topology import ring

    for ranks, split in (((3,), 1), ((0, 2, 5), 2), ((1, 4, 6, 7), 3)):
        root = ranks[-1] if kind in ("broadcast", "reduce") else None
        coll = make_collective(kind, ranks, split, root)
        members, pre, post = collective_sets(coll, ring(8))
        assert members.tolist() == sorted(ranks)
        for got, cs in ((pre, coll.pre_sets()), (post, coll.post_sets())):
            want = member_sets(cs, len(ranks))
            for f in ("size", "every", "single", "e_chunk", "e_rank"):
                a, b = getattr(got, f), getattr(want, f)
                assert a.dtype == b.dtype and np.array_equal(a, b), (kind, ranks, f)
    fresh = make_collective("allreduce", (0, 1, 2), 4, None)
    collective_sets(fresh, ring(8))
    assert not {"pre", "post"} & set(fresh._cache)     # no member list per chunk was made
