"""Cross-check of the packet level against ns-3 (the `ns3` wheel, in the dev extra).

One test runs the three scenarios of issue 6 so that ns-3 is imported once (the import
takes 20-30 s). Our packet level is configured like the ns-3 scenario: 1448-byte
segments, 54-byte headers and acks, initial window 64, acks FIFO with data, a handshake
per transfer, no ECN, slow start growing by half a packet per ack (ns-3's NewReno adds
one segment per ack, and its receiver acks every second segment).
"""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.collective import allgather
from topocoll.errors import NotSupportedError
from topocoll.schedule import ScheduleBuilder
from topocoll.sim import PacketSim
from topocoll.sim.backends import cost_model
from topocoll.sim.ns3 import Ns3Sim, _cables, ns3_available
from topocoll.synth.ring import ring_allreduce
from topocoll.topology import from_edges, ring, star
from topocoll.topology.spec import parse_spec

NS3_LIKE = dict(mtu=1448, header_bytes=54, ack_bytes=54, init_cwnd=64, ack_priority=None,
                handshake=True, ecn_bytes=1e18, slow_start_gain=0.5)


def _incast(n):
    b = ScheduleBuilder(allgather(n + 1)).new_step()
    for i in range(1, n + 1):
        b.add(i, 0, [0])
    return b.build(name="incast")


@pytest.mark.slow
@pytest.mark.skipif(ns3_available() is not None, reason=str(ns3_available()))
def test_packet_level_against_ns3():
    ft = parse_spec("fattree:k=4,bw=10Gbps,lat=1us,routing=ecmp")
    cases = [
        ("ring8", ring(8, bandwidth=1.25e9, latency=1e-6), ring_allreduce(ring(8)), 8e6, {},
         0.10),
        ("incast16", star(17, bandwidth=1.25e9, latency=1e-6), _incast(16), 17e6, {}, 0.10),
        # measured +7.0% at 4 MB (deterministic: ECMP hash seed 0, ns-3's default seed);
        # at 16 MB the gap is +19% (docs/performance.md), so the size matters
        ("fattree", ft, ring_allreduce(ft), 4e6, dict(ecmp="hash"), 0.10),
    ]
    for name, topo, sched, size, kw, tol in cases:
        ns = Ns3Sim().run(sched, topo, size)
        ours = PacketSim(**NS3_LIKE, **kw).run(sched, topo, size)
        r_ns, r_us = ns.result, ours.result
        assert np.all(np.isfinite(r_ns.transfer_finish)), name
        assert r_ns.time >= r_ns.bound, name
        assert abs(r_us.time / r_ns.time - 1) <= tol, (name, r_us.time, r_ns.time)
        # same dependency rule: transfers that start at 0 agree
        np.testing.assert_array_equal(r_ns.transfer_start == 0, r_us.transfer_start == 0)
        assert cost_model("ns3").name == "ns3"


def test_cables_need_symmetric_links():
    ok = _cables(ring(4, bandwidth=1e9, latency=1e-6))
    assert len(ok) == 4 and all(u < v for u, v, _, _ in ok)
    one_way = from_edges([(0, 1), (1, 2), (2, 0)], num_ranks=3)
    with pytest.raises(NotSupportedError, match="opposite link"):
        _cables(one_way)
    with pytest.raises(NotSupportedError, match="at most"):
        b = ScheduleBuilder(allgather(2))
        b.new_step().add_many(np.zeros(60001, int), np.ones(60001, int), np.zeros(60001, int))
        Ns3Sim().run(b.build(), ring(2), 2.0)
