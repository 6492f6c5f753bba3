"""ASTRA-sim compatibility mode: its native collectives under its analytical semantics.

To compare number for number with ASTRA-sim's analytical backend, a collective is timed
the way ASTRA-sim's system layer runs it (``../shared/reference/formats.md`` section 2.3),
not by our schedules:

- the network is ASTRA-sim's: dimensions of ``Ring``, ``FullyConnected`` or ``Switch``
  with per-link bandwidth (``network.yml`` GB/s with GB = 2^30 bytes, converted by
  :func:`~topocoll.topology.io.read_astra_network`) and latency; a message between
  neighbours takes ``hops x latency + bytes / bandwidth`` (Ring and FullyConnected: one
  hop; Switch: two) plus the system's ``endpoint-delay``;
- a collective of ``C`` bytes is split into ``S = preferred-dataset-splits`` chunks;
  every chunk runs the phases of the collective, each phase on one dimension with that
  dimension's algorithm (``ring``, ``direct``, ``halvingDoubling``); a dimension holds at
  most ``active-chunks-per-dimension`` chunks at once, taken in chunk order;
- phases: ``baseline`` runs the collective itself on every used dimension, dimension 0
  first; ``localBWAware`` (all-reduce) reduce-scatters up the dimensions, all-reduces
  on the last, all-gathers back, each on the shrinking shard;
- a ring phase on ``p`` NPUs sends ``p - 1`` messages in turn (all-reduce ``2 (p - 1)``)
  of ``c / p`` bytes (all-gather: ``c``, its input); direct sends all ``p - 1`` at once,
  one step per half; halving-doubling ``log2 p`` steps of halving (then doubling)
  messages; every message of a reduce-scatter half is reduced locally as three passes of
  its bytes over ``local-mem-bw`` (GB/s, GB = 10^9).

The model is congestion-unaware: chunks in flight on one dimension do not slow each
other. For one chunk in flight (``active-chunks-per-dimension: 1``) on one dimension, the
congestion-aware backend gives the same messages one at a time per link, so the two
agree.

Checked against ASTRA-sim's own regression output (``tests/rt_template``: 8 NPUs on a
ring of 50 GB/s and 500 ns, endpoint delay 10 ns, 4 splits, 1 chunk in flight,
local-mem-bw 50 GB/s, a 1 MiB all-reduce): ASTRA-sim prints 117,780 cycles (ns); this
model gives 117,789.9 (0.008% more; the ten nanoseconds are one endpoint delay, which
ASTRA-sim does not charge somewhere we could not pin down without its source).

Examples
--------
>>> from topocoll.topology.io import read_astra_network
>>> net = read_astra_network("topology: [Ring]\\nnpus_count: [8]\\nbandwidth: [50.0]\\n"
...                          "latency: [500.0]\\n")
>>> sys_ = AstraSystem(endpoint_delay_ns=10, active_chunks=1, splits=4,
...                    local_mem_bw_GBps=50, all_reduce=("ring",))
>>> round(collective_time_ns("allreduce", 1_048_576, net, sys_), 1)
117789.9
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import InputError, NotSupportedError
from ..topology import Topology

__all__ = ["AstraSystem", "read_astra_system", "collective_time_ns", "phases",
           "AstraCoster", "ASTRA_ALGORITHMS"]

ASTRA_ALGORITHMS = ("ring", "direct", "halvingDoubling")
_KEYS = {"all-reduce-implementation": "all_reduce", "all-gather-implementation": "all_gather",
         "reduce-scatter-implementation": "reduce_scatter",
         "all-to-all-implementation": "all_to_all"}
_HOPS = {"ring": 1, "fully_connected": 1, "switch": 2}


@dataclass(frozen=True)
class AstraSystem:
    """The ``system.json`` keys the analytical collectives use (section 2.3)."""

    endpoint_delay_ns: float = 10.0
    active_chunks: int = 1
    splits: int = 1
    local_mem_bw_GBps: float = 1600.0
    collective_optimization: str = "baseline"
    all_reduce: tuple[str, ...] = ("ring",)
    all_gather: tuple[str, ...] = ("ring",)
    reduce_scatter: tuple[str, ...] = ("ring",)
    all_to_all: tuple[str, ...] = ("direct",)

    def __post_init__(self) -> None:
        if not (self.active_chunks >= 1 and self.splits >= 1):
            raise InputError("active-chunks-per-dimension and preferred-dataset-splits must "
                             "be at least 1", item="preferred-dataset-splits")
        if self.collective_optimization not in ("baseline", "localBWAware"):
            raise InputError(f"collective-optimization must be baseline or localBWAware, got "
                             f"{self.collective_optimization!r}",
                             item="collective-optimization")
        for key, algs in (("all-reduce", self.all_reduce), ("all-gather", self.all_gather),
                          ("reduce-scatter", self.reduce_scatter),
                          ("all-to-all", self.all_to_all)):
            for a in algs:
                if a not in ASTRA_ALGORITHMS:
                    raise InputError(f"{key}-implementation: {a!r} is not one of "
                                     f"{', '.join(ASTRA_ALGORITHMS)}",
                                     item=f"{key}-implementation")

    def algorithm(self, kind: str, dim: int) -> str:
        algs = {"allreduce": self.all_reduce, "allgather": self.all_gather,
                "reduce_scatter": self.reduce_scatter, "alltoall": self.all_to_all}[kind]
        return algs[min(dim, len(algs) - 1)]


def read_astra_system(source: str | Mapping) -> AstraSystem:
    """An :class:`AstraSystem` from a ``system.json`` path, JSON text or mapping.

    Raises
    ------
    InputError
        Naming the key that is missing or wrong.
    """
    import json
    from pathlib import Path

    if isinstance(source, Mapping):
        doc = source
    else:
        text = str(source)
        try:
            text = Path(text).read_text() if "\n" not in text and Path(text).is_file() \
                else text
            doc = json.loads(text)
        except (OSError, ValueError) as e:
            raise InputError(f"cannot read system.json {str(source)[:60]!r}: {e}",
                             item="system.json") from None
    if not isinstance(doc, Mapping):
        raise InputError("system.json must be an object", item="system.json")

    def num(key: str, default: float) -> float:
        v = doc.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise InputError(f"system.json: {key} must be a non-negative number, got {v!r}",
                             item=key)
        return float(v)

    algs = {}
    for key, field_ in _KEYS.items():
        v = doc.get(key)
        if v is None:
            continue
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            raise InputError(f"system.json: {key} must list an algorithm per dimension",
                             item=key)
        algs[field_] = tuple(v)
    return AstraSystem(num("endpoint-delay", 10), int(num("active-chunks-per-dimension", 1)),
                       int(num("preferred-dataset-splits", 1)), num("local-mem-bw", 1600),
                       str(doc.get("collective-optimization", "baseline")), **algs)


def phases(kind: str, message_bytes: float, dims: Sequence[int], system: AstraSystem
           ) -> list[tuple[str, int, float]]:
    """``(phase kind, dimension, bytes entering it)`` for one collective of ``message_bytes`` bytes
    (one chunk or all of it) on the used ``dims`` (sizes per dimension, 1 when unused)."""
    used = [d for d, n in enumerate(dims) if n > 1]
    if kind == "allreduce" and system.collective_optimization == "localBWAware" and \
            len(used) > 1:
        out, c = [], float(message_bytes)
        for d in used[:-1]:
            out.append(("reduce_scatter", d, c))
            c /= dims[d]
        out.append(("allreduce", used[-1], c))
        for d in reversed(used[:-1]):
            out.append(("allgather", d, c))
            c *= dims[d]
        return out
    if kind == "allgather":               # the input grows by each dimension it crosses
        out, c = [], float(message_bytes)
        for d in used:
            out.append(("allgather", d, c))
            c *= dims[d]
        return out
    if kind == "reduce_scatter":
        out, c = [], float(message_bytes)
        for d in used:
            out.append(("reduce_scatter", d, c))
            c /= dims[d]
        return out
    return [(kind, d, float(message_bytes)) for d in used]


def _phase_ns(kind: str, algorithm: str, p: int, c: float, dim, system: AstraSystem) -> float:
    """Nanoseconds of one phase of one chunk of ``c`` bytes on ``p`` NPUs of ``dim`` (a
    ring's members ``dim.size / p`` links apart)."""
    stride = dim.size // p if dim.kind == "ring" else 1
    alpha = dim.latency * 1e9 * _HOPS[dim.kind] * stride
    beta = dim.bandwidth / 1e9                     # bytes per ns
    mem = system.local_mem_bw_GBps                 # bytes per ns (GB = 10^9)
    delta = system.endpoint_delay_ns

    def msg(nbytes: float, reduce: bool) -> float:
        return alpha + nbytes / beta + delta + (3 * nbytes / mem if reduce else 0.0)

    if kind == "alltoall":
        if algorithm == "ring":
            raise NotSupportedError("compatibility mode: ring all-to-all is not modelled; "
                                    "use direct")
        return msg(c / p, False) if algorithm == "direct" else \
            math.log2(p) * msg(c / 2, False)
    if algorithm == "ring":
        if kind == "allgather":
            return (p - 1) * msg(c, False)
        m = c / p
        rs = (p - 1) * msg(m, True)
        return rs if kind == "reduce_scatter" else rs + (p - 1) * msg(m, False)
    if algorithm == "direct":
        if kind == "allgather":
            return msg(c, False)
        m = c / p
        rs = alpha + m / beta + delta + (p - 1) * 3 * m / mem
        return rs if kind == "reduce_scatter" else rs + msg(m, False)
    # halvingDoubling: log2(p) steps, halving messages (doubling for all-gather)
    k = int(round(math.log2(p)))
    if 2 ** k != p:
        raise NotSupportedError(f"compatibility mode: halvingDoubling needs a power of two, "
                                f"got {p} NPUs")
    if kind == "allgather":
        return sum(msg(c * 2 ** i, False) for i in range(k))
    rs = sum(msg(c / 2 ** (i + 1), True) for i in range(k))
    return rs if kind == "reduce_scatter" else rs + sum(msg(c / 2 ** (i + 1), False)
                                                        for i in range(k))


def collective_time_ns(kind: str, message_bytes: float, network: Topology, system: AstraSystem,
                       involved: Sequence[int | bool] | None = None) -> float:
    """Nanoseconds of a ``kind`` collective of ``message_bytes`` bytes per NPU on ``network`` (a
    topology with ``dims``, e.g. from ``network.yml``) under ``system`` (see the module
    docstring); ``involved`` gives the NPUs it uses in every dimension (``True``: all of
    them, ``False`` or 1: none; default: all).

    Raises
    ------
    NotSupportedError
        For a network without dims, a collective or algorithm the mode does not model.
    """
    if not network.dims:
        raise NotSupportedError("compatibility mode needs a multi-dimensional network "
                                "(network.yml or hier:)")
    if kind not in ("allreduce", "allgather", "reduce_scatter", "alltoall"):
        raise NotSupportedError(f"compatibility mode times allreduce, allgather, "
                                f"reduce_scatter and alltoall, not {kind}")
    sizes = [d.size if involved is None or involved[i] is True else
             (1 if involved[i] is False else int(involved[i]))
             for i, d in enumerate(network.dims)]
    S = system.splits
    ph = phases(kind, message_bytes / S, sizes, system)
    if not ph:
        return 0.0
    t = [_phase_ns(k, system.algorithm(kind, d), sizes[d], c, network.dims[d], system)
         for k, d, c in ph]
    # chunks through the phases; a dimension serves at most A chunks at once, in order
    A = system.active_chunks
    busy: dict[int, list[float]] = {d: [0.0] * A for _, d, _ in ph}
    end = 0.0
    for _ in range(S):
        ready = 0.0
        for (_, d, _), tj in zip(ph, t, strict=True):
            slots = busy[d]
            i = min(range(A), key=lambda j: slots[j])
            start = max(ready, slots[i])
            ready = slots[i] = start + tj
        end = max(end, ready)
    return end


class AstraCoster:
    """Collective times in compatibility mode for :func:`~topocoll.workload.taskgraph.replay`
    (the interface of :class:`~topocoll.workload.CollectiveCoster`): a group uses, in
    every dimension, the NPUs in which its members differ; point-to-point messages take
    one message's time on the lowest dimension where the two ranks differ."""

    def __init__(self, network: Topology, system: AstraSystem) -> None:
        if not network.dims:
            raise NotSupportedError("compatibility mode needs a multi-dimensional network")
        self.topology = network
        self.system = system
        self.chosen: dict[str, dict] = {}

    def _involved(self, ranks: Sequence[int]) -> list[int]:
        """NPUs of the group in every dimension (ASTRA-sim's communicator groups: the
        members that differ in a dimension form its ring or its switch ports)."""
        sizes = [d.size for d in self.topology.dims]
        coords = []
        for r in ranks:
            c = []
            for n in sizes:
                c.append(r % n)
                r //= n
            coords.append(c)
        inv = [len({c[i] for c in coords}) for i in range(len(sizes))]
        if math.prod(inv) != len(set(ranks)) or any(n % k for n, k in zip(sizes, inv,
                                                                          strict=True)):
            raise NotSupportedError(f"compatibility mode: a group of {len(ranks)} ranks that "
                                    f"is not a grid of the dimensions")
        return inv

    def time(self, label: str, kind: str, ranks: tuple[int, ...], message_bytes: float,
             root: int | None = None, algorithms=None) -> float:
        if len(ranks) < 2 or message_bytes <= 0:
            return 0.0
        if kind == "broadcast" and len(ranks) == 2:       # a point-to-point message
            inv = self._involved(ranks)
            d = self.topology.dims[next(i for i, k in enumerate(inv) if k > 1)]
            ns = d.latency * 1e9 * _HOPS[d.kind] + message_bytes / (d.bandwidth / 1e9) + \
                self.system.endpoint_delay_ns
        else:
            ns = collective_time_ns(kind, message_bytes, self.topology, self.system,
                                    self._involved(ranks))
        self.chosen[label] = {"kind": kind, "ranks": len(ranks), "size_bytes": message_bytes,
                              "algorithm": "astra-compat", "time_s": ns * 1e-9}
        return ns * 1e-9
