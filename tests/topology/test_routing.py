"""Routing: deterministic paths, bundles, ECMP and spraying, latency, explicit paths."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from topocoll.errors import TopologyError
from topocoll.topology import Link, Topology, ring, star, torus
from topocoll.topology import routing as rt
from topocoll.topology.routing import path_routes, routes, shortest_path_nodes


def _as_dict(r, i):
    links, fracs = r.links(i)
    return dict(zip(links.tolist(), fracs.tolist(), strict=True))


def _dag_topology(lat_by=1e-6):
    """Ranks s=0, t=1; switches a=2, b=3, x=4, y=5. Shortest s->t paths:
    s-a-x-t, s-a-y-t, s-b-y-t (link ids in comments)."""
    cables = [(0, 2, 1e-6), (0, 3, 1e-6),            # 0: s->a, 1: s->b
              (2, 4, 1e-6), (2, 5, 1e-6),            # 2: a->x, 3: a->y
              (3, 5, lat_by),                        # 4: b->y
              (4, 1, 1e-6), (5, 1, 1e-6),            # 5: x->t, 6: y->t
              (1, 0, 1e-6)]                          # 7: t->s (return path)
    links = [Link(a, b, 1e9, lat) for a, b, lat in cables]
    # switches need a way back for the topology to be valid; longer than any s->t path
    links += [Link(2, 0, 1e9), Link(3, 0, 1e9), Link(4, 0, 1e9), Link(5, 0, 1e9)]
    return Topology("dag", 2, 4, tuple(links))


# ------------------------------------------------------------------ deterministic
def test_ring_even_tie_goes_plus_direction():
    t = ring(6)
    assert shortest_path_nodes(t, 0, 3) == (0, 1, 2, 3)
    assert shortest_path_nodes(t, 3, 0) == (3, 4, 5, 0)
    assert shortest_path_nodes(t, 0, 4) == (0, 5, 4)
    assert t.path(1, 1) == (1,)


def test_torus_is_dimension_order():
    t = torus((4, 4))
    assert shortest_path_nodes(t, 0, 10) == (0, 1, 2, 6, 10)
    assert shortest_path_nodes(t, 5, 0) == (5, 4, 0)
    # every route on an 8x8 torus: all dim-0 hops come before all dim-1 hops
    t = torus((8, 8))
    a, b = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    pairs = np.stack([a.ravel(), b.ravel()], axis=1)
    r = routes(t, pairs, "shortest")
    hops = t.hop_distances()[pairs[:, 0], pairs[:, 1]]
    assert np.array_equal(r.hops, hops)
    dims = np.array([lk.dim for lk in t.links])[r.link]
    same_pair = np.repeat(np.arange(len(pairs)), np.diff(r.ptr))
    later = np.diff(dims) < 0
    assert not (later & (same_pair[1:] == same_pair[:-1])).any()
    assert np.all(r.frac == 1.0)


def test_routes_csr_and_self_pairs():
    t = ring(5, latency=2e-6)
    r = routes(t, np.array([[0, 2], [3, 3], [4, 0]]), "shortest")
    assert r.ptr.tolist() == [0, 2, 2, 3]
    assert r.hops.tolist() == [2, 0, 1]
    assert r.link.tolist() == [0, 1, 4]
    assert r.latency.tolist() == pytest.approx([4e-6, 0.0, 2e-6], rel=1e-15)
    assert len(r) == 3
    with pytest.raises(ValueError):
        r.link[0] = 1  # read-only


def test_latency_counts_intermediate_forwarding_only():
    links = (Link(0, 1, 1e9, 1e-6), Link(1, 2, 1e9, 2e-6), Link(2, 1, 1e9, 1e-6),
             Link(1, 0, 1e9, 1e-6))
    t = Topology("line3", 3, 0, links, node_latency=(7e-7, 5e-7, 3e-7))
    for policy in ("shortest", "ecmp", "spray"):
        r = routes(t, [[0, 2], [0, 1], [2, 0]], policy)
        assert r.latency.tolist() == pytest.approx([3e-6 + 5e-7, 1e-6, 2e-6 + 5e-7], rel=1e-14)


def test_star_switch_latency():
    t = star(4, latency=1e-6, switch_latency=3e-7)
    r = routes(t, [[0, 3]], "shortest")
    assert r.latency[0] == pytest.approx(2.3e-6, rel=1e-14)
    assert shortest_path_nodes(t, 0, 3) == (0, 4, 3)


def test_bundle_split_by_bandwidth_and_ecmp_per_port():
    links = (Link(0, 1, 1e9, 1e-6), Link(0, 1, 3e9, 2e-6), Link(1, 0, 1e9))
    t = Topology("bundle", 2, 0, links)
    assert _as_dict(routes(t, [[0, 1]], "shortest"), 0) == {0: 0.25, 1: 0.75}
    assert _as_dict(routes(t, [[0, 1]], "ecmp"), 0) == {0: 0.5, 1: 0.5}
    assert _as_dict(routes(t, [[0, 1]], "spray"), 0) == {0: 0.5, 1: 0.5}
    for policy in ("shortest", "ecmp", "spray"):  # a bundle costs its slowest member
        assert routes(t, [[0, 1]], policy).latency[0] == 2e-6


def test_bundle_inside_a_multihop_route():
    links = (Link(0, 1, 1e9), Link(1, 2, 1e9), Link(1, 2, 1e9), Link(2, 0, 1e9))
    t = Topology("tri", 3, 0, links)
    r = routes(t, [[0, 2]], "shortest")
    assert _as_dict(r, 0) == {0: 1.0, 1: 0.5, 2: 0.5}
    assert r.hops[0] == 2


def test_ecmp_two_paths_split_evenly():
    cables = [(0, 2), (2, 1), (0, 3), (3, 1)]
    links = [Link(a, b, 1e9) for a, b in cables] + [Link(b, a, 1e9) for a, b in cables]
    t = Topology("two-paths", 2, 2, tuple(links))
    assert _as_dict(routes(t, [[0, 1]], "ecmp"), 0) == {0: 0.5, 2: 0.5, 1: 0.5, 3: 0.5}
    assert _as_dict(routes(t, [[0, 1]], "shortest"), 0) == {0: 1.0, 1: 1.0}


def test_ecmp_and_spray_differ_on_asymmetric_dag():
    t = _dag_topology(lat_by=5e-6)
    ecmp = _as_dict(routes(t, [[0, 1]], "ecmp"), 0)
    # per hop: s splits 1/2 : 1/2; a splits its 1/2 into 1/4 : 1/4; b sends 1/2 to y
    assert ecmp == pytest.approx({0: .5, 1: .5, 2: .25, 3: .25, 4: .5, 5: .25, 6: .75}, rel=1e-15)
    spray = _as_dict(routes(t, [[0, 1]], "spray"), 0)
    # three paths s-a-x-t, s-a-y-t, s-b-y-t, one third each
    third = 1 / 3
    assert spray == pytest.approx({0: 2 * third, 1: third, 2: third, 3: third, 4: third,
                                   5: third, 6: 2 * third}, rel=1e-15)
    assert _as_dict(routes(t, [[0, 1]], "shortest"), 0) == {0: 1.0, 2: 1.0, 5: 1.0}
    # multipath latency is that of the slowest path used (s-b-y-t: 1 + 5 + 1 us)
    assert routes(t, [[0, 1]], "ecmp").latency[0] == pytest.approx(7e-6, rel=1e-14)
    assert routes(t, [[0, 1]], "spray").latency[0] == pytest.approx(7e-6, rel=1e-14)
    assert routes(t, [[0, 1]], "shortest").latency[0] == pytest.approx(3e-6, rel=1e-14)


def _brute(t, s, d, spray):
    """All shortest link sequences, then the expected fractions by definition."""
    g = t.to_networkx()
    dist = nx.single_source_shortest_path_length(g.reverse(copy=True), d)
    frac: dict[int, float] = {}
    paths = []

    def down(u):
        return [(v, k) for _, v, k in g.out_edges(u, keys=True) if dist.get(v, -9) == dist[u] - 1]

    def walk(u, acc, f):
        if u == d:
            paths.append(acc)
            return
        nxt = down(u)
        for v, k in nxt:
            if not spray:
                frac[k] = frac.get(k, 0.0) + f / len(nxt)
            walk(v, acc + [k], f / len(nxt))

    walk(s, [], 1.0)
    if spray:
        for p in paths:
            for k in p:
                frac[k] = frac.get(k, 0.0) + 1 / len(paths)
    return frac, len(paths[0])


@pytest.mark.parametrize("seed", range(6))
def test_multipath_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n_ranks, n_sw = 5, 2
    n = n_ranks + n_sw
    perm = rng.permutation(n)
    links = [Link(int(perm[i]), int(perm[(i + 1) % n]), 1e9) for i in range(n)]
    for _ in range(2 * n):
        a, b = (int(x) for x in rng.integers(0, n, 2))
        if a != b:
            links.append(Link(a, b, float(rng.integers(1, 4)) * 1e9))
    t = Topology("random", n_ranks, n_sw, tuple(links))
    pairs = np.array([(a, b) for a in range(n) for b in range(n) if a != b])
    for policy in ("ecmp", "spray"):
        r = routes(t, pairs, policy)
        for i, (a, b) in enumerate(pairs):
            expected, hops = _brute(t, a, b, policy == "spray")
            assert r.hops[i] == hops
            assert _as_dict(r, i) == pytest.approx(expected, rel=1e-12)


# ------------------------------------------------------------------ explicit paths
def test_path_routes_bundle_latency_and_missing_link():
    links = (Link(0, 1, 1e9, 1e-6), Link(0, 1, 1e9, 1e-6), Link(1, 2, 1e9, 2e-6),
             Link(2, 0, 1e9, 1e-6))
    t = Topology("tri", 3, 0, links, node_latency=(0.0, 4e-7, 0.0))
    pp, nodes = np.array([0, 3, 5]), np.array([0, 1, 2, 2, 0])
    r = path_routes(t, pp, nodes, np.array([0, 1]))
    assert _as_dict(r, 0) == {0: 0.5, 1: 0.5, 2: 1.0}
    assert r.latency.tolist() == pytest.approx([3.4e-6, 1e-6], rel=1e-14)
    assert r.hops.tolist() == [2, 1]
    with pytest.raises(TopologyError, match="no link 1->0") as e:
        path_routes(t, np.array([0, 2]), np.array([1, 0]), np.array([0]))
    assert e.value.item == "link 1->0"


# ------------------------------------------------------------------ errors, cache, scale
def test_errors():
    t = ring(4)
    with pytest.raises(TopologyError, match="routing"):
        routes(t, [[0, 1]], "random")
    with pytest.raises(TopologyError, match="node 9"):
        routes(t, [[0, 9]])
    with pytest.raises(TopologyError, match="shape"):
        routes(t, [0, 1])
    with pytest.raises(TopologyError, match="node -1"):
        shortest_path_nodes(t, -1, 2)


def test_results_are_memoized_and_bounded():
    t = ring(8)
    a = routes(t, [[0, 3]], "shortest")
    assert routes(t, np.array([[0, 3]]), "shortest") is a
    assert routes(t, [[0, 3]], "ecmp") is not a
    for k in range(rt.CACHE_SIZE + 2):
        routes(t, [[0, k % 8]], "spray")
    assert len(t._cache["routes"]) == rt.CACHE_SIZE


def test_neighbour_pairs_of_a_4096_ring_need_no_search(monkeypatch):
    # one-hop pairs are their link (a lookup); no breadth-first search runs for them
    def no_search(*args):
        raise AssertionError("a search ran for one-hop pairs")

    monkeypatch.setattr(rt, "_nearest", no_search)
    monkeypatch.setattr(rt, "_bfs", no_search)
    t = ring(4096)
    r = np.arange(4096)
    pairs = np.stack([r, (r + 1) % 4096], axis=1)
    out = routes(t, pairs, "shortest")
    assert out.link.tolist() == r.tolist()  # link i is i -> i+1


def test_small_blocks_give_the_same_routes(monkeypatch):
    t = torus((4, 6))
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, 24, size=(200, 2))
    ref = {p: routes(t, pairs, p) for p in ("shortest", "ecmp", "spray")}
    monkeypatch.setattr(rt, "BLOCK_ELEMENTS", 1)
    t2 = torus((4, 6))
    for p, r in ref.items():
        r2 = routes(t2, pairs, p)
        assert np.array_equal(r.ptr, r2.ptr) and np.array_equal(r.link, r2.link)
        assert np.array_equal(r.frac, r2.frac) and np.array_equal(r.latency, r2.latency)


@pytest.mark.parametrize("spec", ["torus:5x4", "fattree:k=4", "dgx-h100:2", "mesh:3x5",
                                  "leafspine:leaves=4,spines=3,hosts=2", "hypercube:4"])
def test_shortest_routes_take_the_lowest_link_towards_the_target(spec):
    """Every hop of a deterministic route is the lowest-index link that leaves the current
    node for one a hop closer to the destination (distances from networkx), on all pairs
    of nodes, switches included; a bundle of parallel links is routed whole."""
    from topocoll.topology.spec import parse_spec

    t = parse_spec(spec)
    n = t.num_nodes
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True))
    to = {d: nx.single_source_shortest_path_length(g.reverse(copy=False), d) for d in range(n)}
    out_links = {}
    for k, (a, b) in enumerate(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True)):
        out_links.setdefault(a, []).append((k, b))
    pairs = np.array([(a, b) for a in range(n) for b in range(n) if a != b])
    r = routes(t, pairs, "shortest")
    for i, (a, b) in enumerate(pairs.tolist()):
        links, _ = r.links(i)
        cur, want = a, []
        while cur != b:
            k, nxt = min((k, h) for k, h in out_links[cur] if to[b].get(h, -9) == to[b][cur] - 1)
            want.append({k2 for k2, h2 in out_links[cur] if h2 == nxt})  # the whole bundle
            cur = nxt
        assert int(r.hops[i]) == len(want) == to[b][a]
        got = links.tolist()
        assert set(got) == set().union(*want), (spec, a, b)


# ----------------------------------------------------------------- spread_paths
def _all_shortest(t, s, d):
    g = nx.DiGraph()
    g.add_edges_from(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True))
    return {tuple(p) for p in nx.all_shortest_paths(g, s, d)}


@pytest.mark.parametrize("spec,s,d", [("fattree:k=4", 0, 15), ("fattree:k=4", 0, 3),
                                      ("leafspine:leaves=4,spines=3,hosts=2", 0, 7),
                                      ("hypercube:3", 0, 7)])
def test_spread_paths_cover_every_shortest_path_evenly(spec, s, d):
    from topocoll.topology import parse_spec
    from topocoll.topology.routing import spread_paths

    t = parse_spec(spec)
    want = _all_shortest(t, s, d)
    n = len(want)
    ptr, nodes, span = spread_paths(t, [[s, d]] * (2 * n), np.arange(2 * n), spans=True)
    got = [tuple(nodes[ptr[k]:ptr[k + 1]].tolist()) for k in range(2 * n)]
    assert set(got) == want                       # networkx's set of shortest paths
    assert all(got.count(p) == 2 for p in want)   # each exactly twice in 2n choices
    assert span.tolist() == [n] * (2 * n)


def test_spread_paths_branch_per_hop_where_paths_differ():
    """Uneven branching (s-a-x-t, s-a-y-t, s-b-y-t): like per-hop ECMP, not spraying."""
    from topocoll.topology.routing import spread_paths

    t = _dag_topology()
    ptr, nodes, span = spread_paths(t, [[0, 1]] * 4, [0, 1, 2, 3], spans=True)
    got = [nodes[ptr[k]:ptr[k + 1]].tolist() for k in range(4)]
    assert got == [[0, 2, 4, 1], [0, 3, 5, 1], [0, 2, 5, 1], [0, 3, 5, 1]]
    assert span.tolist() == [4, 2, 4, 2]
    ptr, nodes = spread_paths(torus((4, 4)), [[0, 10]] * 30, np.arange(30))
    paths = {tuple(nodes[ptr[k]:ptr[k + 1]].tolist()) for k in range(30)}
    assert paths <= _all_shortest(torus((4, 4)), 0, 10) and len(paths) > 4
    ptr, nodes = spread_paths(t, [[1, 1]], [5])
    assert nodes[ptr[0]:ptr[1]].tolist() == [1]


def test_spread_paths_bad_input_names_the_field():
    from topocoll.topology import parse_spec
    from topocoll.topology.routing import spread_paths

    t = parse_spec("fattree:k=4")
    with pytest.raises(TopologyError, match="choice") as e:
        spread_paths(t, [[0, 1]], [-1])
    assert e.value.item == "choice"
    with pytest.raises(TopologyError, match="entries"):
        spread_paths(t, [[0, 1], [1, 0]], [0])
    with pytest.raises(TopologyError) as e:
        spread_paths(t, [[0, 99]], [0])
    assert e.value.item == "node 99"


@pytest.mark.parametrize("spec", ["fattree:k=4", "dgx:2", "torus:4x4", "ring:7",
                                  "leafspine:leaves=4,spines=2,hosts=4", "dgx-h100:2",
                                  "twotier:racks=3,hosts=4,spines=2"])
def test_shortest_path_sets_equal_networkx_all_shortest_paths(spec):
    """The explicit path sets DLCP's engine reads, against networkx's enumeration (every
    minimum-hop node path, sorted, the first ``limit``), parallel links as the lowest id."""
    import networkx as nx

    from topocoll.topology.routing import shortest_path_sets
    from topocoll.topology.spec import parse_spec

    t = parse_spec(spec)
    g, idx = nx.DiGraph(), {}
    for i, lk in enumerate(t.links):
        if (lk.src, lk.dst) not in idx:
            idx[(lk.src, lk.dst)] = i
            g.add_edge(lk.src, lk.dst)
    for limit in (1, 3, 16):
        got = shortest_path_sets(t, range(t.num_ranks), limit)
        for s in range(t.num_ranks):
            for d in range(t.num_ranks):
                if s != d:
                    want = [tuple(idx[(a, b)] for a, b in zip(p, p[1:], strict=False))
                            for p in sorted(nx.all_shortest_paths(g, s, d))[:limit]]
                    assert got[(s, d)] == want, (s, d, limit)
