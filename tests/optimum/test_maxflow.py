"""Exact cut optima by max-flow against brute-force cut enumeration (Fractions)."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from topocoll.collective import allgather, allreduce, broadcast, reduce, reduce_scatter
from topocoll.errors import NotSupportedError, TopologyError
from topocoll.optimum.cuts import cut_bound
from topocoll.optimum.maxflow import (
    allgather_optimum,
    broadcast_optimum,
    capacity_graph,
    max_flow,
    separating_cut,
)
from topocoll.topology import Link, Topology, parse_spec, ring, torus


def _random_graph(seed: int, *, switches: int = 0) -> Topology:
    """A connected random digraph on <= 12 nodes with integer-Gbps bandwidths."""
    rng = random.Random(seed)
    n_r = rng.randint(3, 9 - switches)
    n = n_r + switches
    links = []
    for i in range(n):  # a ring backbone keeps it strongly connected
        j = (i + 1) % n
        links.append(Link(i, j, rng.randint(1, 100) * 1.25e8))
        links.append(Link(j, i, rng.randint(1, 100) * 1.25e8))
    for _ in range(rng.randint(0, 2 * n)):
        i, j = rng.sample(range(n), 2)
        links.append(Link(i, j, rng.randint(1, 100) * 1.25e8))
    return Topology(f"rand{seed}", n_r, switches, tuple(links))


def _bw(t: Topology) -> dict[tuple[int, int], Fraction]:
    out: dict[tuple[int, int], Fraction] = {}
    for lk in t.links:
        out[lk.src, lk.dst] = out.get((lk.src, lk.dst), Fraction(0)) + Fraction(repr(lk.bandwidth))
    return out


def _brute_allgather(t: Topology, reverse: bool = False) -> Fraction:
    """max over node sets A missing a rank of |A ∩ V| / B+(A), by enumeration."""
    bw = _bw(t)
    if reverse:
        bw = {(v, u): c for (u, v), c in bw.items()}
    n, R = t.num_nodes, t.num_ranks
    best = Fraction(0)
    for mask in range(1, 1 << n):
        inside = [(mask >> u) & 1 for u in range(n)]
        k = sum(inside[:R])
        if k == 0 or k == R:
            continue
        out = sum(c for (u, v), c in bw.items() if inside[u] and not inside[v])
        best = max(best, Fraction(k) / out)
    return best


def _brute_min_cut(t: Topology, pred) -> Fraction:
    bw = _bw(t)
    n = t.num_nodes
    best = None
    for mask in range(1, (1 << n) - 1):
        inside = [(mask >> u) & 1 for u in range(n)]
        if not pred(inside):
            continue
        out = sum(c for (u, v), c in bw.items() if inside[u] and not inside[v])
        best = out if best is None else min(best, out)
    return best


@pytest.mark.parametrize("seed", range(30))
def test_allgather_optimum_equals_brute_force(seed):
    t = _random_graph(seed, switches=seed % 3)
    for rev in (False, True):
        o = allgather_optimum(t, reverse=rev)
        assert o.value == _brute_allgather(t, rev) / 1  # x* in seconds per byte
        # the reported cut attains it
        g = capacity_graph(t)
        gg = g.reversed() if rev else g
        import numpy as np
        inside = np.zeros(t.num_nodes, dtype=bool)
        inside[list(o.nodes)] = True
        assert Fraction(len(o.cut)) / (gg.out_capacity(inside) * g.unit) == o.value


@pytest.mark.parametrize("seed", range(12))
def test_broadcast_and_separating_cut_equal_brute_force(seed):
    t = _random_graph(100 + seed, switches=seed % 2)
    R = t.num_ranks
    root = seed % R
    b = broadcast_optimum(t, root)
    assert b.value == _brute_min_cut(t, lambda s: s[root] and not all(s[:R]))
    r = broadcast_optimum(t, root, reverse=True)
    assert r.value == _brute_min_cut(t, lambda s: not s[root] and any(s[:R]))
    sep = separating_cut(t)
    assert sep.value == _brute_min_cut(t, lambda s: 0 < sum(s[:R]) < R)


def test_closed_forms_ring_and_torus():
    # ring of N at B per direction: (N-1)/(2B); torus: (N-1)/(2 D B)
    assert allgather_optimum(ring(8, bandwidth=2.0)).value == Fraction(7, 4)
    o = allgather_optimum(torus((4, 4, 4), bandwidth=1.0))
    assert o.value == Fraction(63, 6) and len(o.cut) == 63 and o.max_flows == 1
    assert broadcast_optimum(torus((4, 4), bandwidth=3.0), 5).value == 12


def test_subgroup_and_symmetry_fallback():
    t = ring(6, bandwidth=1.0)
    # ranks 0 and 3 only: other ranks relay; two disjoint paths each way
    o = allgather_optimum(t, ranks=(0, 3))
    assert o.value == Fraction(1, 2)
    links = list(torus((3, 3), bandwidth=1.0).links)
    links[0] = Link(links[0].src, links[0].dst, 0.25)
    t2 = Topology("pert", 9, 0, tuple(links), dims=torus((3, 3)).dims)
    assert allgather_optimum(t2).value == _brute_allgather(t2)


def test_max_flow_and_big_integers_exact():
    v, side = max_flow(capacity_graph(ring(6)), 0, 3)
    assert v == 2 and side[0] and not side[3]
    # decimal bandwidths stay exact
    t = Topology("dec", 3, 0, (Link(0, 1, 1e9 / 3), Link(1, 0, 1.0), Link(1, 2, 7.0),
                               Link(2, 1, 3e9), Link(2, 0, 2.5), Link(0, 2, 1e9 / 7)))
    assert allgather_optimum(t).value == _brute_allgather(t)
    # capacities summing beyond int64 take the exact big-integer (networkx) path
    t = Topology("big", 3, 0, (Link(0, 1, 1e25), Link(1, 0, 1.5), Link(1, 2, 7e24),
                               Link(2, 1, 3e9), Link(2, 0, 2.5), Link(0, 2, 1e20)))
    assert sum(capacity_graph(t).cap) > 2**63
    assert allgather_optimum(t).value == _brute_allgather(t)
    assert broadcast_optimum(t, 1).value == Fraction(4)


def test_cut_bound_exact_method():
    t = parse_spec("dgx:2")
    M = 2.0**30
    for coll in (allgather(t.num_ranks), reduce_scatter(t.num_ranks)):
        exact = cut_bound(coll, t, M, method="exact")
        cand = cut_bound(coll, t, M)
        assert exact.time >= cand.time * (1 - 1e-12)
        assert exact.exact == allgather_optimum(t, reverse=coll.kind == "reduce_scatter").value
        assert exact.time == pytest.approx(float(exact.exact) * M / t.num_ranks)
    ar = cut_bound(allreduce(8), ring(8, bandwidth=1e9), 8e9, method="exact")
    assert ar.time == pytest.approx(4.0) and ar.exact == 2 * 10**9
    bc = cut_bound(broadcast(range(8), root=2), ring(8, bandwidth=1e9), 8e9, method="exact")
    rd = cut_bound(reduce(range(8), root=2), ring(8, bandwidth=1e9), 8e9, method="exact")
    assert bc.time == rd.time == pytest.approx(4.0)
    from topocoll.collective import alltoall
    with pytest.raises(NotSupportedError, match="alltoall"):
        cut_bound(alltoall(4), ring(4), 1e6, method="exact")
    with pytest.raises(TopologyError, match="rank 9"):
        allgather_optimum(ring(4), ranks=(0, 9))


def test_residual_csr_is_the_stable_sort_of_the_arcs():
    """The compiled CSR builder under every FlowGraph gives the arrays of a stable argsort
    by tail (the order the max-flow search visits arcs in, so flows and cuts stay the
    same): random multigraphs with self-loops, isolated nodes and no arcs at all."""
    from topocoll.optimum.maxflow import _residual_csr

    rng = np.random.default_rng(7)
    for _ in range(400):
        n, m = int(rng.integers(1, 25)), int(rng.integers(0, 60))
        src = rng.integers(0, n, m).astype(np.int64)
        dst = rng.integers(0, n, m).astype(np.int64)
        tail, hd = np.concatenate([src, dst]), np.concatenate([dst, src])
        order = np.argsort(tail, kind="stable")
        pos = np.empty(2 * m, dtype=np.int64)
        pos[order] = np.arange(2 * m)
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(tail, minlength=n), out=ptr[1:])
        rev = pos[np.concatenate([np.arange(m, 2 * m), np.arange(m)])[order]]
        got = _residual_csr(n, src, dst)
        for a, b in zip(got, (pos, hd[order], ptr, rev), strict=True):
            assert a.dtype == np.int64 and np.array_equal(a, b)
