"""Network cost: a price table, a k-ary fat-tree per server, a direct-connect optical
fabric per server, and the cost-equivalent fat-tree bandwidth.

TopoOpt (Wang et al., NSDI 2023) compares designs at equal cost
(``../shared/reference/algorithms.md`` section 1.6). Its component prices are in the paper
only, so the defaults here (the packaged ``prices.yaml``, which also has each part's power
and the source of every figure) are **list-price-like assumptions**, not the paper's
numbers: what matters for the comparison is their shape (a switched fabric pays for
switch ports and transceivers at every tier; a direct-connect fabric pays ``d`` NIC ports,
transceivers and patch-panel ports per server). Pass your own :class:`PriceTable` (or a
YAML file to ``topocoll topoopt --prices`` or ``topocoll design --prices``) for real
quotes.

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

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

__all__ = ["PARTS", "PriceTable", "fattree_cost", "fattree_tiers", "topoopt_cost",
           "equivalent_fattree_bandwidth", "read_price_table"]

_GBPS = 1e9 / 8            # bytes/s in one Gb/s


_SPEED_PARTS = ("nic", "transceiver", "switch_port", "dac")
_FLAT_PARTS = ("patch_panel_port", "ocs_port", "fiber", "scaleup_port")
PARTS = _SPEED_PARTS + _FLAT_PARTS


@functools.cache
def _defaults() -> dict:
    """The packaged ``prices.yaml``: per part its dollars, watts (by speed in bytes/s for
    the per-speed parts) and source."""
    import yaml

    doc = yaml.safe_load((Path(__file__).parent / "prices.yaml").read_text())
    return {part: _entry(part, doc[part], "prices.yaml") for part in PARTS}


def _entry(part: str, val, where: str) -> dict:
    """One part of a price file: ``{usd, watts, source}`` (or, for a per-speed part, a bare
    map of Gb/s to dollars; or a bare number of dollars)."""
    if val is None or val == {} or val == []:
        raise InputError(f"{where}: no price for {part!r}", item=part)
    if not isinstance(val, dict) or not {"usd", "watts", "source"} & set(val):
        val = {"usd": val}
    unknown = set(val) - {"usd", "watts", "source"}
    if unknown:
        raise InputError(f"{where}: {part}: unknown key {sorted(unknown)[0]!r} (known: usd, "
                         f"watts, source)", item=part)
    out: dict = {}
    for key in ("usd", "watts"):
        if key not in val:
            continue
        v = val[key]
        if v is None or v == {}:
            raise InputError(f"{where}: no {'price' if key == 'usd' else 'power'} for "
                             f"{part!r}", item=part)
        if part in _SPEED_PARTS:
            if isinstance(v, dict):
                try:
                    out[key] = {float(sp) * _GBPS: float(x) for sp, x in v.items()}
                except (TypeError, ValueError):
                    raise InputError(f"{where}: {part} {key} must map Gb/s to numbers",
                                     item=part) from None
            else:
                raise InputError(f"{where}: {part} {key} must map Gb/s to numbers",
                                 item=part)
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InputError(f"{where}: {part} {key} must be a number", item=part)
            out[key] = float(v)
    if "source" in val:
        out["source"] = str(val["source"])
    return out


def _default(part: str, key: str = "usd"):
    return _defaults()[part][key]


def _default_watts() -> dict:
    return {p: _defaults()[p]["watts"] for p in PARTS}


def _default_sources() -> dict:
    return {p: _defaults()[p]["source"] for p in PARTS}


@dataclass(frozen=True)
class PriceTable:
    """US dollars per unit: per port by speed (bytes/s) for ``nic``, ``transceiver``,
    ``switch_port`` and ``dac`` (a copper cable); flat for ``patch_panel_port``,
    ``ocs_port``, ``fiber`` (per cable) and ``scaleup_port`` (one NVLink-class port per GPU
    link). ``watts`` has the power of each part in the same shape, ``sources`` where each
    figure comes from. Defaults: the packaged ``prices.yaml`` (see the module docstring)."""

    nic: Mapping[float, float] = field(default_factory=lambda: _default("nic"))
    transceiver: Mapping[float, float] = field(default_factory=lambda: _default("transceiver"))
    switch_port: Mapping[float, float] = field(default_factory=lambda: _default("switch_port"))
    patch_panel_port: float = field(default_factory=lambda: _default("patch_panel_port"))
    ocs_port: float = field(default_factory=lambda: _default("ocs_port"))
    fiber: float = field(default_factory=lambda: _default("fiber"))
    dac: Mapping[float, float] = field(default_factory=lambda: _default("dac"))
    scaleup_port: float = field(default_factory=lambda: _default("scaleup_port"))
    watts: Mapping[str, object] = field(default_factory=_default_watts)
    sources: Mapping[str, str] = field(default_factory=_default_sources)

    def __post_init__(self) -> None:
        for name in _SPEED_PARTS:
            tab = getattr(self, name)
            if not tab or any(not (s > 0 and p >= 0) for s, p in tab.items()):
                raise InputError(f"price table {name!r} needs positive speeds and "
                                 f"non-negative prices", item=name)
        for name in _FLAT_PARTS:
            if not getattr(self, name) >= 0:
                raise InputError(f"price {name!r} must be >= 0", item=name)
        for name in PARTS:
            if name not in self.watts:
                raise InputError(f"price table: no power for {name!r}", item=name)

    def price(self, part: str, speed: float = 0.0) -> float:
        """Dollars for one ``part`` at ``speed`` bytes/s (per-speed parts interpolated,
        see the module docstring; flat parts ignore ``speed``)."""
        if part in _FLAT_PARTS:
            return float(getattr(self, part))
        return _interpolate(getattr(self, part), speed)

    def power(self, part: str, speed: float = 0.0) -> float:
        """Watts of one ``part`` at ``speed`` bytes/s, interpolated as :meth:`price`."""
        w = self.watts[part]
        return float(w) if not isinstance(w, Mapping) else _interpolate(w, speed)


def _interpolate(table: Mapping[float, float], speed: float) -> float:
    tab = sorted(table.items())
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
                                 radix: int = 64, oversubscription: float = 1.0) -> float:
    """The per-server bandwidth (bytes/s) of the fat-tree (``oversubscription`` at the
    edge) that costs ``cost`` dollars (bisection on the increasing piecewise-linear cost;
    200 halvings, deterministic)."""
    if not cost > 0:
        raise InputError(f"cost must be positive, got {cost}", item="cost")
    lo, hi = 0.0, _GBPS
    o = oversubscription
    while fattree_cost(servers, hi, prices, radix, o) < cost:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if fattree_cost(servers, mid, prices, radix, o) < cost:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return (lo + hi) / 2


def read_price_table(path: str) -> PriceTable:
    """A :class:`PriceTable` from YAML or JSON, in the shape of the packaged
    ``prices.yaml``: per part ``usd``, ``watts`` and ``source`` (per-speed parts map Gb/s
    to figures); a bare map of Gb/s to dollars, or a bare number, is the part's price.
    Omitted parts and keys keep their defaults.

    Raises
    ------
    InputError
        Naming the file and the bad entry (an unknown part, a part given with no price).
    """
    from ..topology.io import read_mapping

    doc = read_mapping(Path(path))
    if not isinstance(doc, dict):
        raise InputError(f"{path}: a price table is a mapping of part to price",
                         item=str(path))
    kw: dict = {}
    watts = dict(_default_watts())
    sources = dict(_default_sources())
    for key, val in doc.items():
        if key not in PARTS:
            raise InputError(f"{path}: unknown part {key!r} (known: {', '.join(PARTS)})",
                             item=str(key))
        e = _entry(key, val, str(path))
        if "usd" in e:
            kw[key] = e["usd"]
        if "watts" in e:
            watts[key] = e["watts"]
        sources[key] = e.get("source", f"{path}")
    return PriceTable(**kw, watts=watts, sources=sources)
