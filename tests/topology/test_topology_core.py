"""Topology, Link and Dim: validation on construction and the basic queries."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topocoll.errors import TopologyError
from topocoll.topology import Dim, Link, Topology, ring, star, torus


def cable(a, b, bw=1e9, lat=0.0):
    return (Link(a, b, bw, lat), Link(b, a, bw, lat))


@pytest.mark.parametrize("args,item", [
    ((1, 1, 1e9), "link 1->1"), ((0, 1, 0.0), "link 0->1"), ((0, 1, -1.0), "link 0->1"),
    ((0, 1, math.nan), "link 0->1"), ((0, 1, math.inf), "link 0->1"),
    ((0, 1, 1e9, -1e-9), "link 0->1"), ((0, 1, 1e9, math.inf), "link 0->1"),
    ((True, 1, 1e9), "link True->1"), ((0, 1, "1e9"), "link 0->1")])
def test_link_validation(args, item):
    with pytest.raises(TopologyError) as e:
        Link(*args)
    assert e.value.item == item


def test_dim_validation():
    with pytest.raises(TopologyError):
        Dim("torus", 4, 1e9)
    with pytest.raises(TopologyError):
        Dim("ring", 1, 1e9)
    with pytest.raises(TopologyError):
        Dim("ring", 4, 0.0)
    with pytest.raises(TopologyError):
        Dim("ring", 4, 1e9, -1.0)


@pytest.mark.parametrize("make,item", [
    (lambda: Topology("t", 0, 0, ()), "field 'num_ranks'"),
    (lambda: Topology("t", 2, -1, cable(0, 1)), "field 'num_switches'"),
    (lambda: Topology("t", 2, 0, cable(0, 1), routing="fastest"), "field 'routing'"),
    (lambda: Topology("t", 2, 0, cable(0, 1) + (Link(1, 2, 1e9),)), "link 1->2"),
    (lambda: Topology("t", 3, 0, cable(0, 1)), "rank 2"),
    (lambda: Topology("t", 2, 0, (Link(0, 1, 1e9),)), "rank 1"),
    (lambda: Topology("t", 2, 1, cable(0, 1)), "switch 2"),
    (lambda: Topology("t", 2, 1, cable(0, 1) + (Link(0, 2, 1e9),)), "switch 2"),
    (lambda: Topology("t", 2, 0, cable(0, 1), node_latency=(0.0,)), "field 'node_latency'"),
    (lambda: Topology("t", 2, 0, cable(0, 1), node_latency=(0.0, -1.0)), "node 1"),
    (lambda: Topology("t", 2, 0, cable(0, 1), dims=(Dim("ring", 4, 1e9),)), "field 'dims'"),
])
def test_topology_validation_names_the_offender(make, item):
    with pytest.raises(TopologyError) as e:
        make()
    assert e.value.item == item


def test_wrong_link_type_is_a_type_error_naming_the_field():
    with pytest.raises(TypeError) as e:
        Topology("t", 2, 0, ("not a link",))
    assert e.value.item == "field 'links'" and "'not a link'" in str(e.value)


def test_valid_edge_cases():
    assert Topology("one", 1, 0, ()).num_nodes == 1
    uni = Topology("uni", 3, 0, (Link(0, 1, 1e9), Link(1, 2, 1e9), Link(2, 0, 1e9)))
    assert uni.describe()["rank_diameter_hops"] == 2  # strongly connected one way round
    bundle = Topology("b", 2, 0, cable(0, 1) + (Link(0, 1, 3e9),))
    assert bundle.links_between(0, 1) == [0, 2] and bundle.links_between(1, 0) == [1]
    assert bundle.egress_bandwidth().tolist() == [4e9, 1e9]
    assert bundle.adjacency()[0, 1] == 4e9


def test_topology_is_immutable_and_normalizes():
    t = Topology("t", 2, 0, list(cable(0, 1)), node_latency=[0, 1])
    assert isinstance(t.links, tuple) and t.node_latency == (0.0, 1.0)
    with pytest.raises(AttributeError):
        t.name = "u"
    with pytest.raises(ValueError):
        t.link_bandwidth[0] = 5.0


def test_queries_on_a_torus():
    t = torus((4, 3))
    for r in t.ranks:
        assert t.rank_of(t.coords(r)) == r
    assert t.coords(7) == (3, 1)
    assert t.path(0, 5) == (0, 1, 5)  # dimension 0 first
    hops = t.hop_distances()
    assert hops[0, 6] == 2 + 1 and np.all(hops == hops.T)
    g = t.to_networkx()
    assert g.number_of_edges() == len(t.links) and g.nodes[0]["kind"] == "rank"
    with pytest.raises(TopologyError) as e:
        ring(4, bidirectional=False).coords(0)  # a unidirectional ring has no dims
    assert e.value.item == "dims"


def test_forwarding_latency_defaults_to_zero():
    assert star(3).forwarding_latency.tolist() == [0.0] * 4
    assert star(3, switch_latency=2e-7).forwarding_latency.tolist() == [0.0] * 3 + [2e-7]


# ------------------------------------------------------------------ fingerprint
def test_fingerprint_is_by_content():
    from topocoll.topology.spec import parse_spec

    a = parse_spec("torus:4x4,bw=400Gbps,lat=100ns")
    # same fabric written differently: units, option order, the name
    assert a.fingerprint() == parse_spec("torus:4x4,lat=0.1us,bw=50GB/s").fingerprint()
    assert a.fingerprint() == Topology("other", a.num_ranks, a.num_switches, a.links,
                                       dims=a.dims, meta=a.meta).fingerprint()
    # anything that changes behaviour changes it
    for other in ("torus:4x4,bw=401Gbps,lat=100ns", "torus:4x4,bw=400Gbps,lat=101ns",
                  "torus:4x4,bw=400Gbps,lat=100ns,routing=ecmp", "mesh:4x4,bw=400Gbps,lat=100ns"):
        assert parse_spec(other).fingerprint() != a.fingerprint(), other


def test_fingerprint_is_pinned():
    # the same on every machine and run (a cache key that moved would strand every entry)
    from topocoll.topology.spec import parse_spec

    assert parse_spec("torus:4x4,bw=400Gbps,lat=100ns").fingerprint() == (
        "a392c7885540b8fde3d2e3982d36186729481c202c7043bd1ac7156acf261b4e")
