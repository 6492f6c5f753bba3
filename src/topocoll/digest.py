"""Stable content hashes: the same content gives the same digest on any machine.

:func:`content_digest` hashes nested Python values and numpy arrays by *value*, not by
their text: dictionaries in sorted key order, floats by their exact IEEE-754 bits (so
``0.1`` and ``1e-1`` agree and nothing depends on how a number is printed), integer
arrays widened to 64 bits and float arrays to float64, little-endian, with their shape.
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
        lists, tuples and mappings of them (mapping keys are compared as strings).

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


#: Elements widened and hashed at a time (the digest is that of the whole array: SHA-256
#: is streamed), so a 134 M-entry column is never copied whole at 64 bits.
_BLOCK = 1 << 22


def _feed_array(h, a: np.ndarray) -> None:
    if a.dtype.kind in "iub":
        wide, tag = "<i8", b"AI"
    elif a.dtype.kind == "f":
        wide, tag = "<f8", b"AF"
    else:
        raise TypeError(f"content_digest cannot hash an array of dtype {a.dtype}")
    h.update(tag + struct.pack("<Q", a.ndim) + struct.pack(f"<{a.ndim}Q", *a.shape))
    flat = np.ravel(a, order="C")
    for i in range(0, len(flat), _BLOCK):
        h.update(memoryview(np.ascontiguousarray(flat[i:i + _BLOCK], dtype=wide)))
