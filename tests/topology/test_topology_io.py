"""Topology files: exact JSON/YAML round trips, ASTRA-sim network.yml, and every bad input."""

from __future__ import annotations

import json

import pytest

from topocoll.errors import NotSupportedError, TopologyError
from topocoll.topology import (
    Dim,
    Link,
    Topology,
    dgx,
    fat_tree,
    from_edges,
    load_topology_file,
    mesh,
    multi_dim,
    parse_spec,
    random_regular,
    read_astra_network,
    ring,
    save_topology,
    star,
    topology_from_dict,
    topology_to_dict,
    torus,
    write_astra_network,
)

GiB = 2.0**30

ROUND_TRIP = [
    lambda: ring(5),
    lambda: ring(4, bidirectional=False),
    lambda: torus((3, 4), bandwidth=[1 / 3 * 1e10, 2e10], latency=[0.1 + 0.2, 1e-7]),
    lambda: star(4, switch_latency=3.3e-7),
    lambda: fat_tree(4, oversubscription=3, switch_latency=1e-7),
    lambda: dgx(2, gpus_per_box=4),
    lambda: random_regular(10, 3, seed=4),
    lambda: multi_dim([Dim("fully_connected", 2, 7e9, 1e-9), Dim("switch", 3, 1e9, 2e-6)]),
    lambda: parse_spec("fattree:k=4,routing=spray"),
    lambda: Topology("odd", 2, 1, (Link(0, 2, 1.1e9, 1e-300), Link(2, 0, 5e-324 + 1, 0.0),
                                   Link(1, 2, 3e9), Link(2, 1, 3e9, dim=7), Link(0, 1, 1.0)),
                     node_latency=(0.0, 1e-9, 2.5e-7), meta={"note": "x", "ring_order": [1, 0],
                                                              "nested": {"a": [1.5, None]}}),
]


def assert_identical(a: Topology, b: Topology) -> None:
    assert a.name == b.name and a.num_ranks == b.num_ranks and a.num_switches == b.num_switches
    assert a.links == b.links  # Link is a dataclass: floats compared exactly
    assert a.node_latency == b.node_latency and a.dims == b.dims
    assert a.routing == b.routing and dict(a.meta) == dict(b.meta)


@pytest.mark.parametrize("make", ROUND_TRIP)
@pytest.mark.parametrize("ext", ["json", "yaml", "yml"])
def test_file_round_trip_is_exact(make, ext, tmp_path):
    t = make()
    back = load_topology_file(save_topology(t, tmp_path / f"t.{ext}"))
    assert_identical(back, t)
    assert topology_to_dict(back) == topology_to_dict(t)


@pytest.mark.parametrize("make", ROUND_TRIP)
def test_dict_round_trip_through_json_text(make):
    t = make()
    assert_identical(topology_from_dict(json.loads(json.dumps(topology_to_dict(t)))), t)


def test_written_dict_has_the_documented_shape():
    d = topology_to_dict(star(3, switch_latency=1e-7))
    assert list(d) == ["type", "version", "name", "num_ranks", "num_switches", "routing", "links",
                       "node_latency", "dims"]
    assert d["links"][0] == {"src": 0, "dst": 3, "bandwidth": 50e9, "latency": 1e-6, "dim": 0}
    assert d["dims"] == [{"kind": "switch", "size": 3, "bandwidth": 50e9, "latency": 1e-6}]
    assert "dim" not in topology_to_dict(fat_tree(2))["links"][0]
    assert "meta" in topology_to_dict(torus((2, 2)))


def test_reader_accepts_units_switch_lists_and_cables(tmp_path):
    p = tmp_path / "hand.yaml"
    p.write_text("""
type: topocoll.topology
version: 1
num_ranks: 2
switches: [3, 2]
routing: ecmp
links:
  - {src: 0, dst: 2, bandwidth: 400Gbps, latency: 100ns}
  - [2, 0, 50GB/s, 1us]
  - {src: 1, dst: 3, bandwidth: 1e9}
cables:
  - [1, 2, 10GB/s]
  - {src: 3, dst: 2, bandwidth: 1GiB/s, latency: 2us}
  - [3, 1, 1e9]
node_latency: [0, 0, 300ns, 0.0]
dims: [{kind: switch, size: 2, bandwidth: 400Gbps, latency: 1us}]
""")
    t = load_topology_file(p)
    assert t.name == "hand" and t.num_switches == 2 and t.routing == "ecmp"
    assert [(lk.src, lk.dst) for lk in t.links] == [(0, 2), (2, 0), (1, 3), (1, 2), (2, 1),
                                                    (3, 2), (2, 3), (3, 1), (1, 3)]
    assert t.links[0].bandwidth == 50e9 and t.links[0].latency == 1e-7
    assert t.links[2].latency == 0.0  # latency defaults to 0 in files
    assert t.links[5].bandwidth == GiB and t.links[6].latency == 2e-6
    assert t.node_latency == (0.0, 0.0, 3e-7, 0.0)
    assert t.dims == (Dim("switch", 2, 50e9, 1e-6),)


def _doc(**over):
    d = {"type": "topocoll.topology", "version": 1, "name": "x", "num_ranks": 3,
         "links": [[0, 1, 1e9], [1, 0, 1e9], [1, 2, 1e9], [2, 1, 1e9]]}
    d.update(over)
    return {k: v for k, v in d.items() if v is not None}


@pytest.mark.parametrize("doc,item", [
    (["not", "a", "mapping"], "field 'type'"),
    (_doc(type="topocoll.schedule"), "field 'type'"),
    (_doc(type=None), "field 'type'"),
    (_doc(version=2), "field 'version'"),
    (_doc(version=None), "field 'version'"),
    (_doc(links=None), "field 'links'"),
    (_doc(links={"0": 1}), "field 'links'"),
    (_doc(num_ranks=None), "field 'num_ranks'"),
    (_doc(num_ranks=0), "field 'num_ranks'"),
    (_doc(lnks=[]), "field 'lnks'"),
    (_doc(routing="fastest"), "field 'routing'"),
    (_doc(name=3), "field 'name'"),
    (_doc(meta=[1]), "field 'meta'"),
    # disconnected graph
    (_doc(links=[[0, 1, 1e9], [1, 0, 1e9]]), "rank 2"),
    # one-way only: 2 can reach 0 but not the other way round
    (_doc(links=[[0, 1, 1e9], [1, 0, 1e9], [2, 1, 1e9]]), "rank 2"),
    # zero / negative / malformed bandwidth, negative latency
    (_doc(links=[[0, 1, 0], [1, 0, 1e9], [1, 2, 1e9], [2, 1, 1e9]]), "link 0->1"),
    (_doc(links=[[0, 1, 1e9], [1, 0, -5.0], [1, 2, 1e9], [2, 1, 1e9]]), "link 1->0"),
    (_doc(links=[[0, 1, 1e9], [1, 0, "fast"], [1, 2, 1e9], [2, 1, 1e9]]), "link 1->0"),
    (_doc(links=[[0, 1, 1e9, "-1ns"], [1, 0, 1e9]]), "link 0->1"),
    (_doc(links=[[0, 1]]), "link 0->1"),  # files must give a bandwidth
    # dangling link, self-loop, malformed entries
    (_doc(links=[[0, 1, 1e9], [1, 7, 1e9]]), "link 1->7"),
    (_doc(links=[[0, 0, 1e9]]), "link 0->0"),
    (_doc(links=[[0, 1, 1e9], {"src": 1, "bandwidth": 1e9}]), "field 'links[1]'"),
    (_doc(links=[[0, 1, 1e9], [1]]), "field 'links[1]'"),
    (_doc(cables=[[0, 1, 1e9, 0, 9]]), "field 'cables[0]'"),
    # switches: duplicates, out of range, inconsistent counts, unused
    (_doc(switches=[3, 3]), "switch 3"),
    (_doc(switches=[3, 5]), "switch 5"),
    (_doc(switches=[2]), "switch 2"),
    (_doc(switches=[3], num_switches=2), "field 'num_switches'"),
    (_doc(num_switches=-1), "field 'num_switches'"),
    (_doc(num_switches=1), "switch 3"),
    # node latency and dims
    (_doc(node_latency=[0, 0]), "field 'node_latency'"),
    (_doc(node_latency=[0, "-1us", 0]), "node 1"),
    (_doc(node_latency="1us"), "field 'node_latency'"),
    (_doc(dims=[{"kind": "ring", "size": 3, "bandwidth": 1e9}]), "field 'dims'"),
    (_doc(dims=[{"kind": "ring", "size": 4, "bandwidth": 1e9, "latency": 0}]), "field 'dims'"),
    (_doc(dims=[{"kind": "ring", "size": 3, "bandwidth": "x", "latency": 0}]), "field 'dims'"),
])
def test_bad_documents_name_the_offender(doc, item):
    with pytest.raises(TopologyError) as e:
        topology_from_dict(doc)
    assert e.value.item == item


def test_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    yml = tmp_path / "bad.yaml"
    yml.write_text("a: [1, 2\n")
    for p in (bad, yml, tmp_path / "missing.json", tmp_path / "t.txt"):
        with pytest.raises(TopologyError) as e:
            load_topology_file(p)
        assert e.value.item == f"file '{p}'"
    with pytest.raises(TopologyError) as e:
        save_topology(ring(3), tmp_path / "t.xml")
    assert e.value.item == f"file '{tmp_path / 't.xml'}'"
    t = Topology("m", 2, 0, ring(2).links, meta={"f": object()})
    with pytest.raises(TopologyError) as e:
        topology_to_dict(t)
    assert e.value.item == "field 'meta'"


# ---------------------------------------------------------------------------- ASTRA-sim
GOLDEN = """\
topology: [ Ring, Switch ]
npus_count: [ 4, 8 ]
bandwidth: [ 100.0, 25.0 ]  # GB/s per link per direction, GB = 2^30 bytes
latency: [ 200.0, 1500.0 ]  # ns per link
"""

ASTRA_DOC = """\
# a 2D system: rings of 4 inside a box, boxes joined by a switch
topology: [ Ring, Switch ]
npus_count: [ 4, 8 ]        # 32 NPUs
bandwidth: [ 100.0, 25.0 ]  # GB/s per link per direction
latency: [ 200.0, 1500.0 ]  # ns
"""


def test_astra_golden_read_and_write(tmp_path):
    t = read_astra_network(ASTRA_DOC)
    assert (t.num_ranks, t.num_switches, len(t.links)) == (32, 4, 64 + 64)
    assert t.dims == (Dim("ring", 4, 100 * GiB, 200e-9), Dim("switch", 8, 25 * GiB, 1.5e-6))
    assert t.describe()["rank_diameter_hops"] == 2 + 2
    assert write_astra_network(t) == GOLDEN
    p = tmp_path / "network.yml"
    assert write_astra_network(t, p) == GOLDEN and p.read_text() == GOLDEN
    assert_identical(read_astra_network(p), t)
    assert_identical(read_astra_network(str(p)), t)


@pytest.mark.parametrize("make", [
    lambda: torus((4, 2, 3), bandwidth=[1e9, 2e9, 3e9], latency=[1e-7, 2e-7, 3.3e-6]),
    lambda: ring(6), lambda: star(5), lambda: parse_spec("fc:4,lat=936.25ns"),
    lambda: multi_dim([Dim("fully_connected", 2, 1e9, 0.0), Dim("ring", 3, 2e9, 1e-6),
                       Dim("switch", 4, 123456789.0, 7.77e-7)]),
])
def test_astra_round_trip(make):
    t = make()
    back = read_astra_network(write_astra_network(t))
    assert back.dims == t.dims and back.num_switches == t.num_switches
    assert sorted(back.links, key=repr) == sorted(t.links, key=repr)
    assert write_astra_network(back) == write_astra_network(t)


@pytest.mark.parametrize("text,item", [
    ("topology: [Ring, Switch]\nnpus_count: [4]\nbandwidth: [1, 1]\nlatency: [1, 1]\n",
     "key 'npus_count'"),
    ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [1]\nlatency: [1, 2]\n", "key 'latency'"),
    ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [1]\n", "key 'latency'"),
    ("topology: [Torus]\nnpus_count: [4]\nbandwidth: [1]\nlatency: [1]\n", "key 'topology'"),
    ("topology: [Ring]\nnpus_count: [1]\nbandwidth: [1]\nlatency: [1]\n", "key 'npus_count'"),
    ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [0]\nlatency: [1]\n", "key 'bandwidth'"),
    ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [1]\nlatency: [-1]\n", "key 'latency'"),
    ("topology: Ring\nnpus_count: [4]\nbandwidth: [1]\nlatency: [1]\n", "key 'topology'"),
    ("- just a list\n", "key 'topology'"),
    ("topology: [Ring\n", "key 'topology'"),
])
def test_astra_bad_input(text, item):
    with pytest.raises(TopologyError) as e:
        read_astra_network(text)
    assert e.value.item == item


@pytest.mark.parametrize("make,why", [
    (lambda: mesh((4, 4)), "line"),
    (lambda: fat_tree(4), "no dims"),
    (lambda: star(4, switch_latency=1e-7), "forwarding"),
    (lambda: Topology("r", 3, 0, ring(3).links[:-1] + (Link(2, 1, 9e9, 1e-6, 0),),
                      dims=ring(3).dims), "not exactly"),
    (lambda: from_edges([(0, 1), (1, 2), (2, 0)], num_ranks=3, bidirectional=True),
     "no dims"),
])
def test_astra_writer_refuses_what_it_cannot_express(make, why):
    with pytest.raises(NotSupportedError, match=why):
        write_astra_network(make())


def test_the_readme_file_example_is_a_valid_topology(tmp_path):
    from pathlib import Path

    from topocoll.topology.spec import load_topology

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "fabric.yaml").write_text(block)
    t = load_topology(tmp_path / "fabric.yaml")
    assert (t.name, t.num_ranks, t.num_switches, len(t.links)) == ("two-boxes", 4, 1, 12)
    assert t.node_latency[4] == 3e-7 and t.meta["groups"] == [[0, 1], [2, 3]]


def test_hammingmesh_round_trips_with_its_dims(tmp_path):
    # its ring dims join board edges through the line's switch, which the dims check
    # accepts; a ring declared over ranks that share no link or switch is still refused
    import dataclasses

    from topocoll.topology import hammingmesh, line, star, torus
    from topocoll.topology.io import check_dims_cabled

    t = hammingmesh((8, 4), (4, 2))
    path = save_topology(t, tmp_path / "hm.json")
    u = load_topology_file(path)
    assert u.links == t.links and u.dims == t.dims
    check_dims_cabled(dataclasses.replace(star(4), dims=torus((4,)).dims))
    with pytest.raises(TopologyError, match="no link joins rank 3 to rank 0"):
        check_dims_cabled(dataclasses.replace(line(4), dims=torus((4,)).dims))
