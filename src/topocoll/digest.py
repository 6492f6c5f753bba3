"""Stable content hashes: the same content gives the same digest on any machine.

:func:`content_digest` hashes nested Python values and numpy arrays by *value*, not by
their text: dictionaries in sorted key order, floats by their exact IEEE-754 bits (so
``0.1`` and ``1e-1`` agree and nothing depends on how a number is printed), integer
arrays at the narrowest of 8, 32 and 64 bits that holds every value (so an ``int32`` and an
``int64`` array of the same values agree, and a column of small numbers is hashed at the
width it needs rather than widened) and float arrays as float64, little-endian, with
their shape.
Every item carries a type tag and a length, so different structures never collide by
concatenation. :meth:`topocoll.topology.Topology.fingerprint` and
:meth:`topocoll.schedule.Schedule.fingerprint` are built on it, and the schedule cache is
keyed by them.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["content_digest"]


def content_digest(*parts: Any) -> str:
    """SHA-256 (hex) of ``parts`` by value.

    Parameters
    ----------
    *parts
        ``None``, bools, ints, floats, strings, bytes, numpy arrays and scalars, and
        lists, tuples and mappings of them (mapping keys are compared as strings). A
        ``range`` is hashed as the integer array of its values (without making it).

    Returns
    -------
    str
        64 hexadecimal digits.

    Raises
    ------
    TypeError
        For a value of another type (the message names it).

    Examples
    --------
    >>> content_digest({"a": 1, "b": [0.1, None]}) == content_digest({"b": [1e-1, None], "a": 1})
    True
    >>> content_digest([1, 2]) == content_digest((1, 2)), content_digest(1) == content_digest(1.0)
    (True, False)
    >>> content_digest(np.arange(3, dtype=np.int32)) == content_digest(np.arange(3))
    True
    >>> content_digest(range(5, 300, 7)) == content_digest(np.arange(5, 300, 7))
    True
    """
    h = hashlib.sha256()
    for p in parts:
        _feed(h, p)
    return h.hexdigest()


def _feed(h, x: Any) -> None:
    if x is None:
        h.update(b"N")
    elif isinstance(x, (bool, np.bool_)):
        h.update(b"T" if x else b"F")
    elif isinstance(x, (int, np.integer)):
        b = str(int(x)).encode()
        h.update(b"I" + struct.pack("<Q", len(b)) + b)
    elif isinstance(x, (float, np.floating)):
        h.update(b"D" + struct.pack("<d", float(x)))
    elif isinstance(x, str):
        b = x.encode("utf-8")
        h.update(b"S" + struct.pack("<Q", len(b)) + b)
    elif isinstance(x, bytes):
        h.update(b"B" + struct.pack("<Q", len(x)) + x)
    elif isinstance(x, np.ndarray):
        _feed_array(h, x)
    elif isinstance(x, range):
        _feed_range(h, x)
    elif isinstance(x, Mapping):
        items = sorted((str(k), v) for k, v in x.items())
        h.update(b"M" + struct.pack("<Q", len(items)))
        for k, v in items:
            _feed(h, k)
            _feed(h, v)
    elif isinstance(x, (list, tuple)):
        h.update(b"L" + struct.pack("<Q", len(x)))
        for v in x:
            _feed(h, v)
    else:
        raise TypeError(f"content_digest cannot hash a {type(x).__name__} ({x!r:.60})")


#: Elements converted and hashed at a time (the digest is that of the whole array: SHA-256
#: is streamed), so a 134 M-entry column is never copied whole.
_BLOCK = 1 << 22

_INT_WIDTHS = ((np.int8, b"1"), (np.int32, b"4"), (np.int64, b"8"))


def _int_width(a: np.ndarray):
    """The narrowest of int8, int32 and int64 that holds every value of ``a`` (a ``uint64``
    value above the int64 range is hashed by its bits, as before)."""
    if a.size == 0:
        return _INT_WIDTHS[0]
    return _width_of(int(a.min()), int(a.max()))


def _width_of(lo: int, hi: int):
    for dtype, tag in _INT_WIDTHS[:-1]:
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return dtype, tag
    return _INT_WIDTHS[-1]


def _feed_array(h, a: np.ndarray) -> None:
    if a.dtype.kind in "iub":
        dtype, width = _int_width(a)
        wide, tag = np.dtype(dtype).newbyteorder("<"), b"AI" + width
    elif a.dtype.kind == "f":
        wide, tag = np.dtype("<f8"), b"AF"
    else:
        raise TypeError(f"content_digest cannot hash an array of dtype {a.dtype}")
    h.update(tag + struct.pack("<Q", a.ndim) + struct.pack(f"<{a.ndim}Q", *a.shape))
    flat = np.ravel(a, order="C")
    if flat.dtype == wide:                      # already in the hashed form: no copy
        h.update(memoryview(flat))
        return
    for i in range(0, len(flat), _BLOCK):
        h.update(memoryview(np.ascontiguousarray(flat[i:i + _BLOCK], dtype=wide)))


def _feed_range(h, r: range) -> None:
    """A ``range`` as :func:`_feed_array` hashes ``np.arange`` of it, a block at a time."""
    if len(r) == 0:
        _feed_array(h, np.zeros(0, dtype=np.int64))
        return
    dtype, width = _width_of(min(r[0], r[-1]), max(r[0], r[-1]))
    wide = np.dtype(dtype).newbyteorder("<")
    h.update(b"AI" + width + struct.pack("<Q", 1) + struct.pack("<1Q", len(r)))
    for i in range(0, len(r), _BLOCK):
        part = r[i:i + _BLOCK]
        h.update(memoryview(np.arange(part.start, part.stop, part.step, dtype=wide)))
