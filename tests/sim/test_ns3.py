"""Cross-check of the packet level against ns-3 (the `ns3` wheel, in the dev extra).

One test runs the issue-6 scenarios so that ns-3 is imported once (the import takes
20-30 s). ns-3 runs TCP NewReno (set explicitly: ns-3.44's default is CUBIC with HyStart)
and our packet level runs the same stated transport, from
:meth:`Ns3Sim.packet_equivalent` (every parameter taken from an ns-3 attribute, listed
in docs/design-sim.md; none fitted to ns-3's output). ECMP is per-packet random on both
sides, each with a fixed seed.
"""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.collective import allgather
from topocoll.errors import NotSupportedError
from topocoll.schedule import ScheduleBuilder
from topocoll.sim.backends import cost_model
from topocoll.sim.ns3 import Ns3Sim, _cables, ns3_available
from topocoll.synth.ring import ring_allreduce
from topocoll.topology import from_edges, ring, star
from topocoll.topology.spec import parse_spec


def _incast(n):
    b = ScheduleBuilder(allgather(n + 1)).new_step()
    for i in range(1, n + 1):
        b.add(i, 0, [0])
    return b.build(name="incast")


@pytest.mark.slow
@pytest.mark.skipif(ns3_available() is not None, reason=str(ns3_available()))
def test_packet_level_against_ns3():
    ft = parse_spec("fattree:k=4,bw=10Gbps,lat=1us,routing=ecmp")
    fat_tree = ("fattree", ft, ring_allreduce(ft), 4e6)
    cases = [
        fat_tree,
        ("ring8", ring(8, bandwidth=1.25e9, latency=1e-6), ring_allreduce(ring(8)), 4e6),
        ("incast16 4 MB", star(17, bandwidth=1.25e9, latency=1e-6), _incast(16), 17 * 4e6 / 16),
        ("incast16 16 MB", star(17, bandwidth=1.25e9, latency=1e-6), _incast(16), 17e6),
        fat_tree,  # again, after other runs: ns-3's seeded streams make it identical
    ]
    ns3 = Ns3Sim()
    first = None
    for name, topo, sched, size in cases:
        run_ns = ns3.run(sched, topo, size)
        run_us = ns3.packet_equivalent().run(sched, topo, size)
        r_ns, r_us = run_ns.result, run_us.result
        # per link: bytes sent (headers included) and peak queue (bytes; ours counts the
        # packet in service, ns-3's device queue does not: one 1502-byte packet)
        b_ns, b_us = run_ns.stats["link_bytes"], run_us.link_bytes.sum(axis=0)
        np.testing.assert_array_equal(b_ns > 0, b_us > 0)
        assert b_us.sum() == pytest.approx(b_ns.sum(), rel=0.01), name
        if name.startswith(("ring8", "incast")):  # single paths: link by link
            np.testing.assert_allclose(b_us, b_ns, rtol=0.02, err_msg=name)
        hot = int(np.argmax(run_ns.stats["queue_peak"]))
        assert run_us.queue_peak[hot] == pytest.approx(run_ns.stats["queue_peak"][hot],
                                                       rel=0.05, abs=1502 * 4), name
        assert np.all(np.isfinite(r_ns.transfer_finish)), name
        assert r_ns.time >= r_ns.bound, name
        # issue 6 asks for 10%; measured gaps are within 1.5% (docs/performance.md)
        assert abs(r_us.time / r_ns.time - 1) <= 0.05, (name, r_us.time, r_ns.time)
        # same dependency rule: transfers that start at 0 agree
        np.testing.assert_array_equal(r_ns.transfer_start == 0, r_us.transfer_start == 0)
        if name == "fattree":
            if first is None:
                first = r_ns
            else:
                np.testing.assert_array_equal(r_ns.transfer_finish, first.transfer_finish)
    assert cost_model("ns3").name == "ns3"


def test_packet_equivalent_states_the_ns3_transport():
    n = Ns3Sim(segment_bytes=1000, init_cwnd=10, queue_packets=100, min_rto=0.2,
               routing="ecmp", seed=4)
    p = n.packet_equivalent()
    assert (p.mtu, p.init_cwnd, p.header_bytes, p.ack_bytes) == (1000, 10.0, 54, 54)
    assert p.drop_bytes == 100 * 1054 and p.buffer_bytes == np.inf
    assert (p.del_ack, p.del_ack_timeout, p.dupthresh) == (2, 0.2, 3)
    assert (p.rto, p.rto_granularity, p.seed, p.ecmp, p.routing) == (0.2, 1e-3, 4, "spray",
                                                                        "ecmp")
    assert p.max_cwnd == (1 << 26) // 1000 and p.ack_priority is None and p.handshake
    assert n.packet_equivalent(del_ack=1).del_ack == 1
    with pytest.raises(NotSupportedError, match="TcpCubic"):
        Ns3Sim(congestion_control="TcpCubic").packet_equivalent()
    with pytest.raises(ValueError, match="congestion_control"):
        Ns3Sim(congestion_control="TcpBogus")
    with pytest.raises(ValueError, match="rng_run"):
        Ns3Sim(rng_run=0)


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
