"""Generator spec strings: every name parses, options apply, errors name the item."""

from __future__ import annotations

import pytest

from topocoll.errors import TopologyError
from topocoll.topology import (
    GENERATOR_NAMES,
    Dim,
    box_cluster,
    circulant,
    dgx,
    dgx_a100,
    dgx_h100,
    fat_tree,
    fully_connected,
    hammingmesh,
    hypercube,
    leaf_spine,
    line,
    load_topology,
    mesh,
    multi_dim,
    parse_spec,
    random_regular,
    ring,
    save_topology,
    star,
    torus,
)
from topocoll.topology.scenarios import bimodal, mi250, random_bandwidth, two_tier
from topocoll.topology.spec import GENERATOR_USAGE
from topocoll.topology.totient import totient

GiB = 2.0**30

# one example per name, and the direct call that must give the same links
EXAMPLES = {
    "ring": ("ring:8", lambda: ring(8)),
    "uniring": ("uniring:6", lambda: ring(6, bidirectional=False)),
    "line": ("line:5", lambda: line(5)),
    "fc": ("fc:4", lambda: fully_connected(4)),
    "fully_connected": ("fully_connected:4", lambda: fully_connected(4)),
    "star": ("star:5", lambda: star(5)),
    "torus": ("torus:8x8", lambda: torus((8, 8))),
    "mesh": ("mesh:4x4", lambda: mesh((4, 4))),
    "hypercube": ("hypercube:6", lambda: hypercube(6)),
    "hammingmesh": ("hammingmesh:8x4,board=4x2", lambda: hammingmesh((8, 4), (4, 2))),
    "fattree": ("fattree:k=4", lambda: fat_tree(4)),
    "leafspine": ("leafspine:leaves=4,spines=2,hosts=8", lambda: leaf_spine(4, 2, 8)),
    "dgx": ("dgx:4", lambda: dgx(4)),
    "dgx-a100": ("dgx-a100:4", lambda: dgx_a100(4)),
    "dgx-h100": ("dgx-h100:4", lambda: dgx_h100(4)),
    "hgx-h200": ("hgx-h200:2,transport=roce", lambda: box_cluster("hgx-h200", 2,
                                                                    transport="roce")),
    "dgx-b200": ("dgx-b200:2,spines=0", lambda: box_cluster("dgx-b200", 2, spines=0)),
    "gb200-nvl72": ("gb200-nvl72:1", lambda: box_cluster("gb200-nvl72", 1)),
    "mi300x": ("mi300x:2,fabric=switch", lambda: box_cluster("mi300x", 2, fabric="switch")),
    "tpu-v4": ("tpu-v4:4x4x4", lambda: torus((4, 4, 4), bandwidth=50e9)),
    "tpu-v5p": ("tpu-v5p:4x4x8", lambda: torus((4, 4, 8), bandwidth=100e9)),
    "circulant": ("circulant:16,jumps=1/3/5", lambda: circulant(16, [1, 3, 5])),
    "rrg": ("rrg:32,d=4,seed=1", lambda: random_regular(32, 4, seed=1)),
    "totient": ("totient:64,d=6,group=16", lambda: totient(64, 6, group=16)),
    "hier": ("hier:ring(4,100GB/s,200ns)x switch(8,25GB/s,1.5us)",
             lambda: multi_dim([Dim("ring", 4, 100e9, 2e-7), Dim("switch", 8, 25e9, 1.5e-6)])),
    "random": ("random:8,spread=30,density=0.5,seed=3",
               lambda: random_bandwidth(8, spread=30, density=0.5, seed=3)),
    "bimodal": ("bimodal:6,frac=0.4,seed=2", lambda: bimodal(6, slow_fraction=0.4, seed=2)),
    "twotier": ("twotier:racks=3,hosts=2,oversub=2", lambda: two_tier(3, 2, oversubscription=2)),
    "mi250": ("mi250:2", lambda: mi250(2)),
}


def _same(a, b) -> bool:
    return (a.links == b.links and a.num_switches == b.num_switches
            and a.node_latency == b.node_latency and a.dims == b.dims)


def test_examples_cover_every_name():
    assert set(EXAMPLES) == set(GENERATOR_NAMES)
    assert set(GENERATOR_USAGE) <= set(GENERATOR_NAMES)


@pytest.mark.parametrize("name", GENERATOR_NAMES)
def test_every_name_parses_to_its_generator(name):
    spec, direct = EXAMPLES[name]
    t = parse_spec(spec)
    assert _same(t, direct())
    assert _same(parse_spec(t.name), t), "a generator's name must parse back to it"
    head, _, rest = spec.partition(":")
    assert _same(parse_spec(f"{head.upper()}:{rest}"), t)  # names are case-insensitive


@pytest.mark.parametrize("spec,direct", [
    ("fattree:4", lambda: fat_tree(4)),
    ("fat_tree:k=4", lambda: fat_tree(4)),
    ("leafspine:4,2,8", lambda: leaf_spine(4, 2, 8)),
    ("ring:6,bidirectional=false", lambda: ring(6, bidirectional=False)),
    ("ring:6,unidirectional", lambda: ring(6, bidirectional=False)),
    ("ring: 6 , bw = 400Gbps , lat = 100ns", lambda: ring(6, bandwidth=50e9, latency=1e-7)),
    ("torus:4x4,bw=100GB/s,lat=2us", lambda: torus((4, 4), bandwidth=100e9, latency=2e-6)),
    ("star:4,switch_lat=300ns", lambda: star(4, switch_latency=3e-7)),
    ("hxmesh:8x8,board=4,switch_lat=300ns", lambda: hammingmesh((8, 8), 4, switch_latency=3e-7)),
    ("hammingmesh:4x4", lambda: hammingmesh((4, 4), 2)),
    ("fattree:k=4,oversub=2,switch_lat=300ns",
     lambda: fat_tree(4, oversubscription=2, switch_latency=3e-7)),
    ("leafspine:leaves=2,spines=2,hosts=4,uplink_bw=200Gbps",
     lambda: leaf_spine(2, 2, 4, uplink_bandwidth=25e9)),
    ("dgx:2,gpus=4,fabric=switch,nvlink_bw=300GB/s,nic_bw=200Gbps,lat=500ns",
     lambda: dgx(2, gpus_per_box=4, fabric="switch", nvlink_bandwidth=300e9,
                 nic_bandwidth=25e9, nvlink_latency=5e-7, nic_latency=5e-7)),
    ("dgx:2,bw=100Gbps", lambda: dgx(2, nic_bandwidth=12.5e9)),
    ("dgx-h100:2,spines=0,nic_lat=2us", lambda: dgx_h100(2, spines=0, nic_latency=2e-6)),
    ("circulant:8,jumps=1/3,directed=true", lambda: circulant(8, [1, 3], directed=True)),
    ("circulant:8,jumps=1/3,directed", lambda: circulant(8, [1, 3], directed=True)),
    ("rrg:10,d=3", lambda: random_regular(10, 3, seed=0)),
    ("hier:fc(2)x ring(3)x switch(2),bw=10GB/s,lat=1us",
     lambda: multi_dim([Dim("fully_connected", 2, 10e9, 1e-6), Dim("ring", 3, 10e9, 1e-6),
                        Dim("switch", 2, 10e9, 1e-6)])),
    ("hier:ring(4,1GiB/s)x line(2,,3ns)",
     lambda: multi_dim([Dim("ring", 4, GiB, 1e-6), Dim("line", 2, 50e9, 3e-9)])),
])
def test_options(spec, direct):
    assert _same(parse_spec(spec), direct())


def test_routing_option_applies_to_every_generator():
    for name in GENERATOR_NAMES:
        t = parse_spec(EXAMPLES[name][0] + ",routing=ecmp")
        assert t.routing == "ecmp"
    assert parse_spec("ring:4").routing == "shortest"


@pytest.mark.parametrize("spec,item", [
    ("foo:4", "generator 'foo'"),
    ("", "generator ''"),
    ("ring:8,bar=1", "option 'bar'"),
    ("ring:8,bw=fast", "option 'bw'"),
    ("ring:8,bw=-1Gbps", "option 'bw'"),
    ("ring:8,lat=-1ns", "option 'lat'"),
    ("ring:8,bw", "option 'bw'"),
    ("ring:eight", "option 'n'"),
    ("ring", "option 'n'"),
    ("ring:8,n=9", "option 'n'"),
    ("ring:8,lat=1us,lat=2us", "option 'lat'"),
    ("ring:8,9", "generator 'ring'"),
    ("torus:4xq", "option 'shape'"),
    ("fattree:k=four", "option 'k'"),
    ("fattree:k=4,oversub=lots", "option 'oversub'"),
    ("fattree:k=4,routing=fastest", "option 'routing'"),
    ("circulant:8", "option 'jumps'"),
    ("circulant:8,jumps=1/x", "option 'jumps'"),
    ("rrg:8", "option 'd'"),
    ("dgx:2,fabric=torus", "option 'fabric'"),
    ("dgx-h100:2,bw=100Gbps", "option 'bw'"),
    ("hier:blob(4)", "option 'dims'"),
    ("hier:ring(4)switch(2)", "option 'dims'"),
    ("hier:ring(4,1,2,3)", "option 'dims'"),
    ("hier:ring(four)", "option 'dims'"),
    ("fattree:k=3", "field 'k'"),
    ("circulant:8,jumps=1/7", "jump 7"),
    ("hammingmesh:8x8,board=3", "field 'board'"),
    ("hammingmesh:8x8,board=2x2x2", "field 'board'"),
    ("hammingmesh:8x8,board=two", "option 'board'"),
])
def test_errors_name_the_item(spec, item):
    with pytest.raises(TopologyError) as e:
        parse_spec(spec)
    assert e.value.item == item


def test_error_messages_list_valid_names():
    with pytest.raises(TopologyError) as e:
        parse_spec("fatree:4")
    assert "fattree" in str(e.value) and "hier" in str(e.value)
    with pytest.raises(TopologyError) as e:
        parse_spec("fattree:4,oversubscription=2")
    assert "oversub" in str(e.value) and "switch_lat" in str(e.value)


def test_load_topology_spec_and_files(tmp_path):
    assert _same(load_topology("torus:4x4"), torus((4, 4)))
    t = fat_tree(4, switch_latency=1e-7)
    for ext in ("json", "yaml", "yml"):
        p = save_topology(t, tmp_path / f"ft.{ext}")
        assert _same(load_topology(str(p)), t)
        assert _same(load_topology(p), t)
    net = tmp_path / "network.yml"
    net.write_text("topology: [ Ring, Switch ]\nnpus_count: [ 4, 8 ]\n"
                   "bandwidth: [ 100.0, 25.0 ]\nlatency: [ 200.0, 1500.0 ]\n")
    a = load_topology(str(net))
    assert (a.num_ranks, a.num_switches) == (32, 4) and a.dims[0].bandwidth == 100 * GiB
    with pytest.raises(TopologyError) as e:
        load_topology(str(tmp_path / "missing.yaml"))
    assert e.value.item == f"file '{tmp_path / 'missing.yaml'}'"
    with pytest.raises(TopologyError) as e:
        load_topology("foo:3")
    assert e.value.item == "generator 'foo'"
