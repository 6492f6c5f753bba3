"""Symbolic execution of a schedule's chunk contributions.

State: ``state[rank, chunk]`` is the set of ranks whose contribution ``rank`` holds for
``chunk`` (empty = not held). At the start each ``r`` in ``pre(c)`` holds ``{r}``. Within a
step every transfer reads its source's state as of the *start* of the step. A COPY
overwrites the destination's entry; a REDUCE unions into it, and all REDUCEs into the same
(rank, chunk) in one step are combined together with what the rank held. At the end every
rank of ``post(c)`` must hold exactly ``pre(c)``.

Two set representations share one engine (numba kernels that run each step in two
phases: gather every source value, then apply every write; the fingerprint cells have a
kernel of their own with the lanes written out, checked against the general one by
``tests/verification/test_kernels.py``):

- **exact**: a bitset over the collective's members (``ceil(p/64)`` words per cell). Union
  is OR; a double count is caught the moment it happens (the two sets intersect).
- **fingerprint**: three 64-bit lanes per cell: two independent sums of random per-rank
  values modulo the prime ``P = 2**31 - 1`` and the exact number of contributions.
  Union of disjoint sets is addition. A double count is caught at once when the count
  exceeds ``|pre(c)|``, and otherwise at the final check: a multiset that differs from the
  expected set passes both lanes with probability at most ``P**-2 < 2**-61`` per checked
  cell (the difference is a non-zero integer vector with entries smaller than ``P``, so each
  lane vanishes with probability exactly ``1/P``).

Violation kinds:

==========================  ==================================================================
kind                        meaning
==========================  ==================================================================
bad_rank                    an endpoint is negative, a switch, or not a rank of the topology
self_transfer               a transfer from a rank to itself
bad_chunk                   a chunk id outside ``0 .. num_chunks - 1``
no_route                    an explicit path that does not start at src, end at dst, or follow links
not_held                    a rank sends a chunk it does not hold (yet)
double_count                a reduction would combine the same contribution twice
conflicting_writes          two transfers write one (rank, chunk) in a step and one is a COPY
reduce_in_copy_collective   a REDUCE inside allgather, broadcast or alltoall
missing_data                a rank of ``post(c)`` ends without chunk ``c``
missing_contributions       a rank of ``post(c)`` ends with ``c`` lacking some of ``pre(c)``
extra_contributions         a rank ends with contributions outside ``pre(c)`` or counted twice
==========================  ==================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir
from numba import get_num_threads, njit, prange
from numba.core import types
from numba.extending import intrinsic
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..collective import Collective
from ..schedule import Schedule
from ..schedule.spans import chunk_start

__all__ = ["Violation", "VIOLATION_KINDS", "execute", "MERSENNE31", "MERSENNE61", "Collector",
           "set_ranges", "orbit_representatives", "SYMMETRY_MIN_ENTRIES"]

VIOLATION_KINDS = (
    "bad_rank", "self_transfer", "bad_chunk", "no_route", "not_held", "double_count",
    "conflicting_writes", "reduce_in_copy_collective", "missing_data", "missing_contributions",
    "extra_contributions",
)
MERSENNE31 = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class Violation:
    """One violation, with where it happened (``None`` where it does not apply)."""

    kind: str
    message: str
    step: int | None = None
    transfer: int | None = None
    src: int | None = None
    dst: int | None = None
    rank: int | None = None
    chunk: int | None = None


class Collector:
    """Keeps the first ``limit`` violations and counts all of them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: list[Violation] = []
        self.total = 0
        #: Added to the report's error bound (a checked symmetry claim, see ``execute``).
        self.error_bound = 0.0
        #: Chunks run when the symmetries did the rest (None: every chunk ran).
        self.orbit_chunks: int | None = None

    def add(self, v: Violation) -> None:
        self.total += 1
        if len(self.items) < self.limit:
            self.items.append(v)

    @property
    def full(self) -> bool:
        return len(self.items) >= self.limit


# ----------------------------------------------------------------------------- kernels
@njit(cache=True)
def _rec(rec, n, total, limit, kind, t, c, a):
    if n < limit:
        rec[n, 0] = kind
        rec[n, 1] = t
        rec[n, 2] = c
        rec[n, 3] = a
        n += 1
    return n, total + 1


@njit(cache=True)
def _first_bit_rank(word_vals, members):
    for w in range(word_vals.shape[0]):
        x = word_vals[w]
        if x != 0:
            b = 0
            while (x >> np.uint64(b)) & np.uint64(1) == 0:
                b += 1
            return members[w * 64 + b]
    return -1


@njit(cache=True)
def _init(state, target, pre_lo, pre_hi, pre_idx, bitpos, h, exact):
    C = target.shape[0]
    for c in range(C):
        for e in range(pre_lo[c], pre_hi[c]):
            r = pre_idx[e]
            if exact:
                p = bitpos[r]
                bit = np.uint64(1) << np.uint64(p % 64)
                state[c, r, p // 64] = bit
                target[c, p // 64] |= bit
            else:
                state[c, r, 0] = h[r, 0]
                state[c, r, 1] = h[r, 1]
                state[c, r, 2] = 1
                target[c, 0] = (target[c, 0] + h[r, 0]) % MERSENNE31
                target[c, 1] = (target[c, 1] + h[r, 1]) % MERSENNE31
                target[c, 2] += 1


@njit(cache=True, inline="always")
def _check_transfer(part, t, u, v, R, op_t, is_reduction, rec, n, total, limit):
    """Transfer ``t``'s own checks (endpoints, a reduction in a copy collective),
    recorded by partition 0 only; returns ``(bad endpoints, n, total)``."""
    tbad = False
    if u < 0 or u >= R or v < 0 or v >= R:
        if part == 0:
            n, total = _rec(rec, n, total, limit, 0, t, -1, u if (u < 0 or u >= R) else v)
        tbad = True
    elif u == v:
        if part == 0:
            n, total = _rec(rec, n, total, limit, 1, t, -1, u)
        tbad = True
    if part == 0 and (not is_reduction) and op_t == 1:
        n, total = _rec(rec, n, total, limit, 7, t, -1, -1)
    return tbad, n, total


@njit(cache=True)
def _steps_part(part, nparts, step_ptr, src, dst, op, chunk_ptr, chunks, state, exact,
                pre_size, members, is_reduction, rec, limit, stop, maxe, R):
    """All steps for the chunks ``c`` with ``c % nparts == part``; returns (kept, total).
    ``maxe``: the most (transfer, chunk) entries in one step (:func:`_largest_step`);
    ``R``: the ranks (``state`` may hold more rows per chunk: its cache-line pad).

    Chunks never interact, so partitions run independently (one per thread). Checks that
    concern a whole transfer (endpoints, op) are made by partition 0 only.

    The last lane of every cell is a write tag, ``2 * step + copy + 1`` (0: never written),
    kept in the cell itself so that a write touches one cache line.
    """
    C, _, W1 = state.shape
    W = W1 - 1
    n = 0
    total = 0
    buf = np.empty((maxe, W), state.dtype)
    ok = np.empty(maxe, np.bool_)
    for s in range(len(step_ptr) - 1):
        a = step_ptr[s]
        b = step_ptr[s + 1]
        base = chunk_start(chunk_ptr, a)
        # phase 1: validate and gather every source value as of the start of the step
        for t in range(a, b):
            u = src[t]
            tbad, n, total = _check_transfer(part, t, u, dst[t], R, op[t], is_reduction,
                                             rec, n, total, limit)
            for e in range(chunk_start(chunk_ptr, t), chunk_start(chunk_ptr, t + 1)):
                k = e - base
                ok[k] = False
                c = chunks[e]
                if c < 0 or c >= C:
                    if part == 0 and not tbad:
                        n, total = _rec(rec, n, total, limit, 2, t, c, -1)
                    continue
                if tbad or c % nparts != part:
                    continue
                empty = True
                for w in range(W):
                    buf[k, w] = state[c, u, w]
                    if buf[k, w] != 0:
                        empty = False
                if not exact:
                    empty = buf[k, 2] == 0
                if empty:
                    n, total = _rec(rec, n, total, limit, 4, t, c, u)
                    continue
                ok[k] = True
        # phase 2: apply every write
        for t in range(a, b):
            v = dst[t]
            red = op[t] == 1
            for e in range(chunk_start(chunk_ptr, t), chunk_start(chunk_ptr, t + 1)):
                k = e - base
                if not ok[k]:
                    continue
                c = chunks[e]
                tag = state[c, v, W]
                if tag >= 2 * s + 1:  # already written in this step
                    if tag == 2 * s + 2 or not red:
                        n, total = _rec(rec, n, total, limit, 6, t, c, v)
                        state[c, v, W] = 2 * s + 2
                        continue
                else:
                    state[c, v, W] = 2 * s + 1 if red else 2 * s + 2
                if not red:
                    for w in range(W):
                        state[c, v, w] = buf[k, w]
                elif exact:
                    dup = False
                    for w in range(W):
                        if state[c, v, w] & buf[k, w]:
                            dup = True
                    if dup:
                        inter = np.empty(W, state.dtype)
                        for w in range(W):
                            inter[w] = state[c, v, w] & buf[k, w]
                        n, total = _rec(rec, n, total, limit, 5, t, c,
                                        _first_bit_rank(inter, members))
                    for w in range(W):
                        state[c, v, w] |= buf[k, w]
                else:
                    for w in range(2):  # both lanes < P, so one conditional subtraction
                        x = state[c, v, w] + buf[k, w]
                        state[c, v, w] = x - MERSENNE31 if x >= MERSENNE31 else x
                    state[c, v, 2] = min(state[c, v, 2] + buf[k, 2], MERSENNE31)
                    if state[c, v, 2] > pre_size[c]:
                        n, total = _rec(rec, n, total, limit, 5, t, c, -1)
        if stop and n >= limit:
            return n, total
    return n, total


@njit(cache=True)
def _steps_fingerprint_part(lo, hi, report, step_ptr, src, dst, op, chunk_ptr, chunks, state,
                            pre_size, is_reduction, rec, limit, stop, maxe, slot, C, R):
    """:func:`_steps_part` for fingerprint cells and the chunks in rows ``lo <= r < hi``
    of ``state``, of the collective's ``C``: chunk ``c`` is row ``slot[c]`` (a block of
    consecutive chunks, see :data:`STATE_BYTES`, or one chunk per orbit of the
    schedule's symmetries; rows outside ``state`` are skipped). Transfer-level checks
    are recorded where ``report`` is set.

    The same checks, in the same order, with the three lanes written out: a gathered cell
    whose count lane is 0 is one not to apply (not held, a bad transfer, or no source),
    so no flag array is kept. About twice as fast as the general kernel.
    """
    part = 0 if report else 1
    P = np.int64(MERSENNE31)
    n = 0
    total = 0
    buf = np.empty((maxe, 3), state.dtype)
    for s in range(len(step_ptr) - 1):
        a = step_ptr[s]
        b = step_ptr[s + 1]
        base = chunk_start(chunk_ptr, a)
        # phase 1: validate and gather every source value as of the start of the step
        for t in range(a, b):
            u = src[t]
            tbad, n, total = _check_transfer(part, t, u, dst[t], R, op[t], is_reduction,
                                             rec, n, total, limit)
            for e in range(chunk_start(chunk_ptr, t), chunk_start(chunk_ptr, t + 1)):
                c = chunks[e]
                if c < 0 or c >= C:
                    if report and not tbad:
                        n, total = _rec(rec, n, total, limit, 2, t, c, -1)
                    continue
                row = slot[c]
                if row < lo or row >= hi:
                    continue
                k = e - base
                if tbad:
                    buf[k, 2] = 0
                    continue
                buf[k, 0] = state[row, u, 0]
                buf[k, 1] = state[row, u, 1]
                buf[k, 2] = state[row, u, 2]
                if buf[k, 2] == 0:
                    n, total = _rec(rec, n, total, limit, 4, t, c, u)
        # phase 2: apply every write
        s1 = np.int64(2 * s + 1)
        s2 = np.int64(2 * s + 2)
        for t in range(a, b):
            v = dst[t]
            red = op[t] == 1
            for e in range(chunk_start(chunk_ptr, t), chunk_start(chunk_ptr, t + 1)):
                c = chunks[e]
                if c < 0 or c >= C:
                    continue
                row = slot[c]
                if row < lo or row >= hi:
                    continue
                k = e - base
                if buf[k, 2] == 0:
                    continue
                tag = np.int64(state[row, v, 3])
                if tag >= s1:  # already written in this step
                    if tag == s2 or not red:
                        n, total = _rec(rec, n, total, limit, 6, t, c, v)
                        state[row, v, 3] = s2
                        continue
                else:
                    state[row, v, 3] = s1 if red else s2
                if not red:
                    state[row, v, 0] = buf[k, 0]
                    state[row, v, 1] = buf[k, 1]
                    state[row, v, 2] = buf[k, 2]
                else:
                    for w in range(2):  # both lanes < P, so one conditional subtraction
                        x = np.int64(state[row, v, w]) + np.int64(buf[k, w])
                        state[row, v, w] = x - P if x >= P else x
                    x = min(np.int64(state[row, v, 2]) + np.int64(buf[k, 2]), P)
                    state[row, v, 2] = x
                    if x > np.int64(pre_size[c]):
                        n, total = _rec(rec, n, total, limit, 5, t, c, -1)
        if stop and n >= limit:
            return n, total
    return n, total


@njit(cache=True)
def _largest_step(step_ptr, chunk_ptr):
    """The most (transfer, chunk) entries in one step: the size of a kernel's step buffer."""
    maxe = 0
    for s in range(len(step_ptr) - 1):
        maxe = max(maxe, chunk_start(chunk_ptr, step_ptr[s + 1]) -
                   chunk_start(chunk_ptr, step_ptr[s]))
    return maxe


@njit(cache=True, parallel=True)
def _steps(step_ptr, src, dst, op, chunk_ptr, chunks, state, exact, pre_size, members,
           is_reduction, rec, limit, stop, slot, C, first, R):
    """Every step for the chunks with a row of ``state`` (``slot``; all ``C`` in exact
    mode), one partition of the rows per thread; transfer-level checks recorded in the
    ``first`` block. ``R``: the ranks (rows of ``state`` past them are its pad)."""
    nparts = rec.shape[0]
    nc = state.shape[0]
    maxe = _largest_step(step_ptr, chunk_ptr)
    counts = np.zeros((nparts, 2), np.int64)
    for part in prange(nparts):
        if exact:
            n, total = _steps_part(part, nparts, step_ptr, src, dst, op, chunk_ptr, chunks,
                                   state, exact, pre_size, members, is_reduction, rec[part],
                                   limit, stop, maxe, R)
        else:
            n, total = _steps_fingerprint_part(nc * part // nparts,
                                               nc * (part + 1) // nparts,
                                               first and part == 0, step_ptr, src, dst, op,
                                               chunk_ptr, chunks, state, pre_size,
                                               is_reduction, rec[part], limit, stop, maxe,
                                               slot, C, R)
        counts[part, 0] = n
        counts[part, 1] = total
    return counts


@njit(cache=True)
def _final(state, target, post_lo, post_hi, post_idx, exact, rec, limit, stop, rows):
    """Compare every row's final cells with the postcondition (row ``c`` is chunk
    ``rows[c]``)."""
    n = 0
    total = 0
    W = target.shape[1]
    C = target.shape[0]
    cells = 0
    for c in range(C):
        for e in range(post_lo[c], post_hi[c]):
            r = post_idx[e]
            cells += 1
            same = True
            empty = True
            for w in range(W):
                if state[c, r, w] != target[c, w]:
                    same = False
                if state[c, r, w] != 0:
                    empty = False
            if not exact:
                empty = state[c, r, 2] == 0
            if same:
                continue
            if empty:
                kind = 8
            elif exact:
                missing = False
                for w in range(W):
                    if target[c, w] & ~state[c, r, w]:
                        missing = True
                kind = 9 if missing else 10
            else:
                kind = 9 if state[c, r, 2] < target[c, 2] else 10
            n, total = _rec(rec, n, total, limit, kind, -1, rows[c], r)
            if stop and n >= limit:
                return n, total, cells
    return n, total, cells


# ----------------------------------------------------------------------------- driver
#: Largest fingerprint-mode state (bytes) built at once; beyond it the chunks are checked
#: a block at a time (:func:`execute`). Every block's kernel reads the whole schedule:
#: mirrored recursive doubling's 16,384 rows of 4,096 ranks on the 64x64 torus (1.07 GB
#: with the rows' cache-line pad) take two blocks (three at 512 MiB, 0.6 s slower; the
#: budget was raised once the implicit chunk pointer had taken 1 GB off the peak of
#: ``compare`` on that torus, which the larger block does not raise).
STATE_BYTES = 1 << 30


def set_ranges(coll: Collective, pre: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chunk ``c``'s precondition (``pre``) or postcondition set as ``idx[lo[c]:hi[c]]``.

    Sets of every member are one copy of the members that every chunk points into (the
    compact CSR of :meth:`~topocoll.collective.Collective.pre_sets` repeats them per
    chunk: 256 MiB for an allreduce of 16,384 chunks on 4,096 ranks, twice).

    >>> from topocoll.collective import allreduce
    >>> lo, hi, idx = set_ranges(allreduce(3, split=2), pre=True)
    >>> lo.tolist(), hi.tolist(), idx.tolist()
    ([0, 0], [3, 3], [0, 1, 2])
    """
    C = coll.num_chunks
    if coll.every_member(pre):
        members = np.array(sorted(coll.ranks), dtype=np.int32)
        return np.zeros(C, np.int64), np.full(C, len(members), np.int64), members
    s = coll.pre_sets() if pre else coll.post_sets()
    return s.indptr[:-1], s.indptr[1:], s.indices


def _run_rows(s: Schedule, num_ranks: int, exact: bool, rows: np.ndarray, first: bool,
              limit: int, out_limit: int, stop_early: bool, ctx: dict):
    """One pass of the kernels over every transfer for the chunks ``rows`` (one row of the
    state each): ``(step records, step total, final records, final total, cells, state,
    target)``."""
    coll = s.collective
    C = coll.num_chunks
    W, dtype, pad = ctx["W"], ctx["dtype"], ctx["pad"]
    pre, post = ctx["pre"], ctx["post"]
    # the kernels get the whole padded array (C-contiguous whatever the rows: one compiled
    # signature per cell type, where the slice alone is typed 'C' for one row and 'A'
    # otherwise) and the rank count; the caller gets the ranks' slice
    padded = np.zeros((len(rows), num_ranks + pad, W + 1), dtype=dtype)
    state = padded[:, :num_ranks, :]
    target = np.zeros((len(rows), W), dtype=dtype)
    _init(padded, target, pre[0][rows], pre[1][rows], pre[2], ctx["bitpos"], ctx["h"], exact)
    slot = np.full(C, -1, dtype=np.int64)
    slot[rows] = np.arange(len(rows))
    # one partition of the chunks per thread; a few thousand chunks at least per part
    nparts = max(1, min(get_num_threads(), len(rows) // 2048))
    rec = np.zeros((nparts, max(limit, 1), 4), dtype=np.int64)
    counts = _steps(s.step_ptr, s.src, s.dst, s.op, s.compact_chunk_ptr, s.chunks, padded,
                    exact, ctx["pre_size"], ctx["members"], coll.is_reduction, rec, limit,
                    stop_early, slot, C, first, num_ranks)
    steps = [rec[i, :counts[i, 0]] for i in range(nparts)]
    frec = np.zeros((max(out_limit, 1), 4), dtype=np.int64)
    n, total, k = _final(padded, target, post[0][rows], post[1][rows], post[2], exact,
                         frec, out_limit, stop_early, rows)
    return steps, int(counts[:, 1].sum()), frec[:n], total, int(k), state, target


def execute(schedule: Schedule, num_ranks: int, exact: bool, out: Collector, seed: int = 0,
            stop_early: bool = False) -> int:
    """Run the symbolic execution; add violations to ``out``; return checked final cells.

    In fingerprint mode the state is built for a block of chunks at a time, each block at
    most :data:`STATE_BYTES` (chunks never interact, so blocks run one after another, each
    pass over the transfers skipping the chunks of other blocks); the violations are the
    same as with one state for all chunks, in the same order.

    A large schedule whose symmetries (:class:`~topocoll.schedule.Symmetry`) hold is
    first run for one chunk of each orbit (:func:`orbit_representatives`); when that run
    finds nothing, the other chunks are correct too and the direct run is skipped
    (``out.orbit_chunks`` says how many chunks ran). Otherwise every chunk runs as
    above, so a failing schedule's report is the same either way.
    """
    s = schedule
    coll = s.collective
    C = coll.num_chunks
    members = np.array(sorted(coll.ranks), dtype=np.int64)
    W = max(1, (len(members) + 63) // 64) if exact else 3
    dtype = np.uint64 if exact else np.uint32
    bitpos = np.full(num_ranks, -1, dtype=np.int64)
    bitpos[members] = np.arange(len(members))
    h = np.random.default_rng(seed).integers(0, MERSENNE31, size=(num_ranks, 2)).astype(dtype)
    # chunk-major (the initial and final passes stream it), each chunk's row padded by a
    # cache line: with a power-of-two row (4096 ranks x 16 B) the cells that one transfer's
    # chunks touch would all fall in the same cache sets (2x slower on the 64x64 torus)
    cell = (W + 1) * np.dtype(dtype).itemsize
    pad = max(1, 64 // cell)
    per_chunk = (num_ranks + pad) * cell
    pre, post = set_ranges(coll, pre=True), set_ranges(coll, pre=False)
    ctx = {"W": W, "dtype": dtype, "pad": pad, "pre": pre, "post": post, "bitpos": bitpos,
           "h": h, "members": members, "pre_size": (pre[1] - pre[0]).astype(dtype)}
    if not exact and s.symmetries and len(s.chunks) >= SYMMETRY_MIN_ENTRIES:
        found = orbit_representatives(s, num_ranks, seed)
        sub = None if found is None else _entries_of(s, num_ranks, found[0])
        if sub is not None:
            reps, err = found
            _, step_total, _, final_total, _, _, _ = _run_rows(
                sub, num_ranks, exact, reps, True, 1, 1, True, ctx)
            if step_total == 0 and final_total == 0:
                out.error_bound += err
                out.orbit_chunks = len(reps)
                return int((post[1] - post[0]).sum())
    block = C
    if not exact and C * per_chunk > STATE_BYTES:    # equal blocks, each within the budget
        most = max(1, STATE_BYTES // per_chunk)
        block = -(-C // -(-C // most))
    limit = out.limit - len(out.items)
    step_rows, step_total = [], 0
    finals, final_total, cells = [], 0, 0
    for c0 in range(0, max(C, 1), block):
        rows = np.arange(c0, min(C, c0 + block), dtype=np.int64)
        recs, total, frec, ftotal, k, state, target = _run_rows(
            s, num_ranks, exact, rows, c0 == 0, limit, out.limit, stop_early, ctx)
        step_rows += recs
        step_total += total
        # the final check of this block's chunks, kept until every block's steps are in
        finals += [_final_violation(row, state, target, members, exact, c0) for row in frec]
        final_total += ftotal
        cells += k
        del state, target
    rows = np.concatenate(step_rows)
    rows = rows[np.lexsort((rows[:, 2], rows[:, 1]))]   # schedule order: transfer, then chunk
    for row in rows[:limit]:
        out.add(_violation(s, row, exact))
    out.total += step_total - min(len(rows), limit)
    if out.full and stop_early:
        return 0
    limit = out.limit - len(out.items)
    for v in finals[:limit]:
        out.add(v)
    out.total += final_total - min(len(finals), limit)
    return int(cells)


# ----------------------------------------------------------------------- symmetries
def _entries_of(s: Schedule, num_ranks: int, chunks: np.ndarray) -> Schedule | None:
    """The schedule cut down to the entries of ``chunks`` (the same steps, transfers that
    carry none of them left out); None when a transfer-level check of the whole schedule
    fails (a bad endpoint or chunk, a self-transfer, a REDUCE in a copy collective: the
    direct run reports those)."""
    coll = s.collective
    C = coll.num_chunks
    want = np.zeros(C, dtype=np.bool_)
    want[chunks] = True
    ok, step_ptr, keep, chunk_ptr, ch = _cut_down(s.step_ptr, s.src, s.dst, s.op,
                                                  s.compact_chunk_ptr, s.chunks, want,
                                                  num_ranks, not coll.is_reduction)
    if not ok:
        return None
    return Schedule(coll, step_ptr, s.src[keep], s.dst[keep], s.op[keep], chunk_ptr, ch)


@njit(cache=True, parallel=True)
def _cut_down(step_ptr, src, dst, op, chunk_ptr, chunks, want, N, copy_only):
    """:func:`_entries_of` in two passes over the transfers (count, then fill), each
    over parts of the steps in parallel: ``(ok, step_ptr, kept transfers, chunk_ptr,
    chunks)``; ``ok`` False (and empty arrays) when a transfer has an endpoint out of
    range, sends to itself, carries a chunk out of range, or reduces in a copy
    collective. Every part writes its own range of the output (offsets from the counts
    of the parts before it), so the result does not depend on the parts."""
    C = len(want)
    S = len(step_ptr) - 1
    nparts = max(1, min(S, 16))       # parts of the steps, shared among the threads
    nt = np.zeros(nparts, np.int64)
    ne = np.zeros(nparts, np.int64)
    bad = np.zeros(nparts, np.bool_)
    for part in prange(nparts):
        t0 = step_ptr[S * part // nparts]
        t1 = step_ptr[S * (part + 1) // nparts]
        for t in range(t0, t1):
            u, v = src[t], dst[t]
            if u < 0 or v < 0 or u >= N or v >= N or u == v or (copy_only and op[t] == 1):
                bad[part] = True
                break
            k = 0
            for e in range(chunk_start(chunk_ptr, t), chunk_start(chunk_ptr, t + 1)):
                c = chunks[e]
                if c < 0 or c >= C:
                    bad[part] = True
                    break
                if want[c]:
                    k += 1
            if bad[part]:
                break
            if k:
                nt[part] += 1
                ne[part] += k
    if bad.any():
        return (False, np.zeros(0, np.int64), np.zeros(0, np.int64),
                np.zeros(0, np.int64), np.zeros(0, np.int32))
    t_off = np.zeros(nparts + 1, np.int64)
    e_off = np.zeros(nparts + 1, np.int64)
    for part in range(nparts):
        t_off[part + 1] = t_off[part] + nt[part]
        e_off[part + 1] = e_off[part] + ne[part]
    new_step = np.zeros(S + 1, np.int64)
    keep = np.empty(t_off[nparts], np.int64)
    new_ptr = np.zeros(t_off[nparts] + 1, np.int64)
    out = np.empty(e_off[nparts], np.int32)
    for part in prange(nparts):
        i = t_off[part]
        j = e_off[part]
        for st in range(S * part // nparts, S * (part + 1) // nparts):
            for t in range(step_ptr[st], step_ptr[st + 1]):
                j0 = j
                for e in range(chunk_start(chunk_ptr, t), chunk_start(chunk_ptr, t + 1)):
                    if want[chunks[e]]:
                        out[j] = chunks[e]
                        j += 1
                if j > j0:
                    keep[i] = t
                    i += 1
                    new_ptr[i] = j
            new_step[st + 1] = i
    return True, new_step, keep, new_ptr, out


#: Schedules of at least this many (transfer, chunk) entries are verified one chunk per
#: orbit of their claimed symmetries; smaller ones run every chunk (as fast).
SYMMETRY_MIN_ENTRIES = 1 << 22
#: The prime of the claims' check (:func:`orbit_representatives`).
MERSENNE61 = (1 << 61) - 1


@intrinsic
def _mulmod61(typingctx, a, b):
    """``a * b mod 2**61 - 1`` for int64 ``0 <= a, b < 2**61``: one 128-bit product
    (LLVM's ``i128``; numba has no 128-bit integers), folded twice (``2**61 = 1``
    modulo the prime) and one conditional subtraction. About half the time of the same
    product from four 31-bit halves, which it replaced (bitwise equal, tested)."""
    sig = types.int64(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i128, i64 = ir.IntType(128), ir.IntType(64)
        prod = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        p128 = ir.Constant(i128, MERSENNE61)
        r = builder.add(builder.and_(prod, p128), builder.lshr(prod, ir.Constant(i128, 61)))
        r = builder.trunc(r, i64)                                 # < 2**62
        p64 = ir.Constant(i64, MERSENNE61)
        r = builder.add(builder.and_(r, p64), builder.lshr(r, ir.Constant(i64, 61)))
        return builder.select(builder.icmp_unsigned(">=", r, p64), builder.sub(r, p64), r)

    return sig, codegen


@njit(cache=True)
def _mulmod61_many(a, b):
    """:func:`_mulmod61` elementwise (for tests)."""
    out = np.empty(len(a), np.int64)
    for i in range(len(a)):
        out[i] = _mulmod61(a[i], b[i])
    return out


@njit(cache=True, parallel=True)
def _claim_products(step_ptr, src, dst, op, chunk_ptr, chunks, sig, pi, z0, z1, N, C, nparts):
    """For claim ``d``: the products of ``z - key(e)`` and of ``z - key(image of e)`` over
    the entries ``e`` of the claim's chunks, modulo ``2**61 - 1``, at ``z0`` and ``z1``
    (``prod[d, part]``: orig and image at ``z0``, then at ``z1``, for one part of the
    steps), and the number of those entries. ``pi[d, c]``: claim ``d``'s image of chunk
    ``c`` (-1: not one of its chunks). One claim and part per task, the four products in
    registers (four independent multiplications per entry)."""
    P = np.int64(MERSENNE61)
    D = sig.shape[0]
    S = len(step_ptr) - 1
    prod = np.ones((D, nparts, 4), np.int64)
    count = np.zeros((D, nparts), np.int64)
    for task in prange(D * nparts):
        d, part = task // nparts, task % nparts
        a0 = b0 = a1 = b1 = np.int64(1)
        m = np.int64(0)
        for s in range(S * part // nparts, S * (part + 1) // nparts):
            for t in range(step_ptr[s], step_ptr[s + 1]):
                u, v, o = np.int64(src[t]), np.int64(dst[t]), np.int64(op[t])
                if u < 0 or u >= N or v < 0 or v >= N:
                    continue            # the direct run of the representatives reports it
                for e in range(chunk_start(chunk_ptr, t), chunk_start(chunk_ptr, t + 1)):
                    c = np.int64(chunks[e])
                    if c < 0 or c >= C:
                        continue
                    pc = np.int64(pi[d, c])
                    if pc < 0:
                        continue
                    m += 1
                    k1 = (((s * N + u) * N + v) * 2 + o) * C + c
                    k2 = (((s * N + sig[d, u]) * N + sig[d, v]) * 2 + o) * C + pc
                    # z - key modulo P without a branch (half of them would mispredict)
                    x = z0 - k1
                    a0 = _mulmod61(a0, x + (P & (x >> 63)))
                    x = z0 - k2
                    b0 = _mulmod61(b0, x + (P & (x >> 63)))
                    x = z1 - k1
                    a1 = _mulmod61(a1, x + (P & (x >> 63)))
                    x = z1 - k2
                    b1 = _mulmod61(b1, x + (P & (x >> 63)))
        prod[d, part, 0] = a0
        prod[d, part, 1] = b0
        prod[d, part, 2] = a1
        prod[d, part, 3] = b1
        count[d, part] = m
    return prod, count


def _sets_follow(ranges, every: bool, sig: np.ndarray, chunks: np.ndarray,
                 images: np.ndarray) -> bool:
    """``set(images[k]) == sig(set(chunks[k]))`` for every ``k``."""
    lo, hi, idx = ranges
    if every:                                  # every chunk's set is all the members
        return bool(np.array_equal(np.sort(sig[idx]), np.sort(idx)))
    size = hi - lo
    if not np.array_equal(size[chunks], size[images]):
        return False

    def gather(cs):
        n = size[cs]
        seg = np.repeat(np.arange(len(cs)), n)
        pos = np.repeat(lo[cs] - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
        return seg, idx[pos]

    seg, a = gather(chunks)
    _, b = gather(images)
    a = sig[a]
    return bool(np.array_equal(a[np.lexsort((a, seg))], b[np.lexsort((b, seg))]))


def orbit_representatives(s: Schedule, num_ranks: int, seed: int = 0
                          ) -> tuple[np.ndarray, float] | None:
    """The least chunk of each orbit of the schedule's claimed symmetries, and the
    probability that a claim that does not hold passed the check; None when a claim does
    not hold, cannot be checked, or leaves more than a quarter of the chunks to run.

    What is checked, per claim ``(sigma, pi)`` on chunks ``K``: both maps are
    permutations; the collective maps onto itself (``pre(pi c) = sigma(pre c)`` and the
    same for ``post``); and the multiset of entries ``(step, src, dst, op, c)`` with ``c``
    in ``K`` equals its image ``(step, sigma src, sigma dst, op, pi c)``. The last is a
    polynomial identity test: each entry packed into one integer ``key < p = 2**61 - 1``,
    the products of ``z - key`` over both multisets compared at two random points ``z``;
    two different multisets of ``m`` entries agree at one point with probability at most
    ``m / p`` (a nonzero polynomial of degree ``m`` has at most ``m`` roots), at two with
    at most ``(m / p)**2``: under ``2**-60`` for ``m`` up to ``2**30``. The bound is
    added to the report's error probability.

    Why it suffices: chunks never interact, and a step's semantics do not depend on the
    order of its entries, so when the entries of ``K`` are invariant, chunk ``pi c``
    goes through exactly the renamed states of chunk ``c``, from renamed preconditions;
    if ``c`` ends correct, so does ``pi c``, and so every chunk of an orbit whose least
    chunk does.
    """
    coll = s.collective
    C, N, S = coll.num_chunks, num_ranks, s.num_steps
    if not s.symmetries or S * N * N * 2 * C >= MERSENNE61:
        return None
    D = len(s.symmetries)
    sig = np.tile(np.arange(N, dtype=np.int64), (D, 1))
    pi = np.full((D, C), -1, dtype=np.int64)
    pre, post = set_ranges(coll, pre=True), set_ranges(coll, pre=False)
    every = coll.every_member(True), coll.every_member(False)
    for d, y in enumerate(s.symmetries):
        for dom, img, n in ((y.ranks, y.rank_images, N), (y.chunks, y.chunk_images, C)):
            if len(dom) and (min(dom.min(), img.min()) < 0 or max(dom.max(), img.max()) >= n):
                return None
            if len(np.unique(dom)) != len(dom) or \
                    not np.array_equal(np.sort(dom), np.sort(img)):
                return None
        sig[d, y.ranks] = y.rank_images
        pi[d, y.chunks] = y.chunk_images
        if not (_sets_follow(pre, every[0], sig[d], y.chunks, y.chunk_images)
                and _sets_follow(post, every[1], sig[d], y.chunks, y.chunk_images)):
            return None
    edges = pi >= 0
    rows = np.nonzero(edges)[1]
    graph = coo_matrix((np.ones(len(rows), np.int8), (rows, pi[edges])), shape=(C, C))
    _, labels = connected_components(graph, directed=True, connection="weak")
    reps = np.sort(np.unique(labels, return_index=True)[1]).astype(np.int64)
    if 4 * len(reps) > C:
        return None
    z = np.random.default_rng([seed, 61]).integers(0, MERSENNE61, size=2, dtype=np.int64)
    nparts = max(1, min(get_num_threads(), S))
    prod, count = _claim_products(s.step_ptr, s.src, s.dst, s.op, s.compact_chunk_ptr,
                                  s.chunks, sig, pi.astype(np.int32), z[0], z[1], N, C,
                                  nparts)
    total = np.ones((D, 4), dtype=object)
    for part in range(nparts):
        total = total * prod[:, part].astype(object) % MERSENNE61
    if (total[:, 0] != total[:, 1]).any() or (total[:, 2] != total[:, 3]).any():
        return None
    m = count.sum(axis=1)
    return reps, float(sum((int(x) / MERSENNE61) ** 2 for x in m))


def _violation(s: Schedule, row, exact: bool) -> Violation:
    kind, t, c, a = (int(x) for x in row)
    step = s.step_of(t)
    u, v = int(s.src[t]), int(s.dst[t])
    where = f"step {step}, transfer {u}->{v}"
    name = VIOLATION_KINDS[kind]
    msg = {
        "bad_rank": f"{where}: node {a} is not a rank that can hold data",
        "self_transfer": f"{where}: a rank sends to itself",
        "bad_chunk": f"{where}: chunk {c} does not exist (0..{s.collective.num_chunks - 1})",
        "not_held": f"{where}: rank {u} sends chunk {c}, which it does not hold",
        "conflicting_writes": f"{where}: chunk {c} of rank {v} is written twice in this step "
                              f"and one of the writes is a COPY",
        "reduce_in_copy_collective": f"{where}: REDUCE in a {s.collective.kind}, which only copies",
        "double_count": f"{where}: chunk {c} reduced twice" + (f" from rank {a}" if a >= 0 else "")
                        + f" at rank {v}",
    }[name]
    rank = a if name in ("bad_rank", "not_held", "double_count") and a >= 0 else None
    if name in ("self_transfer",):
        rank = u
    if name == "conflicting_writes":
        rank = v
    return Violation(name, msg, step, t, u, v, rank=rank, chunk=None if c < 0 else c)


def _ranks_of(words: np.ndarray, members: np.ndarray) -> list[int]:
    out = []
    for w, x in enumerate(words.tolist()):
        while x:
            b = (x & -x).bit_length() - 1
            out.append(int(members[w * 64 + b]))
            x &= x - 1
    return out


def _short(xs: list[int], n: int = 8) -> str:
    head = ", ".join(map(str, xs[:n]))
    return head + (f", ... ({len(xs)} in all)" if len(xs) > n else "")


def _final_violation(row, state, target, members, exact: bool, c0: int = 0) -> Violation:
    """The violation of a final-check row; ``state`` and ``target`` hold chunks from
    ``c0`` on."""
    kind, _, c, r = (int(x) for x in row)
    name = VIOLATION_KINDS[kind]
    if name == "missing_data":
        return Violation(name, f"rank {r} ends without chunk {c}", rank=r, chunk=c)
    if exact:
        got = set(_ranks_of(state[c - c0, r, :-1], members))
        need = set(_ranks_of(target[c - c0], members))
        if name == "missing_contributions":
            msg = (f"rank {r} ends with chunk {c} lacking the contributions of rank(s) "
                   f"{_short(sorted(need - got))}")
        else:
            msg = (f"rank {r} ends with chunk {c} holding contributions of rank(s) "
                   f"{_short(sorted(got - need))}, which are not in pre({c})")
    else:
        have, want = int(state[c - c0, r, 2]), int(target[c - c0, 2])
        msg = (f"rank {r} ends with chunk {c} holding {have} of {want} contributions"
               if name == "missing_contributions" else
               f"rank {r} ends with chunk {c} holding {have} contributions where {want} are "
               f"expected, or the wrong ones (fingerprint mismatch)")
    return Violation(name, msg, rank=r, chunk=c)
