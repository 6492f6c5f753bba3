"""Chakra send/receive traces: golden bytes (formats.md 5.4), decode, and graph consistency."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from topocoll.export.chakra import (
    NODE_TYPES,
    chakra_traces,
    decode_chakra,
    encode_metadata,
    encode_node,
    frame,
    write_chakra,
)
from topocoll.selection import ALGORITHMS, ScheduleCache, synthesize
from topocoll.topology.spec import parse_spec

GOLDEN_HEX = (
    "07 0a 05 30 2e 30 2e 34 "
    "2e 08 01 12 07 67 72 61 64 5f 61 72 18 07 "
    "52 0d 0a 09 63 6f 6d 6d 5f 74 79 70 65 48 00 "
    "52 10 0a 09 63 6f 6d 6d 5f 73 69 7a 65 48 80 80 80 02")


def test_golden_bytes_from_formats_md():
    data = frame(encode_metadata()) + frame(encode_node(
        1, "grad_ar", NODE_TYPES["COMM_COLL_NODE"], attrs={"comm_type": 0, "comm_size": 4194304}))
    assert data == bytes.fromhex(GOLDEN_HEX.replace(" ", ""))
    version, nodes = decode_chakra(data)
    assert version == "0.0.4"
    assert nodes == [{"id": 1, "name": "grad_ar", "type": 7, "data_deps": [], "ctrl_deps": [],
                      "attr": {"comm_type": 0, "comm_size": 4194304}}]


@pytest.mark.parametrize("syn", ALGORITHMS, ids=lambda s: f"{s.name}-{s.kind}")
def test_traces_decode_and_match(syn):
    for spec in ("hier:ring(2)x ring(3)", "ring:6", "torus:3x3",
                 "twotier:racks=3,hosts=2,oversub=2", "dgx:2,gpus=3"):   # the first that applies
        topo = parse_spec(spec)
        if not syn.unsupported(topo, tuple(range(topo.num_ranks))):
            break
    s = synthesize(syn, topo, {}, cache=ScheduleCache())
    size = 6 * 2**20
    files = chakra_traces(s, size)
    sends, recvs = {}, {}
    total = {r: 0 for r in files}
    for r, data in files.items():
        _, nodes = decode_chakra(data)
        ids = {n["id"] for n in nodes}
        g = nx.DiGraph()
        for n in nodes:
            g.add_node(n["id"])
            assert set(n["data_deps"]) <= ids
            g.add_edges_from((d, n["id"]) for d in n["data_deps"])
            a = n["attr"]
            if n["type"] == NODE_TYPES["COMM_SEND_NODE"]:
                sends[(r, a["comm_dst"], a["comm_tag"])] = a["comm_size"]
                total[r] += a["comm_size"]
            else:
                assert n["type"] == NODE_TYPES["COMM_RECV_NODE"]
                recvs[(a["comm_src"], r, a["comm_tag"])] = a["comm_size"]
        assert nx.is_directed_acyclic_graph(g)
    assert sends == recvs   # every send has its receive, same tag and size
    sent = s.bytes_sent(size)
    for r, b in total.items():
        assert abs(b - sent[r]) <= len(sends), f"rank {r}: {b} bytes vs {sent[r]}"


def test_write_files_and_system_json(tmp_path):
    from topocoll.synth import ring_allreduce
    paths = write_chakra(ring_allreduce(parse_spec("ring:4")), 2**20, tmp_path, prefix="ar")
    assert sorted(p.name for p in paths) == [f"ar.{r}.et" for r in range(4)]
    cfg = json.loads((tmp_path / "system.json").read_text())
    assert cfg["all-reduce-implementation-custom"] == str(tmp_path / "ar")
    _, nodes = decode_chakra(paths[0].read_bytes())
    # ring allreduce on 4 ranks: 6 steps, one send and one receive each
    assert len(nodes) == 12 and {n["attr"]["comm_size"] for n in nodes} == {2**18}
