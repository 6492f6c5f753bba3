"""Compiled breadth-first search of :mod:`.cuts`: each switch's nearest ranks."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["nearest_ranks"]


@njit(cache=True)
def nearest_ranks(indptr, indices, sources, num_ranks):
    """``(ptr, ranks)``: the ranks nearest to ``sources[i]`` (fewest hops along the links'
    direction; nodes below ``num_ranks`` are ranks) are ``ranks[ptr[i]:ptr[i+1]]``, none
    where no rank is reachable. One search per source, stopped at the end of the first
    level that reaches a rank (a rank on a path is reached before anything behind it)."""
    n = len(indptr) - 1
    stamp = np.full(n, -1, np.int64)
    ptr = np.zeros(len(sources) + 1, np.int64)
    buf = np.empty(max(16, num_ranks), np.int64)
    m = 0
    frontier = np.empty(n, np.int64)
    nxt = np.empty(n, np.int64)
    for i in range(len(sources)):
        s = sources[i]
        stamp[s] = i
        frontier[0] = s
        fl = 1
        start = m
        while fl > 0 and m == start:
            nl = 0
            for j in range(fl):
                u = frontier[j]
                for e in range(indptr[u], indptr[u + 1]):
                    v = indices[e]
                    if stamp[v] == i:
                        continue
                    stamp[v] = i
                    if v < num_ranks:
                        if m == len(buf):
                            grown = np.empty(2 * len(buf), np.int64)
                            grown[:m] = buf[:m]
                            buf = grown
                        buf[m] = v
                        m += 1
                    nxt[nl] = v
                    nl += 1
            frontier, nxt = nxt, frontier
            fl = nl
        ptr[i + 1] = m
    return ptr, buf[:m].copy()
