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
    nch = coll.num_chunks
    held = _initial_held(coll, size)
    per_rank: dict[int, list[RankStep]] = {r: [] for r in coll.ranks
                                           if rank is None or r == rank}
    cp, ch = np.asarray(schedule.chunk_ptr), np.asarray(schedule.chunks)
    src, dst = np.asarray(schedule.src, np.int64), np.asarray(schedule.dst, np.int64)
    is_red = np.asarray(schedule.op) == int(Op.REDUCE)
    for s in range(schedule.num_steps):
        t0, t1 = int(schedule.step_ptr[s]), int(schedule.step_ptr[s + 1])
        if t0 == t1:
            continue
        ta, tb = src[t0:t1], dst[t0:t1]
        lens = np.diff(cp[t0:t1 + 1])
        ids = ch[cp[t0]:cp[t1]].astype(np.int64)
        # the first transfer that cannot be expressed, named as the reference loop did
        inside = (ta >= 0) & (ta < size) & (tb >= 0) & (tb < size)
        bad_end = ~inside | (ta == tb)
        bad_end[inside] |= ~(member[ta[inside]] & member[tb[inside]])
        starts = np.flatnonzero(lens)
        lo = np.full(t1 - t0, np.iinfo(np.int64).max)
        hi = np.full(t1 - t0, -1)
        if ids.size:
            lo[starts] = np.minimum.reduceat(ids, cp[t0:t1][starts] - cp[t0])
            hi[starts] = np.maximum.reduceat(ids, cp[t0:t1][starts] - cp[t0])
        bad_chunk = (lo < 0) | (hi >= nch)
        bad = np.flatnonzero(bad_end | bad_chunk)
        if bad.size:
            t = t0 + int(bad[0])
            a, b = int(src[t]), int(dst[t])
            if bad_end[bad[0]]:
                what = "to itself" if a == b else "outside the collective's ranks"
                raise ScheduleError(f"step {s}, transfer {a}->{b}: endpoint {what}",
                                    kind="bad_rank", step=s, transfer=t)
            raise ScheduleError(f"step {s}, transfer {a}->{b}: chunk id out of range",
                                kind="bad_chunk", step=s, transfer=t)
        # one entry per (src, dst, chunk); a chunk sent twice on a pair reduces if any does
        ea, eb = np.repeat(ta, lens), np.repeat(tb, lens)
        er = np.repeat(is_red[t0:t1], lens)
        key = (ea * size + eb) * nch + ids
        order = np.argsort(key, kind="stable")
        key, er = key[order], er[order]
        first = np.ones(key.size, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        at = np.flatnonzero(first)
        flags = np.logical_or.reduceat(er, at)
        key = key[at]
        pair, c = key // nch, key % nch
        a_, b_ = pair // size, pair % size
        # a REDUCE into a chunk not yet held becomes a copy: the first source (in source
        # order) to reach (dst, chunk) decides
        dc = b_ * nch + c
        _, firsts = np.unique(dc, return_index=True)
        flags[firsts] &= held[b_[firsts], c[firsts]]
        held[b_, c] = True
        # pieces: maximal runs of consecutive chunks with one flag, per pair
        new = np.ones(key.size, dtype=bool)
        new[1:] = (pair[1:] != pair[:-1]) | (c[1:] != c[:-1] + 1) | \
            (flags[1:] != flags[:-1])
        pstart = np.flatnonzero(new)
        pcount = np.diff(np.append(pstart, key.size))
        if rank is not None:         # only the pieces of messages to or from ``rank``
            mine = (a_[pstart] == rank) | (b_[pstart] == rank)
            pstart, pcount = pstart[mine], pcount[mine]
            if not pstart.size:
                continue
        pieces = [Piece(int(f), int(n), bool(r)) for f, n, r in
                  zip(c[pstart].tolist(), pcount.tolist(), flags[pstart].tolist(),
                      strict=True)]
        mstart = np.flatnonzero(np.append(True, pair[pstart][1:] != pair[pstart][:-1]))
        mend = np.append(mstart[1:], pstart.size)
        sends: dict[int, list[Message]] = {}
        recvs: dict[int, list[Message]] = {}
        for i, j in zip(mstart.tolist(), mend.tolist(), strict=True):
            e = int(pstart[i])
            m = Message(s, int(a_[e]), int(b_[e]), tuple(pieces[i:j]))
            sends.setdefault(m.src, []).append(m)
            recvs.setdefault(m.dst, []).append(m)
        for r in sorted((set(sends) | set(recvs)) & per_rank.keys()):
            per_rank[r].append(RankStep(s, tuple(sends.get(r, ())), tuple(recvs.get(r, ()))))
    return Program(coll, schedule.name, schedule.num_steps,
                   {r: tuple(v) for r, v in per_rank.items()})
