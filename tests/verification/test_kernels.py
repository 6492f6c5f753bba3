"""The fingerprint kernel against the general one: the same violations, in the same places.

``execute`` runs fingerprint-mode schedules through ``_steps_fingerprint_part`` (three lanes
written out, chunk ranges per thread); the general ``_steps_part`` (any lane count, chunks
dealt round-robin) runs exact mode and can run fingerprint cells too. Both are run here on
correct schedules and on randomly corrupted ones, with two partitions, and must record the
same rows and totals.
"""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.synth import (
    bidirectional_ring_allreduce,
    recursive_doubling_allreduce,
    ring_allgather,
    ring_allreduce,
    ring_reduce_scatter,
)
from topocoll.topology import ring, torus
from topocoll.verification import semantics as sem

SCHEDULES = [
    lambda: ring_allreduce(ring(6)),
    lambda: bidirectional_ring_allreduce(torus((3, 3))),
    lambda: recursive_doubling_allreduce(ring(8)),
    lambda: ring_allgather(ring(5)),
    lambda: ring_reduce_scatter(ring(7)),
]


def corrupt(s, rng):
    """Two random edits: endpoints, operations or chunk ids (some out of range), or one
    transfer made to write what another of its step writes (two writes to one cell)."""
    cols = {k: np.array(getattr(s, k)) for k in ("src", "dst", "op", "chunks")}
    n = int(max(cols["src"].max(), cols["dst"].max())) + 1
    for _ in range(2):
        col = rng.choice(["src", "dst", "op", "chunks", "twin"])
        if col == "twin":
            step = int(rng.integers(s.num_steps))
            a, b = int(s.step_ptr[step]), int(s.step_ptr[step + 1])
            i, j = (int(x) for x in rng.integers(a, b, size=2))
            cols["dst"][j] = cols["dst"][i]
            cols["chunks"][s.chunk_ptr[j]] = cols["chunks"][s.chunk_ptr[i]]
            cols["op"][j] = int(rng.integers(2))
            continue
        i = int(rng.integers(len(cols[col])))
        hi = {"src": n + 1, "dst": n + 1, "op": 2, "chunks": s.collective.num_chunks + 1}[col]
        cols[col][i] = int(rng.integers(-1 if col != "op" else 0, hi))
    return cols


def run(kernel, s, cols, nparts, ptr=None):
    """``kernel`` over ``cols``, with ``s``'s stored chunk pointer or ``ptr`` (the compact
    one: empty for one chunk per transfer)."""
    ptr = s.chunk_ptr if ptr is None else ptr
    coll = s.collective
    C, R = coll.num_chunks, int(max(cols["src"].max(), cols["dst"].max(), max(coll.ranks))) + 1
    state = np.zeros((C, R + 3, 4), np.uint32)     # rows past R: a pad the kernels skip
    target = np.zeros((C, 3), np.uint32)
    pre = coll.pre_sets()
    h = np.random.default_rng(0).integers(0, sem.MERSENNE31, size=(R, 2)).astype(np.uint32)
    members = np.array(sorted(coll.ranks), dtype=np.int64)
    sem._init(state, target, pre.indptr[:-1], pre.indptr[1:], pre.indices,
              np.zeros(R, np.int64), h, False)
    rows, total = [], 0
    maxe = sem._largest_step(s.step_ptr, ptr)
    for part in range(nparts):
        rec = np.zeros((10_000, 4), np.int64)
        args = (s.step_ptr, cols["src"], cols["dst"], cols["op"], ptr, cols["chunks"], state)
        if kernel == "general":
            n, t = sem._steps_part(part, nparts, *args, False, pre.sizes().astype(np.uint32),
                                   members, coll.is_reduction, rec, 10_000, False, maxe, R)
        else:
            n, t = sem._steps_fingerprint_part(C * part // nparts, C * (part + 1) // nparts,
                                               part == 0, *args,
                                               pre.sizes().astype(np.uint32),
                                               coll.is_reduction, rec, 10_000, False, maxe,
                                               np.arange(C, dtype=np.int64), C, R)
        rows += [tuple(r) for r in rec[:n]]
        total += t
    assert not state[:, R:].any()                  # the pad is never written
    return sorted(rows), total, state[:, :R]


@pytest.mark.parametrize("make", SCHEDULES)
def test_fingerprint_kernel_records_what_the_general_kernel_records(make):
    s = make()
    assert s.unit_chunks and len(s.compact_chunk_ptr) == 0
    rng = np.random.default_rng(7)
    found = twins = 0
    for trial in range(40):
        cols = ({k: np.array(getattr(s, k)) for k in ("src", "dst", "op", "chunks")}
                if trial == 0 else corrupt(s, rng))
        general = run("general", s, cols, 2)
        fast = run("fingerprint", s, cols, 2)
        assert fast[0] == general[0] and fast[1] == general[1]
        assert np.array_equal(fast[2], general[2])      # the same final cells
        for kernel, want in (("general", general), ("fingerprint", fast)):
            # the implicit pointer of one chunk per transfer: the same records and cells
            implicit = run(kernel, s, cols, 2, ptr=s.compact_chunk_ptr)
            assert implicit[:2] == want[:2] and np.array_equal(implicit[2], want[2])
        if trial == 0:
            assert general[1] == 0                      # the schedule itself is correct
        found += general[1] > 0
        twins += any(r[0] == 6 for r in general[0])
    assert found >= 20                                  # the edits did break schedules
    assert twins                                        # two writes to one cell were seen


@pytest.mark.parametrize("make", SCHEDULES)
def test_chunk_blocks_give_the_same_report(make, monkeypatch):
    """Fingerprint verification a block of chunks at a time (a state budget of one or two
    chunks) reports what one state for all chunks reports: the same violations in the
    same order, the same totals and cells, on 40 corrupted copies and the clean one."""
    from topocoll.schedule import Schedule
    from topocoll.verification import verify

    s = make()
    rng = np.random.default_rng(7)
    cases = [s] + [Schedule(s.collective, s.step_ptr, c["src"], c["dst"], c["op"], s.chunk_ptr,
                            c["chunks"]) for c in (corrupt(s, rng) for _ in range(40))]
    per_chunk = (max(s.collective.num_ranks, 12) + 4) * 16

    def report(budget, sched):
        monkeypatch.setattr(sem, "STATE_BYTES", budget)
        r = verify(sched, method="fingerprint", collect=True)
        return r.ok, r.total_violations, r.checked_cells, r.violations

    for sched in cases:
        whole = report(1 << 40, sched)
        assert report(per_chunk, sched) == whole
        assert report(2 * per_chunk, sched) == whole
