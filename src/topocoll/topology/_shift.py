"""Compiled helper of :func:`.symmetry.pair_hops`: pair distances by translation."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["translated_lookup"]


@njit(cache=True)
def translated_lookup(src, dst, sizes, table):
    """``table[w]`` per pair, ``w`` the rank whose coordinates are ``dst - src`` modulo
    ``sizes`` (mixed radix, dimension 0 fastest): one pass, nothing materialized."""
    out = np.empty(len(src), table.dtype)
    for i in range(len(src)):
        u = np.uint64(src[i])
        v = np.uint64(dst[i])
        w = np.uint64(0)
        scale = np.uint64(1)
        for k in range(len(sizes)):
            n = np.uint64(sizes[k])
            qu = u // n
            qv = v // n
            d = (v - qv * n) + n - (u - qu * n)          # in [1, 2n): one subtraction
            if d >= n:
                d -= n
            w += d * scale
            scale *= n
            u = qu
            v = qv
        out[i] = table[w]
    return out
