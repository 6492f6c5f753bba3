"""Pure Schedule -> Schedule transforms: sequence, overlay, reverse, relabel, remap.

Each returns a new schedule and never mutates its inputs. Synthesizers compose them:
an allreduce is a reduce-scatter followed by an allgather (:func:`concat`); a reduce-
scatter is a time-reversed allgather (:func:`reverse`); a bidirectional ring is two rings
run at once on halves of the data (:func:`overlay` after :func:`remap_chunks`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..collective import Collective
from ..errors import ScheduleError
from .ir import Op, Schedule

__all__ = ["concat", "overlay", "reverse", "relabel", "remap_chunks"]


def _paths(s: Schedule) -> tuple[np.ndarray, np.ndarray]:
    if s.path_ptr is None:
        return np.zeros(s.num_transfers + 1, dtype=np.int64), np.zeros(0, dtype=np.int32)
    return s.path_ptr, s.path_nodes


def _ptr(s: Schedule) -> np.ndarray | None:
    """``s``'s chunk pointer to pass on: None (implicit) for one chunk per transfer."""
    return None if s.unit_chunks else s.chunk_ptr


def _assemble(collective, parts, step_sizes, name, meta) -> Schedule:
    """Concatenate transfer rows ``parts`` = list of (schedule, transfer index array)."""
    src = np.concatenate([s.src[i] for s, i in parts]) if parts else np.zeros(0, np.int32)
    dst = np.concatenate([s.dst[i] for s, i in parts]) if parts else np.zeros(0, np.int32)
    op = np.concatenate([s.op[i] for s, i in parts]) if parts else np.zeros(0, np.int8)
    counts, ids, pcounts, pnodes = [], [], [], []
    any_path = any(s.path_ptr is not None for s, _ in parts)
    unit = all(s.unit_chunks for s, _ in parts)
    for s, i in parts:
        ids.append(s.chunks[i] if s.unit_chunks else _gather_ragged(s.chunk_ptr, s.chunks, i))
        if not unit:
            counts.append(s.chunk_counts()[i])
        if any_path:
            pp, pn = _paths(s)
            pcounts.append(np.diff(pp)[i])
            pnodes.append(_gather_ragged(pp, pn, i))
    chunk_ptr = None
    if not unit:
        cnt = np.concatenate(counts) if counts else np.zeros(0, np.int64)
        chunk_ptr = np.concatenate([[0], np.cumsum(cnt)])
    path_ptr = path_nodes = None
    if any_path:
        pc = np.concatenate(pcounts)
        path_ptr = np.concatenate([[0], np.cumsum(pc)])
        path_nodes = np.concatenate(pnodes)
    step_ptr = np.concatenate([[0], np.cumsum(step_sizes)]).astype(np.int64)
    return Schedule(collective, step_ptr, src, dst, op, chunk_ptr,
                    np.concatenate(ids) if ids else np.zeros(0, np.int32),
                    path_ptr, path_nodes, name=name, meta=meta)


#: :func:`_gather_ragged` copies slices where ``idx`` is runs of consecutive ids this long
#: on average (whole steps, as :func:`reverse` and :func:`overlay` take them).
RUN_SLICES = 64


def _gather_ragged(ptr: np.ndarray, vals: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Concatenate ``vals[ptr[i]:ptr[i+1]]`` for i in idx, vectorized; one slice per run
    of consecutive ids when the runs are long (no index array per entry: 1 s and 1.6 GB
    of temporaries for the halfway ring's 67 M entries on the 64x64 torus).

    >>> ptr, vals = np.array([0, 2, 3, 6]), np.arange(10, 16)
    >>> _gather_ragged(ptr, vals, np.array([2, 0, 1])).tolist()
    [13, 14, 15, 10, 11, 12]
    """
    cut = np.flatnonzero(np.diff(idx) != 1) + 1
    if len(idx) >= RUN_SLICES * (len(cut) + 1):
        lo = ptr[idx[np.concatenate([[0], cut])]]
        hi = ptr[idx[np.concatenate([cut - 1, [len(idx) - 1]])] + 1]
        return np.concatenate([vals[a:b] for a, b in zip(lo.tolist(), hi.tolist(),
                                                         strict=True)])
    starts = ptr[idx]
    lens = ptr[idx + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=vals.dtype)
    offs = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
    return vals[np.arange(total) + offs]


def concat(schedules: Sequence[Schedule], collective: Collective | None = None, *,
           name: str = "", meta: Mapping[str, str] | None = None) -> Schedule:
    """Run schedules one after another (their steps in sequence).

    All schedules must use the same chunk numbering; ``collective`` (default: that of the
    last schedule) is what the combination implements, e.g. an allreduce from a
    reduce-scatter followed by an allgather.

    Examples
    --------
    >>> from topocoll.collective import allreduce
    >>> from topocoll.synth import ring_reduce_scatter, ring_allgather
    >>> from topocoll.topology import ring
    >>> t = ring(4)
    >>> ar = concat([ring_reduce_scatter(t), ring_allgather(t)], allreduce(4, split=4))
    >>> ar.num_steps
    6
    """
    coll = collective or schedules[-1].collective
    name = name or "+".join(s.name for s in schedules)
    cat = np.concatenate

    def ptrs(arrs):  # concatenate CSR pointer arrays, shifting each by the previous total
        out = np.empty(sum(len(a) - 1 for a in arrs) + 1, dtype=np.int64)
        out[0], i, off = 0, 1, 0
        for a in arrs:
            np.add(a[1:], off, out=out[i: i + len(a) - 1])
            i += len(a) - 1
            off += int(a[-1])
        return out

    path_ptr = path_nodes = None
    if any(s.path_ptr is not None for s in schedules):
        pp = [_paths(s) for s in schedules]
        path_ptr, path_nodes = ptrs([p for p, _ in pp]), cat([n for _, n in pp])
    return Schedule(coll, ptrs([s.step_ptr for s in schedules]), cat([s.src for s in schedules]),
                    cat([s.dst for s in schedules]), cat([s.op for s in schedules]),
                    None if all(s.unit_chunks for s in schedules) else
                    ptrs([s.chunk_ptr for s in schedules]), cat([s.chunks for s in schedules]),
                    path_ptr, path_nodes, name=name, meta=meta or {})


def overlay(schedules: Sequence[Schedule], collective: Collective | None = None, *,
            name: str = "", meta: Mapping[str, str] | None = None) -> Schedule:
    """Run schedules at the same time: step ``i`` of the result is the union of their
    steps ``i`` (shorter schedules simply end earlier). Chunk ids must not clash unless
    intended; use :func:`remap_chunks` first."""
    nsteps = max(s.num_steps for s in schedules)
    parts, sizes = [], []
    for i in range(nsteps):
        size = 0
        for s in schedules:
            if i < s.num_steps:
                idx = np.arange(s.step_ptr[i], s.step_ptr[i + 1])
                parts.append((s, idx))
                size += len(idx)
        sizes.append(size)
    coll = collective or schedules[0].collective
    return _assemble(coll, parts, sizes, name or "|".join(s.name for s in schedules), meta or {})


def reverse(schedule: Schedule, collective: Collective, *, name: str = "",
            meta: Mapping[str, str] | None = None) -> Schedule:
    """Time-reverse a schedule: steps in reverse order, ``src``/``dst`` swapped, paths
    reversed, COPY turned into REDUCE and REDUCE into COPY.

    The reverse of a correct allgather (where every chunk reaches every rank once, along
    a tree) is a correct reduce-scatter; of a broadcast, a reduce.

    Examples
    --------
    >>> from topocoll.collective import reduce_scatter
    >>> from topocoll.synth import ring_allgather
    >>> from topocoll.topology import ring
    >>> rs = reverse(ring_allgather(ring(4)), reduce_scatter(4))
    >>> rs.step(0)[0].op.name
    'REDUCE'
    """
    sizes = np.diff(schedule.step_ptr)[::-1]
    order = np.concatenate([np.arange(schedule.step_ptr[i], schedule.step_ptr[i + 1])
                            for i in range(schedule.num_steps - 1, -1, -1)]) \
        if schedule.num_transfers else np.zeros(0, np.int64)
    s = schedule
    flipped = Schedule(s.collective, s.step_ptr, s.dst, s.src,
                       np.where(s.op == Op.COPY, Op.REDUCE, Op.COPY).astype(np.int8),
                       _ptr(s), s.chunks, *(_reversed_paths(s)), name=s.name, meta=s.meta)
    return _assemble(collective, [(flipped, order)], sizes.tolist(),
                     name or f"reverse({s.name})", meta or dict(s.meta))


def _reversed_paths(s: Schedule):
    if s.path_ptr is None:
        return None, None
    # every path read backwards: position i of the path [a, b) takes node a + b - 1 - i
    ptr = np.asarray(s.path_ptr, dtype=np.int64)
    seg = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    pos = np.arange(ptr[0], ptr[-1])
    nodes = s.path_nodes.copy()
    nodes[pos] = s.path_nodes[ptr[:-1][seg] + ptr[1:][seg] - 1 - pos]
    return s.path_ptr, nodes


def relabel(schedule: Schedule, mapping: Sequence[int] | np.ndarray, collective: Collective, *,
            name: str = "") -> Schedule:
    """Rename nodes: node ``v`` becomes ``mapping[v]`` (in ``src``, ``dst`` and paths).

    Use it to place a schedule written for ranks ``0..p-1`` onto arbitrary ranks, e.g. a
    ring in a chosen order or a subgroup.

    Raises
    ------
    ScheduleError
        If the schedule names a node outside ``mapping``.
    """
    m = np.asarray(mapping, dtype=np.int64)
    s = schedule
    top = int(max(s.src.max(initial=-1), s.dst.max(initial=-1),
                  s.path_nodes.max(initial=-1) if s.path_nodes is not None else -1))
    if top >= len(m):
        raise ScheduleError(f"relabel: node {top} has no entry in the mapping of length {len(m)}",
                            kind="malformed", rank=top)
    pn = m[s.path_nodes] if s.path_nodes is not None else None
    return Schedule(collective, s.step_ptr, m[s.src], m[s.dst], s.op, _ptr(s), s.chunks,
                    s.path_ptr, pn, name=name or s.name, meta=s.meta)


def remap_chunks(schedule: Schedule, mapping: Sequence[int] | np.ndarray,
                 collective: Collective | None = None) -> Schedule:
    """Rename chunks: chunk ``c`` becomes ``mapping[c]``; embeds a schedule's chunk space
    into a larger collective's (e.g. half ``h`` of block ``b`` is chunk ``2*b + h``)."""
    m = np.asarray(mapping, dtype=np.int64)
    s = schedule
    return Schedule(collective or s.collective, s.step_ptr, s.src, s.dst, s.op, _ptr(s),
                    m[s.chunks], s.path_ptr, s.path_nodes, name=s.name, meta=s.meta)
