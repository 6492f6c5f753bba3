"""The DLCP packet engine's compiled loop against its Python loop (the reference): the same
results bit for bit on every scheme, pattern and policy, through every growth of its
stores; the fallback for policies without tables; the columnar messages."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from topocoll.errors import InputError
from topocoll.sim.dlcp import _core as _dlcpcore
from topocoll.sim.dlcp.engine import Message, MessageTable, simulate_messages
from topocoll.sim.dlcp.gradient_packets import packetize
from topocoll.sim.dlcp.queue_policies import (
    BandLimits,
    DropTail,
    ECNMarking,
    SelectiveDrop,
    StrictPriority,
)
from topocoll.sim.dlcp.transport_policies import DCTCP
from topocoll.studies.dlcp_scenario import (
    _FLAT,
    SCHEMES,
    _policy,
    background_flows,
    dlcp_messages,
    dlcp_table,
)
from topocoll.topology.spec import parse_spec
from topocoll.workload import LAYERED

TOPO = parse_spec("leafspine:leaves=2,spines=2,hosts=4,bw=10Gbps")


def _both(msgs, policy, transport=None, **kw):
    """Run the reference and the compiled loop; assert every output is identical."""
    a = simulate_messages(TOPO, msgs, policy, engine="python",
                          transport=transport() if transport else None, **kw)
    b = simulate_messages(TOPO, msgs, policy, engine="compiled",
                          transport=transport() if transport else None, **kw)
    assert np.array_equal(a.finish, b.finish)
    assert np.array_equal(a.zero_filled, b.zero_filled)
    assert a.retransmitted_bytes == b.retransmitted_bytes
    assert np.array_equal(a.drops, b.drops)
    assert a.background_drops == b.background_drops
    assert a.events == b.events
    assert a.lost_packets == b.lost_packets
    return a


def _scenario(pattern, scheme, *, payload=9000, load=0.5, eps=0.02, seed=1, scale=0.02,
              window=0.01):
    rng = np.random.default_rng([seed, 0])
    bg = background_flows(8, 1.25e9, load, window, rng)
    msgs, _ = dlcp_messages(LAYERED["resnet50"], 8, scheme, eps=eps, payload=payload,
                            bucket=25e6 * scale, scale=scale, rng=rng, pattern=pattern)
    return msgs, bg


@pytest.mark.parametrize("pattern", ["ps", "ring", "tree"])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_and_pattern_bit_for_bit(pattern, scheme):
    msgs, bg = _scenario(pattern, scheme)
    r = _both(msgs, _policy(scheme, 200_000, 40_000),
              (lambda: DCTCP(init_window=2)) if scheme == "dctcp" else None,
              spray=scheme not in (*_FLAT, "layer_priority"), background=bg, payload=9000,
              seed=3, window=4, rto=1e-4)
    assert r.events > 10_000 and r.background_drops + r.drops.sum() > 0   # congested


POLICIES = {
    "selective": (lambda: SelectiveDrop(60_000, queues=8), None),
    "bands": (lambda: BandLimits((40_000,) * 2 + (15_000,) * 6), None),
    "ecn+selective": (lambda: ECNMarking(SelectiveDrop(60_000, queues=8), 20_000),
                      lambda: DCTCP(init_window=3)),
    "ecn+bands": (lambda: ECNMarking(BandLimits((40_000,) * 3 + (15_000,) * 5), 0),
                  lambda: DCTCP(init_window=1, g=0.5, max_window=6)),
}


@pytest.mark.parametrize("pattern", ["ps", "ring", "tree"])
@pytest.mark.parametrize("name", sorted(POLICIES))
def test_bounded_loss_and_every_policy_bit_for_bit(pattern, name):
    """1,500-byte packets, heavy background, a 5% budget: messages complete with gradients
    zero-filled (the receiver's decision), NACK rounds, per-band admission, ECN marks."""
    rng = np.random.default_rng([2, 0])
    bg = background_flows(8, 1.25e9, 0.7, 0.004, rng)
    msgs, _ = dlcp_messages(LAYERED["resnet50"], 8, "dlcp", eps=0.05, payload=1500,
                            bucket=25e6 * 0.01, scale=0.01, rng=rng, pattern=pattern)
    policy, transport = POLICIES[name]
    r = _both(msgs, policy(), transport, spray=True, background=bg, payload=1500, seed=3,
              window=8, tail_timer=20e-6, rto=1e-4)
    assert r.drops.sum() > 0 and r.retransmitted_bytes > 0
    if transport is None:                   # without DCTCP's backing off, budgets are used
        assert r.zero_filled.sum() > 0


def test_every_store_grows_and_results_stay_the_same(monkeypatch):
    """Start the heap, the FIFOs and the record pool at 4 entries: every growth path runs
    (a message with no window puts all its packets in flight at once)."""
    monkeypatch.setattr(_dlcpcore, "INITIAL_CAPACITY", 4)
    msgs, bg = _scenario("ps", "dlcp", payload=1500, scale=0.005, window=0.002)
    big = Message(10_000, 0, 7, tuple(packetize(10_000, 300_000, 1500)))
    grown = []
    real = _dlcpcore._grow

    def counting(code, *a):
        grown.append(code)
        return real(code, *a)

    monkeypatch.setattr(_dlcpcore, "_grow", counting)
    _both([*msgs, big], SelectiveDrop(100_000), background=bg, payload=1500, seed=2,
          spray=True)
    assert set(grown) == {_dlcpcore.GROW_HEAP, _dlcpcore.GROW_FIFO, _dlcpcore.GROW_POOL}


class _Custom(DropTail):
    """A discipline that changed admission without saying so in its tables."""

    def admit(self, occupancy, size, priority):
        return occupancy + size <= self.buffer // 2


class _Bare:
    """A policy with only the two methods the Python loop needs."""

    def admit(self, occupancy, size, priority):
        return occupancy + size <= 50_000

    def order(self, priority):
        return priority


def test_policies_without_tables_run_in_python():
    msgs, bg = _scenario("ps", "spray", scale=0.01)
    assert _Custom(100_000).port_tables(7) is None        # its admit disagrees: no tables
    for pol in (_Custom(100_000), _Bare()):
        auto = simulate_messages(TOPO, msgs, pol, background=bg, payload=9000)
        ref = simulate_messages(TOPO, msgs, pol, background=bg, payload=9000,
                                engine="python")
        assert np.array_equal(auto.finish, ref.finish)
        with pytest.raises(InputError, match="no compiled form") as e:
            simulate_messages(TOPO, msgs, pol, background=bg, payload=9000,
                              engine="compiled")
        assert e.value.item == "engine"
    with pytest.raises(InputError) as e:
        simulate_messages(TOPO, msgs, DropTail(1000), engine="gpu")
    assert e.value.item == "engine"


def test_tables_read_the_policies():
    t = SelectiveDrop(100_000, queues=8).port_tables(9)
    assert t.order.tolist() == list(range(10)) and t.limit[0] == 100_000
    assert t.limit[9] == t.limit[7] == 30_000 and not t.per_class and t.mark == -1
    b = ECNMarking(BandLimits((9_000, 5_000)), 4_000)
    assert b.per_class                     # marking keeps the bands' own FIFOs
    tb = b.port_tables(3)
    assert tb.per_class and tb.mark == 4_000 and tb.order.tolist() == [0, 1, 1, 1]
    assert StrictPriority(5_000).port_tables(2).order.tolist() == [0, 1, 2]


def test_message_table_round_trip_and_checks():
    msgs, _ = _scenario("ring", "packet_priority", scale=0.01)
    t = MessageTable.from_messages(msgs)
    assert t.messages() == msgs and len(t) == len(msgs)
    bad = dataclasses.replace(t, dst=np.where(np.arange(len(t)) == 3, t.src, t.dst))
    with pytest.raises(InputError, match="bad endpoints") as e:
        simulate_messages(TOPO, bad, DropTail(100_000))
    assert e.value.item == f"message {int(t.id[3])}"
    orphan = dataclasses.replace(t, deps=np.where(t.deps == t.deps[0], 99_999, t.deps))
    with pytest.raises(InputError, match="unknown message 99999"):
        simulate_messages(TOPO, orphan, DropTail(100_000))


def test_table_matches_packet_by_packet_construction():
    """dlcp_table makes every packet at once; the same packets one message at a time with
    packetize and one magnitude draw per message that may lose (an independent build)."""
    model, w, payload, scale = LAYERED["resnet50"], 4, 1500, 0.02
    for scheme in SCHEMES:
        table, pushed = dlcp_table(model, w, scheme, eps=0.03, payload=payload,
                                   bucket=25e6 * scale, scale=scale,
                                   rng=np.random.default_rng(5))
        rng = np.random.default_rng(5)
        got = table.messages()
        assert pushed == sum(p.length for m in got if not m.deps for p in m.packets)
        buckets = 1 + max(m.packets[0].layer for m in got)
        for m in got:
            nbytes = sum(p.length for p in m.packets)
            lossy = not m.deps
            rank = 4 * m.packets[0].layer // buckets
            if lossy:
                scores = rng.lognormal(0.0, 1.0, len(m.packets))
            if scheme in _FLAT:
                ref = packetize(m.id, nbytes, payload, layer=m.packets[0].layer,
                                flat_priority=1)
            elif scheme in ("layer_priority", "spray") or not lossy:
                ref = packetize(m.id, nbytes, payload, layer=m.packets[0].layer,
                                flat_priority=1 + rank)
            else:
                ref = packetize(m.id, nbytes, payload, layer=m.packets[0].layer,
                                layer_rank=rank, scores=scores, buckets=2, a=1, b=3)
            assert list(m.packets) == ref
            assert m.eps == (0.03 if (lossy and scheme == "dlcp") else 0.0)
