"""NCCL's collectives as NCCL runs them on a real box: algorithm, protocol and time.

The schedule-level models cost what a schedule moves over ideal links. NCCL on a DGX/HGX
box does not reach the links' line rate, runs algorithms that no rank-to-rank schedule
can express (NVLink SHARP reduces inside the NVSwitch) and picks an algorithm and a
protocol per call. This module predicts what nccl-tests measures, for the boxes of
:data:`topocoll.topology.boxes.BOXES`:

- **Algorithms and when they apply**, as NCCL 2.19-2.28 enables them: ``ring`` (every
  collective), ``tree`` (allreduce; a chain inside a box, a double binary tree across
  boxes), ``nvls`` (NVLink SHARP on Hopper and later, one box, more than two GPUs:
  ``src/transport/nvls.cc`` disables it for two), ``nvls_tree`` (allreduce across boxes),
  ``pat`` (allgather and reduce-scatter with one GPU per box) and ``p2p`` (alltoall as
  grouped sends). CollNet (InfiniBand SHARP) needs SHARP switches that no preset has.
- **Bandwidth** = the bytes each algorithm moves through a GPU's busiest port (its
  NVLink port or its NIC), over that port's *effective* rate (a ring across boxes sends
  ``1/ppn`` of a GPU's ring bytes through its NIC and the rest over NVLink: the exit of
  each channel's ring rotates over the box's GPUs):

  * NVLink: links x NCCL's per-link figure (``src/graph/topo.h``: 20.0 GB/s for SM80,
    20.6 for SM90, 40.1 for SM100), i.e. 240 GB/s for an A100 and 370.8 for an H100
    against 300 and 450 line rate (the maintainer's "protocol overhead, ~20%",
    NVIDIA/nccl-tests#212);
  * NVLink SHARP: that rate x NCCL's ``nvlsEfficiency`` (``src/graph/tuning.cc``: 0.85
    Hopper, 0.74 Blackwell); an NVLS allreduce moves ``(1 + 1/n) S`` through each port in
    each direction (the ``multimem.ld_reduce`` of its shard from all GPUs, the
    ``multimem.st`` of the result to all), so its bus bandwidth is ``2 (n-1)/(n+1)`` times
    that rate; NCCL's tuning table uses the large-``n`` limit 2;
  * NIC: line rate x the wire efficiency of 4 KiB-MTU RDMA writes: 26 header bytes per
    packet on InfiniBand (LRH 8, BTH 12, ICRC 4, VCRC 2), 82 on RoCE v2 (preamble and
    SFD 8, Ethernet 14, FCS 4, inter-frame gap 12, IPv4 20, UDP 8, BTH 12, ICRC 4);
  * protocols as NCCL's tuning model scales them (``tuning.cc``): LL half the bandwidth
    up to ``llMaxBws``, LL128 0.92 (rings) or 7/9 (trees in one box), Simple 1; trees
    0.92 and NCCL's size correction table; PAT 0.75.
- **Latency**: NCCL's own model (``baseLat`` + ``hwLat`` per step, NCCL's network
  overhead and ring plateau), in microseconds as ``tuning.cc`` has them.
- **Choice**: the algorithm and protocol with the least predicted time, as NCCL's tuner
  picks the least of its own estimates. We rank by our estimate, not NCCL's table: the
  table's NVLS entry is 2 x 0.85 x the NVLink rate at every GPU count, which no
  measurement shows (NVIDIA/nccl#1455).

Which of these constants decide the validation cases, and the cases themselves, are in
``docs/studies/validation.md``; nothing here is fitted to them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..collective import busbw_factor
from ..errors import InputError, NotSupportedError
from ..topology import Topology
from ..topology.boxes import Box, box_of

__all__ = ["NCCL_ALGORITHMS", "NCCL_PROTOCOLS", "NcclSystem", "NcclEstimate", "nccl_system",
           "nccl_estimates", "nccl_choose", "nic_wire_efficiency", "NCCL_NVLINK_LINK_BPS",
           "NVLS_EFFICIENCY", "NCCL_KIND_ALGORITHMS"]

#: NCCL's algorithms that the model knows, in NCCL's order.
NCCL_ALGORITHMS = ("tree", "ring", "nvls", "nvls_tree", "pat", "p2p")
#: NCCL's protocols, in NCCL's order.
NCCL_PROTOCOLS = ("LL", "LL128", "Simple")

#: NCCL's per-link NVLink bandwidth by generation, bytes/s (``src/graph/topo.h``,
#: ``SM80_NVLINK_BW``, ``SM90_NVLINK_BW``, ``SM100_NVLINK_BW``).
NCCL_NVLINK_LINK_BPS = {"ampere": 20.0e9, "hopper": 20.6e9, "blackwell": 40.1e9}
#: NCCL's NVLink SHARP efficiency by generation (``tuning.cc`` ``nvlsEfficiency``).
NVLS_EFFICIENCY = {"ampere": 0.0, "hopper": 0.85, "blackwell": 0.74}

# NCCL 2.28 src/graph/tuning.cc, microseconds, (LL, LL128, Simple)
_BASE_LAT = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0),
             "nvls_tree": (0.0, 0.0, 0.0), "pat": (8.0, 8.0, 8.0)}
_HW_LAT = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0.0, 0.0, 25.0),
               "nvls_tree": (0.0, 0.0, 25.0), "pat": (0.0, 0.0, 4.0)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0.0, 0.0, 18.0),
            "nvls_tree": (0.0, 0.0, 14.0), "pat": (0.0, 0.0, 14.0)},
}
# llMaxBws (GB/s): one box by GPU generation; across boxes by CPU (Intel row), 2 / >2 boxes
_LL_MAX_ONE_BOX = {"ampere": 87.7e9, "hopper": 141.0e9, "blackwell": 282.0e9}
_LL_MAX_BOXES = (39.0e9, 20.4e9)
# NCCL's host overhead of a network step on Intel CPUs (getNetOverhead), microseconds
_NET_OVERHEAD = 1.0
# treeCorrectionFactor[protocol][log2(bytes / 64)], powers of two from 64 B to 256 MB
_TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
     1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9,
     1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9,
     .9),
)
#: NCCL's algorithms for each collective kind.
NCCL_KIND_ALGORITHMS = {"allreduce": ("tree", "ring", "nvls", "nvls_tree"),
          "allgather": ("ring", "nvls", "pat"), "reduce_scatter": ("ring", "nvls", "pat"),
          "broadcast": ("ring",), "reduce": ("ring",), "alltoall": ("p2p",)}
_US = 1e-6
_MTU = 4096


def nic_wire_efficiency(transport: str) -> float:
    """Payload share of the wire for 4 KiB RDMA writes on ``ib`` or ``roce`` (v2).

    >>> round(nic_wire_efficiency("ib"), 4), round(nic_wire_efficiency("roce"), 4)
    (0.9937, 0.9804)
    """
    overhead = {"ib": 8 + 12 + 4 + 2, "roce": 8 + 14 + 4 + 12 + 20 + 8 + 12 + 4}
    if transport not in overhead:
        raise InputError(f"transport must be 'ib' or 'roce', got {transport!r}",
                         item="transport")
    return _MTU / (_MTU + overhead[transport])


@dataclass(frozen=True)
class NcclSystem:
    """What NCCL sees of a group on a box preset.

    Attributes
    ----------
    box : Box
    nodes : int
        Boxes the group spans.
    ppn : int
        Group ranks in each of those boxes (the same in every one).
    nvlink_Bps : float
        Each GPU's effective NVLink rate (NCCL's per-link figure x links), bytes/s.
    nic_Bps : float
        Each GPU's NIC at its wire efficiency, bytes/s.
    """

    box: Box
    nodes: int
    ppn: int
    nvlink_Bps: float
    nic_Bps: float

    @property
    def ranks(self) -> int:
        """Ranks in the group."""
        return self.nodes * self.ppn

    @property
    def nvls_Bps(self) -> float:
        """Each GPU's NVLink SHARP rate (0 where the box has none)."""
        return self.nvlink_Bps * NVLS_EFFICIENCY[self.box.arch] if self.box.nvls else 0.0


def nccl_system(topology: Topology, ranks: Sequence[int] | None = None) -> NcclSystem:
    """The :class:`NcclSystem` of ``ranks`` (default all) on a box preset.

    Raises
    ------
    NotSupportedError
        If ``topology`` is not built from a box (:func:`~topocoll.topology.box_cluster`)
        or the group has different numbers of ranks in different boxes.

    Examples
    --------
    >>> from topocoll.topology import dgx_h100
    >>> s = nccl_system(dgx_h100(2), range(4))
    >>> s.nodes, s.ppn, round(s.nvlink_Bps / 1e9, 1), round(s.nic_Bps / 1e9, 2)
    (1, 4, 370.8, 49.68)
    """
    box = box_of(topology)
    if box is None:
        raise NotSupportedError(
            f"the NCCL model needs a box preset (dgx-a100, dgx-h100, hgx-h200, dgx-b200, "
            f"gb200-nvl72), and {topology.name} is not one")
    if box.arch not in NCCL_NVLINK_LINK_BPS:
        raise NotSupportedError(f"{box.name} runs RCCL, which the NCCL model does not cover")
    group = range(topology.num_ranks) if ranks is None else ranks
    per_box: dict[int, int] = {}
    g = box.gpus
    for r in group:
        per_box[r // g] = per_box.get(r // g, 0) + 1
    counts = set(per_box.values())
    if len(counts) != 1:
        raise NotSupportedError(f"the NCCL model needs the same number of group ranks in "
                                f"every box; this group has {sorted(counts)}")
    transport = (topology.meta or {}).get("nic_transport", box.nic_transport)
    return NcclSystem(box, len(per_box), counts.pop(),
                      box.nvlink_links * NCCL_NVLINK_LINK_BPS[box.arch],
                      box.nic_Bps * nic_wire_efficiency(transport))


@dataclass(frozen=True)
class NcclEstimate:
    """One NCCL algorithm and protocol at one size: the predicted time.

    ``latency`` is NCCL's latency term and ``rate`` the asymptotic algorithm bandwidth
    (bytes of ``S`` per second), so ``time = latency + S / rate``. ``in_network``: the
    switches reduce (NVLink SHARP), which no rank-to-rank schedule can express.
    """

    algorithm: str
    protocol: str
    kind: str
    num_ranks: int
    message_bytes: float
    latency: float
    rate: float
    in_network: bool = False

    @property
    def time(self) -> float:
        """Predicted seconds."""
        return self.latency + (self.message_bytes / self.rate if self.message_bytes else 0.0)

    @property
    def algbw(self) -> float:
        """nccl-tests algorithm bandwidth, bytes/s."""
        return self.message_bytes / self.time if self.time > 0 else math.inf

    @property
    def busbw(self) -> float:
        """nccl-tests bus bandwidth, bytes/s."""
        return self.algbw * busbw_factor(self.kind, self.num_ranks)


def _proto_index(p: str) -> int:
    return NCCL_PROTOCOLS.index(p)


def _log2i(x: int) -> int:
    return max(0, int(x).bit_length() - 1)


def _ring_bus(s: NcclSystem) -> float:
    """A ring's bus bandwidth through a GPU's busiest port. Across boxes each channel's
    ring leaves a box through one GPU's NIC, and NCCL's channels (one or more per NIC)
    rotate that exit over the box's GPUs: a GPU sends ``(ppn-1)/ppn`` of its ring bytes
    over NVLink and ``1/ppn`` through its own NIC."""
    if s.nodes == 1:
        return s.nvlink_Bps
    if s.ppn == 1:
        return s.nic_Bps
    return min(s.nvlink_Bps * s.ppn / (s.ppn - 1), s.ppn * s.nic_Bps)


def _ring(s: NcclSystem, kind: str, p: str, size: float) -> tuple[float, float]:
    n, nodes, i = s.ranks, s.nodes, _proto_index(p)
    bus = _ring_bus(s)
    if p == "LL":
        cap = _LL_MAX_ONE_BOX[s.box.arch] if nodes == 1 else _LL_MAX_BOXES[nodes > 2]
        bus = min(cap, 0.5 * bus)
    elif p == "LL128":
        bus *= 0.92
    steps = {"allreduce": 2 * (n - 1), "allgather": n - 1, "reduce_scatter": n - 1}.get(kind, n)
    rate = bus * n / steps if kind in ("allreduce", "allgather", "reduce_scatter") else bus
    hw = "nvlink" if nodes == 1 else "net"
    lat = _BASE_LAT["ring"][i]
    if kind in ("broadcast", "reduce"):
        per = _HW_LAT[hw]["tree" if p == "Simple" else "ring"][i]
        return (lat + steps * per) * _US, rate
    intra = _HW_LAT["nvlink"]["ring"][i]
    inter = _HW_LAT["net"]["tree" if s.ppn == 1 else "ring"][i]
    if nodes > 1:
        intra = max(intra, _NET_OVERHEAD * (3 if p == "Simple" else 1))
    n_inter = 0 if nodes == 1 else (2 * (nodes - 1) if kind == "allreduce" else nodes - 1)
    lat += (steps - n_inter) * intra + n_inter * inter
    if p == "Simple" and nodes > 1 and kind == "allreduce" and size >= 64 * 32 * n:
        lat *= 1.4                      # NCCL's "plateau effect of ring"
    return lat * _US, rate


def _tree(s: NcclSystem, p: str, size: float) -> tuple[float, float]:
    i = _proto_index(p)
    bus = 0.92 * (s.nvlink_Bps if s.nodes == 1 else min(s.nvlink_Bps, s.ppn * s.nic_Bps))
    if p == "LL":
        cap = _LL_MAX_ONE_BOX[s.box.arch] if s.nodes == 1 else _LL_MAX_BOXES[s.nodes > 2]
        bus = min(bus / 3.8, cap)
    elif p == "LL128":
        bus *= 7 / 9 if s.nodes == 1 else 120 / 128
    log_size = _log2i(int(size) >> 6) if size >= 64 else -1
    if 0 <= log_size < 23:
        bus *= _TREE_CORRECTION[i][log_size]
    rate = bus / 2                       # S up the tree and S down through every port
    lat = _BASE_LAT["tree"][i] + 2 * ((s.ppn - 1) * _HW_LAT["nvlink"]["tree"][i]
                                      + _log2i(s.nodes) * _HW_LAT["net"]["tree"][i])
    return lat * _US, rate


def _nvls(s: NcclSystem, kind: str) -> tuple[float, float]:
    n = s.ppn
    rate = s.nvls_Bps / (1 + 1 / n) if kind == "allreduce" else s.nvls_Bps
    return _HW_LAT["nvlink"]["nvls"][2] * _US, rate


def _nvls_tree(s: NcclSystem) -> tuple[float, float]:
    intra = (1 + 1 / s.ppn) / s.nvls_Bps
    inter = (1 if s.nodes == 2 else 2) / (s.ppn * s.nic_Bps)
    lat = (_HW_LAT["nvlink"]["nvls_tree"][2]
           + 2 * _log2i(s.nodes) * _HW_LAT["net"]["nvls_tree"][2])
    return lat * _US, 1 / max(intra, inter)


def _pat(s: NcclSystem) -> tuple[float, float]:
    n = s.ranks
    lat = _BASE_LAT["pat"][2] + _log2i(s.nodes) * _HW_LAT["net"]["pat"][2] / 3.5 + n * 2.8
    return lat * _US, 0.75 * s.nic_Bps * n / (n - 1)


def _p2p(s: NcclSystem) -> tuple[float, float]:
    n = s.ranks
    per_byte = (s.ppn - 1) / n / s.nvlink_Bps
    if s.nodes > 1:
        per_byte = max(per_byte, (n - s.ppn) / n / s.nic_Bps)
    lat = _BASE_LAT["ring"][2] + (_HW_LAT["net" if s.nodes > 1 else "nvlink"]["ring"][2])
    return lat * _US, 1 / per_byte


def _why_not(s: NcclSystem, kind: str, algorithm: str) -> str | None:
    if algorithm not in NCCL_KIND_ALGORITHMS.get(kind, ()):
        return f"NCCL has no {algorithm} {kind}"
    if algorithm in ("nvls", "nvls_tree"):
        if not s.box.nvls or NVLS_EFFICIENCY[s.box.arch] == 0:
            return f"{s.box.name} has no NVLink SHARP"
        if s.ppn <= 2:
            return "NCCL disables NVLink SHARP for two GPUs or fewer per box"
        if algorithm == "nvls" and s.nodes > 1:
            return "NVLS across boxes needs InfiniBand SHARP (CollNet), which no preset has"
        if algorithm == "nvls_tree" and s.nodes == 1:
            return "NVLS tree runs across boxes only"
    if algorithm == "pat" and (s.ppn != 1 or s.nodes == 1):
        return "NCCL runs PAT only with one GPU per box"
    return None


def nccl_estimates(topology: Topology, kind: str, message_bytes: float, *,
                   ranks: Sequence[int] | None = None,
                   algorithms: Sequence[str] | None = None) -> list[NcclEstimate]:
    """Every NCCL algorithm and protocol that applies to ``kind`` on ``ranks``, timed.

    Parameters
    ----------
    topology : Topology
        A box preset (:func:`~topocoll.topology.box_cluster`).
    kind : str
        Collective kind.
    message_bytes : float
        nccl-tests size ``S``.
    ranks : sequence of int, optional
        The group (default every rank).
    algorithms : sequence of str, optional
        Only these NCCL algorithms (:data:`NCCL_ALGORITHMS`).

    Raises
    ------
    NotSupportedError
        If the topology is not a box preset, or nothing applies (naming why).

    Examples
    --------
    >>> from topocoll.topology import dgx_h100
    >>> best = nccl_choose(dgx_h100(1), "allreduce", 2**32)
    >>> best.algorithm, best.protocol, round(best.busbw / 1e9)
    ('nvls', 'Simple', 489)
    """
    s = nccl_system(topology, ranks)
    if s.ranks < 2:
        raise NotSupportedError("the NCCL model needs at least two ranks")
    unknown = set(algorithms or ()) - set(NCCL_ALGORITHMS)
    if unknown:
        raise NotSupportedError(f"unknown NCCL algorithm {sorted(unknown)}; known: "
                                f"{', '.join(NCCL_ALGORITHMS)}")
    out: list[NcclEstimate] = []
    reasons = []
    for a in algorithms or NCCL_ALGORITHMS:
        why = _why_not(s, kind, a)
        if why:
            reasons.append(f"{a}: {why}")
            continue
        for p in NCCL_PROTOCOLS:
            if a in ("nvls", "nvls_tree", "pat", "p2p") and p != "Simple":
                continue
            if a == "ring":
                lat, rate = _ring(s, kind, p, message_bytes)
            elif a == "tree":
                lat, rate = _tree(s, p, message_bytes)
            elif a == "nvls":
                lat, rate = _nvls(s, kind)
            elif a == "nvls_tree":
                lat, rate = _nvls_tree(s)
            elif a == "pat":
                lat, rate = _pat(s)
            else:
                lat, rate = _p2p(s)
            out.append(NcclEstimate(a, p, kind, s.ranks, float(message_bytes), lat, rate,
                                    a in ("nvls", "nvls_tree")))
    if not out:
        raise NotSupportedError(f"no NCCL algorithm applies to {kind} here: "
                                + "; ".join(reasons))
    return out


def nccl_choose(topology: Topology, kind: str, message_bytes: float, *,
                ranks: Sequence[int] | None = None,
                algorithms: Sequence[str] | None = None) -> NcclEstimate:
    """The algorithm and protocol NCCL would run: the least predicted time (ties: NCCL's
    order of algorithms, then protocols). Arguments as :func:`nccl_estimates`."""
    ests = nccl_estimates(topology, kind, message_bytes, ranks=ranks, algorithms=algorithms)
    return min(ests, key=lambda e: e.time)
