"""Private helpers shared by the topology generators: defaults and argument checks.

Every check raises :class:`~topocoll.errors.TopologyError` with ``item="field '<name>'"``
so that a caller learns which argument was wrong, not which derived link failed.
"""

from __future__ import annotations

import math

from ..errors import TopologyError
from .core import Link

DEFAULT_BANDWIDTH = 50e9
DEFAULT_LATENCY = 1e-6


def _check_count(n: int, what: str = "num_ranks", minimum: int = 2) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < minimum:
        raise TopologyError(f"{what} must be an integer >= {minimum}, got {n!r}",
                            item=f"field '{what}'")
    return n


def _check_rate(value: float, what: str = "bandwidth") -> float:
    """A bandwidth (bytes/s): a real number > 0 and finite."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value <= 0):
        raise TopologyError(f"{what} must be a number of bytes/s > 0, got {value!r}",
                            item=f"field '{what}'")
    return float(value)


def _check_time(value: float, what: str = "latency") -> float:
    """A latency (s): a real number >= 0 and finite."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value < 0):
        raise TopologyError(f"{what} must be a number of seconds >= 0, got {value!r}",
                            item=f"field '{what}'")
    return float(value)


def _check_ratio(value: float, what: str = "oversubscription") -> float:
    """A positive finite factor such as an oversubscription ratio."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value <= 0):
        raise TopologyError(f"{what} must be a number > 0, got {value!r}", item=f"field '{what}'")
    return float(value)


def _cable(links: list[Link], a: int, b: int, bw: float, lat: float, dim: int | None = None):
    links.append(Link(a, b, bw, lat, dim))
    links.append(Link(b, a, bw, lat, dim))


def _per_dim(value, ndim: int, what: str) -> tuple[float, ...]:
    if isinstance(value, (int, float)):
        return (float(value),) * ndim
    vals = tuple(float(v) for v in value)
    if len(vals) != ndim:
        raise TopologyError(f"{what} has {len(vals)} values for {ndim} dimensions",
                            item=f"field '{what}'")
    return vals


def _switch_latencies(num_ranks: int, num_switches: int, switch_latency: float) -> tuple:
    """``node_latency`` for ranks (0) followed by switches; empty when it is all zero."""
    lat = _check_time(switch_latency, "switch_latency")
    return (0.0,) * num_ranks + (lat,) * num_switches if lat else ()


def _fmt_num(x: float) -> str:
    """A short number for generator names: ``2`` rather than ``2.0``."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))
