"""The block renumbering behind Swing's contiguous messages."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.synth.multiport import block_order, make_plan
from topocoll.synth.swing import _rule, swing_allgather, swing_allreduce
from topocoll.synth.torus import _xor_rule
from topocoll.topology import ring, torus


def _sets(peers):
    L, Q = peers.shape
    R = np.arange(Q)[:, None]
    out = {L: R}
    for s in range(L - 1, -1, -1):
        R = np.concatenate([R, R[peers[s]]], axis=1)
        out[s] = R
    return out


@pytest.mark.parametrize("shape", [(16,), (8, 8), (4, 2, 8), (2, 2, 2, 2)])
@pytest.mark.parametrize("rule", [_rule, _xor_rule])
def test_every_block_set_is_an_aligned_range(shape, rule):
    topo = ring(shape[0]) if len(shape) == 1 else torus(shape)
    plan = make_plan(topo, None, rule)
    for j in range(plan.num_ports):
        phi = block_order(plan.peers[j])
        assert sorted(phi.tolist()) == list(range(plan.q))
        for s, R in _sets(plan.peers[j]).items():
            pos = np.sort(phi[R], axis=1)
            w = R.shape[1]
            assert np.all(pos == pos[:, :1] + np.arange(w)), (shape, j, s)
            assert np.all(pos[:, 0] % w == 0)


def test_allreduce_messages_are_contiguous_chunk_ranges():
    s = swing_allreduce(torus((8, 4)))
    for t in range(s.num_transfers):
        ch = s.chunks[s.chunk_ptr[t]:s.chunk_ptr[t + 1]]
        assert np.array_equal(ch, ch[0] + np.arange(len(ch)))


def test_allgather_chunks_name_owners():
    s = swing_allgather(ring(8), multiport=False)
    # first step: each rank sends the block it owns (its own chunk), then 2, then 4
    assert all(tr.chunks == (tr.src,) for tr in s.step(0))
    assert [len(s.step(k)[0].chunks) for k in range(3)] == [1, 2, 4]
