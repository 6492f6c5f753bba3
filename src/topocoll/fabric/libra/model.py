"""LIBRA: bandwidth per dimension of a multi-dimensional training network, solved exactly.

Won et al., "LIBRA: Enabling LibraWorkload-aware Multi-dimensional Network Topology Optimization
for Distributed Training of Large AI Models" (ISPASS 2024). A network of ``D`` dimensions
(building block Ring, FullyConnected or Switch; a size; a cost class) gives each NPU a
bandwidth ``B_i`` in every dimension. A workload is a list of collectives, each with the
number of NPUs it spans in every dimension (its *communicator*); LIBRA's time model
(``../shared/reference/algorithms.md`` section 5.3):

- all-reduce of ``m`` bytes: dimension ``i`` carries ``2 m_i (c_i - 1) / c_i`` with
  ``m_{i+1} = m_i / c_i`` (reduce-scatter outward, all-gather back); reduce-scatter the
  half of it; all-gather walks the dimensions in reverse, ``m_i (c_i - 1)``,
  ``m_{i-1} = m_i c_i`` (``m`` the per-NPU shard); all-to-all ``m (c_i - 1) / c_i`` on each;
- a collective takes ``max_i traffic_i / B_i`` (the slowest dimension);
- an iteration is compute plus every collective, without overlap.

Cost is linear: ``N * sum_i kappa_i B_i`` with ``kappa_i`` the link price of the
dimension's cost class, plus NIC and switch prices for a Switch dimension (section 5.4).

This module holds the description (network, collectives, layers, workload, traffic,
cost, constraints); :mod:`.libra_time` the time of a workload (LIBRA's model and a
richer one), :mod:`.libra_solve` the optimal allocations and :mod:`.libra_check` the
flow-level check of an allocation.

Examples
--------
>>> net = parse_network("hier:ring(4)x fc(8)x ring(4)x switch(32)")
>>> [d.block for d in net.dims], net.npus
(['Ring', 'FullyConnected', 'Ring', 'Switch'], 4096)
>>> w = LibraWorkload((LibraCollective("allreduce", 1e9, (4, 8, 4, 32)),), compute_s=0.0)
>>> (check_workload(net, w) / 1e6).round(3).tolist()      # MB per NPU per dimension
[1500.0, 437.5, 46.875, 15.137]
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError, InputTypeError
from ...numeric import dot

__all__ = ["LibraDim", "LibraNetwork", "LibraCollective", "LibraLayer", "LibraWorkload", "PRICES",
           "COST_CLASSES", "GB", "parse_network", "dimension_traffic", "check_workload",
           "cost", "parse_constraint", "equal_split", "OBJECTIVES", "LibraWorkloadMix",
           "workload_parts"]

#: Unit prices in $ per GB/s per NPU-link (LIBRA's cost-model YAML, tie-breakers dropped).
PRICES: dict[str, dict[str, float]] = {
    "InterChiplet": {"Link": 2.0, "Switch": 0.0, "Nic": 0.0},
    "InterPackage": {"Link": 4.0, "Switch": 13.0, "Nic": 0.0},
    "InterNode": {"Link": 4.0, "Switch": 13.0, "Nic": 0.0},
    "InterPod": {"Link": 7.8, "Switch": 18.0, "Nic": 31.6},
}
COST_CLASSES = tuple(PRICES)
OBJECTIVES = ("perf", "perf-per-cost", "min-cost")
_BLOCKS = {"ring": "Ring", "fully_connected": "FullyConnected", "switch": "Switch"}
GB = 1e9


@dataclass(frozen=True)
class LibraDim:
    """One dimension: building block, size, cost class."""

    block: str
    size: int
    cost_class: str

    def __post_init__(self) -> None:
        if self.block not in _BLOCKS.values():
            raise InputError(f"building block must be Ring, FullyConnected or Switch, got "
                             f"{self.block!r}", item=f"block '{self.block}'")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 2:
            raise InputError(f"dimension size must be an integer >= 2, got {self.size!r}",
                             item="size")
        if self.cost_class not in PRICES:
            raise InputError(f"cost class must be one of {', '.join(COST_CLASSES)}, got "
                             f"{self.cost_class!r}", item=f"cost class '{self.cost_class}'")


@dataclass(frozen=True)
class LibraNetwork:
    """Dimensions, innermost (fastest-varying rank coordinate) first."""

    dims: tuple[LibraDim, ...]
    prices: dict = field(default_factory=lambda: PRICES, compare=False)

    @property
    def npus(self) -> int:
        return math.prod(d.size for d in self.dims)

    def kappa(self) -> np.ndarray:
        """$ per (GB/s of per-NPU bandwidth) per NPU, per dimension."""
        out = []
        for d in self.dims:
            p = self.prices[d.cost_class]
            k = p["Link"] + (p.get("Switch", 0.0) + p.get("Nic", 0.0)
                             if d.block == "Switch" else 0.0)
            out.append(k)
        return np.array(out)

    def spec(self, bandwidth_GBps: Sequence[float] | None = None) -> str:
        """The ``hier:`` spec of this network; with bandwidths, per-link rates that give
        each NPU ``B_i`` in dimension ``i`` (Ring: ``B_i / 2`` per link, FullyConnected:
        ``B_i / (n_i - 1)``, Switch: ``B_i``)."""
        parts = []
        for i, d in enumerate(self.dims):
            kind = {"Ring": "ring", "FullyConnected": "fc", "Switch": "switch"}[d.block]
            if bandwidth_GBps is None:
                parts.append(f"{kind}({d.size})")
                continue
            b = bandwidth_GBps[i]
            links = 2 if d.block == "Ring" and d.size > 2 else (
                d.size - 1 if d.block == "FullyConnected" else 1)
            parts.append(f"{kind}({d.size},{b / links * GB:.6g}B/s)")
        return "hier:" + "x ".join(parts)


def parse_network(text: str, cost_classes: Sequence[str] | None = None) -> LibraNetwork:
    """A network from a ``hier:`` spec (bandwidths ignored) or a LIBRA network YAML file
    (``Topology``, ``NpusCount``, ``CostDimension``).

    Cost classes default to the last ``D`` of InterChiplet, InterPackage, InterNode,
    InterPod (LIBRA's 4-D and 3-D inputs).
    """
    from pathlib import Path

    if not isinstance(text, str):
        raise InputTypeError(f"a network must be a hier: spec or a file, got {text!r}",
                             item="network")
    if text.strip().lower().startswith("hier:"):
        from ...topology.spec import parse_dims

        dims = parse_dims(text)
        blocks = []
        for kind, size in dims:
            if kind not in _BLOCKS:
                raise InputError(f"LIBRA dimensions are ring, fc or switch, got {kind!r}",
                                 item=f"dimension '{kind}'")
            blocks.append((_BLOCKS[kind], size))
    else:
        from ...topology.io import read_mapping

        p = Path(text)
        doc = read_mapping(p)
        if not isinstance(doc, dict):
            raise InputError(f"{p}: a LIBRA network file is a mapping", item=str(p))
        for key in ("Topology", "NpusCount"):
            if key not in doc:
                raise InputError(f"{p}: missing field {key!r} (a LIBRA network file has "
                                 "Topology, NpusCount and optionally CostDimension)",
                                 item=f"field '{key}'")
            if not isinstance(doc[key], list):
                raise InputError(f"{p}: field {key!r} must be a list, got "
                                 f"{type(doc[key]).__name__}", item=f"field '{key}'")
        if len(doc["Topology"]) != len(doc["NpusCount"]):
            raise InputError(f"{p}: Topology and NpusCount differ in length",
                             item="field 'NpusCount'")
        blocks = [(str(b), n) for b, n in zip(doc["Topology"], doc["NpusCount"], strict=True)]
        if cost_classes is None and isinstance(doc.get("CostDimension"), list):
            cost_classes = [str(c) for c in doc["CostDimension"]]
    D = len(blocks)
    if cost_classes is None:
        if D > len(COST_CLASSES):
            raise InputError(f"{D} dimensions need explicit cost classes", item="cost classes")
        cost_classes = COST_CLASSES[len(COST_CLASSES) - D:]
    if len(cost_classes) != D:
        raise InputError(f"{len(cost_classes)} cost classes for {D} dimensions",
                         item="cost classes")
    return LibraNetwork(tuple(LibraDim(b, n, c) for (b, n), c in
                              zip(blocks, cost_classes, strict=True)))


@dataclass(frozen=True)
class LibraCollective:
    """One collective of a workload: kind, bytes, NPUs used per dimension (``-1`` or 1:
    not used), and how many times it runs per iteration."""

    kind: str
    size: float
    comm: tuple[int, ...]
    count: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in ("allreduce", "reduce_scatter", "allgather", "alltoall"):
            raise InputError(f"collective must be allreduce, reduce_scatter, allgather or "
                             f"alltoall, got {self.kind!r}", item=f"collective '{self.kind}'")


@dataclass(frozen=True)
class LibraLayer:
    """One layer of a per-layer workload: compute seconds of the forward pass, the input
    gradient and the weight gradient, and the collectives of each phase (forward and
    input-gradient ones block the pass; weight-gradient ones may overlap it)."""

    name: str
    fwd_s: float = 0.0
    ig_s: float = 0.0
    wg_s: float = 0.0
    fwd: tuple[LibraCollective, ...] = ()
    ig: tuple[LibraCollective, ...] = ()
    wg: tuple[LibraCollective, ...] = ()


@dataclass(frozen=True)
class LibraWorkload:
    """Collectives of one iteration and the compute time they do not overlap with; a
    per-layer workload also keeps its ``layers`` (for the overlap loop) and ``tail_s``,
    compute after the backward pass (the optimizer update)."""

    collectives: tuple[LibraCollective, ...]
    compute_s: float
    name: str = ""
    layers: tuple[LibraLayer, ...] = ()
    tail_s: float = 0.0

    @classmethod
    def from_layers(cls, layers: Sequence[LibraLayer], name: str = "",
                    tail_s: float = 0.0) -> LibraWorkload:
        """A workload whose collectives and compute are those of ``layers``; collectives
        with the same kind, size and communicator are counted once with their total
        count (their order does not matter without overlap)."""
        acc: dict[tuple, LibraCollective] = {}
        for ly in layers:
            for c in (*ly.fwd, *ly.ig, *ly.wg):
                k = (c.kind, float(c.size), tuple(c.comm))
                old = acc.get(k)
                acc[k] = c if old is None else LibraCollective(c.kind, c.size, c.comm,
                                                               old.count + c.count)
        compute = sum(ly.fwd_s + ly.ig_s + ly.wg_s for ly in layers) + tail_s
        return cls(tuple(acc.values()), compute, name, tuple(layers), tail_s)


@dataclass(frozen=True)
class LibraWorkloadMix:
    """Several workloads that the network is designed for, each with a weight: LIBRA's
    multi-workload objective (the GroupOpt of its 2021 prototype) minimizes
    ``sum_w weight_w T_w(B)``. Each workload runs alone on the whole network (a portfolio
    of target jobs, not jobs at the same time). Weights are normalized to sum 1, so the
    objective is the weighted mean iteration time.

    Examples
    --------
    >>> a = LibraWorkload((LibraCollective("allreduce", 1e9, (4, 8)),), compute_s=0.1, name="a")
    >>> b = LibraWorkload((LibraCollective("alltoall", 1e8, (4, 8)),), compute_s=0.2, name="b")
    >>> [round(x, 3) for _, x in LibraWorkloadMix(((a, 3.0), (b, 1.0))).parts]
    [0.75, 0.25]
    """

    parts: tuple[tuple[LibraWorkload, float], ...]
    name: str = ""

    def __post_init__(self) -> None:
        if not self.parts:
            raise InputError("a workload mix needs at least one workload", item="job")
        total = 0.0
        for w, x in self.parts:
            if not isinstance(w, LibraWorkload):
                raise InputTypeError(f"a mix holds workloads, got {type(w).__name__}",
                                     item="job")
            if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
                raise InputError(f"workload {w.name or '?'}: the weight must be a positive "
                                 f"number, got {x!r}", item=f"job '{w.name}'")
            total += float(x)
        object.__setattr__(self, "parts", tuple((w, float(x) / total) for w, x in self.parts))
        if not self.name:
            object.__setattr__(self, "name", " + ".join(
                f"{x:.3g} x {w.name or '?'}" for w, x in self.parts))

    @property
    def compute_s(self) -> float:
        """Weighted compute seconds (no collective time)."""
        return sum(x * w.compute_s for w, x in self.parts)


def workload_parts(w: LibraWorkload | LibraWorkloadMix) -> tuple[tuple[LibraWorkload, float], ...]:
    """``((workload, weight), ...)``: a mix's parts, or the one workload with weight 1."""
    return w.parts if isinstance(w, LibraWorkloadMix) else ((w, 1.0),)


def dimension_traffic(kind: str, message_bytes: float, comm: Sequence[int]) -> np.ndarray:
    """Bytes per NPU on each dimension for one collective (section 5.3)."""
    c = [x if x and x > 1 else 1 for x in comm]
    out = np.zeros(len(c))
    if kind in ("allreduce", "reduce_scatter"):
        m = float(message_bytes)
        for i, ci in enumerate(c):
            if ci > 1:
                out[i] = (2 if kind == "allreduce" else 1) * m * (ci - 1) / ci
                m /= ci
    elif kind == "allgather":
        m = float(message_bytes)
        for i in reversed(range(len(c))):
            if c[i] > 1:
                out[i] = m * (c[i] - 1)
                m *= c[i]
    elif kind == "alltoall":
        for i, ci in enumerate(c):
            if ci > 1:
                out[i] = message_bytes * (ci - 1) / ci
    else:
        raise InputError(f"unknown collective {kind!r}", item=f"collective '{kind}'")
    return out


def check_workload(net: LibraNetwork, w: LibraWorkload | LibraWorkloadMix) -> np.ndarray:
    """Bytes per NPU on each dimension over the whole iteration (LIBRA's traffic), after
    checking every communicator against the network (a mix: the weighted traffic).

    Raises
    ------
    InputError
        Naming the communicator or the dimension that does not fit the network.
    """
    if isinstance(w, LibraWorkloadMix):
        return sum((x * check_workload(net, p) for p, x in w.parts), np.zeros(len(net.dims)))
    D = len(net.dims)
    total = np.zeros(D)
    colls = list(w.collectives)
    for ly in w.layers:
        colls += [*ly.fwd, *ly.ig, *ly.wg]
    for c in colls:
        if len(c.comm) != D:
            raise InputError(f"communicator {list(c.comm)} has {len(c.comm)} entries for "
                             f"{D} dimensions", item="communicator")
        for i, (x, d) in enumerate(zip(c.comm, net.dims, strict=True)):
            if x > d.size:
                raise InputError(f"communicator uses {x} NPUs of dimension {i} of size "
                                 f"{d.size}", item=f"dimension {i}")
        total += dimension_traffic(c.kind, c.size, c.comm) * c.count
    return total


def cost(net: LibraNetwork, bandwidth_GBps: Sequence[float]) -> float:
    """Dollars: ``N * sum_i kappa_i B_i``."""
    return float(net.npus * dot(net.kappa(), np.asarray(bandwidth_GBps, float)))


def equal_split(net: LibraNetwork, total_GBps: float) -> list[float]:
    """The same bandwidth in every dimension, ``total / D`` each."""
    return [total_GBps / len(net.dims)] * len(net.dims)


_TERM = re.compile(r"\s*([+-]?)\s*(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)?\s*\*?\s*(B\d+|cost)?\s*")


def parse_constraint(text: str, dims: int) -> tuple[np.ndarray, float, str, float]:
    """``"B0 + 2*B1 - B3 <= 400"`` or ``"cost <= 3e7"`` as ``(a, c, op, rhs)`` meaning
    ``a @ B + c * cost op rhs`` with ``op`` one of ``<=``, ``>=``, ``==``.

    Raises
    ------
    InputError
        Naming the constraint and what is wrong with it.
    """
    if not isinstance(text, str):
        raise InputTypeError(f"a constraint must be a string, got {text!r}",
                             item="constraint")
    m = re.fullmatch(r"(.+?)(<=|>=|==)(.+)", text.strip())
    if not m:
        raise InputError(f"constraint {text!r} needs <=, >= or ==", item=f"constraint '{text}'")
    sides = []
    for side in (m.group(1), m.group(3)):
        a = np.zeros(dims)
        c = const = 0.0
        pos = 0
        s = side.strip()
        if not s:
            raise InputError(f"constraint {text!r} has an empty side",
                             item=f"constraint '{text}'")
        while pos < len(s):
            t = _TERM.match(s, pos)
            if not t or t.end() == pos or not (t.group(2) or t.group(3)):
                raise InputError(f"constraint {text!r}: cannot read {s[pos:]!r}",
                                 item=f"constraint '{text}'")
            sign = -1.0 if t.group(1) == "-" else 1.0
            coef = sign * (float(t.group(2)) if t.group(2) else 1.0)
            var = t.group(3)
            if var is None:
                const += coef
            elif var == "cost":
                c += coef
            else:
                i = int(var[1:])
                if i >= dims:
                    raise InputError(f"constraint {text!r}: {var} but the network has {dims} "
                                     f"dimensions (B0..B{dims - 1})", item=f"constraint '{text}'")
                a[i] += coef
            pos = t.end()
            if pos < len(s) and s[pos] not in "+-":
                raise InputError(f"constraint {text!r}: cannot read {s[pos:]!r}",
                                 item=f"constraint '{text}'")
        sides.append((a, c, const))
    (a1, c1, k1), (a2, c2, k2) = sides
    return a1 - a2, c1 - c2, m.group(2), k2 - k1
