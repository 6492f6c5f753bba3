"""MSCCL XML: writer rules (formats.md 1.4), limits, and the round trip through the verifier."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest

from topocoll.errors import NotSupportedError, ScheduleError
from topocoll.export.msccl import DIALECTS, MscclLimits, from_msccl_xml, to_msccl_xml
from topocoll.selection import ALGORITHMS, find_algorithm
from topocoll.topology.spec import parse_spec
from topocoll.verification import verify

SPECS = ["ring:2", "ring:3", "ring:5", "ring:8", "torus:3x4", "hier:ring(2)x ring(4)",
         "hier:fc(2)x ring(3)x switch(2)", "ring:18"]
KINDS = ("allreduce", "allgather", "reduce_scatter")


def _cases():
    for syn in ALGORITHMS:
        if syn.kind in KINDS:
            for spec in SPECS:
                yield pytest.param(syn, spec, id=f"{syn.name}-{syn.kind}-{spec}")


DEFAULT_LIMITS = MscclLimits()


def check_rules(xml: str, dialect: str, p: int, limits=DEFAULT_LIMITS):
    root = ET.fromstring(xml)
    for attr in ("name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace",
                 "outofplace", "minBytes", "maxBytes"):
        assert root.get(attr) is not None, attr
    assert int(root.get("ngpus")) == p and len(root.findall("gpu")) == p
    assert root.get("coll") in ("allreduce", "allgather", DIALECTS[dialect])
    fifo = defaultdict(lambda: [[], []])
    for gpu in root.findall("gpu"):
        r = int(gpu.get("id"))
        tbs = gpu.findall("tb")
        assert [int(t.get("id")) for t in tbs] == list(range(len(tbs)))
        per_chan = defaultdict(int)
        steps = {}
        for tb in tbs:
            per_chan[int(tb.get("chan"))] += 1
            st = tb.findall("step")
            assert [int(s.get("s")) for s in st] == list(range(len(st)))
            assert len(st) <= limits.max_steps_per_tb
            for s in st:
                steps[(int(tb.get("id")), int(s.get("s")))] = s
                assert int(s.get("cnt")) <= limits.max_cnt
                if s.get("type") == "s":
                    fifo[(r, int(tb.get("send")), tb.get("chan"))][0].append(s.get("cnt"))
                elif s.get("type") in ("r", "rrc"):
                    fifo[(int(tb.get("recv")), r, tb.get("chan"))][1].append(s.get("cnt"))
        assert max(per_chan.values(), default=0) <= limits.max_tbs_per_channel
        targets = {(int(s.get("depid")), int(s.get("deps"))) for s in steps.values()
                   if int(s.get("depid")) >= 0}
        assert targets <= set(steps), "dependency on a missing step"
        for key, s in steps.items():
            assert s.get("hasdep") == str(int(key in targets)), f"hasdep wrong at {key}"
    for key, (sends, recvs) in fifo.items():
        assert sends == recvs, f"FIFO pairing broken on {key}"


@pytest.mark.parametrize("syn,spec", list(_cases()))
def test_round_trip_verifies(syn, spec):
    topo = parse_spec(spec)
    if syn.unsupported(topo, tuple(range(topo.num_ranks))):
        pytest.skip("not applicable")
    # optimal's default may pick the timed-tree schedule (1024+ chunks per block, beyond
    # MSCCL's steps per thread block); its batches pipeline is the exportable one
    s = syn(topo, pipeline="batches") if syn.name == "optimal" else syn(topo)
    for dialect in DIALECTS:
        xml = to_msccl_xml(s, dialect=dialect, limits=MscclLimits(max_tbs_per_channel=32))
        check_rules(xml, dialect, topo.num_ranks)
        back = from_msccl_xml(xml)
        assert back.collective == s.collective
        rep = verify(back, topo, collect=True)
        assert rep.ok, rep.violations[:3]
        # nothing lost: the same chunks cross the same pairs
        assert back.num_transfers >= len({(a, b) for a, b in zip(s.src, s.dst, strict=True)})
        assert back.chunk_counts().sum() == s.chunk_counts().sum()


@pytest.mark.parametrize("kind", KINDS)
def test_two_level_round_trip_on_racks(kind):
    syn = find_algorithm("two_level", kind)
    test_round_trip_verifies(syn, "twotier:racks=3,hosts=2,oversub=2")


@pytest.mark.parametrize("kind", KINDS)
def test_rail_rings_round_trip_on_boxes(kind):
    # NCCL's rings across boxes need named boxes, which the specs above do not have
    test_round_trip_verifies(find_algorithm("rail_rings", kind), "dgx:2,gpus=3")


def test_dialect_spelling():
    from topocoll.synth import ring_reduce_scatter
    s = ring_reduce_scatter(parse_spec("ring:4"))
    assert 'coll="reduce_scatter"' in to_msccl_xml(s, dialect="msccl")
    assert 'coll="reducescatter"' in to_msccl_xml(s, dialect="msccl-executor")
    with pytest.raises(NotSupportedError, match="dialect"):
        to_msccl_xml(s, dialect="nccl")


def test_limits_are_enforced():
    from topocoll.synth import direct_allreduce, ring_allreduce
    with pytest.raises(NotSupportedError, match="steps"):
        to_msccl_xml(ring_allreduce(parse_spec("ring:8")), limits=MscclLimits(max_steps_per_tb=3))
    with pytest.raises(NotSupportedError, match="thread blocks"):
        to_msccl_xml(direct_allreduce(parse_spec("star:8")),
                     limits=MscclLimits(max_tbs_per_channel=4))
    # 40 ranks direct: 39 peers each way spread over 3 channels, never more than 32 per channel
    xml = to_msccl_xml(direct_allreduce(parse_spec("star:40")))
    assert ET.fromstring(xml).get("nchannels") == "3"
    check_rules(xml, "msccl", 40)


def test_unsupported_kind():
    from topocoll.synth import direct_alltoall
    with pytest.raises(NotSupportedError, match="alltoall"):
        to_msccl_xml(direct_alltoall(parse_spec("ring:4")))


# formats.md section 1.3 example (two ranks, in-place pairwise allreduce), read back; the
# file is written by hand, not by our writer
GOLDEN = (Path(__file__).parent / "data" / "ar2_pairwise.xml").read_text()


def test_golden_third_party_xml_imports_and_verifies():
    s = from_msccl_xml(GOLDEN)
    assert s.collective.describe() == "allreduce(p=2, k=2)"
    assert [[(t.src, t.dst, t.chunks, int(t.op)) for t in st] for st in s.steps] == [
        [(0, 1, (1,), 1), (1, 0, (0,), 1)], [(0, 1, (0,), 0), (1, 0, (1,), 0)]]
    verify(s, parse_spec("ring:2"))


def test_broken_xml_is_named():
    bad = GOLDEN.replace('<step s="2" type="r"    srcbuf="i" srcoff="0"', '<step s="2" type="nop" '
                         'srcbuf="i" srcoff="0"')
    with pytest.raises(ScheduleError, match="1 sends but 0 receives|sends but"):
        from_msccl_xml(bad)
    with pytest.raises(ScheduleError, match="parse"):
        from_msccl_xml("<algo")
    # a wrong algorithm imports, and the verifier rejects it
    wrong = GOLDEN.replace('type="rrcs" srcbuf="i" srcoff="1"', 'type="rcs" srcbuf="i" srcoff="1"')
    assert not verify(from_msccl_xml(wrong), collect=True).ok
