"""Transport policies of the gradient engine: DCTCP's window rules, and DCTCP against a
fixed window through one congested port (marks instead of drops)."""

from __future__ import annotations

import pytest

from topocoll.errors import InputError
from topocoll.sim.dlcp.engine import Message, simulate_messages
from topocoll.sim.dlcp.gradient_packets import packetize
from topocoll.sim.dlcp.queue_policies import DropTail, ECNMarking
from topocoll.sim.dlcp.transport_policies import DCTCP, FixedWindow
from topocoll.topology.spec import parse_spec


def test_dctcp_window_rules():
    d = DCTCP(init_window=10, g=0.5)
    for _ in range(10):
        d.on_ack("f", marked=False, delivered=True)
    assert d.window("f") == 20                       # slow start doubles per window
    for i in range(20):
        d.on_ack("f", marked=i < 10, delivered=True)  # half the window marked
    # alpha = 0.5 * 0.5; the window (grown by the 10 unmarked ACKs) times 1 - alpha / 2
    assert d.alpha("f") == pytest.approx(0.25)
    assert d.window("f") == int(30 * (1 - 0.125))
    w = d.window("f")
    d.on_ack("f", marked=False, delivered=False)      # a loss halves the window
    assert d.window("f") == max(1, int(w / 2))
    assert d.window("g") == 10                        # flows are independent
    with pytest.raises(InputError):
        DCTCP(g=0)
    with pytest.raises(InputError) as e:
        FixedWindow(0)
    assert e.value.item == "window"


def _incast(transport, policy):
    """Three senders to one receiver behind a leaf: the receiver's port is the bottleneck."""
    t = parse_spec("leafspine:leaves=2,spines=1,hosts=4,bw=10Gbps")
    msgs = [Message(k, src=4 + k, dst=0, packets=tuple(packetize(k, 2_000_000, 9000)))
            for k in range(3)]
    return simulate_messages(t, msgs, policy, transport=transport, rto=1e-4)


def test_dctcp_keeps_the_queue_under_the_buffer_where_a_fixed_window_overflows_it():
    buf = 150_000
    fixed = _incast(FixedWindow(64), DropTail(buf))
    dctcp = _incast(DCTCP(), ECNMarking(DropTail(buf), threshold=buf // 5))
    # only the first windows (3 x 10 packets of slow start) can overflow the buffer
    assert fixed.drops.sum() > 10 * dctcp.drops.sum() > 0
    assert fixed.retransmitted_bytes > 10 * dctcp.retransmitted_bytes
    ideal = 3 * 2_000_000 * (1 + 64 / 9000) / (10e9 / 8)   # the bottleneck port, busy
    # yet the port stays busy: within 5% of the ideal time
    assert ideal <= dctcp.finish.max() <= 1.05 * ideal


def test_marking_policy_delegates_and_marks_above_its_threshold():
    p = ECNMarking(DropTail(100_000), threshold=30_000)
    assert p.admit(90_000, 9000, 1) and not p.admit(95_000, 9000, 1)
    assert p.order(5) == DropTail(100_000).order(5)
    assert p.mark(25_000, 9000, 1) and not p.mark(10_000, 9000, 1)
    with pytest.raises(InputError):
        ECNMarking(DropTail(100_000), threshold=-1)
