"""Heterogeneous scenario generators: random and bimodal bandwidth matrices, two-tier
oversubscribed fabrics, background contention, and MI250-like boxes with NICs.

Bandwidths are whole multiples of 1 Gb/s (``1.25e8`` bytes/s) so that the exact
max-flow optimum (:mod:`topocoll.optimum.maxflow`) works on small integers. Every
generator is seeded and deterministic. DGX A100/H100-like boxes are
:func:`~topocoll.topology.fabrics.dgx_a100` and :func:`~topocoll.topology.fabrics.dgx_h100`.

References
----------
.. [1] Zhang, Wu and Li, "Near-Optimal Topology-adaptive Parameter Synchronization in
   Distributed DNN Training", INFOCOM 2021 (heterogeneous worker bandwidths, contention).
.. [2] AMD, "AMD Instinct MI250 microarchitecture" (four MI250 packages of two GCDs per
   node, Infinity Fabric links; here an approximation, see :func:`mi250`).
"""

from __future__ import annotations

import math
import random

from ..errors import InputTypeError, TopologyError
from ._common import DEFAULT_LATENCY, units_in
from .core import Link, Topology

__all__ = ["GBPS", "random_bandwidth", "bimodal", "two_tier", "contention", "mi250"]

#: One gigabit per second in bytes per second.
GBPS = 1.25e8


def _check(value, name: str, minimum: float, maximum: float = math.inf, *,
           above: bool = False) -> None:
    """``value`` in ``[minimum, maximum]`` (``(minimum, maximum]`` with ``above``), finite;
    errors name the field."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputTypeError(f"{name} must be a number, got {type(value).__name__} {value!r}",
                             item=name)
    low_ok = value > minimum if above else value >= minimum
    if not (math.isfinite(value) and low_ok and value <= maximum):
        lo = f"> {minimum}" if above else f">= {minimum}"
        hi = f" and <= {maximum}" if math.isfinite(maximum) else ""
        raise TopologyError(f"{name} must be {lo}{hi}, got {value!r}", item=f"field '{name}'")


def _gbps(x: float) -> float:
    return max(1, round(x / GBPS)) * GBPS


def _extras(latency: float, **rates: float) -> str:
    """Spec options for non-default bandwidths/latency, so names parse back."""
    out = "".join(f",{k}={v / 1e9:g}GB/s" for k, v in rates.items() if v is not None)
    return out + (f",lat={latency:g}s" if latency != DEFAULT_LATENCY else "")


def _complete(n: int, bw_of, latency: float, name: str, density: float, rng) -> Topology:
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    ring = {(i, (i + 1) % n) if i < (i + 1) % n else ((i + 1) % n, i) for i in range(n)}
    links = []
    for i, j in pairs:
        if (i, j) in ring or rng.random() < density:
            b = bw_of(i, j)
            links.append(Link(i, j, b, latency))
            links.append(Link(j, i, b, latency))
    return Topology(name, n, 0, tuple(links))


@units_in
def random_bandwidth(n: int, *, spread: float = 10.0, high: float = 100 * GBPS,
                     density: float = 1.0, seed: int = 0, latency: float = DEFAULT_LATENCY,
                     name: str | None = None) -> Topology:
    """Ranks joined by cables of random bandwidth, log-uniform in ``[high/spread, high]``.

    Parameters
    ----------
    n : int
        Ranks (>= 2).
    spread : float
        Heterogeneity ``max/min`` (1 = homogeneous).
    high : float
        Fastest bandwidth (bytes/s per direction); values round to whole Gb/s.
    density : float
        Probability of each cable beyond a ring that keeps the graph connected.
    seed : int
        Random seed.

    Examples
    --------
    >>> t = random_bandwidth(8, spread=100, seed=1)
    >>> t.num_ranks, len(t.links), min(l.bandwidth for l in t.links) >= 1e9 / 8
    (8, 56, True)
    """
    _check(n, "n", 2)
    _check(spread, "spread", 1)
    _check(density, "density", 0, 1, above=True)
    _check(seed, "seed", 0)
    rng = random.Random(seed)
    extra = (f",density={density:g}" if density != 1 else "") + _extras(
        latency, bw=high if high != 100 * GBPS else None)
    return _complete(n, lambda i, j: _gbps(high / spread ** rng.random()), latency,
                     name or f"random:{n},spread={spread:g},seed={seed}{extra}", density, rng)


@units_in
def bimodal(n: int, *, fast: float = 100 * GBPS, slow: float = 10 * GBPS,
            slow_fraction: float = 0.2, density: float = 1.0, seed: int = 0,
            latency: float = DEFAULT_LATENCY, name: str | None = None) -> Topology:
    """Cables (a ring plus each other pair with probability ``density``), each slow with
    probability ``slow_fraction``, else fast.

    Examples
    --------
    >>> t = bimodal(6, slow_fraction=0.5, seed=3)
    >>> sorted({l.bandwidth for l in t.links})
    [1250000000.0, 12500000000.0]
    """
    _check(n, "n", 2)
    _check(slow_fraction, "frac", 0, 1)
    _check(density, "density", 0, 1, above=True)
    _check(seed, "seed", 0)
    for field, v in (("fast", fast), ("slow", slow)):
        _check(v, field, 0, above=True)
    rng = random.Random(seed)
    extra = (f",frac={slow_fraction:g}" + (f",density={density:g}" if density != 1 else "")
             + _extras(latency, bw=fast if fast != 100 * GBPS else None,
                       slow=slow if slow != 10 * GBPS else None))
    return _complete(n, lambda i, j: _gbps(slow if rng.random() < slow_fraction else fast),
                     latency, name or f"bimodal:{n},seed={seed}{extra}", density, rng)


@units_in
def two_tier(racks: int, hosts: int, *, host_bandwidth: float = 100 * GBPS,
             oversubscription: float = 4.0, spines: int = 2,
             latency: float = DEFAULT_LATENCY, name: str | None = None) -> Topology:
    """Racks of hosts under a top-of-rack switch, racks joined by ``spines`` switches.

    Each rack's uplink capacity is ``hosts * host_bandwidth / oversubscription``, split
    evenly over the spines (whole Gb/s). Cables are symmetric, so every switch has equal
    in- and out-capacity.

    Examples
    --------
    >>> t = two_tier(4, 4, oversubscription=4)
    >>> t.num_ranks, t.num_switches, t.links[-1].bandwidth / 1.25e8   # 100 Gb/s per spine
    (16, 6, 50.0)
    """
    _check(racks, "racks", 1)
    _check(hosts, "hosts", 1)
    _check(oversubscription, "oversubscription", 1e-9)
    _check(spines, "spines", 1)
    n = racks * hosts
    links = []
    for r in range(n):
        tor = n + r // hosts
        links += [Link(r, tor, host_bandwidth, latency), Link(tor, r, host_bandwidth, latency)]
    up = _gbps(hosts * host_bandwidth / oversubscription / spines)
    for k in range(racks):
        for s in range(spines):
            tor, sp = n + k, n + racks + s
            links += [Link(tor, sp, up, latency), Link(sp, tor, up, latency)]
    extra = (f",spines={spines}" if spines != 2 else "") + _extras(
        latency, bw=host_bandwidth if host_bandwidth != 100 * GBPS else None)
    return Topology(name or f"twotier:racks={racks},hosts={hosts},oversub={oversubscription:g}"
                    f"{extra}", n, racks + spines, tuple(links))


def contention(topology: Topology, *, fraction: float = 0.3, keep: float = 0.5,
               seed: int = 0, name: str | None = None) -> Topology:
    """Background traffic: a random ``fraction`` of the directed links keeps only
    ``keep`` of its bandwidth (whole Gb/s, at least 1). Directions are hit
    independently, so switches can become non-Eulerian (edge splitting then does not
    apply and the topology-adaptive fallback is used).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> t = contention(ring(8, bandwidth=12.5e9), fraction=0.5, keep=0.2, seed=1)
    >>> sorted({l.bandwidth / 1.25e8 for l in t.links})
    [20.0, 100.0]
    """
    if not 0 <= fraction <= 1 or not 0 < keep <= 1:
        raise TopologyError("contention needs 0 <= fraction <= 1 and 0 < keep <= 1",
                            item="field 'contention'")
    rng = random.Random(seed)
    links = tuple(Link(lk.src, lk.dst, _gbps(lk.bandwidth * keep), lk.latency, lk.dim)
                  if rng.random() < fraction else lk for lk in topology.links)
    tag = f",contention={fraction:g},keep={keep:g}"
    if seed and f",seed={seed}" not in topology.name:
        tag += f",seed={seed}"
    return Topology(name or topology.name + tag,
                    topology.num_ranks, topology.num_switches, links, topology.node_latency,
                    routing=topology.routing, meta=dict(topology.meta))


@units_in
def mi250(boxes: int, *, package_bandwidth: float = 200e9, fabric_bandwidth: float = 50e9,
          nic_bandwidth: float = 25e9, latency: float = DEFAULT_LATENCY,
          name: str | None = None) -> Topology:
    """MI250-like nodes: 8 GCDs in 4 packages, Infinity Fabric inside, one NIC per GCD.

    Approximation (not the exact AMD wiring): the two GCDs of a package share
    ``package_bandwidth``; even GCDs form one all-to-all group and odd GCDs another,
    at ``fabric_bandwidth``; every GCD has a ``nic_bandwidth`` NIC to one fabric switch
    shared by all boxes.

    Examples
    --------
    >>> t = mi250(2)
    >>> t.num_ranks, t.num_switches, t.meta["groups"][1][:2]
    (16, 1, [8, 9])
    """
    _check(boxes, "boxes", 1)
    n = 8 * boxes
    sw = n
    links = []
    for b in range(boxes):
        g = [8 * b + i for i in range(8)]
        for i in range(0, 8, 2):
            links += [Link(g[i], g[i + 1], package_bandwidth, latency),
                      Link(g[i + 1], g[i], package_bandwidth, latency)]
        for par in (0, 1):
            grp = g[par::2]
            for i in grp:
                for j in grp:
                    if i != j:
                        links.append(Link(i, j, fabric_bandwidth, latency))
    for r in range(n):
        links += [Link(r, sw, nic_bandwidth, latency), Link(sw, r, nic_bandwidth, latency)]
    return Topology(name or f"mi250:{boxes}{_extras(latency)}", n, 1, tuple(links),
                    meta={"groups": [list(range(8 * b, 8 * b + 8)) for b in range(boxes)]})
