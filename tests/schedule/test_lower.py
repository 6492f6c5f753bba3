"""schedule.lower: every synthesizer's schedule, lowered and executed message by message.

The reference executor below runs each rank's program with real values, in a random
interleaving of ranks (each rank waits only for its own messages, as the runtime does), and
compares every rank's final data with the collective's closed-form result. Empty slots are
``None`` and a reduction into one fails, so the "REDUCE into an empty chunk becomes a copy"
rule is checked too.
"""

from __future__ import annotations

import random
from collections import deque

import numpy as np
import pytest

import topocoll.schedule.lower as lower_module
from topocoll.collective import allreduce
from topocoll.errors import ScheduleError
from topocoll.schedule import Op, Schedule, Transfer
from topocoll.schedule.lower import Piece, lower, runs
from topocoll.selection import ALGORITHMS, ScheduleCache, synthesize
from topocoll.topology.spec import parse_spec

SPECS = [f"ring:{p}" for p in range(2, 10)] + [
    "torus:3x4", "hier:ring(2)x switch(3)", "hier:ring(2)x ring(4)",
    "hier:fc(2)x ring(3)x switch(2)", "twotier:racks=3,hosts=2,oversub=2"]


def _members(sets, num_chunks: int, rank: int) -> np.ndarray:
    """Chunks whose set (CSR ``sets``) holds ``rank``, as a boolean mask."""
    counts = np.diff(sets.indptr)
    chunk = np.repeat(np.arange(num_chunks), counts)
    mask = np.zeros(num_chunks, dtype=bool)
    mask[chunk[sets.indices == rank]] = True
    return mask


def _piece_arrays(m):
    """(chunk ids, reduce flags) of a message, in payload order."""
    ids = np.concatenate([np.arange(p.first, p.first + p.count) for p in m.pieces])
    red = np.concatenate([np.full(p.count, p.reduce) for p in m.pieces])
    return ids, red


def execute(program, seed=0):
    """Run a Program on random int64 values; returns (initial, final, held) per rank.

    ``held[r][c]`` says rank ``r`` holds a value of chunk ``c``: sending a chunk not held
    and reducing into an empty slot fail, as they would in the runtime."""
    coll = program.collective
    C = coll.num_chunks
    rng = np.random.default_rng(seed)
    pre = coll.pre_sets()
    init = {r: rng.integers(-10**6, 10**6, C) for r in coll.ranks}
    held = {r: _members(pre, C, r) for r in coll.ranks}
    state = {r: init[r].copy() for r in coll.ranks}
    queues: dict[tuple[int, int], deque] = {}
    pc = {r: 0 for r in coll.ranks}
    posted = {r: False for r in coll.ranks}
    order = random.Random(seed)
    while True:
        live = [r for r in coll.ranks if pc[r] < len(program.steps_of(r))]
        if not live:
            break
        progressed = False
        order.shuffle(live)
        for r in live:
            st = program.steps_of(r)[pc[r]]
            if not posted[r]:   # post sends: snapshot of the state now
                for m in st.sends:
                    ids, _ = _piece_arrays(m)
                    assert held[r][ids].all(), f"rank {r} sends data it does not hold"
                    queues.setdefault((m.src, m.dst), deque()).append((m.step, state[r][ids]))
                posted[r] = True
            if all(queues.get((m.src, r)) for m in st.recvs):
                got = []
                for m in st.recvs:
                    step, payload = queues[(m.src, r)].popleft()
                    assert step == m.step, "FIFO pairing broken"
                    got.append((m, payload))
                for reduce_pass in (False, True):   # copies first, then reductions
                    for m, payload in got:
                        ids, red = _piece_arrays(m)
                        sel = red == reduce_pass
                        c, v = ids[sel], payload[sel]
                        if reduce_pass:
                            assert held[r][c].all(), f"rank {r} reduces into an empty slot"
                            state[r][c] = np.maximum(state[r][c], v)
                        else:
                            state[r][c] = v
                            held[r][c] = True
                pc[r] += 1
                posted[r] = False
                progressed = True
        assert progressed, "deadlock"
    assert all(not q for q in queues.values()), "unreceived messages"
    return init, state, held


def check_result(program, seed=0):
    coll = program.collective
    init, state, held = execute(program, seed)
    C = coll.num_chunks
    pre, post = coll.pre_sets(), coll.post_sets()
    want = np.full(C, np.iinfo(np.int64).min)
    for r in coll.ranks:
        mask = _members(pre, C, r)
        want[mask] = np.maximum(want[mask], init[r][mask])
    for r in coll.ranks:
        mask = _members(post, C, r)
        assert held[r][mask].all(), f"rank {r} misses chunks"
        bad = np.flatnonzero(state[r][mask] != want[mask])
        assert not len(bad), f"rank {r} chunk {np.flatnonzero(mask)[bad[0]]}"


def _cases():
    for syn in ALGORITHMS:
        for spec in SPECS:
            yield pytest.param(syn, spec, id=f"{syn.name}-{syn.kind}-{spec}")


@pytest.mark.parametrize("syn,spec", list(_cases()))
def test_every_synthesizer_lowers_and_executes(syn, spec, monkeypatch):
    topo = parse_spec(spec)
    if syn.unsupported(topo, tuple(range(topo.num_ranks))):
        pytest.skip("not applicable")
    s = synthesize(syn, topo, {}, cache=ScheduleCache())
    prog = lower(s)
    # one message per (step, src, dst), and every transfer's chunks are carried
    msgs = prog.messages()
    assert len({(m.step, m.src, m.dst) for m in msgs}) == len(msgs)
    step = np.repeat(s.transfer_steps(), np.diff(s.chunk_ptr)).astype(np.int64)
    src = np.repeat(s.src, np.diff(s.chunk_ptr)).astype(np.int64)
    dst = np.repeat(s.dst, np.diff(s.chunk_ptr)).astype(np.int64)
    # distinct (step, src, dst, chunk) as one mixed-radix integer (np.unique over rows,
    # axis=0, sorted void records: 12 of this test's 22 s on the largest case)
    n, C = topo.num_nodes, s.collective.num_chunks
    assert max(1, s.num_steps) * n * n * C < 2**63
    keys = np.unique(((step * n + src) * n + dst) * C + s.chunks.astype(np.int64))
    assert sum(m.num_chunks for m in msgs) == len(keys)
    for seed in (0, 1):
        check_result(prog, seed)
    for r in s.collective.ranks:       # one process lowers only its own steps
        mine = lower(s, rank=r)
        assert list(mine.ranks) == [r] and mine.steps_of(r) == prog.steps_of(r)
    # a step at a time (how a schedule too large for one block is lowered): the same
    monkeypatch.setattr(lower_module, "BLOCK_ENTRIES", 1)
    assert lower(s) == prog and lower(s, rank=0).steps_of(0) == prog.steps_of(0)


@pytest.mark.parametrize("kind", ["allreduce", "allgather", "reduce_scatter"])
def test_rail_rings_lowers_and_executes(kind, monkeypatch):
    # NCCL's rings across boxes need named boxes, which SPECS do not have
    from topocoll.selection import find_algorithm

    test_every_synthesizer_lowers_and_executes(find_algorithm("rail_rings", kind),
                                               "dgx:2,gpus=3", monkeypatch)


def test_reduce_into_empty_becomes_copy():
    # reduce to rank 2 from 0 and 1 in the same step: rank 2 holds nothing of chunk 0
    from topocoll.collective import reduce
    coll = reduce((0, 1, 2), root=2)
    s = Schedule.from_steps(coll, [[Transfer(0, 2, (0,), Op.REDUCE),
                                    Transfer(1, 2, (0,), Op.REDUCE)]])
    # rank 2 contributes too (pre = all), so both stay reductions
    assert [p.reduce for m in lower(s).messages() for p in m.pieces] == [True, True]
    from topocoll.collective import Collective
    bc = Collective("broadcast", (0, 1, 2), root=0)
    s2 = Schedule.from_steps(bc, [[Transfer(0, 1, (0,))], [Transfer(1, 2, (0,))]])
    assert [m.pieces for m in lower(s2).messages()] == [(Piece(0, 1),), (Piece(0, 1),)]


def test_runs_and_merge_per_pair():
    assert runs([0, 1, 3, 4, 5]) == (Piece(0, 2), Piece(3, 3))
    s = Schedule.from_steps(allreduce(2, split=4), [[
        Transfer(0, 1, (3,), Op.REDUCE), Transfer(0, 1, (2,), Op.REDUCE), Transfer(1, 0, (0, 1),
                                                                                   Op.REDUCE)]])
    p = lower(s)
    assert [(m.src, m.dst, m.pieces) for m in p.messages()] == [
        (0, 1, (Piece(2, 2, True),)), (1, 0, (Piece(0, 2, True),))]
    assert p.num_messages == 2 and p.steps_of(0)[0].step == 0


def test_bad_endpoints_are_named(monkeypatch):
    s = Schedule.from_steps(allreduce(2), [[Transfer(0, 5, (0,), Op.REDUCE)]])
    with pytest.raises(ScheduleError, match="0->5"):
        lower(s)
    # the first bad transfer of the whole schedule is named, whichever block it is in
    later = Schedule.from_steps(allreduce(3, split=3), [
        [Transfer(0, 1, (0,), Op.REDUCE)], [Transfer(1, 2, (0,)), Transfer(2, 2, (1,))],
        [Transfer(0, 1, (7,))]])
    for block in (1, 2, 1 << 20):
        monkeypatch.setattr(lower_module, "BLOCK_ENTRIES", block)
        with pytest.raises(ScheduleError, match=r"step 1, transfer 2->2: endpoint to itself"):
            lower(later)
