"""Network cost: a price table, a k-ary fat-tree per server, a direct-connect optical
fabric per server, and the cost-equivalent fat-tree bandwidth.

TopoOpt (Wang et al., NSDI 2023) compares designs at equal cost
(``../shared/reference/algorithms.md`` section 1.6). Its component prices are in the paper
only, so the defaults here are **illustrative list-price-like assumptions**, not the paper's
numbers: what matters for the comparison is their shape (a switched fabric pays for
switch ports and transceivers at every tier; a direct-connect fabric pays ``d`` NIC ports,
transceivers and patch-panel ports per server). Pass your own :class:`PriceTable` (or a
YAML file to ``topocoll topoopt --prices``) for real quotes.

- Fat-tree of ``t`` tiers (``t = 2`` when ``n <= radix^2 / 2`` servers, else 3),
  per server: one NIC port; the server's link ends in a switch port with a transceiver;
  each of the ``t - 1`` links above it has two such ends and a fiber. Non-blocking, that
  is ``2t - 1`` transceivers and ``2t - 1`` switch ports (the usual count: 5 and 5 for
  three tiers) and ``t`` fibers, all at the server's speed; with oversubscription ``o``
  at the edge, the links above the edge are ``1/o`` as many.
- Direct-connect (patch panel), per server: ``d`` x (NIC port + transceiver + patch-panel
  port + half a fiber) at the port speed; an OCS replaces the patch-panel port by an OCS
  port.

Prices between the tabulated speeds are interpolated linearly (and extrapolated with the
last slope above the fastest, proportionally below the slowest), so cost is continuous and
increasing in bandwidth and the cost-equivalent bandwidth is well defined.

Examples
--------
>>> p = PriceTable()
>>> round(p.price("transceiver", 100e9 / 8))
99
>>> c = topoopt_cost(128, 4, 100e9 / 8)
>>> b = equivalent_fattree_bandwidth(128, c)
>>> abs(fattree_cost(128, b) - c) < 1e-6 * c
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import InputError

__all__ = ["PriceTable", "fattree_cost", "fattree_tiers", "topoopt_cost",
           "equivalent_fattree_bandwidth", "read_price_table"]

_GBPS = 1e9 / 8            # bytes/s in one Gb/s


def _default(values: dict[int, float]) -> dict[float, float]:
    return {g * _GBPS: v for g, v in values.items()}


@dataclass(frozen=True)
class PriceTable:
    """US dollars per port by speed (bytes/s) for ``nic``, ``transceiver`` and
    ``switch_port``; flat prices for ``patch_panel_port``, ``ocs_port`` and ``fiber``
    (per cable). Defaults are assumptions (see the module docstring)."""

    nic: Mapping[float, float] = field(default_factory=lambda: _default(
        {10: 60, 25: 100, 40: 150, 100: 300, 200: 600, 400: 1000, 800: 1800}))
    transceiver: Mapping[float, float] = field(default_factory=lambda: _default(
        {10: 20, 25: 39, 40: 49, 100: 99, 200: 299, 400: 599, 800: 1199}))
    switch_port: Mapping[float, float] = field(default_factory=lambda: _default(
        {10: 50, 25: 80, 40: 120, 100: 200, 200: 400, 400: 700, 800: 1300}))
    patch_panel_port: float = 100.0
    ocs_port: float = 520.0
    fiber: float = 10.0

    def __post_init__(self) -> None:
        for name in ("nic", "transceiver", "switch_port"):
            tab = getattr(self, name)
            if not tab or any(not (s > 0 and p >= 0) for s, p in tab.items()):
                raise InputError(f"price table {name!r} needs positive speeds and "
                                 f"non-negative prices", item=name)
        for name in ("patch_panel_port", "ocs_port", "fiber"):
            if not getattr(self, name) >= 0:
                raise InputError(f"price {name!r} must be >= 0", item=name)

    def price(self, part: str, speed: float) -> float:
        """Dollars for one ``part`` (``nic``, ``transceiver``, ``switch_port``) at
        ``speed`` bytes/s, interpolated (see the module docstring)."""
        tab = sorted(getattr(self, part).items())
        if speed <= tab[0][0]:
            return tab[0][1] * speed / tab[0][0]
        for (s0, p0), (s1, p1) in zip(tab, tab[1:], strict=False):
            if speed <= s1:
                return p0 + (p1 - p0) * (speed - s0) / (s1 - s0)
        if len(tab) == 1:
            return tab[0][1] * speed / tab[0][0]
        (s0, p0), (s1, p1) = tab[-2], tab[-1]
        return p1 + (p1 - p0) * (speed - s1) / (s1 - s0)


def fattree_tiers(servers: int, radix: int = 64) -> int:
    """Tiers of a non-blocking k-ary fat-tree of ``radix``-port switches for ``servers``:
    1 (one switch) up to ``radix``, 2 up to ``radix^2 / 2``, else 3."""
    if servers <= radix:
        return 1
    return 2 if servers <= radix * radix // 2 else 3


def fattree_cost(servers: int, bandwidth: float, prices: PriceTable | None = None,
                 radix: int = 64, oversubscription: float = 1.0) -> float:
    """Dollars for a fat-tree giving every server ``bandwidth`` bytes/s at the edge,
    ``oversubscription`` times fewer links above it (1: non-blocking)."""
    if not oversubscription >= 1:
        raise InputError(f"oversubscription must be >= 1, got {oversubscription}",
                         item="oversubscription")
    p = prices or PriceTable()
    t = fattree_tiers(servers, radix)
    end = p.price("transceiver", bandwidth) + p.price("switch_port", bandwidth)
    up = (t - 1) / oversubscription
    per = p.price("nic", bandwidth) + end + p.fiber + up * (2 * end + p.fiber)
    return servers * per


def topoopt_cost(servers: int, degree: int, port_bandwidth: float,
                 prices: PriceTable | None = None, ocs: bool = False) -> float:
    """Dollars for a direct-connect fabric: ``degree`` ports of ``port_bandwidth`` per
    server through patch panels (or an OCS)."""
    p = prices or PriceTable()
    panel = p.ocs_port if ocs else p.patch_panel_port
    per = degree * (p.price("nic", port_bandwidth) + p.price("transceiver", port_bandwidth)
                    + panel + p.fiber / 2)
    return servers * per


def equivalent_fattree_bandwidth(servers: int, cost: float, prices: PriceTable | None = None,
                                 radix: int = 64) -> float:
    """The per-server bandwidth (bytes/s) of the fat-tree that costs ``cost`` dollars
    (bisection on the increasing piecewise-linear cost; 200 halvings, deterministic)."""
    if not cost > 0:
        raise InputError(f"cost must be positive, got {cost}", item="cost")
    lo, hi = 0.0, _GBPS
    while fattree_cost(servers, hi, prices, radix) < cost:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if fattree_cost(servers, mid, prices, radix) < cost:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return (lo + hi) / 2


def read_price_table(path: str) -> PriceTable:
    """A :class:`PriceTable` from YAML or JSON: ``nic``, ``transceiver`` and
    ``switch_port`` map speeds in Gb/s to dollars; ``patch_panel_port``, ``ocs_port`` and
    ``fiber`` are dollars. Omitted entries keep their defaults.

    Raises
    ------
    InputError
        Naming the file and the bad entry.
    """
    from pathlib import Path

    from ..topology.io import read_mapping

    doc = read_mapping(Path(path))
    if not isinstance(doc, dict):
        raise InputError(f"{path}: a price table is a mapping of part to price",
                         item=str(path))
    kw: dict = {}
    known = {"nic", "transceiver", "switch_port", "patch_panel_port", "ocs_port", "fiber"}
    for key, val in doc.items():
        if key not in known:
            raise InputError(f"{path}: unknown price {key!r} (known: {', '.join(sorted(known))})",
                             item=str(key))
        if key in ("nic", "transceiver", "switch_port"):
            if not isinstance(val, dict):
                raise InputError(f"{path}: {key} must map Gb/s to dollars", item=key)
            try:
                kw[key] = {float(s) * _GBPS: float(v) for s, v in val.items()}
            except (TypeError, ValueError):
                raise InputError(f"{path}: {key} must map numbers to numbers",
                                 item=key) from None
        else:
            if isinstance(val, bool) or not isinstance(val, (int, float)):
                raise InputError(f"{path}: {key} must be a number of dollars", item=key)
            kw[key] = float(val)
    return PriceTable(**kw)
