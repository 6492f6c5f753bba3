"""Weighted Hamiltonian rings on direct-connect fabrics (synth/ring_cover.py)."""

from __future__ import annotations

import numpy as np
import pytest
from _refcheck import assert_correct

from topocoll.collective import make_collective
from topocoll.cost import AlphaBeta
from topocoll.errors import NotSupportedError
from topocoll.optimum.cuts import cut_bound
from topocoll.selection import find_algorithm
from topocoll.synth.ring_cover import (
    hamiltonian_cover,
    ring_cover_allgather,
    ring_cover_allreduce,
    ring_cover_reduce_scatter,
    ring_cover_unsupported_reason,
)
from topocoll.topology import Link, Topology, circulant, torus
from topocoll.topology.spec import parse_spec

M = 2.0**30
FUNCS = {"allgather": ring_cover_allgather, "reduce_scatter": ring_cover_reduce_scatter,
         "allreduce": ring_cover_allreduce}


def _bound(kind, t):
    g = tuple(range(t.num_ranks))
    parts = ("reduce_scatter", "allgather") if kind == "allreduce" else (kind,)
    return sum(cut_bound(make_collective(k, g), t, M, method="exact").time for k in parts)


def _cycle_ok(t, cyc):
    links = {(lk.src, lk.dst) for lk in t.links}
    assert sorted(cyc) == list(range(t.num_ranks))
    for a, b in zip(cyc, cyc[1:] + cyc[:1], strict=True):
        assert (a, b) in links and (b, a) in links


@pytest.mark.parametrize("kind", sorted(FUNCS))
@pytest.mark.parametrize("spec", ["rrg:10,d=3,seed=4", "circulant:9,jumps=1/2",
                                  "torus:3x4", "ring:5"])
def test_correct(spec, kind):
    t = parse_spec(spec)
    s = FUNCS[kind](t, chunks=8)
    assert s.num_steps == (2 if kind == "allreduce" else 1) * (t.num_ranks // 2)
    assert_correct(s)


@pytest.mark.parametrize("spec", ["torus:4x4", "hypercube:4", "rrg:16,d=4,seed=2",
                                  "circulant:12,jumps=1/5", "rrg:32,d=3,seed=1"])
def test_the_cut_bound_plus_one_hop_per_step(spec):
    # every edge equally loaded: the bandwidth term is the single-rank cut bound exactly,
    # the latency floor(p/2) hops of one link
    t = parse_spec(spec)
    cov = hamiltonian_cover(t)
    assert cov.utilisation == pytest.approx(cov.uniform, rel=1e-6)
    for cyc in cov.cycles:
        _cycle_ok(t, list(cyc))
    assert cov.shares.sum() == pytest.approx(1.0)
    s = ring_cover_allgather(t)
    lat = t.links[0].latency
    want = _bound("allgather", t) + (t.num_ranks // 2) * lat
    got = AlphaBeta(bound=False).evaluate(s, t, M).time
    if len(cov.cycles) <= 3:           # shares 1/2 or 1/3: whole chunks, exact
        assert got == pytest.approx(want, rel=1e-9)
    else:
        assert want * (1 - 1e-9) <= got <= want * 1.002


def test_even_degree_decomposes_into_disjoint_cycles():
    t = parse_spec("rrg:64,d=4,seed=1")
    cov = hamiltonian_cover(t)
    assert len(cov.cycles) == 2 and np.allclose(cov.shares, 0.5)
    edges = [frozenset(e) for c in cov.cycles for e in zip(c, c[1:] + c[:1], strict=True)]
    assert len(set(edges)) == len(edges) == 128            # disjoint, every edge once
    s = ring_cover_allgather(t)
    assert AlphaBeta(bound=False).evaluate(s, t, M).time / _bound("allgather", t) < 1.0065


def test_heterogeneous_links_get_shares_by_bandwidth():
    # a 6-rank circulant whose +-1 links are twice as fast: the LP weights cycles so that
    # every edge runs at the same utilisation, the bound of the slowest rank
    base = circulant(6, (1, 2))
    links = tuple(Link(lk.src, lk.dst, lk.bandwidth * (2 if (lk.dst - lk.src) % 6 in (1, 5)
                                                       else 1), lk.latency)
                  for lk in base.links)
    t = Topology("hetero-circulant", 6, 0, links)
    cov = hamiltonian_cover(t)
    assert cov.utilisation >= cov.uniform * (1 - 1e-9)
    assert cov.utilisation == pytest.approx(cov.uniform, rel=1e-4)
    s = ring_cover_allgather(t, chunks=600)
    assert AlphaBeta(bound=False).evaluate(s, t, M).time / _bound("allgather", t) < 1.01


def test_optimal_default_takes_it_on_a_random_regular_graph():
    t = parse_spec("rrg:32,d=3,seed=1")
    s = find_algorithm("optimal", "allgather")(t)
    assert s.meta["pipeline"] == "ring_cover", s.meta
    assert AlphaBeta(bound=False).evaluate(s, t, M).time / _bound("allgather", t) < 1.01


def test_where_it_does_not_apply():
    assert "rank 0" in ring_cover_unsupported_reason(parse_spec("fattree:k=4"), range(16))
    assert "three" in ring_cover_unsupported_reason(torus((2,)), range(2))
    with pytest.raises(NotSupportedError, match="rank 0"):
        ring_cover_allgather(parse_spec("star:5"))
    with pytest.raises(NotSupportedError, match="chunks"):
        ring_cover_allgather(parse_spec("ring:6"), chunks=3)
    # no Hamiltonian cycle, told at once: unequal bipartite sides, a cut rank
    assert "14 and 13" in ring_cover_unsupported_reason(parse_spec("mesh:3x3x3"), range(27))
    bowtie = [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 2)]
    t = Topology("bowtie", 5, 0, tuple(Link(a, b, 1e9) for u, v in bowtie
                                       for a, b in ((u, v), (v, u))))
    assert "rank 2 is a cut vertex" in ring_cover_unsupported_reason(t, range(5))
