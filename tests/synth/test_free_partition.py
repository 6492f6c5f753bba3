"""Tree allreduce LP (column generation) and the free-partition overlapped schedule.

Oracles: closed forms (ring, heterogeneous star), an independent LP over *every*
spanning tree with path choices as multicommodity flows (small graphs), and the
verifier plus the alpha-beta cost of the built schedule.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from topocoll.cost import AlphaBeta
from topocoll.errors import NotSupportedError, TopologyError
from topocoll.optimum.maxflow import capacity_graph
from topocoll.optimum.treelp import prim_tree, tree_allreduce_lp
from topocoll.selection import find_algorithm
from topocoll.synth.adaptive import topology_adaptive_allreduce
from topocoll.synth.free_partition import free_partition_allreduce, quantize
from topocoll.topology import parse_spec, ring
from topocoll.topology.explicit import from_edges
from topocoll.verification import verify

M = 2.0**30


def star_topology(bws):
    return from_edges([(i, len(bws), b, 0.0) for i, b in enumerate(bws)], num_ranks=len(bws),
                      num_switches=1, bidirectional=True)


def brute_force_rate(topology) -> float:
    """max Σ x_τ over all spanning trees τ of K_N; each tree edge routed both ways by a
    free multicommodity flow (so paths are not chosen by shortest paths)."""
    g = capacity_graph(topology)
    V, n = list(g.members), g.num_nodes
    cap = np.array(g.cap, dtype=float) * float(g.unit)
    arcs = list(zip(g.src.tolist(), g.dst.tolist(), strict=True))
    trees = [list(t.edges()) for t in nx.SpanningTreeIterator(nx.complete_graph(V))]
    rows, cols, vals, b_eq_rows = [], [], [], 0
    cap_rows, cap_cols = [], []
    nvar = len(trees)                                   # x_τ first
    eq_r, eq_c, eq_v = [], [], []
    for ti, edges in enumerate(trees):
        for u, v in edges:
            for s, d in ((u, v), (v, u)):
                base = nvar
                nvar += len(arcs)
                for k in range(len(arcs)):
                    cap_rows.append(k)
                    cap_cols.append(base + k)
                # conservation: out - in = x_τ at s, -x_τ at d, 0 elsewhere
                for w in range(n):
                    for k, (a, b) in enumerate(arcs):
                        if a == w:
                            eq_r.append(b_eq_rows + w)
                            eq_c.append(base + k)
                            eq_v.append(1.0)
                        if b == w:
                            eq_r.append(b_eq_rows + w)
                            eq_c.append(base + k)
                            eq_v.append(-1.0)
                    if w in (s, d):
                        eq_r.append(b_eq_rows + w)
                        eq_c.append(ti)
                        eq_v.append(-1.0 if w == s else 1.0)
                b_eq_rows += n
    del rows, cols, vals
    A_ub = coo_matrix((np.ones(len(cap_rows)), (cap_rows, cap_cols)), shape=(len(arcs), nvar))
    A_eq = coo_matrix((eq_v, (eq_r, eq_c)), shape=(b_eq_rows, nvar))
    c = np.zeros(nvar)
    c[:len(trees)] = -1.0
    res = linprog(c, A_ub=A_ub.tocsr(), b_ub=cap / cap.max(), A_eq=A_eq.tocsr(),
                  b_eq=np.zeros(b_eq_rows), bounds=(0, None), method="highs")
    assert res.status == 0
    return -res.fun * cap.max()


@pytest.mark.parametrize("n,bw", [(3, 1e9), (5, 2e9), (8, 50e9), (13, 7e9)])
def test_ring_closed_form(n, bw):
    lp = tree_allreduce_lp(ring(n, bandwidth=bw))
    assert lp.optimal and lp.gap == 0
    assert lp.value == pytest.approx(n * bw / (n - 1), rel=1e-9)


@pytest.mark.parametrize("bws", [[1e9, 8e9, 8e9, 8e9, 8e9],          # slow host binds
                                 [4e9, 5e9, 6e9, 7e9],                # total binds
                                 [1e9, 1e9, 10e9, 10e9, 10e9, 10e9]])
def test_star_closed_form_and_slow_hosts_are_leaves(bws):
    n = len(bws)
    lp = tree_allreduce_lp(star_topology(bws))
    expected = min(min(bws), sum(bws) / (2 * n - 2))
    assert lp.optimal and lp.value == pytest.approx(expected, rel=1e-9)
    # the average degree of host i over the trees, weighted by rate, fits its links
    deg = np.zeros(n)
    for tree, x in zip(lp.trees, lp.rates, strict=True):
        for u, v, _, _ in tree:
            deg[[u, v]] += x
    assert np.all(deg <= np.array(bws) * (1 + 1e-9))
    if min(bws) <= sum(bws) / (2 * n - 2):
        slow = int(np.argmin(bws))
        assert deg[slow] == pytest.approx(lp.value, rel=1e-9)   # degree 1: a leaf
        # X reaches the slow host's links, a member-separating cut: proof by the cut
        assert lp.certificate == "cut"
    else:
        assert lp.certificate == "pricing"
    plain = tree_allreduce_lp(star_topology(bws), use_cut=False)
    assert plain.certificate == "pricing" and plain.value == pytest.approx(lp.value, rel=1e-9)


@pytest.mark.parametrize("spec", ["ring:4", "star:4", "random:4,spread=20,seed=3",
                                  "random:5,spread=10,seed=7", "bimodal:5,frac=0.4,seed=2",
                                  "twotier:racks=2,hosts=2,oversub=3"])
def test_column_generation_matches_the_full_lp_over_all_trees(spec):
    t = parse_spec(spec)
    lp = tree_allreduce_lp(t)
    assert lp.optimal
    assert lp.value == pytest.approx(brute_force_rate(t), rel=1e-7)


def test_early_stop_reports_a_certified_gap():
    t = parse_spec("torus:4x4")
    exact = tree_allreduce_lp(t)
    capped = tree_allreduce_lp(t, max_iterations=1, per_round=1)
    assert exact.optimal and not capped.optimal
    assert capped.value <= exact.value * (1 + 1e-9) <= capped.upper * (1 + 2e-9)
    assert capped.gap == pytest.approx(capped.upper / capped.value - 1)
    # the 4x4 torus: every tree needs 2 * 15 arc uses, 64 arcs of B each
    assert exact.value == pytest.approx(64 * 50e9 / 30, rel=1e-9)


def test_work_cap_stops_like_the_iteration_cap_and_certifies_its_gap():
    # counted work (arcs x trees per master solve), not seconds: the same stop anywhere
    t = parse_spec("random:12,seed=3")
    exact = tree_allreduce_lp(t)
    capped = tree_allreduce_lp(t, work=50_000)
    assert exact.optimal and not capped.optimal
    assert capped.iterations < exact.iterations
    assert capped.value <= exact.value * (1 + 1e-9) <= capped.upper * (1 + 2e-9)
    again = tree_allreduce_lp(t, work=50_000)
    assert (again.iterations, again.value) == (capped.iterations, capped.value)
    s = free_partition_allreduce(t, batches=2, work=50_000)
    assert s.meta["lp_optimal"] == "False" and float(s.meta["lp_gap"]) > 0
    assert verify(s, t).ok


def test_prim_handles_zero_costs_and_rejects_disconnection():
    assert len(prim_tree(np.zeros((4, 4)))) == 3
    c = np.full((3, 3), np.inf)
    c[0, 1] = c[1, 0] = 1.0
    with pytest.raises(TopologyError, match="not strongly connected"):
        prim_tree(c)
    with pytest.raises(TopologyError, match="two ranks"):
        tree_allreduce_lp(ring(4), [2])


@pytest.mark.parametrize("spec", ["ring:6", "dgx:2,gpus=4", "random:8,spread=30,seed=2",
                                  "twotier:racks=3,hosts=2,oversub=2,contention=0.5,keep=0.25,"
                                  "seed=1", "bimodal:8,frac=0.3,slow=1Gbps,seed=4"])
def test_schedule_verifies_and_reaches_the_lp_rate(spec):
    t = parse_spec(spec)
    s = free_partition_allreduce(t, batches=16)
    assert verify(s, t).ok
    rate = float(s.meta["lp_rate_Bps"])
    loss = float(s.meta["rounding_loss"])
    assert 0 <= loss <= 1e-2
    D = int(s.meta["max_depth"])
    # alpha = 0, links' latency only: the P steady steps cost the fluid term exactly
    r = AlphaBeta(alpha=0.0, bound=False).evaluate(s, t, M)
    lat = max(lk.latency for lk in t.links) * 2 * (D + 1) * (16 + 2 * D)
    steady = M / rate * (1 + loss)
    assert steady * (16 - 2 * D + 1) / 16 <= r.time <= steady * (16 + 2 * D - 1) / 16 + lat


def test_free_partitions_beat_fixed_ones_on_heterogeneous_links():
    t = parse_spec("random:8,spread=30,seed=2")
    auto = topology_adaptive_allreduce(t, batches=64)
    fixed = topology_adaptive_allreduce(t, batches=64, partition="fixed")
    assert auto.meta["partition"] == "free" and verify(auto, t).ok
    assert float(auto.meta["fluid_free_s_per_B"]) < float(auto.meta["fluid_fixed_s_per_B"])
    model = AlphaBeta(bound=False)
    assert model.evaluate(auto, t, M).time < 0.7 * model.evaluate(fixed, t, M).time


def test_homogeneous_ring_keeps_fixed_partitions_on_a_tie():
    t = ring(6)
    s = topology_adaptive_allreduce(t, batches=4)
    assert s.meta["partition"] == "fixed"
    # fixed reaches the floor on every free-partition schedule, so 'auto' skips the LP;
    # the LP itself (forced) lands exactly on that floor, which checks the floor
    fixed = float(s.meta["fluid_fixed_s_per_B"])
    assert fixed == pytest.approx(float(s.meta["free_floor_s_per_B"]), rel=1e-9)
    free = topology_adaptive_allreduce(t, batches=4, partition="free")
    rate = float(free.meta["lp_rate_Bps"])
    assert 1 / rate == pytest.approx(fixed, rel=1e-6)


def test_registry_tries_both_partitions_and_rejects_bad_ones():
    syn = find_algorithm("topology_adaptive", "allreduce")
    # 'auto' runs the LP only when it can win (and picks free then); 'fixed' is the
    # shallow alternative that may pipeline better at small sizes
    assert set(syn.tunables["partition"]) == {"auto", "fixed"}
    s = syn(parse_spec("star:4"), partition="free", batches=2)
    assert s.meta["partition"] == "free"
    with pytest.raises(NotSupportedError, match="partition"):
        topology_adaptive_allreduce(ring(4), partition="equal")


def test_quantize_exact_shares_and_rounded_ones():
    use = [{(0, 1): 1}, {(1, 0): 1}, {(0, 1): 1, (1, 0): 1}]
    bw = {(0, 1): 1.0, (1, 0): 1.0}
    n, Q, loss = quantize(np.array([1 / 3, 1 / 3, 1 / 3]), use, bw, 1.5, 64)
    assert n.tolist() == [1, 1, 1] and Q == 3 and loss == pytest.approx(0, abs=1e-12)
    # an optimal split with irrational shares: arcs 0->1 (bw 2) and 1->0 (bw 1), X = 3
    use = [{(0, 1): 1}, {(1, 0): 1}, {(0, 1): 1}]
    bw = {(0, 1): 2.0, (1, 0): 1.0}
    shares = np.array([2 / 3 / np.pi, 1 / 3, 2 / 3 * (1 - 1 / np.pi)])
    n, Q, loss = quantize(shares, use, bw, 3.0, 1 << 14)
    assert n.sum() == Q and 0 <= loss <= 1e-3
    direct = max((n[0] + n[2]) / (2 * Q), n[1] / Q) * 3 - 1
    assert loss == pytest.approx(direct)
