"""Swing: golden peer sequences and link loads (hand-computed), and verified correctness
for every ring size 2..130, every 2-D torus up to 16x16 and 3-D/4-D tori up to 512 ranks."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.cost import AlphaBeta
from topocoll.errors import NotSupportedError
from topocoll.selection import ALGORITHMS
from topocoll.synth.block_trees import core_size
from topocoll.synth.multiport import make_plan, port_dims
from topocoll.synth.swing import (
    _rule,
    swing_allgather,
    swing_allreduce,
    swing_broadcast,
    swing_latency_allreduce,
    swing_peer,
    swing_reduce,
    swing_reduce_scatter,
    swing_rho,
)
from topocoll.topology import fully_connected, multi_dim, ring, star, torus
from topocoll.topology.core import Dim
from topocoll.verification import verify

ALL = (swing_allreduce, swing_latency_allreduce, swing_reduce_scatter, swing_allgather,
       swing_broadcast, swing_reduce)


def _run(fn, topo, **kw):
    if fn in (swing_broadcast, swing_reduce):
        kw.setdefault("root", topo.num_ranks // 3)
    return fn(topo, **kw)


# ----------------------------------------------------------------- golden values
def test_rho_closed_form_and_distances():
    assert [swing_rho(s) for s in range(9)] == [1, -1, 3, -5, 11, -21, 43, -85, 171]
    for s in range(20):
        assert swing_rho(s) == sum((-2) ** i for i in range(s + 1))
        assert abs(swing_rho(s)) == (2 ** (s + 1) - (-1) ** (s + 1)) // 3


def test_peer_sequence_on_ring_8_by_hand():
    # even ranks go +rho, odd ranks -rho: rho = 1, -1, 3
    expect = {0: [1, 7, 3], 1: [0, 2, 6], 2: [3, 1, 5], 3: [2, 4, 0],
              4: [5, 3, 7], 5: [4, 6, 2], 6: [7, 5, 1], 7: [6, 0, 4]}
    for r, peers in expect.items():
        assert [swing_peer(r, 8, s) for s in range(3)] == peers


@pytest.mark.parametrize("p", [2, 4, 6, 8, 10, 16, 26, 64, 256])
def test_each_step_is_a_perfect_matching_for_even_p(p):
    x = np.arange(p)
    for s in range(int(np.ceil(np.log2(p)))):
        y = swing_peer(x, p, s)
        assert np.array_equal(swing_peer(y, p, s), x)
        assert not np.any(y == x)


def test_torus_8x8_port_sequences_by_hand():
    # reference §6.7: port 0 on 8x8 swings (dim, |rho|) = (0,1),(1,1),(0,1),(1,1),(0,3),(1,3)
    assert port_dims((8, 8), 0) == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    plan = make_plan(torus((8, 8)), None, _rule)
    assert plan.num_ports == 4 and plan.num_steps == 6
    # rank 0 = (0, 0): port 0 -> (1,0), (0,1), (7,0), (0,7), (3,0), (0,3)
    assert plan.peers[0, :, 0].tolist() == [1, 8, 7, 56, 3, 24]
    # port 1 starts in dimension 1
    assert plan.peers[1, :, 0].tolist() == [8, 1, 56, 7, 24, 3]
    # port 2 is port 0 mirrored: every distance negated
    assert plan.peers[2, :, 0].tolist() == [7, 56, 1, 8, 5, 40]
    # rank 9 = (1, 1), odd in both dims: port 0 -> (0,1), (1,0), (2,1), (1,2), (6,1), (1,6)
    assert plan.peers[0, :, 9].tolist() == [8, 1, 10, 17, 14, 49]


def _rs_step_loads(topo, message_bytes, **kw):
    """Per-step time of the Swing reduce-scatter with unit bandwidth, zero latency: the
    bytes on the most loaded directed link."""
    s = swing_reduce_scatter(topo, **kw)
    return AlphaBeta(bound=False).evaluate(s, topo, message_bytes).step_times.tolist()


def test_link_load_ring_16_single_port_by_hand():
    # p = 16, n = 16 B: step s sends 2**(3-s) one-byte blocks over |rho(s)| = 1, 1, 3, 5
    # hops; a link in the + direction carries the messages of the even ranks among the
    # |rho| ranks behind it: c_s = 1, 1, 2, 3 (reference §6.4)
    t = ring(16, bandwidth=1.0, latency=0.0)
    assert _rs_step_loads(t, 16.0, multiport=False) == [8.0, 4.0, 2 * 2.0, 3 * 1.0]


def test_link_load_torus_8x8_single_and_multi_port_by_hand():
    t = torus((8, 8), bandwidth=1.0, latency=0.0)
    # one port, n = 64 B: blocks 32, 16, 8, 4, 2, 1 B at |rho| = 1, 1, 1, 1, 3, 3 -> c = 2
    # at the distance-3 steps
    assert _rs_step_loads(t, 64.0, multiport=False) == [32, 16, 8, 4, 2 * 2, 2 * 1]
    # four ports, n = 256 B: 64 B per port, same per-port blocks; at the distance-3 steps
    # port j and its mirror share the dimension, the even ranks of one and the odd ranks of
    # the other go the same way, so every link of the 3-hop window carries 3 messages
    assert _rs_step_loads(t, 256.0) == [32, 16, 8, 4, 3 * 2, 3 * 1]
    # the paper's congestion deficiency for 8x8 follows: sum c_s / 2**(s+1) = 1.078
    xi = sum(c / 2 ** (s + 1) for s, c in enumerate([1, 1, 1, 1, 3, 3]))
    assert xi == pytest.approx(1.078125)


def test_bandwidth_allreduce_volume_and_steps():
    t = torus((8, 4))
    s = swing_allreduce(t)
    assert s.num_steps == 2 * 5
    sent = s.bytes_sent(32 * 8 * 1000.0)
    assert np.allclose(sent, 2 * 31 / 32 * 32 * 8 * 1000.0)
    lat = swing_latency_allreduce(t)
    assert lat.num_steps == 5 and np.allclose(lat.bytes_sent(1.0), 5.0)


def test_sizes_not_powers_of_two_unfold_and_only_the_latency_variant_folds():
    # bandwidth-optimal: ceil(log2 q) steps per dimension (q = d, or d - 1 when odd);
    # the latency-optimal variant folds: two extra steps per folded dimension
    assert swing_allreduce(torus((6, 5))).num_steps == 2 * (3 + 2)
    assert swing_allreduce(ring(13)).num_steps == 2 * 4
    assert swing_latency_allreduce(torus((6, 4))).num_steps == (2 + 2) + 2
    assert swing_latency_allreduce(ring(13)).num_steps == 3 + 2


UNFOLDED = [(6,), (12,), (26,), (50,), (52,), (100,), (6, 6), (10, 6), (12, 8), (6, 6, 6),
            (3,), (5,), (7,), (9,), (11,), (15,), (17,), (27,), (51,), (65,), (5, 5), (3, 7),
            (7, 6), (9, 4), (6, 5), (3, 3, 3), (5, 3, 2), (7, 7, 3)]


@pytest.mark.parametrize("shape", UNFOLDED, ids=lambda s: "x".join(map(str, s)))
def test_sizes_not_powers_of_two_run_unfolded_every_block_once(shape):
    """Sizes as the paper runs them: ``ceil(log2 q)`` steps per dimension (``q = d``, or
    ``d - 1`` when odd: the last coordinate exchanges directly), no fold, each rank
    sends exactly the bandwidth-optimal ``2 (p - 1) / p`` of the vector, and the schedule
    verifies (26, 50 and 52 are sizes where the authors' negabinary rule loses
    contributions)."""
    t = torus(shape) if len(shape) > 1 else ring(shape[0])
    p = t.num_ranks
    L = sum((core_size(d) - 1).bit_length() for d in shape)
    for mp in (True, False):
        s = swing_allreduce(t, multiport=mp)
        assert s.num_steps == 2 * L
        K = s.collective.num_chunks
        assert np.allclose(s.bytes_sent(float(K)), 2 * (p - 1) / p * K)
        assert verify(s, t).ok
        for fn in (swing_reduce_scatter, swing_allgather):
            r = fn(t, multiport=mp)
            assert r.num_steps == L and verify(r, t).ok
            assert np.allclose(r.bytes_sent(1.0), (p - 1) / p)


def test_even_sizes_beat_the_fold_on_a_torus():
    """The fold's whole-vector hand-offs cross shared links; the trees do not: on 6x6 at
    128 MiB the unfolded allreduce takes 1.43x the multiport bound ``2 S (p-1)/p / (2 D
    B)`` (measured; 8x8, powers of two: 1.10x), the fold 12.7x."""
    from topocoll.synth.multiport import butterfly_schedule

    t = torus((6, 6), bandwidth=50e9, latency=0.0)
    S = float(1 << 27)
    fold = butterfly_schedule(make_plan(t, None, _rule), "allreduce", name="f")
    tree = swing_allreduce(t)
    tf = AlphaBeta(bound=False).evaluate(fold, t, S).time
    tt = AlphaBeta(bound=False).evaluate(tree, t, S).time
    ideal = 2 * S * 35 / 36 / (4 * 50e9)
    assert ideal <= tt <= 1.5 * ideal and tf > 5 * tt


def test_hyperx_peers_are_direct_links():
    t = multi_dim([Dim("fully_connected", 8, 50e9, 1e-7)] * 2)
    s = swing_allreduce(t)
    assert verify(s, t).ok
    hops = t.routes(np.stack([s.src, s.dst], axis=1))
    assert set(np.asarray(hops.hops).tolist()) == {1}


def test_root_outside_group_is_rejected():
    with pytest.raises(NotSupportedError, match="root 9"):
        swing_broadcast(ring(4), root=9)


def test_registry_names():
    names = {(s.name, s.kind) for s in ALGORITHMS}
    for kind in ("allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"):
        assert ("swing", kind) in names
    assert ("swing_latency", "allreduce") in names


# ----------------------------------------------------------------- correctness sweeps
@pytest.mark.slow
@pytest.mark.parametrize("p", range(2, 131))
def test_every_ring_size_verifies(p):
    t = ring(p)
    for fn in ALL:
        for mp in ((True, False) if fn in (swing_allreduce, swing_reduce_scatter) else (True,)):
            s = _run(fn, t, multiport=mp)
            rep = verify(s, t, collect=True)
            assert rep.ok, (p, fn.__name__, mp, rep.violations[:2])


@pytest.mark.slow
@pytest.mark.parametrize("a", range(2, 17))
def test_every_2d_torus_up_to_16x16_verifies(a):
    for b in range(2, 17):
        t = torus((a, b))
        for fn in ALL:
            rep = verify(_run(fn, t), t, collect=True)
            assert rep.ok, ((a, b), fn.__name__, rep.violations[:2])


SHAPES_3D_4D = [(a, b, c) for a in (2, 3, 4, 5, 8) for b in (2, 3, 6, 8) for c in (2, 4, 7, 8)] \
    + [(2, 2, 2, 2), (3, 3, 3, 3), (2, 3, 4, 5), (4, 4, 4, 4), (4, 4, 4, 8), (8, 8, 8),
       (5, 6, 7, 2)]


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES_3D_4D, ids=lambda s: "x".join(map(str, s)))
def test_3d_4d_tori_up_to_512_ranks_verify(shape):
    t = torus(shape)
    assert t.num_ranks <= 512
    for fn in ALL:
        rep = verify(_run(fn, t), t, collect=True)
        assert rep.ok, (shape, fn.__name__, rep.violations[:2])


def test_subgroups_and_switch_fabrics_verify():
    t = torus((4, 4))
    grp = (3, 0, 9, 12, 6, 10)
    for fn in ALL:
        kw = {"root": 9} if fn in (swing_broadcast, swing_reduce) else {}
        s = fn(t, ranks=grp, **kw)
        assert s.meta["shape"] == "6" and verify(s, t).ok
    for topo in (star(7), fully_connected(12)):
        for fn in ALL:
            assert verify(_run(fn, topo), topo).ok


def test_compare_lists_swing_and_the_torus_baselines():
    from topocoll.selection import compare_algorithms
    from topocoll.topology.spec import parse_spec

    t = parse_spec("torus:8x8,bw=400Gbps,lat=100ns")
    rows = compare_algorithms(t, "allreduce", [32.0, 2.0**21, 2.0**29])
    names = {r.algorithm for r in rows}
    assert {"swing", "swing_latency", "mirrored_recursive_doubling", "bucket",
            "hamiltonian_rings", "ring", "recursive_doubling"} <= names
    assert all(r.verified for r in rows)
    small = [r for r in rows if r.size_bytes == 32.0]
    assert small[0].algorithm == "swing_latency"        # fastest at 32 B
