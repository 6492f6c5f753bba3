"""Link loads: ECMP and single-path routing against closed forms and brute force."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from topocoll.errors import InputError
from topocoll.fabric import LinkLoads, switch_fabric
from topocoll.topology import Link, Topology
from topocoll.topology.spec import parse_spec


@pytest.mark.parametrize("spec", ["totient:32,d=4", "totient:64,d=6", "ring:9",
                                  "torus:4x4", "totient:128,d=8"])
@pytest.mark.parametrize("routing", ["ecmp", "shortest"])
def test_total_load_is_demand_times_hops_and_diameter_matches_networkx(spec, routing):
    t = parse_spec(spec)
    ll = LinkLoads(t, routing)
    g = nx.DiGraph((lk.src, lk.dst) for lk in t.links)
    assert ll.diameter == nx.diameter(g)
    rng = np.random.default_rng(1)
    D = rng.random((2, t.num_ranks, t.num_ranks))
    loads = ll.route(D)
    hops = np.array([[nx.shortest_path_length(g, s, u) for u in range(t.num_ranks)]
                     for s in range(t.num_ranks)])
    for p in range(2):
        assert loads[:, p].sum() == pytest.approx((D[p] * hops).sum(), rel=1e-9)


def test_ecmp_splits_equally_and_shortest_takes_one_path():
    t = parse_spec("ring:4,bw=1GB/s")
    d = np.zeros((1, 4, 4))
    d[0, 0, 2] = 2e9
    ecmp = LinkLoads(t, "ecmp").route(d)[:, 0]
    one = LinkLoads(t, "shortest").route(d)[:, 0]
    assert sorted(ecmp[ecmp > 0]) == [1e9] * 4
    assert sorted(one[one > 0]) == [2e9, 2e9]


def test_switch_uplinks_carry_row_and_column_sums():
    n = 6
    ll = LinkLoads(switch_fabric(n, 1e9))
    D = np.arange(n * n, dtype=float).reshape(1, n, n)
    np.fill_diagonal(D[0], 0)
    loads = ll.route(D)[:, 0]
    for r in range(n):
        assert loads[ll.index[(r, n)]] == pytest.approx(D[0, r].sum())
        assert loads[ll.index[(n, r)]] == pytest.approx(D[0, :, r].sum())


def test_parallel_links_merge_and_errors_name_the_item():
    t = Topology("two", 2, 0, (Link(0, 1, 1e9), Link(0, 1, 2e9), Link(1, 0, 1e9)))
    ll = LinkLoads(t)
    assert ll.capacity[ll.index[(0, 1)]] == 3e9
    with pytest.raises(InputError) as e:
        LinkLoads(t, "valiant")
    assert e.value.item == "routing"
    with pytest.raises(InputError):
        ll.route(np.zeros((1, 3, 3)))


def test_parallel_ports_count_once_per_neighbour_under_ecmp():
    # node 0 reaches rank 3 through node 1 (two parallel links) or node 2 (one): the merged
    # fabric splits per neighbour (1/2 each), not per port (2/3 and 1/3)
    cables = [(0, 1), (0, 1), (0, 2), (1, 3), (2, 3)]
    links = [Link(a, b, 1e9) for a, b in cables] + [Link(b, a, 1e9) for a, b in cables]
    ll = LinkLoads(Topology("ports", 4, 0, tuple(links)))
    assert ll.capacity[ll.index[(0, 1)]] == 2e9
    d = np.zeros((1, 4, 4))
    d[0, 0, 3] = 1.0
    loads = ll.route(d)[:, 0]
    assert loads[ll.index[(0, 1)]] == loads[ll.index[(0, 2)]] == 0.5


@pytest.mark.parametrize("spec", ["totient:32,d=4", "fat-tree:4", "torus:4x4"])
def test_hashed_paths_are_shortest_and_inside_the_split_route(spec):
    ll = LinkLoads(parse_spec(spec))
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, ll.n, (60, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    ptr, link, frac = ll.flow_routes(pairs)
    hptr, hlink, hfrac = ll.flow_routes(pairs, hashed=True, seed=5)
    assert (hfrac == 1.0).all()
    for f, (s, t) in enumerate(pairs.tolist()):
        path = hlink[hptr[f]:hptr[f + 1]]
        assert len(path) == ll.dist[t, s]
        nodes = [s] + [ll.keys[k][1] for k in path]
        assert [ll.keys[k][0] for k in path] == nodes[:-1] and nodes[-1] == t
        assert set(path.tolist()) <= set(link[ptr[f]:ptr[f + 1]].tolist())
        leaving = np.array([ll.keys[k][0] == s for k in link[ptr[f]:ptr[f + 1]]])
        assert frac[ptr[f]:ptr[f + 1]][leaving].sum() == pytest.approx(1.0)
    again = ll.flow_routes(pairs, hashed=True, seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(again, (hptr, hlink, hfrac), strict=True))
