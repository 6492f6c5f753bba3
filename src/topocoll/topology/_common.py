"""Private helpers shared by the topology generators: defaults and argument checks.

Every check raises :class:`~topocoll.errors.TopologyError` with ``item="field '<name>'"``
so that a caller learns which argument was wrong, not which derived link failed.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
from typing import Any

import numpy as np

from ..errors import InputTypeError, TopologyError
from ..units import UnitError, parse_rate, parse_time
from .core import Link

__all__ = ["units_in", "cable", "check_count", "check_rate", "check_ratio", "check_time", "fmt_num",
           "per_dim", "rate_field", "switch_latencies", "time_field"]

DEFAULT_BANDWIDTH = 50e9
DEFAULT_LATENCY = 1e-6


def check_count(n: int, what: str = "num_ranks", minimum: int = 2) -> int:
    """An integer count ``>= minimum``: a wrong type is an :class:`InputTypeError`, a value
    out of range a :class:`TopologyError`; both name ``what``."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise InputTypeError(f"{what} must be an integer, got {type(n).__name__} {n!r}",
                             item=what)
    if n < minimum:
        raise TopologyError(f"{what} must be an integer >= {minimum}, got {n!r}",
                            item=f"field '{what}'")
    return int(n)


def units_in(func):
    """Let a generator take rates and times as strings (``bandwidth="400Gbps"``,
    ``latency="100ns"``): every argument whose name ends in ``bandwidth`` is parsed with
    :func:`~topocoll.units.parse_rate`, every one ending in ``latency`` with
    :func:`~topocoll.units.parse_time`. A string that does not parse is a
    :class:`TopologyError`, a value of another type an :class:`InputTypeError`; both name
    the parameter."""
    sig = inspect.signature(func)
    rates = [n for n in sig.parameters if n.endswith("bandwidth")]
    times = [n for n in sig.parameters if n.endswith("latency")]

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        bound = sig.bind_partial(*args, **kwargs)
        for names, parse in ((rates, parse_rate), (times, parse_time)):
            for name in names:
                if name in bound.arguments:
                    bound.arguments[name] = _unit_arg(bound.arguments[name], name, parse)
        return func(*bound.args, **bound.kwargs)

    return wrapper


def _unit_arg(value: Any, name: str, parse):
    if value is None or isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return parse(value)
        except UnitError as e:
            raise TopologyError(f"{name}: {e}", item=f"field '{name}'") from None
    if isinstance(value, list | tuple | np.ndarray) and not isinstance(value, str):
        return type(value)(_unit_arg(v, name, parse) for v in value) \
            if not isinstance(value, np.ndarray) else value
    raise InputTypeError(f"{name} must be a number or a string with units, got "
                         f"{type(value).__name__} {value!r}", item=name)


def check_rate(value: float, what: str = "bandwidth") -> float:
    """A bandwidth (bytes/s): a real number > 0 and finite."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value <= 0):
        raise TopologyError(f"{what} must be a number of bytes/s > 0, got {value!r}",
                            item=f"field '{what}'")
    return float(value)


def check_time(value: float, what: str = "latency") -> float:
    """A latency (s): a real number >= 0 and finite."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value < 0):
        raise TopologyError(f"{what} must be a number of seconds >= 0, got {value!r}",
                            item=f"field '{what}'")
    return float(value)


def check_ratio(value: float, what: str = "oversubscription") -> float:
    """A positive finite factor such as an oversubscription ratio."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value <= 0):
        raise TopologyError(f"{what} must be a number > 0, got {value!r}", item=f"field '{what}'")
    return float(value)


def cable(links: list[Link], a: int, b: int, bw: float, lat: float, dim: int | None = None):
    links.append(Link(a, b, bw, lat, dim))
    links.append(Link(b, a, bw, lat, dim))


def per_dim(value, ndim: int, what: str) -> tuple[float, ...]:
    if isinstance(value, (int, float)):
        return (float(value),) * ndim
    vals = tuple(float(v) for v in value)
    if len(vals) != ndim:
        raise TopologyError(f"{what} has {len(vals)} values for {ndim} dimensions",
                            item=f"field '{what}'")
    return vals


def switch_latencies(num_ranks: int, num_switches: int, switch_latency: float) -> tuple:
    """``node_latency`` for ranks (0) followed by switches; empty when it is all zero."""
    lat = check_time(switch_latency, "switch_latency")
    return (0.0,) * num_ranks + (lat,) * num_switches if lat else ()


def fmt_num(x: float) -> str:
    """A short number for generator names: ``2`` rather than ``2.0``."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def rate_field(value: Any, item: str) -> float:
    """A bandwidth field of a file or spec (number of bytes/s or unit string); errors name
    ``item``."""
    if isinstance(value, str):  # YAML 1.1 reads "1e9" (no dot) as a string: accept it as B/s
        with contextlib.suppress(ValueError):   # otherwise a unit string such as "400Gbps"
            value = float(value)
    try:
        v = parse_rate(value)
    except UnitError as e:
        raise TopologyError(f"{item}: {e}", item=item) from None
    return v


def time_field(value: Any, item: str) -> float:
    """A time field of a file or spec (seconds or unit string); errors name ``item``."""
    try:
        v = parse_time(value)
    except UnitError as e:
        raise TopologyError(f"{item}: {e}", item=item) from None
    if not math.isfinite(v):
        raise TopologyError(f"{item}: time must be finite, got {value!r}", item=item)
    return v
