"""MSCCL XML: write a schedule for the MSCCL runtimes, and read MSCCL XML back into the IR.

Writer. The schedule is lowered (:func:`topocoll.schedule.lower.lower`); every rank gets one
send-only thread block per peer it sends to and one receive-only thread block per peer it
receives from. Every :class:`~topocoll.schedule.lower.Piece` of a message becomes one step
(``s`` on the sender; ``r`` for a copy or ``rrc`` for a reduction on the receiver), split so
that ``cnt`` stays below the runtime's limit. Cross-thread-block dependencies make the XML
obey the IR's order: a send waits for the last receive that wrote its chunks; a receive
waits for the last write of its chunks and for every send that read them since (it must
not overwrite data a send of the same or an earlier step still reads). A step has one
dependency slot; extra ones become preceding ``nop`` steps. ``hasdep`` is 1 exactly on the
steps something depends on. The connection ``a -> b`` uses channel
``((b - a) mod p - 1) // 16`` on both ends, so FIFO pairing per (sender, receiver, channel)
holds and each channel has at most 32 thread blocks.

Buffers: everything is in place; chunk ``c`` lives at offset ``c`` of one buffer
(``i`` for allreduce and reduce_scatter, ``o`` for allgather, whose input aliases block
``r`` of the output as in NCCL's in-place allgather).

Dialects (``formats.md`` section 1.2): ``"msccl"`` (microsoft/msccl, ``reduce_scatter``) and
``"msccl-executor"`` (Azure/msccl-executor-nccl, ``reducescatter``). Both get ``minBytes``,
``maxBytes`` and ``outofplace``, which the executor requires and msccl accepts.

Reader. :func:`from_msccl_xml` matches every send step with the receive step in FIFO order
per (sender, receiver, channel), and places each matched transfer at the earliest IR step
that its dependencies (thread-block order, ``depid/deps``, ``nop`` chains) allow: a
dependency on a receive of IR step ``j`` means step ``j + 1`` or later; on a send, step ``j``
or later. The result is an ordinary schedule for the verifier. Supported step types:
``s``, ``r``, ``rrc``, ``rcs``, ``rrcs``, ``rrs`` (read as ``rrcs``: the IR has no
unstored values), ``nop``, and ``cpy``/``re`` when they do not move a chunk to another id.

References
----------
.. [1] Cowan et al., "MSCCLang: Microsoft Collective Communication Language", ASPLOS 2023.
.. [2] microsoft/msccl-tools ``msccl/language/ir.py`` (the XML format), own implementation.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass

import networkx as nx

from ..collective import make_collective
from ..errors import NotSupportedError, ScheduleError
from ..schedule import Op, Schedule, ScheduleBuilder
from ..schedule.lower import lower
from .check import check_correct

__all__ = ["MscclLimits", "to_msccl_xml", "from_msccl_xml", "DIALECTS"]

DIALECTS = {"msccl": "reduce_scatter", "msccl-executor": "reducescatter"}
_BUF = {"allreduce": "i", "reduce_scatter": "i", "allgather": "o"}


@dataclass(frozen=True)
class MscclLimits:
    """Runtime limits checked by the writer (defaults: ``formats.md`` section 1.2)."""

    max_steps_per_tb: int = 256
    max_tbs_per_channel: int = 32
    max_cnt: int = 71
    max_channels: int = 32


class _Rank:
    """Thread blocks of one GPU while writing: steps, dependency bookkeeping."""

    def __init__(self) -> None:
        self.tbs: dict[tuple[str, int], list[dict]] = {}   # (dir, peer) -> steps
        self.last_write: dict[int, tuple] = {}              # chunk -> (tb key, step index)
        self.reads: dict[int, list[tuple]] = defaultdict(list)

    def add(self, key, step: dict, deps: list[tuple]) -> tuple:
        steps = self.tbs.setdefault(key, [])
        last: dict = {}
        for k, i in deps:
            if k != key:
                last[k] = max(last.get(k, -1), i)
        for k, i in sorted(last.items())[:-1]:
            steps.append({"type": "nop", "dep": (k, i), "srcbuf": "i", "dstbuf": "i",
                          "srcoff": -1, "dstoff": -1, "cnt": 0})
        step["dep"] = sorted(last.items())[-1] if last else None
        steps.append(step)
        return key, len(steps) - 1


def _channel(a: int, b: int, p: int) -> int:
    return ((b - a) % p - 1) // 16


def to_msccl_xml(schedule: Schedule, *, dialect: str = "msccl", proto: str = "Simple",
                 min_bytes: int = 0, max_bytes: int = 2**27,
                 limits: MscclLimits = MscclLimits(), verify: bool = True) -> str:
    """Return MSCCL XML for an allreduce, allgather or reduce_scatter schedule.

    Parameters
    ----------
    schedule : Schedule
        A verified schedule over ranks ``0 .. p-1`` (in that order).
    dialect : {'msccl', 'msccl-executor'}
        Target runtime (see module docstring).
    proto : {'Simple', 'LL', 'LL128'}
    min_bytes, max_bytes : int
        Message-size range for which the runtime selects the algorithm.
    limits : MscclLimits
        Checked before returning.
    verify : bool
        Refuse a schedule that :func:`topocoll.verify` rejects (default); False writes it
        anyway.

    Returns
    -------
    str
        The XML document.

    Raises
    ------
    NotSupportedError
        For another collective kind, ranks that are not ``0 .. p-1``, or a schedule that
        exceeds a runtime limit (the message names the limit, the rank and the thread block).
    ScheduleError
        With ``verify``, if the schedule is wrong (the first violation).
    """
    coll = schedule.collective
    if dialect not in DIALECTS:
        raise NotSupportedError(f"unknown MSCCL dialect {dialect!r}; expected one of "
                                f"{', '.join(DIALECTS)}")
    if verify:
        check_correct(schedule)
    if coll.kind not in _BUF:
        raise NotSupportedError(f"MSCCL export supports allreduce, allgather and reduce_scatter, "
                                f"not {coll.kind}")
    if dialect not in DIALECTS:
        raise NotSupportedError(f"unknown MSCCL dialect {dialect!r}; expected one of "
                                f"{', '.join(DIALECTS)}")
    p = coll.num_ranks
    if coll.ranks != tuple(range(p)):
        raise NotSupportedError("MSCCL export needs the collective over ranks 0..p-1 in order")
    buf, prog = _BUF[coll.kind], lower(schedule)
    gpus = {r: _Rank() for r in range(p)}
    for r in range(p):
        g = gpus[r]
        for st in prog.steps_of(r):
            for m in st.sends:
                for first, cnt, _red in _split(m.pieces, limits.max_cnt):
                    chunks = range(first, first + cnt)
                    deps = [g.last_write[c] for c in chunks if c in g.last_write]
                    at = g.add(("send", m.dst), {"type": "s", "srcbuf": buf, "srcoff": first,
                                                 "dstbuf": buf, "dstoff": first, "cnt": cnt}, deps)
                    for c in chunks:
                        g.reads[c].append(at)
            for m in st.recvs:
                for first, cnt, red in _split(m.pieces, limits.max_cnt):
                    chunks = range(first, first + cnt)
                    deps = [d for c in chunks for d in
                            ([g.last_write[c]] if c in g.last_write else []) + g.reads[c]]
                    at = g.add(("recv", m.src), {"type": "rrc" if red else "r", "srcbuf": buf,
                                                 "srcoff": first, "dstbuf": buf, "dstoff": first,
                                                 "cnt": cnt}, deps)
                    for c in chunks:
                        g.last_write[c] = at
                        g.reads[c] = []
    coll_name = DIALECTS[dialect] if coll.kind == "reduce_scatter" else coll.kind
    nchunks = coll.num_chunks
    i_chunks = {"allgather": coll.split}.get(coll.kind, nchunks)
    o_chunks = {"reduce_scatter": coll.split}.get(coll.kind, nchunks)
    root = ET.Element("algo", name=schedule.name or "topocoll", proto=proto, nchannels="0",
                      nchunksperloop=str(nchunks), ngpus=str(p), coll=coll_name, inplace="1",
                      outofplace="0", minBytes=str(min_bytes), maxBytes=str(max_bytes))
    used_channels = 0
    for r in range(p):
        used_channels = max(used_channels, _write_gpu(root, r, gpus[r], p, i_chunks, o_chunks,
                                                      limits))
    root.set("nchannels", str(used_channels))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


def _split(pieces, max_cnt):
    for pc in pieces:
        for a in range(pc.first, pc.first + pc.count, max_cnt):
            yield a, min(max_cnt, pc.first + pc.count - a), pc.reduce


def _write_gpu(root, r, g: _Rank, p, i_chunks, o_chunks, limits) -> int:
    gpu = ET.SubElement(root, "gpu", id=str(r), i_chunks=str(i_chunks), o_chunks=str(o_chunks),
                        s_chunks="0")
    keys = sorted(g.tbs, key=lambda k: (_channel(r, k[1], p) if k[0] == "send"
                                        else _channel(k[1], r, p), k))
    tb_id = {k: i for i, k in enumerate(keys)}
    depended = {s["dep"] for steps in g.tbs.values() for s in steps if s["dep"]}
    per_chan: dict[int, int] = defaultdict(int)
    for k in keys:
        chan = _channel(r, k[1], p) if k[0] == "send" else _channel(k[1], r, p)
        per_chan[chan] += 1
        if per_chan[chan] > limits.max_tbs_per_channel or chan >= limits.max_channels:
            raise NotSupportedError(f"rank {r}: more than {limits.max_tbs_per_channel} thread "
                                    f"blocks on channel {chan} (MSCCL limit)")
        steps = g.tbs[k]
        if len(steps) > limits.max_steps_per_tb:
            raise NotSupportedError(f"rank {r}, thread block {tb_id[k]} ({k[0]} peer {k[1]}): "
                                    f"{len(steps)} steps > {limits.max_steps_per_tb} (MSCCL limit)")
        tb = ET.SubElement(gpu, "tb", id=str(tb_id[k]),
                           send=str(k[1] if k[0] == "send" else -1),
                           recv=str(k[1] if k[0] == "recv" else -1), chan=str(chan))
        for i, s in enumerate(steps):
            depid, deps = (tb_id[s["dep"][0]], s["dep"][1]) if s["dep"] else (-1, -1)
            ET.SubElement(tb, "step", s=str(i), type=s["type"], srcbuf=s["srcbuf"],
                          srcoff=str(s["srcoff"]), dstbuf=s["dstbuf"], dstoff=str(s["dstoff"]),
                          cnt=str(s["cnt"]), depid=str(depid), deps=str(deps),
                          hasdep=str(int((k, i) in depended)))
    return max(per_chan, default=-1) + 1


# ----------------------------------------------------------------------------- reader
def _chunk_of(kind, k, rank, buf, off, where):
    if buf == "s":
        raise NotSupportedError(f"{where}: scratch buffer references are not supported")
    if kind == "allgather" and buf == "i":
        return rank * k + off
    if kind == "reduce_scatter" and buf == "o":
        return rank * k + off
    return off


def from_msccl_xml(text: str) -> Schedule:
    """Read MSCCL XML (either dialect) into a :class:`Schedule` (see module docstring).

    Raises
    ------
    ScheduleError
        If the XML is malformed: unknown attributes values, unmatched sends or receives,
        dependencies on missing steps, or a dependency cycle.
    NotSupportedError
        For collectives other than allreduce, allgather and reduce_scatter, or scratch use.

    Examples
    --------
    >>> from topocoll.synth import ring_allreduce
    >>> from topocoll.topology import ring
    >>> s = from_msccl_xml(to_msccl_xml(ring_allreduce(ring(4))))
    >>> s.collective.describe(), s.num_steps
    ('allreduce(p=4, k=4)', 6)
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ScheduleError(f"MSCCL XML does not parse: {e}", kind="malformed") from e
    name = {"reducescatter": "reduce_scatter"}.get(root.get("coll", ""), root.get("coll", ""))
    if name not in _BUF:
        raise NotSupportedError(f"MSCCL import supports allreduce, allgather and reduce_scatter, "
                                f"not coll={root.get('coll')!r}")
    p, n = int(root.get("ngpus", 0)), int(root.get("nchunksperloop", 0))
    k = n // p if name in ("allgather", "reduce_scatter") else n
    coll = make_collective(name, p, split=max(k, 1))
    ops, fifo = _read_ops(root, name, k)
    return _place(coll, ops, fifo, root.get("name", ""))


def _read_ops(root, kind, k):
    """ops[(rank, tb, s)] = dict(kind, deps, peer, chan, chunks, reduce); FIFO queues."""
    ops: dict[tuple, dict] = {}
    fifo: dict[tuple, dict[str, list]] = defaultdict(lambda: {"send": [], "recv": []})
    for gpu in root.iter("gpu"):
        r = int(gpu.get("id"))
        for tb in gpu.iter("tb"):
            t, chan = int(tb.get("id")), int(tb.get("chan", 0))
            send, recv = int(tb.get("send", -1)), int(tb.get("recv", -1))
            for st in tb.iter("step"):
                s, typ = int(st.get("s")), st.get("type")
                where = f"gpu {r}, tb {t}, step {s}"
                deps = [(r, t, s - 1)] if s > 0 else []
                if int(st.get("depid", -1)) >= 0:
                    deps.append((r, int(st.get("depid")), int(st.get("deps"))))
                cnt = int(st.get("cnt", 0))
                if typ in ("nop", "cpy", "re"):
                    if typ != "nop":
                        a = _chunk_of(kind, k, r, st.get("srcbuf"), int(st.get("srcoff")), where)
                        b = _chunk_of(kind, k, r, st.get("dstbuf"), int(st.get("dstoff")), where)
                        if a != b:
                            raise NotSupportedError(f"{where}: local {typ} moves chunks to "
                                                    f"another id, which the IR cannot express")
                    ops[(r, t, s)] = {"kind": "nop", "deps": deps}
                    continue
                if typ not in ("s", "r", "rrc", "rcs", "rrcs", "rrs"):
                    raise ScheduleError(f"{where}: unknown step type {typ!r}", kind="malformed")
                if typ != "s":
                    off = _chunk_of(kind, k, r, st.get("dstbuf"), int(st.get("dstoff")), where)
                    ops[(r, t, s, "r")] = {"kind": "recv", "deps": deps, "peer": recv,
                                           "chunks": tuple(range(off, off + cnt)),
                                           "reduce": typ.startswith("rr")}
                    fifo[(recv, r, chan)]["recv"].append((r, t, s, "r"))
                    ops[(r, t, s)] = {"kind": "nop", "deps": [(r, t, s, "r")]}
                if typ in ("s", "rcs", "rrcs", "rrs"):
                    buf, o = ("srcbuf", "srcoff") if typ == "s" else ("dstbuf", "dstoff")
                    off = _chunk_of(kind, k, r, st.get(buf), int(st.get(o)), where)
                    sdeps = deps if typ == "s" else [(r, t, s, "r")]
                    ops[(r, t, s, "s")] = {"kind": "send", "deps": sdeps, "peer": send,
                                           "chunks": tuple(range(off, off + cnt))}
                    fifo[(r, send, chan)]["send"].append((r, t, s, "s"))
                    ops[(r, t, s)] = {"kind": "nop", "deps": [(r, t, s, "s")]}
    return ops, fifo


def _place(coll, ops, fifo, name) -> Schedule:
    pair: dict[tuple, tuple] = {}
    for key, q in fifo.items():
        if len(q["send"]) != len(q["recv"]):
            raise ScheduleError(f"connection {key[0]}->{key[1]} channel {key[2]}: "
                                f"{len(q['send'])} sends but {len(q['recv'])} receives",
                                kind="malformed")
        for a, b in zip(q["send"], q["recv"], strict=True):
            if ops[a]["chunks"].__len__() != ops[b]["chunks"].__len__():
                raise ScheduleError(f"send {a} and receive {b} carry different counts",
                                    kind="malformed")
            pair[a], pair[b] = b, a
    for key, op in ops.items():
        for d in op["deps"]:
            if d not in ops:
                raise ScheduleError(f"gpu {key[0]}, tb {key[1]}, step {key[2]}: depends on "
                                    f"missing step {d[:3]}", kind="malformed")
    # One node per transfer (send and receive halves merged) and per nop. An edge u -> x of
    # weight w means step(x) >= step(u) + w: 1 after a receive (data), 0 after a send.
    def node(key):
        return pair[key] if ops[key]["kind"] == "recv" else key

    g = nx.DiGraph()
    g.add_nodes_from(node(k) for k in ops)
    for key, op in ops.items():
        if op["kind"] != "nop" and key not in pair:
            raise ScheduleError(f"{op['kind']} {key[:3]} has no matching peer step",
                                kind="malformed")
        for d in op["deps"]:
            w = 1 if ops[d]["kind"] == "recv" else 0
            u, x = node(d), node(key)
            if u == x:
                continue
            if g.has_edge(u, x):
                w = max(w, g[u][x]["w"])
            g.add_edge(u, x, w=w)
    comp = nx.condensation(g)
    member = comp.graph["mapping"]
    for u, x, w in g.edges(data="w"):
        if w and member[u] == member[x]:
            raise ScheduleError(f"MSCCL dependencies form a cycle through gpu {u[0]}, "
                                f"tb {u[1]}, step {u[2]} (the runtime would deadlock)",
                                kind="malformed")
    level = dict.fromkeys(comp.nodes, 0)
    for c in nx.topological_sort(comp):
        for u in comp.nodes[c]["members"]:
            for _, x, w in g.out_edges(u, data="w"):
                if member[x] != c:
                    level[member[x]] = max(level[member[x]], level[c] + w)
    step_of = {k: level[member[k]] for k in ops if ops[k]["kind"] == "send"}
    by_step: dict[int, list] = defaultdict(list)
    for s_key, j in step_of.items():
        r_key = pair[s_key]
        by_step[j].append((s_key[0], r_key[0], ops[r_key]["chunks"],
                           Op.REDUCE if ops[r_key]["reduce"] else Op.COPY))
    b = ScheduleBuilder(coll)
    for j in sorted(by_step):
        b.new_step()
        for src, dst, chunks, op in sorted(by_step[j]):
            b.add(src, dst, chunks, op)
    return b.build(name=name, meta={"source": "msccl-xml"})
