"""Chakra execution traces as task graphs, read and written through the ``mlc-chakra``
package's own protobuf messages (the ``[chakra]`` extra).

A trace is one file per rank, ``<prefix>.<rank>.et``: a length-delimited stream of a
``GlobalMetadata`` and ``Node`` messages (``../shared/reference/formats.md`` section 5).
Reading (:func:`read_chakra`) maps

- ``COMP_NODE`` to a compute task of ``duration_micros``;
- ``COMM_COLL_NODE`` to a collective: ``comm_type`` (ALL_REDUCE, ALL_GATHER,
  REDUCE_SCATTER, ALL_TO_ALL, BROADCAST, REDUCE), ``comm_size`` bytes, the group of
  ``pg_name`` (``groups``: a communicator-group mapping as ASTRA-sim takes it) or every
  rank of the trace;
- ``COMM_SEND_NODE`` / ``COMM_RECV_NODE`` to point-to-point tasks (``comm_src``,
  ``comm_dst``, ``comm_tag``, ``comm_size``);
- a ``COMP_NODE`` that is a PyTorch CPU collective (``c10d::allreduce_``,
  ``c10d::allgather_``, ``c10d::reduce_scatter_``, ``c10d::alltoall_``,
  ``c10d::broadcast_``): what Chakra's converter emits for a trace recorded on CPU with
  gloo, where it only recognizes GPU collectives. Its bytes are read from the tensor
  metadata of its inputs (``[id, storage, offset, numel, itemsize, device]``); the
  backend's own child op (``gloo:all_reduce``) is the same collective and is dropped.

Dependencies are ``data_deps`` and ``ctrl_deps`` (both, as ASTRA-sim's feeder treats
them); a dependency on a node that is dropped passes to that node's own dependencies.
Metadata nodes are dropped. Writing (:func:`write_chakra`) is the inverse for compute,
collective and point-to-point tasks.

Durations of a CPU trace. Chakra's converter alone leaves ``duration_micros`` at 0 for a
host trace; its linker (``chakra_trace_link``) needs ``et_replay``, which is not on PyPI.
``kineto=`` does the linking's part we need: the PyTorch profiler's trace (one
``*.<rank>.json`` per rank) gives every CPU op's duration by its record-function id
(``rf_id`` in the trace). Only outermost ops are charged: an op whose interval lies
inside another op's (any thread of the process; the converted trace does not keep every
parent) counts as 0, so that nothing is charged twice.

Examples
--------
>>> import tempfile
>>> from topocoll.workload.taskgraph import TaskGraph, TaskNode
>>> g = TaskGraph(2, tuple(n for r in range(2) for n in (
...     TaskNode(10 * r, r, "comp", "fwd", duration_s=2e-3),
...     TaskNode(10 * r + 1, r, "coll", "grads", collective="allreduce", size=4096.0,
...              group=(0, 1), deps=(10 * r,)))))
>>> d = tempfile.mkdtemp()
>>> paths = write_chakra(g, d)
>>> h = read_chakra(d)
>>> h.ranks, [(n.kind, n.collective, n.size, n.duration_s) for n in h.nodes if n.rank == 1]
(2, [('comp', None, 0.0, 0.002), ('coll', 'allreduce', 4096.0, 0.0)])
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import InputError
from .taskgraph import TaskGraph, TaskNode

__all__ = ["read_chakra", "write_chakra", "chakra_files", "kineto_durations",
           "TORCH_COLLECTIVES"]

#: PyTorch's c10d CPU ops and our collective kinds.
TORCH_COLLECTIVES = {"c10d::allreduce_": "allreduce", "c10d::allgather_": "allgather",
                     "c10d::_allgather_base_": "allgather",
                     "c10d::reduce_scatter_": "reduce_scatter",
                     "c10d::_reduce_scatter_base_": "reduce_scatter",
                     "c10d::alltoall_": "alltoall", "c10d::alltoall_base_": "alltoall",
                     "c10d::broadcast_": "broadcast", "c10d::reduce_": "reduce"}
_BACKEND_CHILD = re.compile(r"^(gloo|nccl|mpi|ucc):")
_FILE = re.compile(r"^(?P<prefix>.+)\.(?P<rank>\d+)\.et$")


def _pb():
    try:
        from chakra.schema.protobuf import et_def_pb2 as pb
        from chakra.src.third_party.utils import protolib
    except ImportError:                    # pragma: no cover - the extra is missing
        raise InputError("reading and writing Chakra traces needs the mlc-chakra package: "
                         "pip install 'topocoll[chakra]'", item="mlc-chakra") from None
    return pb, protolib


def _kinds(pb) -> dict:
    return {pb.ALL_REDUCE: "allreduce", pb.ALL_GATHER: "allgather",
            pb.REDUCE_SCATTER: "reduce_scatter", pb.ALL_TO_ALL: "alltoall",
            pb.BROADCAST: "broadcast", pb.REDUCE: "reduce"}


def chakra_files(path: str | Path) -> list[Path]:
    """The per-rank files of a trace: ``path`` is a directory holding ``<prefix>.<r>.et``
    for ranks ``0..n-1`` (one prefix), or one such file's prefix.

    Raises
    ------
    InputError
        When there are no files, several prefixes, or a missing rank.
    """
    p = Path(path)
    files = sorted(p.glob("*.et")) if p.is_dir() else sorted(p.parent.glob(p.name + ".*.et"))
    by_prefix: dict[str, dict[int, Path]] = {}
    for f in files:
        m = _FILE.match(f.name)
        if m:
            by_prefix.setdefault(m["prefix"], {})[int(m["rank"])] = f
    if not by_prefix:
        raise InputError(f"{p}: no Chakra trace files <prefix>.<rank>.et", item=str(p))
    if len(by_prefix) > 1:
        raise InputError(f"{p}: several traces ({', '.join(sorted(by_prefix))}); name one "
                         f"prefix", item=str(p))
    ranks = next(iter(by_prefix.values()))
    missing = [r for r in range(max(ranks) + 1) if r not in ranks]
    if missing:
        raise InputError(f"{p}: rank {missing[0]}'s file is missing", item=f"rank {missing[0]}")
    return [ranks[r] for r in range(len(ranks))]


def _attrs(node) -> dict:
    out = {}
    for a in node.attr:
        which = a.WhichOneof("value")
        if which is not None:
            out[a.name] = getattr(a, which)
    return out


def _tensor_bytes(values: object) -> float:
    """Bytes of the tensors in a PyTorch ET input list (``[id, storage, offset, numel,
    itemsize, device]`` per tensor, nested in lists)."""
    if isinstance(values, list):
        if len(values) == 6 and all(isinstance(x, int) for x in values[:5]) and \
                isinstance(values[5], str):
            return float(values[3] * values[4])
        return sum(_tensor_bytes(v) for v in values)
    return 0.0


def _torch_bytes(node) -> float:
    try:
        vals = ast.literal_eval(node.inputs.values) if node.inputs.values else []
    except (ValueError, SyntaxError):
        return 0.0
    return _tensor_bytes(vals[0] if vals else [])


def kineto_durations(path: str | Path, ranks: int) -> list[dict[int, float]]:
    """Per rank, seconds of every outermost CPU op by record-function id (ops inside
    another op's interval are left out), from the PyTorch profiler traces
    ``*.<rank>.json`` in the directory ``path``.

    Raises
    ------
    InputError
        When a rank's trace is missing or unreadable.
    """
    import json

    d = Path(path)
    out = []
    for r in range(ranks):
        cands = sorted(d.glob(f"*.{r}.json")) if d.is_dir() else []
        found = None
        for c in cands:
            try:
                doc = json.loads(c.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and "traceEvents" in doc:
                found = doc
                break
        if found is None:
            raise InputError(f"{d}: no profiler trace *.{r}.json with traceEvents for rank "
                             f"{r}", item=f"rank {r}")
        ops = []
        for e in found["traceEvents"]:
            args = e.get("args") or {}
            if e.get("ph") == "X" and "Record function id" in args:
                ops.append((float(e.get("ts", 0.0)), -float(e.get("dur", 0.0)),
                            int(args["Record function id"])))
        # an op inside another op's interval (any thread of the process) is part of it
        dur, end = {}, float("-inf")
        for ts, neg, rf in sorted(ops):
            if ts - neg <= end:
                continue
            dur[rf] = -neg * 1e-6
            end = max(end, ts - neg)
        out.append(dur)
    return out


def read_chakra(path: str | Path, *, groups: Mapping[str, Sequence[int]] | None = None,
                kineto: str | Path | None = None) -> TaskGraph:
    """The task graph of the trace at ``path`` (see the module docstring); ``groups``
    maps ``pg_name`` to ranks (default: ``<prefix>.comm_groups.json`` beside the trace,
    if any); ``kineto`` a directory of profiler traces giving CPU ops their durations.

    Raises
    ------
    InputError
        Naming the file and node of anything that cannot be read.
    """
    import json

    pb, protolib = _pb()
    kinds = _kinds(pb)
    files = chakra_files(path)
    world = tuple(range(len(files)))
    if groups is None:                    # the groups file written beside the trace
        side = files[0].with_name(_FILE.match(files[0].name)["prefix"] + ".comm_groups.json")
        if side.is_file():
            try:
                groups = json.loads(side.read_text())
            except (OSError, ValueError) as e:
                raise InputError(f"{side}: {e}", item=str(side)) from None
    durations = kineto_durations(kineto, len(files)) if kineto is not None else None
    nodes: list[TaskNode] = []
    for rank, f in enumerate(files):
        fh = protolib.openFileRd(str(f))
        try:
            meta = pb.GlobalMetadata()
            try:
                if not protolib.decodeMessage(fh, meta):
                    raise InputError(f"{f}: empty trace", item=str(f))
            except InputError:
                raise
            except Exception as e:         # not a Chakra trace at all
                raise InputError(f"{f}: not a Chakra execution trace (its metadata does not "
                                 f"decode: {e})", item=str(f)) from None
            raw = []
            while True:
                n = pb.Node()
                try:
                    if not protolib.decodeMessage(fh, n):
                        break
                except Exception as e:     # a truncated or corrupt stream
                    raise InputError(f"{f}: cannot decode node after "
                                     f"{len(raw)}: {e}", item=str(f)) from None
                raw.append(n)
        finally:
            fh.close()
        nodes += _rank_tasks(raw, rank, f, world, groups or {}, pb, kinds,
                             durations[rank] if durations else None)
    return TaskGraph(len(files), tuple(nodes), Path(path).name)


def _rank_tasks(raw, rank, f, world, groups, pb, kinds, durations=None) -> list[TaskNode]:
    keep: dict[int, dict] = {}
    deps_of: dict[int, list[int]] = {}
    for n in raw:
        deps_of[n.id] = [*n.data_deps, *n.ctrl_deps]
        a = _attrs(n)
        spec = None
        if n.type == pb.COMP_NODE:
            if n.name in TORCH_COLLECTIVES:
                spec = dict(kind="coll", collective=TORCH_COLLECTIVES[n.name],
                            size=_torch_bytes(n), group=world)
            elif not _BACKEND_CHILD.match(n.name):
                t = n.duration_micros * 1e-6
                rf = a.get("rf_id")
                if durations is not None and not t and rf is not None:
                    t = durations.get(int(rf), 0.0)
                spec = dict(kind="comp", duration_s=t)
        elif n.type == pb.COMM_COLL_NODE:
            kind = kinds.get(a.get("comm_type"))
            if kind is None:
                raise InputError(f"{f}: node {n.id} ({n.name}): collective type "
                                 f"{a.get('comm_type')!r} is not supported",
                                 item=f"node {n.id}")
            pg = a.get("pg_name")
            group = tuple(groups[pg]) if pg and pg in groups else world
            spec = dict(kind="coll", collective=kind, size=float(a.get("comm_size", 0)),
                        group=group)
        elif n.type in (pb.COMM_SEND_NODE, pb.COMM_RECV_NODE):
            send = n.type == pb.COMM_SEND_NODE
            peer = a.get("comm_dst" if send else "comm_src")
            if peer is None:
                raise InputError(f"{f}: node {n.id} ({n.name}): no "
                                 f"{'comm_dst' if send else 'comm_src'}", item=f"node {n.id}")
            spec = dict(kind="send" if send else "recv", peer=int(peer),
                        tag=int(a.get("comm_tag", 0)), size=float(a.get("comm_size", 0)))
        if spec is not None:
            keep[n.id] = {"name": n.name, **spec}
    out = []
    memo: dict[int, tuple[int, ...]] = {}

    def resolve(i: int, seen: frozenset = frozenset()) -> tuple[int, ...]:
        """Kept dependencies of node ``i``, through dropped nodes."""
        if i in memo:
            return memo[i]
        acc: list[int] = []
        for d in deps_of.get(i, ()):
            if d in seen:
                continue
            if d in keep:
                acc.append(d)
            elif d in deps_of:
                acc += resolve(d, seen | {i})
        memo[i] = tuple(sorted(set(acc)))
        return memo[i]

    base = rank << 40                     # ids unique across ranks
    for i, spec in keep.items():
        if spec["kind"] == "coll" and rank not in spec["group"]:
            raise InputError(f"{f}: node {i}: rank {rank} runs a collective of a group "
                             f"without it", item=f"node {i}")
        out.append(TaskNode(base + i, rank, deps=tuple(base + d for d in resolve(i)),
                            **spec))
    return sorted(out, key=lambda t: t.id)


def write_chakra(graph: TaskGraph, directory: str | Path, *, prefix: str = "topocoll"
                 ) -> list[Path]:
    """``<directory>/<prefix>.<rank>.et`` for every rank of ``graph`` with the package's
    protobuf messages, and ``<prefix>.comm_groups.json`` (ASTRA-sim's
    ``--comm-group-configuration``: group id -> ranks) when a collective spans fewer than
    all ranks; its ``pg_name`` is the group id. Returns the paths."""
    import json

    pb, protolib = _pb()
    codes = {v: k for k, v in _kinds(pb).items()}
    graph.check()
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    world = tuple(range(graph.ranks))
    gid: dict[tuple[int, ...], str] = {}
    for t in graph.nodes:
        g = tuple(sorted(t.group))
        if t.kind == "coll" and g != world and g not in gid:
            gid[g] = str(len(gid) + 1)
    paths = []
    for rank in range(graph.ranks):
        p = d / f"{prefix}.{rank}.et"
        with open(p, "wb") as fh:
            protolib.encodeMessage(fh, pb.GlobalMetadata(version="0.0.4"))
            for t in graph.nodes:
                if t.rank != rank:
                    continue
                n = pb.Node(id=t.id, name=t.name or t.kind)
                n.data_deps.extend(t.deps)
                if t.kind == "comp":
                    n.type = pb.COMP_NODE
                    n.duration_micros = int(round(t.duration_s * 1e6))
                elif t.kind == "coll":
                    n.type = pb.COMM_COLL_NODE
                    n.attr.add(name="comm_type", int64_val=codes[t.collective])
                    n.attr.add(name="comm_size", int64_val=int(round(t.size)))
                    g = tuple(sorted(t.group))
                    if g != world:
                        n.attr.add(name="pg_name", string_val=gid[g])
                else:
                    n.type = pb.COMM_SEND_NODE if t.kind == "send" else pb.COMM_RECV_NODE
                    src, dst = (rank, t.peer) if t.kind == "send" else (t.peer, rank)
                    n.attr.add(name="comm_src", int32_val=src)
                    n.attr.add(name="comm_dst", int32_val=dst)
                    n.attr.add(name="comm_tag", int32_val=t.tag)
                    n.attr.add(name="comm_size", int64_val=int(round(t.size)))
                n.attr.add(name="is_cpu_op", bool_val=False)
                protolib.encodeMessage(fh, n)
        paths.append(p)
    if gid:
        p = d / f"{prefix}.comm_groups.json"
        p.write_text(json.dumps({v: list(k) for k, v in gid.items()}, indent=1) + "\n")
        paths.append(p)
    return paths
