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

from topocoll.collective import allreduce
from topocoll.errors import ScheduleError
from topocoll.schedule import Op, Schedule, Transfer
from topocoll.schedule.lower import Piece, lower, runs
from topocoll.selection import ALGORITHMS
from topocoll.topology.spec import parse_spec

SPECS = [f"ring:{p}" for p in range(2, 10)] + [
    "torus:3x4", "hier:ring(2)x switch(3)", "hier:ring(2)x ring(4)",
    "hier:fc(2)x ring(3)x switch(2)", "twotier:racks=3,hosts=2,oversub=2"]


def execute(program, seed=0):
    """Run a Program on random int64 values; returns (initial, final) per rank."""
    coll = program.collective
    rng = np.random.default_rng(seed)
    init = {r: {c: int(rng.integers(-10**6, 10**6)) for c in range(coll.num_chunks)
                if r in coll.pre(c)} for r in coll.ranks}
    state = {r: dict(v) for r, v in init.items()}
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
                    payload = [state[r][c] for c in m.chunks]   # KeyError = sends unheld data
                    queues.setdefault((m.src, m.dst), deque()).append((m.step, payload))
                posted[r] = True
            if all(queues.get((m.src, r)) for m in st.recvs):
                got = []
                for m in st.recvs:
                    step, payload = queues[(m.src, r)].popleft()
                    assert step == m.step, "FIFO pairing broken"
                    got.append((m, payload))
                for reduce_pass in (False, True):   # copies first, then reductions
                    for m, payload in got:
                        for c, v, red in zip(m.chunks, payload,
                                             [p.reduce for p in m.pieces for _ in p.chunks],
                                             strict=True):
                            if red == reduce_pass:
                                state[r][c] = max(state[r][c], v) if red else v
                pc[r] += 1
                posted[r] = False
                progressed = True
        assert progressed, "deadlock"
    assert all(not q for q in queues.values()), "unreceived messages"
    return init, state


def check_result(program, seed=0):
    coll = program.collective
    init, state = execute(program, seed)
    for c in range(coll.num_chunks):
        contributors = coll.pre(c)
        want = max(init[r][c] for r in contributors)
        for r in coll.post(c):
            assert state[r].get(c) == want, f"rank {r} chunk {c}"


def _cases():
    for syn in ALGORITHMS:
        for spec in SPECS:
            yield pytest.param(syn, spec, id=f"{syn.name}-{syn.kind}-{spec}")


@pytest.mark.parametrize("syn,spec", list(_cases()))
def test_every_synthesizer_lowers_and_executes(syn, spec):
    topo = parse_spec(spec)
    if syn.applies(topo, tuple(range(topo.num_ranks))):
        pytest.skip("not applicable")
    s = syn(topo)
    prog = lower(s)
    # one message per (step, src, dst), and every transfer's chunks are carried
    msgs = prog.messages()
    assert len({(m.step, m.src, m.dst) for m in msgs}) == len(msgs)
    assert sum(m.num_chunks for m in msgs) == len(set(
        (s.step_of(t), int(s.src[t]), int(s.dst[t]), int(c))
        for t in range(s.num_transfers) for c in s.chunks[s.chunk_ptr[t]:s.chunk_ptr[t + 1]]))
    for seed in (0, 1):
        check_result(prog, seed)


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


def test_bad_endpoints_are_named():
    s = Schedule.from_steps(allreduce(2), [[Transfer(0, 5, (0,), Op.REDUCE)]])
    with pytest.raises(ScheduleError, match="0->5"):
        lower(s)
