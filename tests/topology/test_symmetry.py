"""Rank symmetry (automorphisms, member orbits, transversal) and the orbit-reduced timed
LP: it must equal the LP over every root."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.errors import NotSupportedError
from topocoll.optimum.timedlp import _image, invariant_lp, timed_lp
from topocoll.optimum.timedprice import Net
from topocoll.topology import Link, Topology, mesh, ring
from topocoll.topology.spec import parse_spec
from topocoll.topology.symmetry import rank_symmetry


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


def _group(sym, n: int) -> list:
    """Every automorphism, by closure of the generators (small groups only)."""
    seen = {tuple(range(n))}
    frontier = [np.arange(n)]
    while frontier:
        nxt = []
        for g in frontier:
            for gen in sym.generators:
                h = gen[g]
                if tuple(h) not in seen:
                    seen.add(tuple(h))
                    nxt.append(h)
        frontier = nxt
    return [np.array(g) for g in seen]


@pytest.mark.parametrize("spec,H", [("mi250:1", 3), ("hypercube:3", 2), ("ring:6", 2)])
def test_group_average_realizes_the_invariant_value(spec, H):
    # independent of the LP's row algebra: average the invariant LP's trees over the
    # whole group, load every link per step, and compare the step maxima with its value
    t = parse_spec(spec)
    sym = rank_symmetry(t)
    inv = invariant_lp(t, steps=H)
    net = Net(t, None, False)
    G = _group(sym, t.num_nodes)
    load = np.zeros((H, net.num_links))
    for tr, x in zip(inv.trees, inv.share, strict=True):
        for g in G:
            for _, _, s, pcs in _image(tr, g).arcs:
                for p, f in pcs:
                    h = net.hops(p)
                    load[s - 1, h] += x * f * len(sym.orbit(tr.root)) / len(G) / net.bw[h]
    assert load.max(axis=1).sum() == pytest.approx(inv.value, rel=1e-9)
    assert inv.value >= inv.bound * (1 - 1e-9)


@pytest.mark.parametrize("spec,H", [("hypercube:4", 3), ("ring:8", 3), ("mi250:1", 3)])
def test_two_phases_equal_the_lp_over_every_root(spec, H):
    # cases strictly above the cut bound, where the three LPs could disagree
    t = parse_spec(spec)
    full = timed_lp(t, steps=H, symmetry=False, rows="links", max_iterations=400)
    inv = invariant_lp(t, steps=H)
    two = timed_lp(t, steps=H, invariant=inv)
    assert full.value > full.bound * 1.01
    assert inv.value == pytest.approx(full.value, rel=2e-3)
    assert two.value == pytest.approx(inv.value, rel=1e-6)
    for r in two.members:
        share = sum(x for tr, x in zip(two.trees, two.share, strict=True) if tr.root == r)
        assert share == pytest.approx(1.0)


def test_stabilizer_elements_fix_the_root():
    t = parse_spec("dgx-a100:2")
    sym = rank_symmetry(t)
    hs = sym.stabilizer_elements(5, 64)
    assert len(hs) == 64 and len({h.tobytes() for h in hs}) == 64
    edges = {(lk.src, lk.dst) for lk in t.links}
    for h in hs:
        assert int(h[5]) == 5
        assert {(int(h[a]), int(h[b])) for a, b in edges} == edges


def test_bad_rows_option_names_it():
    with pytest.raises(NotSupportedError, match="rows"):
        timed_lp(ring(4), steps=2, rows="link")


_IGRAPH_PROBE = """
import sys
{pre}
from topocoll.topology import torus
from topocoll.topology.symmetry import rank_symmetry
print(rank_symmetry(torus((4, 4))).reps)
print("matplotlib.pyplot" in sys.modules, sys.modules.get("matplotlib", 0) is None)
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.figure()
import igraph
print(type(igraph.drawing.matplotlib.graph.mpl).__name__)
"""


@pytest.mark.parametrize("pre, pyplot, mpl_in_igraph", [
    ("", False, "FakeModule"),                   # BLISS without igraph's plotting
    ("import matplotlib", True, "module"),       # matplotlib already there: left alone
])
def test_igraph_is_imported_without_pyplot_unless_matplotlib_is_there(pre, pyplot,
                                                                      mpl_in_igraph):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _IGRAPH_PROBE.format(pre=pre)],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "(0,)"                      # a torus: every rank in one orbit
    assert out[1] == f"{pyplot} False"           # matplotlib importable again right after
    assert out[2] == mpl_in_igraph
