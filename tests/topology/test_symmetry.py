"""Rank symmetry (automorphisms, member orbits, transversal) and the orbit-reduced timed
LP: it must equal the LP over every root."""

from __future__ import annotations

import pytest

from topocoll.topology import Link, Topology, mesh, ring
from topocoll.topology.spec import parse_spec
from topocoll.topology.symmetry import rank_symmetry
from topocoll.topology.timedlp import timed_lp


def _bundles(t: Topology) -> dict:
    out: dict = {}
    for lk in t.links:
        b = out.setdefault((lk.src, lk.dst), [0.0, lk.latency])
        b[0] += lk.bandwidth
        b[1] = min(b[1], lk.latency)
    return {k: tuple(v) for k, v in out.items()}


def _check_maps(t: Topology, sym) -> None:
    bundles = _bundles(t)
    for r, g in sym.maps.items():
        assert int(g[sym.rep_of[r]]) == r
        assert sorted(g.tolist()) == list(range(t.num_nodes))           # a permutation
        assert all(int(g[v]) < t.num_ranks for v in range(t.num_ranks))  # ranks to ranks
        image = {(int(g[a]), int(g[b])): v for (a, b), v in bundles.items()}
        assert image == bundles          # every bundle to one of equal bandwidth, latency


@pytest.mark.parametrize("spec,orbits", [
    ("ring:6", 1), ("uniring:5", 1), ("line:8", 4), ("mesh:3x3", 3), ("mesh:3x3x3", 4),
    ("hypercube:4", 1), ("fattree:k=4", 1), ("dgx-a100:2", 1), ("mi250:2", 1),
    ("leafspine:leaves=4,spines=2,hosts=4", 1), ("star:6", 1),
    ("random:8,spread=10,density=0.6,seed=3", 8),
])
def test_orbits_and_maps(spec, orbits):
    t = parse_spec(spec)
    sym = rank_symmetry(t)
    assert len(sym.reps) == orbits
    assert sorted(r for rep in sym.reps for r in sym.orbit(rep)) == list(range(t.num_ranks))
    _check_maps(t, sym)


def test_heterogeneous_link_breaks_the_symmetry():
    # a ring of 6 whose cable 0-1 is slow keeps only the mirror through that cable
    base = ring(6, bandwidth=4.0)
    links = [Link(lk.src, lk.dst, 1.0 if {lk.src, lk.dst} == {0, 1} else lk.bandwidth,
                  lk.latency) for lk in base.links]
    t = Topology("slow-ring", 6, 0, tuple(links))
    sym = rank_symmetry(t)
    assert {sym.orbit(r) for r in sym.reps} == {(0, 1), (2, 5), (3, 4)}
    _check_maps(t, sym)


def test_group_members_map_to_members():
    sym = rank_symmetry(ring(6), ranks=[0, 1, 2])
    assert {sym.orbit(r) for r in sym.reps} == {(0, 2), (1,)}
    assert rank_symmetry(mesh((3, 3)), enabled=False).reps == tuple(range(9))


@pytest.mark.parametrize("spec,H", [("ring:5", 4), ("hypercube:3", 3), ("mesh:3x3", 4),
                                    ("star:5", 2), ("fattree:k=4", 2)])
def test_orbit_lp_equals_the_full_lp(spec, H):
    # the optimum is attained by a symmetric solution, so pricing one root per orbit
    # loses nothing; both LPs are solved here to their stopping rules
    t = parse_spec(spec)
    full = timed_lp(t, steps=H, symmetry=False, max_iterations=400)
    red = timed_lp(t, steps=H, max_iterations=400)
    assert red.value == pytest.approx(full.value, rel=2e-3)
    assert red.value >= red.bound * (1 - 1e-9)
    for r in red.members:                      # the images give every root its trees
        share = sum(x for tr, x in zip(red.trees, red.share, strict=True) if tr.root == r)
        assert share == pytest.approx(1.0)
