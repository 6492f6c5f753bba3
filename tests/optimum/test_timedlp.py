"""The timed LP with per-step alpha and latency in its rows (``timed_lp(block=...)``)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from topocoll.cost import AlphaBeta
from topocoll.optimum.timedlp import invariant_lp, timed_lp
from topocoll.optimum.timedprice import Net
from topocoll.selection import find_algorithm
from topocoll.topology import Link, Topology, ring
from topocoll.topology.spec import parse_spec
from topocoll.verification import verify

M = 2.0**30


def _jittered(spec: str, seed: int) -> Topology:
    """``spec`` with random link latencies and forwarding latency at the switches."""
    t = parse_spec(spec)
    rng = np.random.default_rng(seed)
    links = tuple(Link(lk.src, lk.dst, lk.bandwidth, float(rng.uniform(0.2e-6, 3e-6)))
                  for lk in t.links)
    fwd = tuple(0.0 if v < t.num_ranks else float(rng.uniform(0.1e-6, 1e-6))
                for v in range(t.num_nodes))
    return Topology(t.name, t.num_ranks, t.num_switches, links, fwd, routing=t.routing,
                    meta=dict(t.meta))


def _brute_floor(t: Topology, members: tuple[int, ...], net: Net) -> np.ndarray:
    """Per link bundle the least latency of a simple member-to-member path over it."""
    G = nx.DiGraph()
    G.add_edges_from(zip(net.src.tolist(), net.dst.tolist(), strict=True))
    best = np.full(net.num_links, np.inf)
    for a in members:
        for b in members:
            if a == b:
                continue
            for p in nx.all_simple_paths(G, a, b):
                lat = net.latency(tuple(p))
                for h in net.hops(tuple(p)):
                    best[h] = min(best[h], lat)
    return best


@pytest.mark.parametrize("spec,members", [
    ("leafspine:leaves=2,spines=2,hosts=2", None),
    ("fattree:k=2", None),
    ("mi250:1", (0, 1, 2, 5)),              # non-members forward
])
def test_latency_floor_is_the_least_path_latency(spec, members):
    # equal latencies: the least walk over a link is a simple path
    t = parse_spec(spec)
    g = tuple(range(t.num_ranks)) if members is None else members
    net = Net(t, g, False)
    assert np.allclose(net.latency_floor(), _brute_floor(t, g, net), rtol=1e-12, atol=0)


@pytest.mark.parametrize("spec,seed", [("leafspine:leaves=2,spines=2,hosts=2", 1),
                                       ("fattree:k=2", 2), ("mi250:1", 3)])
def test_latency_floor_is_a_floor_under_jittered_latencies(spec, seed):
    # random link latencies and switch forwarding: walks may beat every simple path
    # (leaf -> spine -> back to the same leaf), never the other way round
    t = _jittered(spec, seed)
    g = tuple(range(t.num_ranks))
    net = Net(t, g, False)
    floor, brute = net.latency_floor(), _brute_floor(t, g, net)
    assert np.all(floor <= brute * (1 + 1e-12))
    assert np.isclose(floor, brute, rtol=1e-12).sum() >= net.num_links // 2


def test_latency_floor_of_mi250_nics_and_fabric():
    net = Net(parse_spec("mi250:2"), None, False)
    floor = net.latency_floor()
    nic = (net.src == 16) | (net.dst == 16)            # the shared fabric switch
    assert np.allclose(floor[nic], 2e-6) and np.allclose(floor[~nic], 1e-6)


@pytest.mark.parametrize("alpha", [0.0, 3e-6])
def test_equal_floors_shift_the_lp_by_one_overhead_per_step(alpha):
    # every link of a ring has the same floor (its own latency), so the rows all move by
    # the same amount: the optimum is the bandwidth LP plus H (alpha + latency) per block
    t = ring(6, bandwidth=10e9, latency=2e-6)
    block, H = 1e6, 4
    bw = timed_lp(t, steps=H)
    lat = timed_lp(t, steps=H, block=block, alpha=alpha)
    assert lat.value * block == pytest.approx(bw.value * block + H * (alpha + 2e-6), rel=1e-9)
    inv = invariant_lp(t, steps=H, block=block, alpha=alpha)
    assert inv.value == pytest.approx(lat.value, rel=1e-9)


def test_lp_with_latency_is_a_floor_of_every_step_count():
    # sum_s tau_s >= bound + H (alpha + least route latency) / b, whatever the trees
    t = parse_spec("mi250:1")
    block, alpha = M / 8, 1e-6
    least = float(Net(t, None, False).latency_floor().min())
    for H in (3, 5):
        lp = timed_lp(t, steps=H, block=block, alpha=alpha)
        assert lp.value * block >= lp.bound * block + H * (alpha + least) * (1 - 1e-9)


def test_mi250_two_boxes_charges_latency_in_the_lp():
    # both the box cut and every GCD's in-links are tight at 1 GiB, so the bandwidth-only
    # LP wants many steps (22: 1.0227 of the bound by the cost model); with the NIC's two
    # hops of latency in its rows it settles near 20 steps at 1.019 (certified floor of
    # every barrier-step allgather: 1.0118, tests/optimal/test_stockbound.py)
    t = parse_spec("mi250:2")
    s = find_algorithm("optimal", "allgather")(t, pipeline="timed")
    assert verify(s, t).ok
    from topocoll.collective import make_collective
    from topocoll.optimum.cuts import cut_bound

    ex = cut_bound(make_collective("allgather", tuple(range(16))), t, M, method="exact").time
    ratio = AlphaBeta(bound=False).evaluate(s, t, M).time / ex
    assert 1.0118 <= ratio <= 1.0195


def test_links_beyond_the_hop_limit_charge_nothing():
    # dgx-h100:2 with paths of two links: NVSwitch and NIC-switch links (2 us floors) are
    # usable, the links between the NIC switches (4 us) are not, so every usable row moves
    # by the same alpha + 2 us and the optimum is the bandwidth LP's plus H of them
    t = parse_spec("dgx-h100:2")
    net = Net(t, None, False)
    usable = net.usable(2)
    assert np.allclose(net.latency_floor()[usable], 2e-6)
    assert np.allclose(net.latency_floor()[~usable], 4e-6) and (~usable).any()
    assert net.usable(4).all()
    block, H, alpha = M / 16, 4, 1e-6
    bw = timed_lp(t, steps=H, hops=2)
    lat = timed_lp(t, steps=H, hops=2, block=block, alpha=alpha)
    assert lat.value * block == pytest.approx(bw.value * block + H * (alpha + 2e-6), rel=1e-9)


def test_bad_block_or_alpha_names_the_field():
    from topocoll.errors import NotSupportedError

    t = ring(4)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(NotSupportedError, match="block"):
            timed_lp(t, steps=2, block=bad)
    with pytest.raises(NotSupportedError, match="alpha"):
        invariant_lp(t, steps=2, block=1e6, alpha=-1e-6)


def _orbits_union_find(net, sym):
    """The union-find link_orbits had (a Python loop: 19 s of a default GPT-3 train)."""
    import numpy as np

    L = net.num_links
    parent = np.arange(L)

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for g in sym.generators:
        for l in range(L):
            m = net.index[int(g[net.src[l]]), int(g[net.dst[l]])]
            ra, rb = find(l), find(m)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    roots = np.array([find(l) for l in range(L)])
    return np.unique(roots, return_inverse=True)[1].astype(np.int64)


@pytest.mark.parametrize("spec", ["torus:4x4", "dgx-a100:2", "fattree:k=4", "hypercube:4",
                                  "mi250:2", "twotier:racks=4,hosts=4,oversub=2"])
def test_link_orbits_equal_the_union_find(spec):
    from topocoll.optimum.timedlp import link_orbits
    from topocoll.optimum.timedprice import Net
    from topocoll.topology.spec import parse_spec
    from topocoll.topology.symmetry import rank_symmetry

    t = parse_spec(spec)
    for reverse in (False, True):
        net = Net(t, None, reverse)
        sym = rank_symmetry(t)
        assert sym.generators, spec
        assert link_orbits(net, sym).tolist() == _orbits_union_find(net, sym).tolist()
