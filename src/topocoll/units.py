"""SI units and the parsers that turn human strings into them.

Inside topocoll every quantity is a plain float in SI base units: bytes, seconds and
bytes per second. Strings such as ``"400Gbps"``, ``"50GB/s"``, ``"1MiB"`` or
``"500ns"`` are parsed only at the edges (file readers, the CLI) by the functions
below. Decimal prefixes (k, M, G, T, P) are powers of 1000 and binary prefixes (Ki,
Mi, Gi, Ti, Pi) powers of 1024, both exact: the number is parsed as a decimal
fraction and multiplied exactly before a single rounding to float.

Examples
--------
>>> parse_rate("400Gbps")
50000000000.0
>>> parse_rate("50GB/s") == 50 * GBps
True
>>> parse_size("1MiB")
1048576.0
>>> parse_time("500ns")
5e-07
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from .errors import TopocollError

__all__ = [
    "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB",
    "Bps", "KBps", "MBps", "GBps", "TBps", "bps", "Kbps", "Mbps", "Gbps", "Tbps",
    "s", "ms", "us", "ns", "ps",
    "UnitError", "parse_size", "parse_rate", "parse_time",
    "format_size", "format_rate", "format_time", "exact_rate", "exact_time", "exact_size",
]

B = 1.0
KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 2.0**30, 2.0**40
Bps = 1.0
KBps, MBps, GBps, TBps = 1e3, 1e6, 1e9, 1e12
bps = 1 / 8
Kbps, Mbps, Gbps, Tbps = 1e3 / 8, 1e6 / 8, 1e9 / 8, 1e12 / 8
s = 1.0
ms, us, ns, ps = 1e-3, 1e-6, 1e-9, 1e-12


class UnitError(TopocollError, ValueError):
    """A quantity string that cannot be parsed; ``text`` holds the offending string."""

    def __init__(self, message: str, *, text: str) -> None:
        super().__init__(message)
        self.text = text


_PREFIX = {
    "": Fraction(1),
    "k": Fraction(10**3), "K": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9),
    "T": Fraction(10**12), "P": Fraction(10**15),
    "Ki": Fraction(2**10), "KI": Fraction(2**10), "ki": Fraction(2**10),
    "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40), "Pi": Fraction(2**50),
}
_NUM = r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*"
_SIZE_RE = re.compile(_NUM + r"(|[kKMGTP]i?)(B|bytes?|b|bits?)?\s*$")
_RATE_RE = re.compile(_NUM + r"(|[kKMGTP]i?)(B/s|Bps|bytes?/s|b/s|bps|bit/s|bits/s)\s*$")
_TIME_RE = re.compile(_NUM + r"(s|sec|ms|us|µs|μs|ns|ps|min|h)?\s*$")
_TIME = {
    None: Fraction(1), "s": Fraction(1), "sec": Fraction(1), "ms": Fraction(1, 10**3),
    "us": Fraction(1, 10**6), "µs": Fraction(1, 10**6), "μs": Fraction(1, 10**6),
    "ns": Fraction(1, 10**9), "ps": Fraction(1, 10**12), "min": Fraction(60), "h": Fraction(3600),
}


def _number(value: object, kind: str) -> float | None:
    if isinstance(value, bool):
        raise UnitError(f"{kind} must be a number or a string, got {value!r}", text=repr(value))
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        raise UnitError(f"{kind} must be a number or a string, got {value!r}", text=repr(value))
    return None


def parse_size(value: str | float) -> float:
    """Return a size in bytes from a number (bytes) or a string like ``"64MiB"``.

    Parameters
    ----------
    value : str or float
        ``"32B"``, ``"1KiB"``, ``"1.5GB"``, ``"512Mb"`` (megabits) or a plain number of bytes.

    Returns
    -------
    float
        Bytes: a whole number (a size of 1.5 bytes or 3 bits is an error, not rounded).

    Raises
    ------
    UnitError
        If the string is not a size, or is negative, not finite or not a whole number of
        bytes.

    Examples
    --------
    >>> parse_size("64MiB"), parse_size("1GB"), parse_size("8Kb")
    (67108864.0, 1000000000.0, 1000.0)
    """
    num = _number(value, "size")
    if num is None:
        m = _SIZE_RE.match(value)
        if not m:
            raise UnitError(f"cannot parse size {value!r} (expected e.g. '64MiB', '1GB', '32B')",
                            text=value)
        q = Fraction(m.group(1)) * _PREFIX[m.group(2)]
        if (m.group(3) or "B").startswith("b"):
            q /= 8
        if q.denominator != 1:
            raise UnitError(f"size must be a whole number of bytes, got {value!r}",
                            text=value)
        num = float(q)
    if not math.isfinite(num) or num < 0:
        raise UnitError(f"size must be a finite number of bytes >= 0, got {value!r}",
                        text=str(value))
    if num != int(num):
        raise UnitError(f"size must be a whole number of bytes, got {value!r}", text=str(value))
    return num


def parse_rate(value: str | float) -> float:
    """Return a bandwidth in bytes/s from a number (bytes/s) or a string like ``"400Gbps"``.

    Lower-case ``b`` means bits, upper-case ``B`` bytes: ``"400Gbps"`` and ``"400Gb/s"``
    are 50e9 B/s; ``"50GB/s"`` and ``"50GBps"`` are 50e9 B/s; ``"1GiB/s"`` is 2**30 B/s.

    Raises
    ------
    UnitError
        If the string is not a rate, or the rate is not > 0.

    Examples
    --------
    >>> parse_rate("100Gbps"), parse_rate("25GB/s"), parse_rate("1GiB/s")
    (12500000000.0, 25000000000.0, 1073741824.0)
    """
    num = _number(value, "rate")
    if num is None:
        m = _RATE_RE.match(value)
        if not m:
            raise UnitError(
                f"cannot parse rate {value!r} (expected e.g. '400Gbps', '50GB/s', '1GiB/s')",
                text=value)
        q = Fraction(m.group(1)) * _PREFIX[m.group(2)]
        if m.group(3).startswith("b"):
            q /= 8
        num = float(q)
    if not num > 0 or num == float("inf"):
        raise UnitError(f"rate must be > 0 and finite, got {value!r}", text=str(value))
    return num


def parse_time(value: str | float) -> float:
    """Return a duration in seconds from a number (seconds) or a string like ``"500ns"``.

    Raises
    ------
    UnitError
        If the string is not a duration, or is negative.

    Examples
    --------
    >>> parse_time("1.5us"), parse_time("2ms"), parse_time(0.1)
    (1.5e-06, 0.002, 0.1)
    """
    num = _number(value, "time")
    if num is None:
        m = _TIME_RE.match(value)
        if not m:
            raise UnitError(f"cannot parse time {value!r} (expected e.g. '500ns', '2us', '1ms')",
                            text=value)
        num = float(Fraction(m.group(1)) * _TIME[m.group(2)])
    if not math.isfinite(num) or num < 0:
        raise UnitError(f"time must be a finite number of seconds >= 0, got {value!r}",
                        text=str(value))
    return num


def _fmt(x: float, steps: list[tuple[float, str]], digits: int) -> str:
    for scale, name in steps:
        if abs(x) >= scale:
            return f"{x / scale:.{digits}g}{name}"
    scale, name = steps[-1]
    return f"{x / scale:.{digits}g}{name}"


def format_size(x: float, digits: int = 4) -> str:
    """Format bytes with a binary prefix, e.g. ``format_size(2**26) == '64MiB'``.

    >>> format_size(67108864)
    '64MiB'
    """
    return _fmt(x, [(TiB, "TiB"), (GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB"), (1.0, "B")], digits)


def format_rate(x: float, digits: int = 4) -> str:
    """Format bytes/s with a decimal prefix, e.g. ``'50GB/s'``.

    >>> format_rate(5e10)
    '50GB/s'
    """
    return _fmt(x, [(TBps, "TB/s"), (GBps, "GB/s"), (MBps, "MB/s"), (KBps, "KB/s"),
                    (1.0, "B/s")], digits)


def format_time(x: float, digits: int = 4) -> str:
    """Format seconds, e.g. ``format_time(2.5e-6) == '2.5us'``.

    >>> format_time(2.5e-6)
    '2.5us'
    """
    return _fmt(x, [(1.0, "s"), (ms, "ms"), (us, "us"), (ns, "ns"), (ps, "ps")], digits)


def _exact(x: float, steps: list[tuple[float, str]], parse) -> str:
    """The shortest ``<number><unit>`` that parses back to exactly ``x``, among the units in
    which the number is at least 1 (ties: the earlier unit); ``repr(x)`` (a bare number)
    if none reads back exactly."""
    best = None
    for scale, name in steps:
        v = x / scale
        if abs(v) < 1 and scale != steps[-1][0]:
            continue
        for digits in range(1, 18):
            text = f"{v:.{digits}g}{name}"
            try:
                ok = "e" not in text and parse(text) == x
            except UnitError:
                continue
            if ok:
                if best is None or len(text) < len(best):
                    best = text
                break
    return best if best is not None else repr(x)


def exact_rate(x: float) -> str:
    """A rate string that :func:`parse_rate` reads back to exactly ``x`` (canonical specs).

    >>> exact_rate(5e10), exact_rate(12.5e9), exact_rate(1234.5)
    ('50GB/s', '12.5GB/s', '1234.5B/s')
    """
    return _exact(x, [(TBps, "TB/s"), (GBps, "GB/s"), (MBps, "MB/s"), (KBps, "KB/s"),
                      (1.0, "B/s")], parse_rate)


def exact_time(x: float) -> str:
    """A time string that :func:`parse_time` reads back to exactly ``x``.

    >>> exact_time(1e-7), exact_time(1.5e-6), exact_time(0.0)
    ('100ns', '1.5us', '0s')
    """
    if x == 0:
        return "0s"
    return _exact(x, [(1.0, "s"), (ms, "ms"), (us, "us"), (ns, "ns"), (ps, "ps")], parse_time)


def exact_size(x: float) -> str:
    """A size string that :func:`parse_size` reads back to exactly ``x``.

    >>> exact_size(2**26), exact_size(1e9), exact_size(3 * 2**30 + 1)
    ('64MiB', '1GB', '3221225473B')
    """
    return _exact(x, [(TiB, "TiB"), (GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB"), (TB, "TB"),
                      (GB, "GB"), (MB, "MB"), (KB, "KB"), (1.0, "B")], parse_size)
