"""Lowering: a :class:`~topocoll.schedule.Schedule` as per-rank ordered programs.

The runtime (:mod:`topocoll.runtime.torch_dist`) and the exporters (:mod:`topocoll.export`)
all need the same thing: for every rank, the ordered list of messages it sends and receives,
which chunks each carries, and whether a received chunk overwrites or is combined with what
the rank holds. This module computes it once.

Rules (the verifier's semantics, :mod:`topocoll.verification.semantics`, made operational):

- **One message per (step, src, dst).** All transfers of a step between the same ordered
  pair are merged; the message carries its chunks in increasing id order, grouped into
  :class:`Piece` runs of consecutive ids. Matching is therefore FIFO per ordered pair in step
  order, which is what NCCL, gloo and MSCCL's per-channel rule need.
- **Snapshot reads.** Within a step every send reads the sender's state as of the start of the
  step; receives are applied after the step's messages have arrived: copies first, then
  reductions.
- **No identity element needed.** A REDUCE into a chunk the destination does not hold yet is
  lowered to a copy (if several such REDUCEs meet in one step, the one from the lowest source
  becomes the copy). Reductions therefore only ever combine two real values, so MIN, MAX and
  PRODUCT work as well as SUM.
- **Relaxed barrier.** A rank runs its own steps in order and only waits for its own
  messages. This is correct because a rank's state changes only through its own receives,
  and it cannot deadlock: by induction on the step index every message of step ``s`` is
  eventually posted by both ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..collective import Collective
from ..errors import ScheduleError
from .ir import Op, Schedule

__all__ = ["Piece", "Message", "RankStep", "Program", "lower", "runs"]


@dataclass(frozen=True, slots=True)
class Piece:
    """Chunks ``first .. first + count - 1`` of a message, all copied or all reduced."""

    first: int
    count: int
    reduce: bool = False

    @property
    def chunks(self) -> range:
        """The chunk ids of this piece."""
        return range(self.first, self.first + self.count)


@dataclass(frozen=True, slots=True)
class Message:
    """Everything ``src`` sends to ``dst`` in IR step ``step``, as ordered pieces.

    The payload is the concatenation of the pieces' chunks in order.
    """

    step: int
    src: int
    dst: int
    pieces: tuple[Piece, ...]

    @property
    def num_chunks(self) -> int:
        """Chunks carried by the message."""
        return sum(p.count for p in self.pieces)

    @property
    def chunks(self) -> tuple[int, ...]:
        """All chunk ids in payload order."""
        return tuple(c for p in self.pieces for c in p.chunks)


@dataclass(frozen=True, slots=True)
class RankStep:
    """What one rank does in one IR step: post ``sends`` and ``recvs``, wait, then apply."""

    step: int
    sends: tuple[Message, ...]
    recvs: tuple[Message, ...]


@dataclass(frozen=True)
class Program:
    """A lowered schedule: per-rank ordered steps.

    Attributes
    ----------
    collective : Collective
        The collective of the source schedule.
    name : str
        The source schedule's name.
    num_steps : int
        IR steps of the source schedule.
    ranks : mapping of int to tuple of RankStep
        For every rank of the collective, its non-empty steps in order (possibly none).
    """

    collective: Collective
    name: str
    num_steps: int
    ranks: Mapping[int, tuple[RankStep, ...]]

    def steps_of(self, rank: int) -> tuple[RankStep, ...]:
        """The ordered steps of ``rank`` (empty for a rank that never communicates)."""
        return self.ranks.get(rank, ())

    def messages(self) -> tuple[Message, ...]:
        """Every message once, ordered by step, then source, then destination."""
        out = [m for steps in self.ranks.values() for st in steps for m in st.sends]
        return tuple(sorted(out, key=lambda m: (m.step, m.src, m.dst)))

    @property
    def num_messages(self) -> int:
        """Number of messages over all steps."""
        return sum(len(st.sends) for steps in self.ranks.values() for st in steps)


def runs(chunks, reduce_flags=None) -> tuple[Piece, ...]:
    """Group sorted chunk ids into maximal runs of consecutive ids with the same flag.

    Examples
    --------
    >>> runs([0, 1, 2, 5])
    (Piece(first=0, count=3, reduce=False), Piece(first=5, count=1, reduce=False))
    >>> [(p.first, p.count, p.reduce) for p in runs([3, 4, 5], [True, False, False])]
    [(3, 1, True), (4, 2, False)]
    """
    flags = [False] * len(chunks) if reduce_flags is None else list(reduce_flags)
    out: list[Piece] = []
    for c, f in zip(chunks, flags, strict=True):
        c, f = int(c), bool(f)
        if out and out[-1].reduce == f and out[-1].first + out[-1].count == c:
            out[-1] = Piece(out[-1].first, out[-1].count + 1, f)
        else:
            out.append(Piece(c, 1, f))
    return tuple(out)


def _initial_held(collective: Collective, size: int) -> np.ndarray:
    held = np.zeros((size, collective.num_chunks), dtype=bool)
    pre = collective.pre_sets()
    owners = np.repeat(np.arange(collective.num_chunks), pre.sizes())
    held[pre.indices, owners] = True
    return held


def lower(schedule: Schedule, rank: int | None = None) -> Program:
    """Lower ``schedule`` to per-rank ordered :class:`RankStep` lists.

    Parameters
    ----------
    schedule : Schedule
        A schedule that passes :func:`topocoll.verification.verify`. Lowering does not
        re-verify it; it only rejects transfers it cannot express.
    rank : int, optional
        Build the steps of this rank only (what one process of a job runs); its steps are
        those of the whole program. Every transfer is still checked and followed, since
        whether a received chunk is combined depends on what the receiver held.

    Returns
    -------
    Program
        At most one :class:`Message` per (step, src, dst); see the module docstring. With
        ``rank``, :attr:`Program.ranks` holds that rank alone (if it is in the collective).

    Raises
    ------
    ScheduleError
        If an endpoint is not a rank of the collective, a transfer goes from a rank to
        itself, or a chunk id is out of range.

    Examples
    --------
    >>> from topocoll.collective import allreduce
    >>> from topocoll.schedule import Transfer
    >>> s = Schedule.from_steps(allreduce(2, split=2), [
    ...     [Transfer(0, 1, (1,), Op.REDUCE), Transfer(1, 0, (0,), Op.REDUCE)],
    ...     [Transfer(0, 1, (0,)), Transfer(1, 0, (1,))]])
    >>> p = lower(s)
    >>> [(m.step, m.src, m.dst, m.chunks) for m in p.messages()]
    [(0, 0, 1, (1,)), (0, 1, 0, (0,)), (1, 0, 1, (0,)), (1, 1, 0, (1,))]
    >>> p.steps_of(0)[0].recvs[0].pieces
    (Piece(first=0, count=1, reduce=True),)
    >>> lower(s, rank=1).steps_of(1) == p.steps_of(1), list(lower(s, rank=1).ranks)
    (True, [1])
    """
    coll = schedule.collective
    size = max(coll.ranks) + 1
    member = np.zeros(size, dtype=bool)
    member[list(coll.ranks)] = True
    held = _initial_held(coll, size)
    per_rank: dict[int, list[RankStep]] = {r: [] for r in coll.ranks
                                           if rank is None or r == rank}
    sp = np.asarray(schedule.step_ptr)
    # entries before each step's first transfer: blocks of whole steps of at most
    # BLOCK_ENTRIES entries (one step at least) are lowered at a time
    first = sp if schedule.unit_chunks else np.asarray(schedule.chunk_ptr)[sp]
    s0 = 0
    while s0 < schedule.num_steps:
        s1 = max(s0 + 1, int(np.searchsorted(first, first[s0] + BLOCK_ENTRIES, "right")) - 1)
        s1 = min(s1, schedule.num_steps)
        _lower_steps(schedule, s0, s1, size, member, held, rank, per_rank)
        s0 = s1
    return Program(coll, schedule.name, schedule.num_steps,
                   {r: tuple(v) for r, v in per_rank.items()})


#: Most (transfer, chunk) entries :func:`lower` handles in one vectorized block of steps
#: (one step at least): small schedules go in one pass, large ones in bounded memory.
BLOCK_ENTRIES = 1 << 20


def _lower_steps(schedule: Schedule, s0: int, s1: int, size: int, member: np.ndarray,
                 held: np.ndarray, rank: int | None, per_rank: dict) -> None:
    """Steps ``s0 .. s1 - 1`` of :func:`lower`: append their :class:`RankStep` items to
    ``per_rank`` and mark what each destination holds afterwards in ``held``."""
    nch = schedule.collective.num_chunks
    t0, t1 = int(schedule.step_ptr[s0]), int(schedule.step_ptr[s1])
    if t0 == t1:
        return
    ta = np.asarray(schedule.src[t0:t1], np.int64)
    tb = np.asarray(schedule.dst[t0:t1], np.int64)
    tstep = np.repeat(np.arange(s0, s1), np.diff(schedule.step_ptr[s0:s1 + 1]))
    if schedule.unit_chunks:
        lens = np.ones(t1 - t0, dtype=np.int64)
        ids = schedule.chunks[t0:t1].astype(np.int64)
        starts = np.arange(t1 - t0)
    else:
        cp = np.asarray(schedule.chunk_ptr)
        lens = np.diff(cp[t0:t1 + 1])
        ids = schedule.chunks[cp[t0]:cp[t1]].astype(np.int64)
        starts = cp[t0:t1] - cp[t0]
    # the first transfer that cannot be expressed (transfers are in step order)
    inside = (ta >= 0) & (ta < size) & (tb >= 0) & (tb < size)
    bad_end = ~inside | (ta == tb)
    bad_end[inside] |= ~(member[ta[inside]] & member[tb[inside]])
    bad_chunk = (np.minimum.reduceat(ids, starts) < 0) | (np.maximum.reduceat(ids, starts) >= nch)
    bad = np.flatnonzero(bad_end | bad_chunk)
    if bad.size:
        i = int(bad[0])
        t, s, a, b = t0 + i, int(tstep[i]), int(ta[i]), int(tb[i])
        if bad_end[i]:
            what = "to itself" if a == b else "outside the collective's ranks"
            raise ScheduleError(f"step {s}, transfer {a}->{b}: endpoint {what}",
                                kind="bad_rank", step=s, transfer=t)
        raise ScheduleError(f"step {s}, transfer {a}->{b}: chunk id out of range",
                            kind="bad_chunk", step=s, transfer=t)
    # one entry per (step, src, dst, chunk); a chunk sent twice on a pair reduces if any does
    es, ea, eb = np.repeat(tstep, lens), np.repeat(ta, lens), np.repeat(tb, lens)
    er = np.repeat(np.asarray(schedule.op[t0:t1]) == int(Op.REDUCE), lens)
    order = np.lexsort((ids, eb, ea, es))
    es, ea, eb, c, er = es[order], ea[order], eb[order], ids[order], er[order]
    pair = (es - s0) * (size * size) + ea * size + eb        # (step, src, dst) in order
    first = np.ones(len(c), dtype=bool)
    first[1:] = (pair[1:] != pair[:-1]) | (c[1:] != c[:-1])
    at = np.flatnonzero(first)
    flags = np.logical_or.reduceat(er, at)
    es, ea, eb, c, pair = es[at], ea[at], eb[at], c[at], pair[at]
    # a REDUCE into a chunk not yet held becomes a copy: the first (step, source) to reach
    # (dst, chunk) in these steps decides, by what the destination held before them
    _, firsts = np.unique(eb * nch + c, return_index=True)
    flags[firsts] &= held[eb[firsts], c[firsts]]
    held[eb, c] = True
    # pieces: maximal runs of consecutive chunks with one flag, per (step, src, dst)
    new = np.ones(len(c), dtype=bool)
    new[1:] = (pair[1:] != pair[:-1]) | (c[1:] != c[:-1] + 1) | (flags[1:] != flags[:-1])
    pstart = np.flatnonzero(new)
    pcount = np.diff(np.append(pstart, len(c)))
    if rank is not None:         # only the pieces of messages to or from ``rank``
        mine = (ea[pstart] == rank) | (eb[pstart] == rank)
        pstart, pcount = pstart[mine], pcount[mine]
        if not pstart.size:
            return
    pieces = [Piece(f, n, r) for f, n, r in
              zip(c[pstart].tolist(), pcount.tolist(), flags[pstart].tolist(), strict=True)]
    mstart = np.flatnonzero(np.append(True, pair[pstart][1:] != pair[pstart][:-1]))
    mend = np.append(mstart[1:], pstart.size).tolist()
    at = pstart[mstart]
    step_of, src_of, dst_of = es[at].tolist(), ea[at].tolist(), eb[at].tolist()
    sends: dict[int, list[Message]] = {}
    recvs: dict[int, list[Message]] = {}
    for k, (i, j) in enumerate(zip(mstart.tolist(), mend, strict=True)):
        m = Message(step_of[k], src_of[k], dst_of[k], tuple(pieces[i:j]))
        sends.setdefault(m.src, []).append(m)
        recvs.setdefault(m.dst, []).append(m)
        if k + 1 == len(step_of) or step_of[k + 1] != m.step:     # the step's last message
            for r in sorted((sends.keys() | recvs.keys()) & per_rank.keys()):
                per_rank[r].append(RankStep(m.step, tuple(sends.get(r, ())),
                                            tuple(recvs.get(r, ()))))
            sends, recvs = {}, {}
