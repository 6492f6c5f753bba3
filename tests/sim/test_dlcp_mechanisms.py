"""DLCP's mechanisms: priority by layer and magnitude, selective dropping, spraying, the
bounded-loss receiver (within and beyond its budget), and where loss is allowed."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.errors import InputError
from topocoll.sim.dlcp.bounded_loss import BoundedLossReceiver, loss_allowed
from topocoll.sim.dlcp.engine import Message, simulate_messages
from topocoll.sim.dlcp.gradient_packets import magnitude_buckets, packet_priority, packetize
from topocoll.sim.dlcp.queue_policies import DropTail, SelectiveDrop, StrictPriority
from topocoll.topology.spec import parse_spec


def test_priority_mapping_orders_front_layers_and_large_gradients_first():
    # front layers first, larger magnitude first; class 0 stays free for control
    assert packet_priority(0, 0) == 1
    assert packet_priority(0, 0) < packet_priority(2, 0) < packet_priority(5, 0)
    assert packet_priority(1, 0, b=3) < packet_priority(1, 1, b=3)
    assert packet_priority(100, 100) == 7 and packet_priority(3, 0, queues=4) == 3
    rng = np.random.default_rng(0)
    s = rng.lognormal(size=101)
    mb = magnitude_buckets(s, buckets=4)
    assert sorted(np.bincount(mb)) == [25, 25, 25, 26]
    assert s[mb == 0].min() > s[mb == 1].max() > s[mb == 3].max()
    pk = packetize(7, 100_000, 9000, layer_rank=0, scores=list(range(12)), b=3)
    assert [p.offset for p in pk] == [9000 * i for i in range(12)]
    assert sum(p.length for p in pk) == 100_000 and pk[-1].length == 1000
    assert pk[11].priority == 1 and pk[0].priority == 3        # largest score first
    with pytest.raises(InputError):
        packetize(0, 100, 10, scores=[1.0])


def test_selective_drop_thresholds_drop_low_classes_first():
    q = SelectiveDrop(buffer=100_000, queues=8)
    assert list(q.thresholds) == sorted(q.thresholds, reverse=True)
    assert q.thresholds[0] == q.thresholds[1] == 100_000 and q.thresholds[7] == 30_000
    for occ in (0, 25_000, 50_000, 90_000):
        admitted = [q.admit(occ, 9000, p) for p in range(8)]
        assert admitted == sorted(admitted, reverse=True)       # a prefix of classes
    assert q.admit(90_000, 9000, 1) and not q.admit(90_000, 9000, 2)
    assert not DropTail(10_000).admit(5_000, 6_000, 0)
    assert StrictPriority(10).order(3) == 3 and DropTail(10).order(3) == 0
    with pytest.raises(InputError):
        SelectiveDrop(100, queues=3, thresholds=(100, 200, 50))


def test_receiver_budget_complete_or_nack_most_important_first():
    r = BoundedLossReceiver([1000] * 100, eps=0.05)
    for i in range(100):
        if i not in (3, 50, 51, 52, 53, 54):
            r.receive(i)
    pr = [5] * 100
    pr[52] = 1
    verdict, missing = r.decide(priorities=pr)
    assert verdict == "nack" and missing == (52, 3, 50, 51, 53, 54)
    r.receive(52)                                   # the retransmission: 5% missing, ok
    assert r.decide() == ("complete", ()) and r.zero_filled == 5000
    # ring reduce-scatter: a block carrying 3 contributions is charged three times
    r = BoundedLossReceiver([1000] * 100, eps=0.05)
    for i in range(98):
        r.receive(i)
    assert r.decide(weight=3)[0] == "nack"
    assert BoundedLossReceiver([10], eps=0.0).decide()[0] == "nack"     # reliable
    with pytest.raises(InputError):
        BoundedLossReceiver([10], eps=1.0)


def test_replica_consistency_rule():
    assert loss_allowed("ps", "push") and not loss_allowed("ps", "pull")
    assert loss_allowed("allreduce", "reduce-scatter")
    assert not loss_allowed("allreduce", "all-gather")
    with pytest.raises(InputError) as e:
        loss_allowed("ps", "gossip")
    assert e.value.item == "phase"


TOPO = "leafspine:leaves=2,spines=2,hosts=2,bw=10Gbps"


def test_pipeline_time_closed_form_and_spraying_uses_every_path():
    t = parse_spec(TOPO)
    m = Message(0, 0, 3, tuple(packetize(0, 100_000, 9000)))
    r = simulate_messages(t, [m], DropTail(1 << 20))
    full = (9000 + 64) / 1.25e9
    # 11 full packets and a 1064-byte one leave the host, the last full one crosses 3 more
    # links, the small one follows it, 4 link latencies
    assert r.finish[0] == pytest.approx(11 * full + 3 * full + 1064 / 1.25e9 + 4e-6)
    # uplinks as fast as host links; messages 0 and 2 hash onto the same spine
    t = parse_spec(TOPO + ",uplink_bw=10Gbps")
    two = [Message(0, 0, 3, tuple(packetize(0, 900_000, 9000))),
           Message(2, 1, 2, tuple(packetize(2, 900_000, 9000)))]
    one = simulate_messages(t, two, DropTail(1 << 24), spray=False)
    sp = simulate_messages(t, two, DropTail(1 << 24), spray=True)
    # hashed: both share one uplink, twice as long; sprayed: both spines, no queueing
    assert one.finish.max() == pytest.approx(2 * sp.finish.max(), rel=0.05)


def test_losses_beyond_the_budget_are_retransmitted_and_within_it_zero_filled():
    t = parse_spec(TOPO)
    # incast: three senders into host 3 through a small buffer drops packets
    msgs = [Message(i, s, 3, tuple(packetize(i, 500_000, 9000)), eps=eps)
            for i, (s, eps) in enumerate(((0, 0.0), (1, 0.0), (2, 0.0)))]
    rel = simulate_messages(t, msgs, DropTail(40_000))
    assert rel.drops.sum() > 0 and rel.retransmitted_bytes > 0
    assert (rel.zero_filled == 0).all()             # reliable: everything delivered
    lossy = [Message(m.id, m.src, m.dst, m.packets, eps=0.5) for m in msgs]
    bl = simulate_messages(t, lossy, DropTail(40_000))
    assert bl.zero_filled.sum() > 0
    assert (bl.zero_filled <= 0.5 * 500_000).all()
    assert bl.retransmitted_bytes < rel.retransmitted_bytes
    assert bl.finish.max() < rel.finish.max()       # no waiting for the last losses
    # a dependency waits for its parent
    chain = [Message(0, 0, 3, tuple(packetize(0, 90_000, 9000))),
             Message(1, 3, 0, tuple(packetize(1, 90_000, 9000)), deps=(0,))]
    r = simulate_messages(t, chain, DropTail(1 << 20))
    assert r.finish[1] > r.finish[0] + 70e-6
    with pytest.raises(InputError):
        simulate_messages(t, [Message(0, 0, 0, ())], DropTail(1000))
    with pytest.raises(InputError):
        simulate_messages(t, chain[1:], DropTail(1000))


def test_band_limits_keep_a_class_of_its_own_under_a_burst_of_another():
    """Two hosts into one port at twice its rate: with a FIFO per band, class 1 finishes
    in the time it would take alone and only class 6 drops (its band fills while it is
    starved); with one shared buffer (strict priority, drop-tail) the class-6 burst
    already queued takes room that class 1 then lacks."""
    from topocoll.sim.dlcp.gradient_packets import GradientPacket
    from topocoll.sim.dlcp.queue_policies import BandLimits

    t = parse_spec("leafspine:leaves=2,spines=2,hosts=2,bw=50Mbps")
    size = 1400 + 64

    def msg(k, src, cls, start=0.0):
        return Message(k, src, 3, tuple(GradientPacket(k, 0, i * 1400, 1400, cls)
                                        for i in range(400)), start=start)

    bands = BandLimits((50 * size,) * 2 + (10 * size,) * 6)
    alone = simulate_messages(t, [msg(0, 0, 1)], bands, window=100, rto=1e-3)
    both = simulate_messages(t, [msg(0, 0, 1), msg(1, 1, 6)], bands, window=100, rto=1e-3)
    assert alone.drops.sum() == 0
    assert both.drops[1] == 0 and both.drops[6] > 0
    assert both.finish[0] == pytest.approx(alone.finish[0], rel=0.01)
    assert both.finish[1] > 1.9 * both.finish[0]        # it waited for the port
    # one shared buffer of the same total: class 6 arrives first and fills it
    shared = simulate_messages(t, [msg(0, 0, 1, start=2e-3), msg(1, 1, 6)],
                               StrictPriority(60 * size), window=100, rto=1e-3)
    assert shared.drops[1] > 0
    per_band = simulate_messages(t, [msg(0, 0, 1, start=2e-3), msg(1, 1, 6)], bands,
                                 window=100, rto=1e-3)
    assert per_band.drops[1] == 0
    with pytest.raises(InputError):
        BandLimits((0, 10))
