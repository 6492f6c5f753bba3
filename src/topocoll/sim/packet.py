"""Packet-level simulation: MTU packets, output queues, a DCTCP-like reliable transport.

References
----------
.. [1] Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010 (ECN marking at a queue
   threshold and the ``alpha`` window reduction).
.. [2] Mathis et al., "TCP Selective Acknowledgment Options", RFC 2018 (selective
   acknowledgements); RFC 6675 (SACK-based loss recovery, the ``DupThresh = 3`` rule).
.. [3] IEEE 802.1Q strict-priority transmission selection (eight traffic classes).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..cost.base import CostModelBase, SimResult, check_inputs, check_model_options
from ..errors import InputError
from ..optimum.bounds import lower_bound
from ..schedule.ir import Op
from ..topology.routing import routes
from ._packetcore import packet_simulate
from .depends import dependency_groups
from .flow import finish_step_times, transfer_routes
from .traffic import BackgroundTraffic

if TYPE_CHECKING:
    from ..schedule import Schedule
    from ..topology import Topology

__all__ = ["PacketSim", "PacketRun"]

NUM_CLASSES = 8


@dataclass(frozen=True, eq=False)
class PacketRun:
    """Everything a packet-level run produced.

    Attributes
    ----------
    result : SimResult
        Summary with per-transfer ``transfer_start``/``transfer_finish`` (a transfer
        finishes when its last packet reaches the destination, plus reduction time).
    schedule, topology, message_bytes
        The inputs.
    transfer_bytes : ndarray
        Bytes of each schedule transfer.
    bin_width : float
        Width in seconds of the time bins below.
    link_bytes : ndarray, shape (bins, links)
        Bytes (headers included) that finished serialization on each link in each bin.
    queue_max : ndarray, shape (bins, links)
        Largest output-queue occupancy (bytes, all classes) seen at each link in each
        bin; ``queue_peak`` is its maximum over time.
    drops : ndarray, shape (links, 8)
        Packets dropped per link and traffic class.
    ecn_marks : ndarray, shape (links,)
    background_start, background_finish : ndarray
        Arrival and completion time of each background flow (NaN if unfinished).
    stats : dict
        ``events`` (heap events handled), ``packets``, ``retransmits``, ``drops``,
        ``ecn_marks``, ``timeouts``, ``wall_s`` and ``events_per_s``.
    """

    result: SimResult
    schedule: Schedule
    topology: Topology
    message_bytes: float
    transfer_bytes: np.ndarray
    bin_width: float
    link_bytes: np.ndarray
    queue_max: np.ndarray
    queue_peak: np.ndarray
    drops: np.ndarray
    ecn_marks: np.ndarray
    background_start: np.ndarray
    background_finish: np.ndarray
    stats: dict[str, Any] = field(default_factory=dict)


def _classes(values, name: str) -> np.ndarray:
    a = np.broadcast_to(np.asarray(values, dtype=np.float64), (NUM_CLASSES,)).copy()
    if np.any(a < 0) or np.any(np.isnan(a)):
        raise InputError(f"{name} must be >= 0 per class, got {values!r}", item=name)
    return a


@dataclass(frozen=True)
class PacketSim(CostModelBase):
    """Packet-level simulator with queues, priorities, ECN and a reliable transport.

    Parameters
    ----------
    mtu : int
        Payload bytes per packet.
    header_bytes : int
        Bytes added to every packet on the wire.
    ack_bytes : int
        Wire size of an acknowledgement.
    buffer_bytes : float
        Shared output buffer of every switch (bytes, all ports and classes). Ranks have
        unlimited buffers (host memory) but still apply the per-class thresholds to the
        packets they forward.
    drop_bytes, ecn_bytes : float or sequence of 8 floats
        Per-class queue thresholds (bytes, per output port): arrivals that would exceed
        ``drop_bytes`` are dropped; arrivals that find more than ``ecn_bytes`` queued are
        ECN-marked.
    priority, background_priority : int
        Traffic class (0 = highest of 8, strict priority) of the schedule's transfers and
        of background flows.
    ack_priority : int or None
        Class of acknowledgements; None: the class of their flow (FIFO with data, as
        in a plain TCP/IP network). Default 0: acknowledgements overtake data, as NICs
        with a separate high-priority queue for acks and congestion notices do.
    ecmp : {'hash', 'spray'}
        Multipath choice at each hop among the route's links: per flow (hash of flow and
        node) or per packet (seeded random).
    routing : str, optional
        Routing policy; defaults to the topology's.
    init_cwnd : float, optional
        Initial window in packets; default: the flow's bandwidth-delay product plus
        one packet per hop (line rate from the start, as datacenter transports do).
    max_cwnd : float, optional
        Largest window in packets; default four times the initial window (at least 8).
    rto : float
        Retransmission timeout in seconds; with ``rto_granularity`` set, its lower bound
        (TCP's minimum RTO).
    rto_granularity : float, optional
        None: the timeout is ``rto``, fixed. A number ``G``: the timeout adapts to the
        measured round trip as in RFC 6298 (``srtt``, ``rttvar`` with gains 1/8 and 1/4,
        ``RTO = max(rto, srtt + max(G, 4 rttvar))``), with one sample per acknowledgement
        of new data and one from the handshake.
    dupthresh : int
        A packet is declared lost once this many packets sent after it are acknowledged
        (RFC 6675's DupThresh); raise it with ``ecmp='spray'``, which reorders packets.
    handshake : bool
        Open every transfer with a request/answer exchange (``ack_bytes`` each, through
        the queues, never dropped) before data flows, as a TCP three-way handshake does.
        Off by default (RDMA-style connections set up ahead of time).
    slow_start_gain : float
        Window increase (packets) per acknowledgement of new data in slow start, however
        many packets it acknowledges (RFC 5681's rule, as ns-3's NewReno applies it): with
        one acknowledgement per packet, 1 doubles the window every round trip.
    del_ack : int
        Delayed acknowledgements (RFC 1122, RFC 5681 section 4.2): the receiver
        acknowledges in-order data every ``del_ack`` packets (1: every packet), or when
        ``del_ack_timeout`` has passed since the first unacknowledged one; out-of-order
        data, data that fills a gap and the last packet of a transfer are acknowledged at
        once. Every acknowledgement carries the cumulative acknowledgement and the
        sequence number of the packet that triggered it (selective).
    del_ack_timeout : float
        Delayed-acknowledgement timer in seconds (default 200 ms, ns-3's
        ``DelAckTimeout``; RFC 1122 allows at most 500 ms).
    dctcp_g : float
        DCTCP's gain for the marked-fraction average.
    alpha, reduce_bandwidth : float
        As :class:`~topocoll.sim.FlowSim`.
    background : BackgroundTraffic, optional
        Extra flows (:func:`topocoll.sim.traffic.poisson_traffic`).
    seed : int
        Seeds per-packet spraying and the ECMP hash.
    bin_width : float, optional
        Time bin of the utilization and queue statistics; default: the flow-level
        estimate of the run time over 200 (at least 1 us).

    Notes
    -----
    - Dependencies between transfers: the rule of :mod:`topocoll.sim.depends`, as in
      :class:`~topocoll.sim.FlowSim`.
    - Each transfer is split into ``ceil(bytes / mtu)`` packets. Every node has one output
      queue per link and class, served in strict priority order, FIFO within a class;
      store-and-forward: a packet is serialized (``wire bytes / bandwidth``), propagates
      (link latency) and, at an intermediate node, waits the node's forwarding latency
      before it is queued again.
    - Transport (per transfer): window in packets, starting at ``init_cwnd``; each data
      packet is acknowledged selectively; a packet is lost when ``dupthresh`` packets
      sent after it have been acknowledged, or when it is older than ``rto`` at a timer
      tick; lost packets are resent first. ECN echo: DCTCP window cut ``cwnd * (1 - a/2)``
      once per window, ``a`` the moving average of the marked fraction; a loss halves the
      window; a timeout sets it to 1 with slow start up to half the old window; otherwise
      slow start (``slow_start_gain`` per acknowledgement) until the first cut, then
      additive increase of ``1 / cwnd`` per acknowledgement.
    - Acknowledgements (``ack_bytes``, see ``del_ack``) travel back on the reverse
      route, in class ``ack_priority``, through the same output queues as data. They are
      not ECN-marked; they echo the mark of the packet that triggered them.

    Examples
    --------
    A large uncontended transfer is within a few percent of the flow level:

    >>> from topocoll.topology import ring
    >>> from topocoll.synth.ring import ring_allreduce
    >>> from topocoll.sim import FlowSim
    >>> t = ring(4, bandwidth=12.5e9, latency=1e-6)
    >>> s = ring_allreduce(t)
    >>> p, f = PacketSim().evaluate(s, t, 64e6), FlowSim().evaluate(s, t, 64e6)
    >>> bool(abs(p.time / f.time - 1) < 0.05)
    True
    """

    mtu: int = 4096
    header_bytes: int = 64
    ack_bytes: int = 64
    buffer_bytes: float = 16 * 2**20
    drop_bytes: Any = 4 * 2**20
    ecn_bytes: Any = 256 * 2**10
    priority: int = 1
    background_priority: int = 2
    ack_priority: int | None = 0
    ecmp: str = "hash"
    routing: str | None = None
    init_cwnd: float | None = None
    max_cwnd: float | None = None
    rto: float = 1e-3
    dupthresh: int = 3
    handshake: bool = False
    slow_start_gain: float = 1.0
    del_ack: int = 1
    del_ack_timeout: float = 0.2
    rto_granularity: float | None = None
    dctcp_g: float = 1 / 16
    alpha: float = 0.0
    reduce_bandwidth: float | None = None
    background: BackgroundTraffic | None = None
    seed: int = 0
    bin_width: float | None = None
    bound: bool = True
    name: ClassVar[str] = "packet"

    def __post_init__(self) -> None:
        for name, low in (("mtu", 1), ("ack_bytes", 1), ("header_bytes", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise InputError(f"{name} must be an integer >= {low}, got {v!r}", item=name)
        if self.ecmp not in ("hash", "spray"):
            raise InputError(f"ecmp must be 'hash' or 'spray', got {self.ecmp!r}", item="ecmp")
        object.__setattr__(self, "alpha", check_model_options(self.alpha, self.routing))
        for name in ("priority", "background_priority", "ack_priority"):
            v = getattr(self, name)
            if v is None and name == "ack_priority":
                continue
            if not (isinstance(v, int) and 0 <= v < NUM_CLASSES):
                raise InputError(f"{name} must be an int in 0..7, got {v!r}", item=name)
        for name in ("rto", "buffer_bytes"):
            if not getattr(self, name) > 0:
                raise InputError(f"{name} must be > 0, got {getattr(self, name)!r}", item=name)
        if not (isinstance(self.dupthresh, int) and self.dupthresh >= 1):
            raise InputError(f"dupthresh must be an int >= 1, got {self.dupthresh!r}",
                             item="dupthresh")
        if not 0 < self.slow_start_gain <= 1:
            raise InputError(f"slow_start_gain must be in (0, 1], got "
                             f"{self.slow_start_gain!r}", item="slow_start_gain")
        if not (isinstance(self.del_ack, int) and self.del_ack >= 1):
            raise InputError(f"del_ack must be an int >= 1, got {self.del_ack!r}",
                             item="del_ack")
        if not self.del_ack_timeout > 0:
            raise InputError(f"del_ack_timeout must be > 0, got {self.del_ack_timeout!r}",
                             item="del_ack_timeout")
        if self.rto_granularity is not None and not self.rto_granularity >= 0:
            raise InputError(f"rto_granularity must be None or >= 0, got "
                             f"{self.rto_granularity!r}", item="rto_granularity")
        if not 0 < self.dctcp_g <= 1:
            raise InputError(f"dctcp_g must be in (0, 1], got {self.dctcp_g!r}", item="dctcp_g")
        _classes(self.drop_bytes, "drop_bytes")
        _classes(self.ecn_bytes, "ecn_bytes")

    def evaluate(self, schedule: Schedule, topology: Topology,
                 message_bytes: float) -> SimResult:
        """Simulate; see :meth:`run` (this returns its ``result``)."""
        return self.run(schedule, topology, message_bytes).result

    def run(self, schedule: Schedule, topology: Topology, message_bytes: float) -> PacketRun:
        """Simulate ``schedule`` packet by packet.

        Returns
        -------
        PacketRun

        Raises
        ------
        ValueError
            If ``message_bytes`` is negative or not finite.
        ScheduleError, TopologyError
            As :meth:`FlowSim.run`.
        """
        message_bytes = check_inputs(schedule, topology, message_bytes)
        routing = self.routing or topology.routing
        ptr, link, frac, lat, nbytes = transfer_routes(
            schedule, topology, routing, schedule.collective.chunk_bytes(message_bytes))
        T = schedule.num_transfers
        bg = self.background
        fsrc, fdst = schedule.src.astype(np.int64), schedule.dst.astype(np.int64)
        arrival = np.zeros(T)
        cls = np.full(T, self.priority, dtype=np.int64)
        if bg is not None and len(bg):
            ptr, link, frac, lat, nbytes = _append_background(topology, routing, bg, ptr,
                                                              link, frac, lat, nbytes)
            fsrc = np.concatenate([fsrc, bg.src])
            fdst = np.concatenate([fdst, bg.dst])
            arrival = np.concatenate([arrival, bg.arrival])
            cls = np.concatenate([cls, np.full(len(bg), self.background_priority)])
        bptr, blink, bfrac, _ = _pair_routes(topology, routing, fdst, fsrc)
        bw, cwnd0, max_cwnd = self._windows(topology, ptr, link, frac, lat)
        dep = dependency_groups(schedule, topology.num_nodes)
        buf = np.full(topology.num_nodes, np.inf)
        buf[topology.num_ranks:] = self.buffer_bytes
        bin_w = self.bin_width or max(1e-6, _flow_estimate(nbytes, bw, lat) / 200)
        t0 = time.perf_counter()
        start, finish, txb, qbin, drops, marks, qmax, st = packet_simulate(
            ptr, link, frac, bptr, blink, bfrac, int(self.ack_bytes),
            cls if self.ack_priority is None else np.full(len(cls), self.ack_priority),
            nbytes, lat, cls, fsrc,
            fdst, arrival, T,
            schedule.op == Op.REDUCE, float(self.reduce_bandwidth or 0.0), float(self.alpha),
            dep.group_of_src, dep.group_of_dst, dep.group_node(), dep.count, dep.node_first,
            dep.node_end, dep.release_ptr, dep.release, topology.link_src.astype(np.int64),
            topology.link_dst.astype(np.int64), topology.link_bandwidth.astype(np.float64),
            topology.link_latency.astype(np.float64),
            topology.forwarding_latency.astype(np.float64), buf,
            _classes(self.drop_bytes, "drop_bytes"), _classes(self.ecn_bytes, "ecn_bytes"),
            int(self.mtu), int(self.header_bytes), cwnd0, max_cwnd, float(self.rto),
            float(self.dctcp_g), self.ecmp == "spray", int(self.seed), float(bin_w),
            NUM_CLASSES, int(self.dupthresh), bool(self.handshake),
            float(self.slow_start_gain), int(self.del_ack), float(self.del_ack_timeout),
            -1.0 if self.rto_granularity is None else float(self.rto_granularity))
        wall = time.perf_counter() - t0
        tf = finish[:T]
        load = np.bincount(link[:ptr[T]], weights=np.repeat(nbytes[:T], np.diff(ptr[:T + 1]))
                           * frac[:ptr[T]], minlength=len(topology.links))
        bound = (lower_bound(schedule.collective, topology, message_bytes,
                             alpha=self.alpha).time if self.bound else None)
        result = SimResult(float(tf.max()) if T else 0.0, finish_step_times(schedule, tf), load,
                           self.name, float(message_bytes), schedule.collective.kind,
                           schedule.collective.num_ranks, bound,
                           transfer_start=start[:T], transfer_finish=tf)
        names = ("events", "packets", "retransmits", "drops", "ecn_marks", "timeouts")
        stats: dict[str, Any] = {k: int(v) for k, v in zip(names, st, strict=True)}
        stats["wall_s"] = wall
        stats["events_per_s"] = st[0] / wall if wall > 0 else math.inf
        return PacketRun(result, schedule, topology, float(message_bytes), nbytes[:T],
                         float(bin_w), txb, qbin, qmax, drops, marks, start[T:], finish[T:],
                         stats)

    def _windows(self, topology, ptr, link, frac, lat):
        """Bottleneck bandwidth, initial and maximal window (packets) of every flow."""
        F = len(ptr) - 1
        cap = topology.link_bandwidth[link] / np.maximum(frac, 1e-12)
        owner = np.repeat(np.arange(F), np.diff(ptr))
        bw = np.full(F, np.inf)
        np.minimum.at(bw, owner, cap)
        hops = np.bincount(owner, weights=frac, minlength=F)
        wire = self.mtu + self.header_bytes
        if self.init_cwnd is not None:
            cw = np.full(F, float(self.init_cwnd))
        else:
            finite = np.where(np.isfinite(bw), bw, 0.0)
            cw = np.ceil(finite * 2 * lat / wire) + np.ceil(hops) + 1
        cw = np.maximum(cw, 1.0)
        top = np.maximum(4 * cw, 8.0) if self.max_cwnd is None else \
            np.maximum(cw, float(self.max_cwnd))
        return bw, cw, top


def _pair_routes(topology, routing, src, dst):
    """Routes of the pairs ``src[i] -> dst[i]`` in per-pair CSR form:
    ``(ptr, link, frac, latency)``."""
    pairs = np.stack([src, dst], axis=1)
    if not len(pairs):
        return np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    rt = routes(topology, uniq, routing)
    inv = inv.reshape(-1)
    cnt = np.diff(rt.ptr)[inv]
    starts = rt.ptr[:-1][inv]
    idx = np.repeat(starts - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()))
    return (np.concatenate([[0], np.cumsum(cnt)]).astype(np.int64),
            rt.link[idx].astype(np.int64), rt.frac[idx].astype(np.float64), rt.latency[inv])


def _append_background(topology, routing, bg, ptr, link, frac, lat, nbytes):
    p2, l2, f2, lat2 = _pair_routes(topology, routing, bg.src, bg.dst)
    return (np.concatenate([ptr, ptr[-1] + p2[1:]]), np.concatenate([link, l2]),
            np.concatenate([frac, f2]), np.concatenate([lat, lat2]),
            np.concatenate([nbytes, bg.size]))


def _flow_estimate(nbytes, bw, lat) -> float:
    """A crude scale of the run time, only to size the statistics bins."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(np.isfinite(bw) & (bw > 0), nbytes / bw, 0.0) + lat
    return float(t.sum() / max(1, np.sqrt(len(t)))) if len(t) else 1e-6
