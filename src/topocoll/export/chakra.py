"""Chakra execution traces: a schedule as per-rank send/receive graphs for ASTRA-sim.

ASTRA-sim 2.x replaces its native collective algorithm with a custom one when
``system.json`` names a trace prefix under ``all-reduce-implementation-custom`` (and the
other ``*-implementation-custom`` keys): one Chakra file per rank, ``<prefix>.<rank>.et``,
holding that rank's ``COMM_SEND_NODE`` and ``COMM_RECV_NODE`` nodes with their dependencies.
:func:`write_chakra` produces those files from any schedule; :func:`decode_chakra` reads
them back (used by the tests, and handy for inspection).

Encoding (``formats.md`` section 5): each file is a stream of length-delimited protobuf
messages (varint length, then the message): first a ``GlobalMetadata {version = 1}``, then
one ``Node`` per message of the lowered schedule. The protobuf wire format is written by
hand (varints, length-delimited fields and packed repeated ``uint64``); no protobuf
package is needed. Field numbers follow mlcommons/chakra ``schema/protobuf/et_def.proto``.

Mapping. Every :class:`~topocoll.schedule.lower.Message` of rank ``r``'s lowered program
becomes a send node (on the source) and a receive node (on the destination) with
``comm_size`` = payload bytes (``chunks x Collective.chunk_bytes(message_bytes)``, rounded to
whole bytes), ``comm_tag`` = IR step and ``comm_src``/``comm_dst`` = peer. ``data_deps`` of every
node of a rank step are the nodes of the rank's previous step (the relaxed-barrier rule of
the executor). Reduction compute and the local copies are not modelled (no COMP nodes);
``duration_micros`` is left unset, so ASTRA-sim times only the communication.

References
----------
.. [1] Sridharan et al., "Chakra: Advancing performance benchmarking and co-design using
   standardized execution traces", arXiv:2305.14516, 2023.
.. [2] Won et al., "ASTRA-sim2.0", ISPASS 2023.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError, ScheduleError
from ..schedule import Schedule
from ..schedule.lower import lower
from .check import check_correct

__all__ = ["NODE_TYPES", "COMM_TYPES", "encode_node", "encode_metadata", "frame",
           "chakra_traces", "write_chakra", "decode_chakra", "decode_stream", "system_json"]

NODE_TYPES = {"INVALID_NODE": 0, "METADATA_NODE": 1, "MEM_LOAD_NODE": 2, "MEM_STORE_NODE": 3,
              "COMP_NODE": 4, "COMM_SEND_NODE": 5, "COMM_RECV_NODE": 6, "COMM_COLL_NODE": 7}
COMM_TYPES = {"allreduce": 0, "reduce": 1, "allgather": 2, "broadcast": 5, "alltoall": 6,
              "reduce_scatter": 7}
CHAKRA_VERSION = "0.0.4"
_IMPL_KEY = {"allreduce": "all-reduce", "allgather": "all-gather",
             "reduce_scatter": "reduce-scatter", "alltoall": "all-to-all"}


# ----------------------------------------------------------------------------- wire format
def _varint(v: int) -> bytes:
    if v < 0:
        v += 1 << 64   # int64 negatives are ten-byte two's complement varints
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num: int, wire: int, payload: bytes | int) -> bytes:
    key = _varint(num << 3 | wire)
    if wire == 0:
        return key + _varint(int(payload))
    return key + _varint(len(payload)) + payload


def _attr(name: str, value) -> bytes:
    """An ``AttributeProto``: bool -> bool_val (27), int -> int64_val (9), str -> string_val."""
    body = _field(1, 2, name.encode())
    if isinstance(value, bool):
        body += _field(27, 0, int(value))
    elif isinstance(value, int):
        body += _field(9, 0, value)
    else:
        body += _field(29, 2, str(value).encode())
    return body


def frame(message: bytes) -> bytes:
    """Prefix one serialized message with its varint length (the stream framing)."""
    return _varint(len(message)) + message


def encode_metadata(version: str = CHAKRA_VERSION) -> bytes:
    """Serialize ``GlobalMetadata {version}`` (unframed)."""
    return _field(1, 2, version.encode())


def encode_node(node_id: int, name: str, node_type: int, *, data_deps=(), ctrl_deps=(),
                attrs: dict | None = None) -> bytes:
    """Serialize one Chakra ``Node`` (unframed).

    Examples
    --------
    ``formats.md`` section 5.4, byte for byte:

    >>> n = encode_node(1, "grad_ar", NODE_TYPES["COMM_COLL_NODE"],
    ...                 attrs={"comm_type": 0, "comm_size": 4194304})
    >>> frame(encode_metadata()).hex(" ")
    '07 0a 05 30 2e 30 2e 34'
    >>> frame(n).hex(" ")[:47]
    '2e 08 01 12 07 67 72 61 64 5f 61 72 18 07 52 0d'
    """
    out = _field(1, 0, node_id) + _field(2, 2, name.encode()) + _field(3, 0, node_type)
    if ctrl_deps:
        out += _field(4, 2, b"".join(_varint(d) for d in ctrl_deps))
    if data_deps:
        out += _field(5, 2, b"".join(_varint(d) for d in data_deps))
    for k, v in (attrs or {}).items():
        out += _field(10, 2, _attr(k, v))
    return out


# ----------------------------------------------------------------------------- writer
def chakra_traces(schedule: Schedule, message_bytes: float, *,
                  comm_group: str | None = None) -> dict[int, bytes]:
    """Return ``{rank: file bytes}`` with every rank's send/receive graph.

    Parameters
    ----------
    schedule : Schedule
        Any verified schedule.
    message_bytes : float
        The collective's size (``Collective.chunk_bytes`` converts chunks to bytes).
    comm_group : str, optional
        Written as ``pg_name`` on every node (ASTRA-sim communicator groups).

    Raises
    ------
    ScheduleError
        If a message would carry less than one byte.
    """
    prog = lower(schedule)
    chunk = schedule.collective.chunk_bytes(message_bytes)
    files = {}
    for r in schedule.collective.ranks:
        out = [frame(encode_metadata())]
        prev: list[int] = []
        nid = 0
        for st in prog.steps_of(r):
            ids = []
            for kind, msgs in (("send", st.sends), ("recv", st.recvs)):
                for m in msgs:
                    size = int(round(m.num_chunks * chunk))
                    if size < 1:
                        raise ScheduleError(f"step {m.step}, {m.src}->{m.dst}: message of "
                                            f"{m.num_chunks * chunk:g} bytes", kind="bad_size")
                    peer = m.dst if kind == "send" else m.src
                    attrs = {"is_cpu_op": False, "comm_size": size, "comm_tag": m.step,
                             ("comm_dst" if kind == "send" else "comm_src"): peer}
                    if comm_group is not None:
                        attrs["pg_name"] = comm_group
                    ntype = NODE_TYPES["COMM_SEND_NODE" if kind == "send" else "COMM_RECV_NODE"]
                    out.append(frame(encode_node(nid, f"{kind}_s{m.step}_{m.src}_{m.dst}",
                                                 ntype, data_deps=prev, attrs=attrs)))
                    ids.append(nid)
                    nid += 1
            prev = ids
        files[r] = b"".join(out)
    return files


def system_json(kind: str, prefix: str, base: dict | None = None) -> dict:
    """A ``system.json`` dictionary that makes ASTRA-sim run the traces at ``prefix``."""
    if kind not in _IMPL_KEY:
        raise ScheduleError(f"ASTRA-sim has no custom-collective key for {kind}",
                            kind="wrong_collective")
    cfg = dict(base or {"scheduling-policy": "FIFO", "endpoint-delay": 10,
                        "active-chunks-per-dimension": 1, "preferred-dataset-splits": 1,
                        "collective-optimization": "baseline", "local-mem-bw": 1600})
    cfg[f"{_IMPL_KEY[kind]}-implementation-custom"] = prefix
    return cfg


def write_chakra(schedule: Schedule, message_bytes: float, directory, *,
                 prefix: str = "topocoll", verify: bool = True) -> list[Path]:
    """Write ``<directory>/<prefix>.<rank>.et`` for every rank and ``system.json``.

    Returns the paths of the trace files. With ``verify`` (default) a schedule that
    :func:`topocoll.verify` rejects is refused before anything is written.

    Raises
    ------
    ScheduleError
        With ``verify``, if the schedule is wrong (the first violation).
    InputError
        If ``directory`` exists and is not a directory, or ``message_bytes`` is not > 0.
    """
    d = Path(directory)
    if d.exists() and not d.is_dir():
        raise InputError(f"{d}: exists and is not a directory", item=str(d))
    if not (isinstance(message_bytes, int | float) and message_bytes > 0):
        raise InputError(f"message_bytes must be > 0, got {message_bytes!r}",
                         item="message_bytes")
    if verify:
        check_correct(schedule)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for r, data in chakra_traces(schedule, message_bytes).items():
        p = d / f"{prefix}.{r}.et"
        p.write_bytes(data)
        paths.append(p)
    sysj = system_json(schedule.collective.kind, str(d / prefix)) \
        if schedule.collective.kind in _IMPL_KEY else None
    if sysj:
        (d / "system.json").write_text(json.dumps(sysj, indent=2) + "\n")
    return paths


# ----------------------------------------------------------------------------- reader
def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = v = 0
    while True:
        if i >= len(buf):
            raise ScheduleError("truncated varint in Chakra stream", kind="malformed")
        b = buf[i]
        v |= (b & 0x7F) << shift
        i += 1
        if not b & 0x80:
            return v, i
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, object]]:
    out, i = [], 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _read_varint(buf, i)
        elif wire == 2:
            n, i = _read_varint(buf, i)
            v, i = buf[i: i + n], i + n
        elif wire == 1:
            v, i = buf[i: i + 8], i + 8
        elif wire == 5:
            v, i = buf[i: i + 4], i + 4
        else:
            raise ScheduleError(f"unsupported protobuf wire type {wire}", kind="malformed")
        out.append((num, wire, v))
    return out


def _decode_attr(buf: bytes):
    name, value = "", None
    for num, wire, v in _fields(buf):
        if num == 1:
            name = v.decode()
        elif wire == 0:
            value = bool(v) if num == 27 else (v - (1 << 64) if v >= 1 << 63 else v)
        elif num == 29:
            value = v.decode()
    return name, value


def _packed(v) -> list[int]:
    out, i = [], 0
    while i < len(v):
        x, i = _read_varint(v, i)
        out.append(x)
    return out


def decode_stream(data: bytes) -> list[bytes]:
    """Split a length-delimited stream into its messages."""
    msgs, i = [], 0
    while i < len(data):
        n, i = _read_varint(data, i)
        if i + n > len(data):
            raise ScheduleError("truncated message in Chakra stream", kind="malformed")
        msgs.append(data[i: i + n])
        i += n
    return msgs


def decode_chakra(data: bytes) -> tuple[str, list[dict]]:
    """Decode one ``.et`` file into ``(version, nodes)``; each node a dict with ``id``,
    ``name``, ``type``, ``data_deps``, ``ctrl_deps`` and ``attr`` (name -> value).

    Unknown fields are skipped, as the Chakra schema asks of readers.
    """
    msgs = decode_stream(data)
    if not msgs:
        raise ScheduleError("empty Chakra stream", kind="malformed")
    version = next((v.decode() for n, _, v in _fields(msgs[0]) if n == 1), "")
    nodes = []
    for m in msgs[1:]:
        node = {"id": 0, "name": "", "type": 0, "data_deps": [], "ctrl_deps": [], "attr": {}}
        for num, wire, v in _fields(m):
            if num == 1:
                node["id"] = v
            elif num == 2:
                node["name"] = v.decode()
            elif num == 3:
                node["type"] = v
            elif num in (4, 5):
                key = "ctrl_deps" if num == 4 else "data_deps"
                node[key] += _packed(v) if wire == 2 else [v]
            elif num == 10:
                k, val = _decode_attr(v)
                node["attr"][k] = val
        nodes.append(node)
    return version, nodes
