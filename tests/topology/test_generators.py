"""Structural tests of the topology generators: counts, degrees, diameters, isomorphism."""

from __future__ import annotations

import math
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from topocoll.errors import TopologyError
from topocoll.topology import (
    Dim,
    circulant,
    dgx,
    dgx_a100,
    dgx_h100,
    fat_tree,
    from_edges,
    from_matrix,
    fully_connected,
    hammingmesh,
    hypercube,
    leaf_spine,
    line,
    mesh,
    multi_dim,
    random_regular,
    ring,
    star,
    torus,
)


def simple_graph(t) -> nx.Graph:
    """Undirected simple graph over all nodes; asserts every link has its reverse."""
    pairs = {(lk.src, lk.dst) for lk in t.links}
    assert all((b, a) in pairs for a, b in pairs), "expected bidirectional links"
    g = nx.Graph()
    g.add_nodes_from(range(t.num_nodes))
    g.add_edges_from(pairs)
    return g


def out_degrees(t) -> Counter:
    return Counter(np.bincount(t.link_src, minlength=t.num_nodes).tolist())


def assert_ring_order(t) -> None:
    order = t.meta["ring_order"]
    assert sorted(order) == list(t.ranks)
    pairs = {(lk.src, lk.dst) for lk in t.links}
    for i in range(len(order)):
        a, b = order[i - 1], order[i]
        assert (a, b) in pairs and (b, a) in pairs, (a, b)


# --------------------------------------------------------------- direct networks
@pytest.mark.parametrize("n", [2, 3, 8, 9])
def test_ring_line_fc_counts(n):
    assert len(ring(n).links) == (2 * n if n > 2 else 2)
    assert ring(n).describe()["rank_diameter_hops"] == n // 2
    assert len(line(n).links) == 2 * (n - 1)
    assert line(n).describe()["rank_diameter_hops"] == n - 1
    fc = fully_connected(n)
    assert len(fc.links) == n * (n - 1) and fc.describe()["rank_diameter_hops"] == 1


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_hypercube_is_isomorphic_to_networkx(d):
    t = hypercube(d)
    assert nx.is_isomorphic(simple_graph(t), nx.hypercube_graph(d))
    assert t.describe()["rank_diameter_hops"] == d
    assert out_degrees(t) == Counter({d: 2**d})
    assert_ring_order(t)


def _hammingmesh_graph(shape, board) -> nx.MultiGraph:
    """HammingMesh from its definition, independently of the generator: a mesh on every
    board; every line of ranks gets a switch that each board's first and last rank along
    the line cable to."""
    g = nx.MultiGraph()
    coords = list(np.ndindex(*shape[::-1]))                 # last dimension slowest
    g.add_nodes_from(("r", c[::-1]) for c in coords)
    for k, b in enumerate(board):
        for c in coords:
            x = c[::-1]
            line = ("s", k, x[:k] + x[k + 1:])
            if x[k] % b + 1 < b:
                g.add_edge(("r", x), ("r", x[:k] + (x[k] + 1,) + x[k + 1:]))
            if x[k] % b == 0:
                g.add_edge(("r", x), line)
            if x[k] % b == b - 1:
                g.add_edge(("r", x), line)
    return g


@pytest.mark.parametrize("shape,board", [((4, 4), 2), ((8, 4), (4, 2)), ((4, 6), (1, 3)),
                                         ((4, 4, 4), 2)])
def test_hammingmesh_matches_its_definition(shape, board):
    t = hammingmesh(shape, board)
    b = (board,) * len(shape) if isinstance(board, int) else board
    n = math.prod(shape)
    assert t.num_ranks == n and t.num_switches == sum(n // d for d in shape)
    # every rank: two ports per dimension
    assert all(np.bincount(t.link_src, minlength=t.num_nodes)[:n] == 2 * len(shape))
    g = nx.MultiGraph()
    g.add_nodes_from(range(t.num_nodes))
    g.add_edges_from((lk.src, lk.dst) for lk in t.links if lk.src < lk.dst)
    assert nx.is_isomorphic(g, _hammingmesh_graph(shape, b))
    # per dimension: to the nearer board edge, through the line's switch, to the target
    assert t.describe()["rank_diameter_hops"] == sum(2 * ((bb - 1) // 2) + 2 for bb in b)


def test_hammingmesh_bad_input():
    with pytest.raises(TopologyError, match="does not divide"):
        hammingmesh((8, 8), 3)
    with pytest.raises(TopologyError, match="board has 3 sizes"):
        hammingmesh((8, 8), (2, 2, 2))


@pytest.mark.parametrize("shape", [(3, 4), (4, 4), (3, 5), (2, 3, 4), (3, 3), (5, 2)])
def test_torus_is_a_product_of_cycles_with_ring_order(shape):
    t = torus(shape)
    ref = nx.cycle_graph(shape[0]) if shape[0] > 2 else nx.path_graph(2)
    for s in shape[1:]:
        ref = nx.cartesian_product(ref, nx.cycle_graph(s) if s > 2 else nx.path_graph(2))
    assert nx.is_isomorphic(simple_graph(t), ref)
    assert t.describe()["rank_diameter_hops"] == sum(s // 2 for s in shape)
    assert_ring_order(t)


@pytest.mark.parametrize("shape", [(3, 4), (2, 2), (4, 4), (2, 3, 3), (3, 2)])
def test_mesh_ring_order_when_rank_count_even(shape):
    t = mesh(shape)
    assert len(t.links) == 2 * sum(math.prod(shape) // s * (s - 1) for s in shape)
    assert_ring_order(t)


@pytest.mark.parametrize("shape", [(3, 3), (5,), (3, 5)])
def test_mesh_without_hamiltonian_cycle_has_no_hint(shape):
    # a bipartite graph with an odd number of vertices has no Hamiltonian cycle
    assert "ring_order" not in mesh(shape).meta


# ---------------------------------------------------------------------- circulant
@pytest.mark.parametrize("n,jumps", [(8, [1, 3]), (12, [1, 5]), (16, [1, 3, 5]), (9, [2]),
                                     (10, [1, 5])])
def test_circulant_is_isomorphic_to_networkx(n, jumps):
    t = circulant(n, jumps)
    g = simple_graph(t)
    assert nx.is_isomorphic(g, nx.circulant_graph(n, jumps))
    assert len(t.links) == 2 * g.number_of_edges()  # one link each way per edge, no dupes
    assert_ring_order(t)


def test_circulant_half_jump_gives_single_links():
    t = circulant(8, [1, 4])
    assert len(t.links) == 16 + 8
    assert out_degrees(t) == Counter({3: 8})


def test_circulant_directed():
    t = circulant(8, [1, 3], directed=True)
    assert {(lk.src, lk.dst) for lk in t.links} == {(r, (r + j) % 8) for r in range(8)
                                                    for j in (1, 3)}
    assert len(t.links) == 16
    order = t.meta["ring_order"]
    assert all((order[i - 1], order[i]) in {(lk.src, lk.dst) for lk in t.links}
               for i in range(8))


@pytest.mark.parametrize("jumps,directed,item", [
    ([8], False, "jump 8"), ([0], False, "jump 0"), ([1, 7], False, "jump 7"),
    ([1, 9], True, "jump 9"), ([3, 3], False, "jump 3"), ([2, 4], False, "field 'jumps'"),
    ([], False, "field 'jumps'")])
def test_circulant_rejects_bad_jumps(jumps, directed, item):
    with pytest.raises(TopologyError) as e:
        circulant(8, jumps, directed=directed)
    assert e.value.item == item


def test_circulant_directed_allows_opposite_jumps():
    assert len(circulant(8, [1, 7], directed=True).links) == 16


# ------------------------------------------------------------------ random regular
def test_random_regular_is_regular_connected_and_deterministic():
    a, b = random_regular(20, 3, seed=7), random_regular(20, 3, seed=7)
    assert a.links == b.links
    assert out_degrees(a) == Counter({3: 20})
    assert Counter(np.bincount(a.link_dst).tolist()) == Counter({3: 20})
    assert nx.is_connected(simple_graph(a))
    assert random_regular(20, 3, seed=8).links != a.links
    ref = nx.random_regular_graph(3, 20, seed=7)
    assert nx.is_isomorphic(simple_graph(a), ref)


def test_random_regular_retries_disconnected(monkeypatch):
    calls = []
    real = nx.random_regular_graph

    def fake(d, n, seed=None):
        calls.append(seed)
        if len(calls) == 1:
            return nx.disjoint_union(nx.cycle_graph(n // 2), nx.cycle_graph(n - n // 2))
        return real(d, n, seed=seed)

    monkeypatch.setattr(nx, "random_regular_graph", fake)
    t = random_regular(12, 2, seed=5)
    assert len(calls) == 2 and calls[0] == 5 and calls[1] != 5
    assert nx.is_connected(simple_graph(t))


def test_random_regular_gives_up(monkeypatch):
    monkeypatch.setattr(nx, "random_regular_graph",
                        lambda d, n, seed=None: nx.disjoint_union(nx.cycle_graph(3),
                                                                  nx.cycle_graph(3)))
    with pytest.raises(TopologyError) as e:
        random_regular(6, 2, seed=1)
    assert e.value.item == "field 'seed'"


@pytest.mark.parametrize("n,d", [(5, 3), (4, 4), (6, 1), (6, 0)])
def test_random_regular_rejects_impossible_degree(n, d):
    with pytest.raises(TopologyError) as e:
        random_regular(n, d, seed=0)
    assert e.value.item == "field 'degree'"


# ----------------------------------------------------------------------- fat tree
def _tiers(t):
    """Split links into host links and switch-to-switch (uplink) links."""
    host = [lk for lk in t.links if lk.src < t.num_ranks or lk.dst < t.num_ranks]
    up = [lk for lk in t.links if lk.src >= t.num_ranks and lk.dst >= t.num_ranks]
    return host, up


@pytest.mark.parametrize("k", [2, 4, 6])
def test_fat_tree_structure(k):
    t = fat_tree(k)
    assert t.num_ranks == k**3 // 4
    assert t.num_switches == k * k + k * k // 4
    assert len(t.links) == 3 * k**3 // 2
    deg = np.bincount(t.link_src, minlength=t.num_nodes)
    assert set(deg[: t.num_ranks]) == {1}
    assert set(deg[t.num_ranks:]) == {k}  # every switch uses all k ports
    assert t.describe()["rank_diameter_hops"] == 6  # host-edge-agg-core-agg-edge-host
    assert [len(g) for g in t.meta["groups"]] == [k * k // 4] * k
    assert t.name == f"fattree:k={k}"


def test_fat_tree_k4_counts_and_core_wiring():
    t = fat_tree(4)
    assert (t.num_ranks, t.num_switches, len(t.links)) == (16, 20, 96)
    core = range(16 + 16, 36)
    agg = range(16 + 8, 16 + 16)
    for c in core:  # each core switch reaches one aggregation switch in each of the 4 pods
        nbrs = sorted(lk.dst for lk in t.links if lk.src == c)
        assert all(a in agg for a in nbrs)
        assert sorted((a - agg.start) // 2 for a in nbrs) == [0, 1, 2, 3]


@pytest.mark.parametrize("over", [1.0, 2.0, 4.0])
def test_fat_tree_oversubscription_scales_uplinks(over):
    t = fat_tree(4, bandwidth=100e9, oversubscription=over)
    host, up = _tiers(t)
    assert {lk.bandwidth for lk in host} == {100e9}
    assert {lk.bandwidth for lk in up} == {100e9 / over}
    # an edge switch's uplink capacity is its hosts' capacity / oversubscription
    edge = t.num_ranks
    upcap = sum(lk.bandwidth for lk in t.links if lk.src == edge and lk.dst >= t.num_ranks)
    assert upcap == pytest.approx(2 * 100e9 / over)
    if over != 1:
        assert t.name == f"fattree:k=4,oversub={int(over)}"


def test_fat_tree_switch_latency_and_errors():
    t = fat_tree(4, switch_latency=3e-7)
    assert t.node_latency == (0.0,) * 16 + (3e-7,) * 20
    assert fat_tree(4).node_latency == ()
    for kw, item in [({"k": 3}, "field 'k'"), ({"k": 0}, "field 'k'"),
                     ({"k": 4, "oversubscription": 0}, "field 'oversubscription'"),
                     ({"k": 4, "bandwidth": -1}, "field 'bandwidth'"),
                     ({"k": 4, "latency": float("nan")}, "field 'latency'")]:
        with pytest.raises(TopologyError) as e:
            fat_tree(**kw)
        assert e.value.item == item


# --------------------------------------------------------------------- leaf-spine
def test_leaf_spine_structure_and_default_uplink():
    t = leaf_spine(4, 2, 8, bandwidth=50e9, oversubscription=2)
    assert (t.num_ranks, t.num_switches, len(t.links)) == (32, 6, 2 * (32 + 8))
    host, up = _tiers(t)
    assert {lk.bandwidth for lk in host} == {50e9}
    assert {lk.bandwidth for lk in up} == {8 * 50e9 / (2 * 2)}
    assert t.describe()["rank_diameter_hops"] == 4
    assert t.meta["groups"][1] == list(range(8, 16))
    assert nx.is_isomorphic(
        simple_graph(t).subgraph(range(32, 38)), nx.complete_bipartite_graph(4, 2))


def test_leaf_spine_explicit_uplink_and_conflict():
    t = leaf_spine(3, 3, 2, uplink_bandwidth=10e9)
    assert {lk.bandwidth for lk in _tiers(t)[1]} == {10e9}
    with pytest.raises(TopologyError) as e:
        leaf_spine(3, 3, 2, uplink_bandwidth=10e9, oversubscription=2)
    assert e.value.item == "field 'oversubscription'"
    with pytest.raises(TopologyError) as e:
        leaf_spine(3, 0, 2)
    assert e.value.item == "field 'spines'"


# ---------------------------------------------------------------------------- DGX
def test_dgx_rail_structure():
    t = dgx(3, gpus_per_box=4, nvlink_bandwidth=400e9, nic_bandwidth=50e9)
    n, nb, g = 12, 3, 4
    spines = 2
    assert t.num_switches == nb + g + spines
    assert len(t.links) == 2 * (n + n + g * spines)
    rails = range(n + nb, n + nb + g)
    for i, rail in enumerate(rails):  # rail i joins GPU i of every box
        assert sorted(lk.dst for lk in t.links if lk.src == rail and lk.dst < n) == \
            [b * g + i for b in range(nb)]
    spine_bw = {lk.bandwidth for lk in t.links if lk.src in rails and lk.dst >= n + nb + g}
    assert spine_bw == {nb * 50e9 / spines}  # full bisection between rails
    assert t.meta["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert t.path(0, 3) == (0, 12, 3)  # same box: NVSwitch
    assert t.path(0, 4) == (0, 15, 4)  # same rail: rail switch


def test_dgx_switch_and_rail_only_fabrics():
    t = dgx(4, fabric="switch")
    assert t.num_switches == 5 and len(t.links) == 2 * (32 + 32)
    r = dgx(2, spines=0)
    assert r.num_switches == 2 + 8 and len(r.links) == 2 * (16 + 16)
    assert r.describe()["rank_diameter_hops"] == 4  # cross-rail goes through an NVSwitch
    with pytest.raises(TopologyError) as e:
        dgx(2, fabric="torus")
    assert e.value.item == "field 'fabric'"
    with pytest.raises(TopologyError) as e:
        dgx(2, fabric="switch", spines=2)
    assert e.value.item == "field 'spines'"


def test_dgx_presets():
    for fn, nv, nic in [(dgx_a100, 300e9, 25e9), (dgx_h100, 450e9, 50e9)]:
        t = fn(2)
        nvlinks = [lk for lk in t.links if lk.src < 16 and lk.dst in (16, 17)]
        nics = [lk for lk in t.links if lk.src < 16 and lk.dst >= 18]
        assert len(nvlinks) == 16 and {lk.bandwidth for lk in nvlinks} == {nv}
        assert len(nics) == 16 and {lk.bandwidth for lk in nics} == {nic}


# ------------------------------------------------------------------ multi-dimensional
@pytest.mark.parametrize("shape", [(4, 4), (2, 3), (3, 2, 5)])
def test_multi_dim_matches_torus_and_mesh_exactly(shape):
    for gen in (torus, mesh):
        t = gen(shape, bandwidth=[float(i + 1) for i in range(len(shape))])
        assert multi_dim(t.dims).links == t.links


def test_multi_dim_single_dims_match_simple_generators():
    key = sorted
    assert key(multi_dim(fully_connected(5).dims).links, key=repr) == \
        key(fully_connected(5).links, key=repr)
    assert key(multi_dim(star(5).dims).links, key=repr) == key(star(5).links, key=repr)
    assert key(multi_dim(ring(6).dims).links, key=repr) == key(ring(6).links, key=repr)


def test_multi_dim_switch_dims_add_one_switch_per_group():
    t = multi_dim([Dim("ring", 4, 100e9, 2e-7), Dim("switch", 8, 25e9, 1.5e-6)])
    assert (t.num_ranks, t.num_switches) == (32, 4)
    assert len(t.links) == 32 * 2 + 2 * 32
    for s in t.switches:  # each switch joins the 8 ranks sharing coordinate 0
        members = sorted(lk.dst for lk in t.links if lk.src == s)
        assert len(members) == 8 and len({t.coords(r)[0] for r in members}) == 1
        assert {lk.dim for lk in t.links if s in (lk.src, lk.dst)} == {1}
    u = multi_dim([Dim("fully_connected", 2, 1e9), Dim("ring", 3, 1e9), Dim("switch", 2, 1e9)])
    assert (u.num_ranks, u.num_switches) == (12, 6)
    assert Counter(lk.dim for lk in u.links) == Counter({0: 12, 1: 24, 2: 24})
    assert u.dims[2].kind == "switch"


def test_multi_dim_is_a_cartesian_product():
    t = multi_dim([Dim("fully_connected", 3, 1e9), Dim("line", 4, 1e9), Dim("ring", 5, 1e9)])
    ref = nx.cartesian_product(nx.cartesian_product(nx.complete_graph(3), nx.path_graph(4)),
                               nx.cycle_graph(5))
    assert nx.is_isomorphic(simple_graph(t), ref)
    for lk in t.links:  # a link of dim d changes only coordinate d
        diff = [i for i, (a, b) in enumerate(zip(t.coords(lk.src), t.coords(lk.dst),
                                                 strict=True)) if a != b]
        assert diff == [lk.dim]


def test_multi_dim_rejects_empty():
    with pytest.raises(TopologyError) as e:
        multi_dim([])
    assert e.value.item == "field 'dims'"


# --------------------------------------------------------------- explicit topologies
def test_from_matrix_is_row_source_column_destination():
    bw = [[0, 3e9, 0], [1e9, 0, 2e9], [5e9, 0, 0]]
    lat = [[0, 1e-6, 0], [2e-6, 0, 3e-6], [4e-6, 0, 0]]
    t = from_matrix(bw, latency=lat)
    got = {(lk.src, lk.dst): (lk.bandwidth, lk.latency) for lk in t.links}
    assert got == {(0, 1): (3e9, 1e-6), (1, 0): (1e9, 2e-6), (1, 2): (2e9, 3e-6),
                   (2, 0): (5e9, 4e-6)}
    assert t.path(0, 2) == (0, 1, 2) and t.path(2, 1) == (2, 0, 1)


@pytest.mark.parametrize("bw,item", [
    ([[0, -1], [1, 0]], "link 0->1"), ([[0, 1], [float("nan"), 0]], "link 1->0"),
    ([[0, 1], [float("inf"), 0]], "link 1->0"), ([[1, 1], [1, 0]], "link 0->0"),
    ([[0, 1, 1], [1, 0, 1]], "field 'bandwidth'"), ([[0, 1, 0], [1, 0, 0], [0, 0, 0]], "rank 2")])
def test_from_matrix_errors(bw, item):
    with pytest.raises(TopologyError) as e:
        from_matrix(bw)
    assert e.value.item == item


def test_from_matrix_latency_errors():
    with pytest.raises(TopologyError) as e:
        from_matrix([[0, 1], [1, 0]], latency=[[0, -1], [0, 0]])
    assert e.value.item == "link 0->1"
    with pytest.raises(TopologyError) as e:
        from_matrix([[0, 1], [1, 0]], latency=[[0, 1]])
    assert e.value.item == "field 'latency'"


def test_from_edges_forms_and_units():
    t = from_edges([(0, 2, "100Gbps"), {"src": 1, "dst": 2, "bandwidth": "25GB/s",
                                        "latency": "500ns"}, (0, 1)],
                   num_ranks=2, num_switches=1, bidirectional=True, latency=1e-7,
                   node_latency=[0, 0, "300ns"], routing="ecmp")
    assert [(lk.src, lk.dst) for lk in t.links] == [(0, 2), (2, 0), (1, 2), (2, 1), (0, 1),
                                                    (1, 0)]
    assert t.links[0].bandwidth == 12.5e9 and t.links[0].latency == 1e-7
    assert t.links[2].bandwidth == 25e9 and t.links[2].latency == 5e-7
    assert t.links[4].bandwidth == 50e9
    assert t.node_latency == (0.0, 0.0, 3e-7) and t.routing == "ecmp"


@pytest.mark.parametrize("edges,item", [
    ([(0, 1, 1e9), (1, 0, "fast")], "link 1->0"), ([(0, 1, 0)], "link 0->1"),
    ([(0, 1, 1e9), (1, 5, 1e9)], "link 1->5"), ([(0, 1, 1e9), (1,)], "edge 1"),
    ([(0, 1, 1e9), {"src": 1, "dest": 0}], "edge 1"), ([(0, 1, 1e9), ("a", 0)], "edge 1"),
    ([(0, 1, 1e9, -1.0)], "link 0->1"), ([(0, 1)], "rank 1")])
def test_from_edges_errors(edges, item):
    with pytest.raises(TopologyError) as e:
        from_edges(edges, num_ranks=2)
    assert e.value.item == item
