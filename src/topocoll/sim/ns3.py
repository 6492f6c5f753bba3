"""ns-3 backend: the same topology and schedule run in ns-3, for cross-checking.

Uses the ``ns3`` package from PyPI (the ``[ns3]`` extra: ns-3.44 with cppyy bindings).
Importing it takes tens of seconds (cppyy loads and JIT-compiles the ns-3 headers), so
it is imported only inside :meth:`Ns3Sim.run`, once per process. Note that the wheel's
loader also searches the *current directory* tree for ns-3 libraries and refuses to load
when it finds a second build (reported as :class:`NotSupportedError`).

Scenario. Every node (rank or switch) is an ns-3 node with the internet stack; every
pair of opposite links ``u -> v``, ``v -> u`` becomes one point-to-point cable with the
links' bandwidth and latency (so the topology's links must come in symmetric pairs).
Routing is ns-3's global routing (shortest paths); with ``routing='ecmp'`` or
``'spray'`` equal-cost next hops are chosen per packet at random
(``Ipv4GlobalRouting::RandomEcmpRouting``). Devices keep a drop-tail queue of
``queue_packets`` packets and the traffic-control layer is removed, so that the only
queues are the device queues. Each transfer is one TCP connection (BulkSend to a
PacketSink on its own port) with ``segment_bytes`` segments; a transfer finishes when
its sink has received all bytes. The dependency rule of :mod:`topocoll.sim.depends` is
implemented by a small C++ driver (compiled at run time by cppyy), which starts each
released transfer ``alpha`` later.

Transport: TCP NewReno (set explicitly; ns-3.44's default is CUBIC with HyStart), SACK,
timestamps, delayed acknowledgements every ``del_ack_count`` segments, no ECN, no
priorities, no shared switch buffers. Every run seeds ns-3's generator (``seed``,
``rng_run``) and assigns fixed random streams, so the per-packet ECMP draws, and the
result, do not depend on what ran before in the process. :meth:`Ns3Sim.packet_equivalent`
gives the :class:`~topocoll.sim.PacketSim` with the same stated transport; what still
differs is listed in ``docs/design-sim.md``.

References
----------
.. [1] Riley and Henderson, "The ns-3 Network Simulator", in Modeling and Tools for
   Network Simulation, Springer 2010.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..cost.base import CostModelBase, SimResult, check_inputs, check_model_options
from ..errors import InputError, NotSupportedError
from ..optimum.bounds import lower_bound
from .depends import dependency_groups
from .flow import finish_step_times, transfer_routes

if TYPE_CHECKING:
    from ..schedule import Schedule
    from ..topology import Topology

__all__ = ["Ns3Sim", "Ns3Run", "ns3_available"]

#: Largest number of transfers (each needs its own TCP port at its destination).
MAX_TRANSFERS = 60000
#: Send and receive buffer of every TCP socket (bytes): the receive window limit.
SOCKET_BUFFER = 1 << 26
#: Bytes a data segment carries on the wire besides its payload: IPv4 20, TCP 20, the
#: timestamp option 12 (ns-3's ``TcpSocketBase::Timestamp`` is on by default), PPP 2;
#: also the size of a pure acknowledgement.
WIRE_OVERHEAD = 54
#: Congestion controls that may be named (ns-3 aborts the process on an unknown TypeId).
CONGESTION_CONTROLS = ("TcpNewReno", "TcpLinuxReno", "TcpCubic")

_DRIVER = r"""
#include <vector>
namespace topocoll_ns3 {
using namespace ns3;
struct Driver {
  std::vector<int64_t> src, dst, gsrc, gdst, gnode, cnt, nxt, nend, rptr, rel;
  std::vector<uint64_t> bytes, rx, qmax, txbytes;
  std::vector<double> start, finish;
  std::vector<Ipv4Address> addr;
  NodeContainer nodes;
  double alpha = 0;
  uint64_t rx_events = 0;

  static void OnRx(Driver* d, int64_t t, Ptr<const Packet> p, const Address& a) {
    d->rx_events++;
    d->rx[t] += p->GetSize();
    if (d->rx[t] >= d->bytes[t] && std::isnan(d->finish[t])) d->Finish(t);
  }
  static void OnQueue(Driver* d, int64_t l, uint32_t before, uint32_t now) {
    if (now > d->qmax[l]) d->qmax[l] = now;
  }
  static void OnTxEnd(Driver* d, int64_t l, Ptr<const Packet> p) {
    d->txbytes[l] += p->GetSize();
  }
  // per-link statistics: peak device-queue occupancy (bytes) and bytes sent
  void Watch(Ptr<NetDevice> dev, int64_t l) {
    Ptr<PointToPointNetDevice> pd = DynamicCast<PointToPointNetDevice>(dev);
    pd->GetQueue()->TraceConnectWithoutContext(
        "BytesInQueue", MakeBoundCallback(&Driver::OnQueue, this, l));
    pd->TraceConnectWithoutContext("PhyTxEnd", MakeBoundCallback(&Driver::OnTxEnd, this, l));
  }
  void Release(int64_t g) {
    for (int64_t j = rptr[g]; j < rptr[g + 1]; ++j) Launch(rel[j]);
  }
  void Launch(int64_t t) {
    start[t] = Simulator::Now().GetSeconds();
    if (bytes[t] == 0 || src[t] == dst[t]) {
      Simulator::Schedule(Seconds(alpha), &Driver::Finish, this, t);
      return;
    }
    uint16_t port = 1024 + (uint16_t)t;
    PacketSinkHelper sink("ns3::TcpSocketFactory",
                          InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer s = sink.Install(nodes.Get(dst[t]));
    s.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&Driver::OnRx, this, t));
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(addr[dst[t]], port));
    bulk.SetAttribute("MaxBytes", UintegerValue(bytes[t]));
    ApplicationContainer b = bulk.Install(nodes.Get(src[t]));
    b.Start(Seconds(alpha));
  }
  void Finish(int64_t t) {
    finish[t] = Simulator::Now().GetSeconds();
    for (int side = 0; side < 2; ++side) {
      int64_t g = side == 0 ? gsrc[t] : gdst[t];
      if (side == 1 && g == gsrc[t]) break;
      cnt[g] -= 1;
      int64_t u = gnode[g];
      bool moved = false;
      while (nxt[u] < nend[u] && cnt[nxt[u]] == 0) { nxt[u] += 1; moved = true; }
      if (moved && nxt[u] < nend[u]) Release(nxt[u]);
    }
  }
  void Begin(const std::vector<int64_t>& first) {
    for (size_t u = 0; u < first.size(); ++u)
      if (first[u] < nend[u]) Release(first[u]);
  }
  // fixed random streams for the per-packet ECMP choice of every node's global routing
  int64_t AssignEcmpStreams(int64_t stream) {
    int64_t n = 0;
    for (uint32_t i = 0; i < nodes.GetN(); ++i) {
      Ptr<Ipv4ListRouting> list =
          DynamicCast<Ipv4ListRouting>(nodes.Get(i)->GetObject<Ipv4>()->GetRoutingProtocol());
      if (!list) continue;
      for (uint32_t j = 0; j < list->GetNRoutingProtocols(); ++j) {
        int16_t prio = 0;
        Ptr<Ipv4GlobalRouting> g =
            DynamicCast<Ipv4GlobalRouting>(list->GetRoutingProtocol(j, prio));
        if (g) n += g->AssignStreams(stream + n);
      }
    }
    return n;
  }
};
}
"""

_NS: Any = None


def ns3_available() -> str | None:
    """None if the ``ns3`` package can be found, else the reason it cannot."""
    import importlib.util

    if importlib.util.find_spec("ns") is None:
        return "the ns3 package is not installed (pip install 'topocoll[ns3]')"
    return None


def _ns():
    """Import ns-3 and compile the driver once per process."""
    global _NS
    if _NS is None:
        reason = ns3_available()
        if reason:
            raise NotSupportedError(f"the ns3 backend needs ns-3: {reason}")
        try:
            from ns import ns

            ns.cppyy.cppdef(_DRIVER)
        except Exception as e:  # the wheel raises bare Exceptions (e.g. two ns-3 builds)
            msg = " ".join(str(e).split())
            raise NotSupportedError(f"ns-3 could not be loaded: {msg}") from e
        _NS = ns
    return _NS


@dataclass(frozen=True, eq=False)
class Ns3Run:
    """Result of an ns-3 run: ``result`` (with per-transfer times), ``wall_s`` (time spent
    in ``Simulator::Run``), ``setup_s`` (building the scenario), ``rx_events``, and in
    ``stats`` per topology link ``queue_peak`` (largest device-queue occupancy in bytes,
    not counting the packet being sent) and ``link_bytes`` (bytes sent, headers
    included)."""

    result: SimResult
    wall_s: float
    setup_s: float
    rx_events: int
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Ns3Sim(CostModelBase):
    """Run the schedule in ns-3 (TCP over point-to-point links).

    Parameters
    ----------
    segment_bytes : int
        TCP segment size (payload bytes per packet). On the wire each packet also carries
        54 bytes (20 IP, 20 TCP, 12 timestamp option, 2 PPP).
    queue_packets : int
        Drop-tail device queue per port, in packets.
    init_cwnd : int
        TCP initial window in segments.
    min_rto : float
        TCP minimum retransmission timeout (s).
    routing : str, optional
        ``shortest`` or multipath (``ecmp``/``spray``: per-packet random ECMP in ns-3).
    alpha : float
        Per-transfer overhead (s) before the connection opens.
    congestion_control : str
        ns-3 TCP congestion control (``TcpL4Protocol::SocketType``), one of
        :data:`CONGESTION_CONTROLS`. Default ``TcpNewReno``; ns-3.44's own default is
        ``TcpCubic`` with HyStart, which :class:`~topocoll.sim.PacketSim` does not model.
    del_ack_count, del_ack_timeout : int, float
        ``TcpSocket::DelAckCount`` and ``DelAckTimeout`` (ns-3's defaults: 2, 200 ms).
    seed, rng_run : int
        ``RngSeedManager`` seed and run number. Every run sets them and assigns fixed random
        streams to the internet stack and to every node's per-packet ECMP choice, so the
        same inputs give the same result whatever ran before in the process.
    bound : bool
        Attach the lower bound.

    Notes
    -----
    See the module docstring for the scenario. ``reduce_bandwidth`` is not supported.
    :meth:`packet_equivalent` gives the :class:`~topocoll.sim.PacketSim` configured with
    the same transport, for cross-checks.
    """

    segment_bytes: int = 1448
    queue_packets: int = 10000
    init_cwnd: int = 64
    min_rto: float = 1e-3
    routing: str | None = None
    alpha: float = 0.0
    congestion_control: str = "TcpNewReno"
    del_ack_count: int = 2
    del_ack_timeout: float = 0.2
    seed: int = 1
    rng_run: int = 1
    bound: bool = True
    name: ClassVar[str] = "ns3"

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", check_model_options(self.alpha, self.routing))
        if self.congestion_control not in CONGESTION_CONTROLS:
            raise InputError(f"congestion_control must be one of {CONGESTION_CONTROLS}, "
                             f"got {self.congestion_control!r}", item="congestion_control")
        if not self.del_ack_timeout > 0:
            raise InputError(f"del_ack_timeout must be > 0, got {self.del_ack_timeout!r}",
                             item="del_ack_timeout")
        for k in ("segment_bytes", "queue_packets", "init_cwnd", "del_ack_count", "seed",
                  "rng_run"):
            if not (isinstance(getattr(self, k), int) and getattr(self, k) > 0):
                raise InputError(f"{k} must be a positive int, got {getattr(self, k)!r}", item=k)
        if not self.min_rto > 0:
            raise InputError(f"min_rto must be > 0, got {self.min_rto!r}", item="min_rto")

    def evaluate(self, schedule: Schedule, topology: Topology,
                 message_bytes: float) -> SimResult:
        """Run in ns-3; see :meth:`run` (this returns its ``result``)."""
        return self.run(schedule, topology, message_bytes).result

    def packet_equivalent(self, **overrides: Any):
        """The :class:`~topocoll.sim.PacketSim` with the transport this scenario states.

        Every parameter comes from an ns-3 attribute as :meth:`run` sets it (or from its
        ns-3.44 default), not from a comparison of results; ``docs/design-sim.md`` lists
        them with their sources. Only for ``congestion_control='TcpNewReno'``.

        Examples
        --------
        >>> p = Ns3Sim().packet_equivalent()
        >>> p.mtu, p.header_bytes, p.del_ack, p.slow_start_gain, p.ack_priority
        (1448, 54, 2, 1.0, None)
        """
        from .packet import PacketSim

        if self.congestion_control != "TcpNewReno":
            raise NotSupportedError(f"PacketSim models NewReno-style slow start and "
                                    f"halving, not {self.congestion_control}")
        wire = self.segment_bytes + WIRE_OVERHEAD
        kw: dict[str, Any] = dict(
            mtu=self.segment_bytes,                 # TcpSocket::SegmentSize
            header_bytes=WIRE_OVERHEAD, ack_bytes=WIRE_OVERHEAD,
            init_cwnd=float(self.init_cwnd),        # TcpSocket::InitialCwnd
            max_cwnd=float(SOCKET_BUFFER // self.segment_bytes),  # RcvBufSize window
            slow_start_gain=1.0,                    # TcpNewReno::SlowStart: +1 MSS per ack
            del_ack=self.del_ack_count, del_ack_timeout=self.del_ack_timeout,
            dupthresh=3,                            # TcpSocketBase::ReTxThreshold
            rto=self.min_rto, rto_granularity=1e-3,  # MinRto, ClockGranularity (RFC 6298)
            handshake=True,                         # three-way handshake per connection
            ack_priority=None,                      # one FIFO device queue per port
            ecn_bytes=math.inf,                     # TcpSocketBase::UseEcn = Off
            drop_bytes=float(self.queue_packets * wire),  # DropTailQueue MaxSize
            buffer_bytes=math.inf,                  # no shared switch buffer
            ecmp="spray",                           # RandomEcmpRouting: per packet
            routing=self.routing, alpha=self.alpha, seed=self.seed, bound=self.bound)
        kw.update(overrides)
        return PacketSim(**kw)

    def run(self, schedule: Schedule, topology: Topology, message_bytes: float) -> Ns3Run:
        """Build the scenario in ns-3, run it and collect per-transfer times.

        Raises
        ------
        NotSupportedError
            If the ``ns3`` package is missing or fails to load, links are not in
            symmetric pairs, there are more than
            :data:`MAX_TRANSFERS` transfers, or a transfer has an explicit path.
        """
        message_bytes = check_inputs(schedule, topology, message_bytes)
        if schedule.num_transfers > MAX_TRANSFERS:
            raise NotSupportedError(f"ns3 backend: at most {MAX_TRANSFERS} transfers "
                                    f"(got {schedule.num_transfers})")
        if schedule.has_paths:
            raise NotSupportedError("ns3 backend: explicit transfer paths are not supported")
        cables = _cables(topology)
        routing = self.routing or topology.routing
        ptr, link, frac, lat, nbytes = transfer_routes(
            schedule, topology, routing, schedule.collective.chunk_bytes(message_bytes))
        ns = _ns()
        t0 = time.perf_counter()
        ns.RngSeedManager.SetSeed(self.seed)
        ns.RngSeedManager.SetRun(self.rng_run)
        ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(
            ns.TypeId.LookupByName(f"ns3::{self.congestion_control}")))
        ns.Config.SetDefault("ns3::TcpSocket::DelAckCount", ns.UintegerValue(self.del_ack_count))
        ns.Config.SetDefault("ns3::TcpSocket::DelAckTimeout",
                             ns.TimeValue(ns.Seconds(self.del_ack_timeout)))
        ns.Config.SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting",
                             ns.BooleanValue(routing != "shortest"))
        ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(self.segment_bytes))
        ns.Config.SetDefault("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(self.init_cwnd))
        ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(SOCKET_BUFFER))
        ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(SOCKET_BUFFER))
        ns.Config.SetDefault("ns3::TcpSocketBase::MinRto",
                             ns.TimeValue(ns.Seconds(self.min_rto)))
        ns.Config.SetDefault("ns3::DropTailQueue<Packet>::MaxSize",
                             ns.QueueSizeValue(ns.QueueSize(f"{self.queue_packets}p")))
        d = ns.cppyy.gbl.topocoll_ns3.Driver()
        d.nodes.Create(topology.num_nodes)
        stack = ns.InternetStackHelper()
        stack.Install(d.nodes)
        p2p = ns.PointToPointHelper()
        ipv4 = ns.Ipv4AddressHelper()
        tch = ns.TrafficControlHelper()
        addr: list[Any] = [None] * topology.num_nodes
        link_ids = _cable_links(topology, cables)
        for _ in range(len(topology.links)):
            d.qmax.push_back(0)
            d.txbytes.push_back(0)
        for i, (u, v, bw, la) in enumerate(cables):
            p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(bw * 8))))
            p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(int(round(la * 1e9)))))
            devs = p2p.Install(d.nodes.Get(u), d.nodes.Get(v))
            ipv4.SetBase(ns.Ipv4Address(f"10.{i // 16384 % 256}.{i // 64 % 256}."
                                        f"{(i % 64) * 4}"), ns.Ipv4Mask("255.255.255.252"))
            ifs = ipv4.Assign(devs)
            tch.Uninstall(devs)
            d.Watch(devs.Get(0), link_ids[i][0])
            d.Watch(devs.Get(1), link_ids[i][1])
            for node, k in ((u, 0), (v, 1)):
                if addr[node] is None:
                    addr[node] = ifs.GetAddress(k)
        ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
        n_streams = int(stack.AssignStreams(d.nodes, 0))
        d.AssignEcmpStreams(n_streams)
        T = schedule.num_transfers
        dep = dependency_groups(schedule, topology.num_nodes)
        for name, arr in (("src", schedule.src), ("dst", schedule.dst),
                          ("gsrc", dep.group_of_src), ("gdst", dep.group_of_dst),
                          ("gnode", dep.group_node()), ("cnt", dep.count),
                          ("nxt", dep.node_first), ("nend", dep.node_end),
                          ("rptr", dep.release_ptr), ("rel", dep.release)):
            vec = getattr(d, name)
            for x in np.asarray(arr).tolist():
                vec.push_back(int(x))
        for x in np.round(nbytes).astype(np.int64).tolist():
            d.bytes.push_back(x)
            d.rx.push_back(0)
            d.start.push_back(math.nan)
            d.finish.push_back(math.nan)
        for a in addr:
            d.addr.push_back(a if a is not None else ns.Ipv4Address("0.0.0.0"))
        d.alpha = float(self.alpha)
        first = ns.cppyy.gbl.std.vector["int64_t"]()
        for x in dep.node_first.tolist():
            first.push_back(int(x))
        d.Begin(first)
        t1 = time.perf_counter()
        ns.Simulator.Run()
        t2 = time.perf_counter()
        start = np.array(list(d.start), dtype=np.float64)
        finish = np.array(list(d.finish), dtype=np.float64)
        rx_events = int(d.rx_events)
        stats = {"wall_s": t2 - t1,
                 "queue_peak": np.array(list(d.qmax), dtype=np.float64),
                 "link_bytes": np.array(list(d.txbytes), dtype=np.float64)}
        ns.Simulator.Destroy()
        if T and np.isnan(finish).any():
            k = int(np.flatnonzero(np.isnan(finish))[0])
            raise RuntimeError(f"ns-3 run ended with transfer {k} unfinished")
        load = np.bincount(link, weights=np.repeat(nbytes, np.diff(ptr)) * frac,
                           minlength=len(topology.links))
        bound = (lower_bound(schedule.collective, topology, message_bytes,
                             alpha=self.alpha).time if self.bound else None)
        res = SimResult(float(finish.max()) if T else 0.0,
                        finish_step_times(schedule, finish), load,
                        self.name, float(message_bytes), schedule.collective.kind,
                        schedule.collective.num_ranks, bound,
                        transfer_start=start, transfer_finish=finish)
        return Ns3Run(res, t2 - t1, t1 - t0, rx_events, stats)


def _cables(topology: Topology) -> list[tuple[int, int, float, float]]:
    """Pair every link ``u -> v`` with a link ``v -> u`` of equal bandwidth and latency."""
    src, dst = topology.link_src, topology.link_dst
    bw, lat = topology.link_bandwidth, topology.link_latency
    pool: dict[tuple[int, int, float, float], list[int]] = {}
    for i in range(len(src)):
        pool.setdefault((int(src[i]), int(dst[i]), float(bw[i]), float(lat[i])), []).append(i)
    cables = []
    for key in sorted(pool):
        u, v, b, la = key
        if u > v:
            continue
        back = pool.get((v, u, b, la), [])
        if len(back) != len(pool[key]):
            raise NotSupportedError(f"ns3 backend: link {u}->{v} has no opposite link "
                                    f"{v}->{u} with the same bandwidth and latency")
        cables.extend([(u, v, b, la)] * len(back))
    n_pairs = sum(len(x) for (u, v, _, _), x in pool.items() if u > v)
    if 2 * len(cables) != len(src) or n_pairs != len(cables):
        raise NotSupportedError("ns3 backend: every link needs an opposite link "
                                "(self-loops and unpaired links are not supported)")
    return cables


def _cable_links(topology: Topology, cables) -> list[tuple[int, int]]:
    """Topology link ids ``(u -> v, v -> u)`` of every cable of :func:`_cables`."""
    pool: dict[tuple[int, int, float, float], list[int]] = {}
    for i in range(len(topology.link_src)):
        key = (int(topology.link_src[i]), int(topology.link_dst[i]),
               float(topology.link_bandwidth[i]), float(topology.link_latency[i]))
        pool.setdefault(key, []).append(i)
    for ids in pool.values():
        ids.reverse()
    return [(pool[(u, v, b, la)].pop(), pool[(v, u, b, la)].pop()) for u, v, b, la in cables]
