"""Compiled breadth-first search for deterministic shortest-path routing.

One search per target along reversed links, stopped once every node that the target's
pairs start from has been reached and its level is complete. It records, per (target,
node), the hop distance and the lowest-index link on a shortest path towards the target:
all that the deterministic walk reads. The vectorized search of :mod:`.routing` builds
the whole DAG (every shortest-path link, for ECMP and spraying); this one is for the
single path, and costs about one memory access per link explored instead of a pass of
array operations per level.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["nearest_links"]

FAR = np.int32(1 << 30)
NONE = np.iinfo(np.int64).max


@njit(cache=True)
def nearest_links(in_ptr, in_link, link_src, n, targets, need_ptr, need_nodes):
    """``(dist, nh)``, each flattened ``row * n + node`` for the rows ``targets``: the hop
    distance to the row's target (``FAR`` where not explored) and the lowest-index link
    leaving ``node`` on a shortest path to it (``NONE`` at the target and unexplored
    nodes). Row ``i`` searches until every node of ``need_nodes[need_ptr[i]:need_ptr[i+1]]``
    is reached and the level of the farthest is complete."""
    T = len(targets)
    dist = np.full(T * n, FAR, np.int32)
    nh = np.full(T * n, NONE, np.int64)
    queue = np.empty(n, np.int64)
    mark = np.zeros(n, np.int64)
    for i in range(T):
        off = i * n
        stamp = i + 1
        remaining = 0
        for e in range(need_ptr[i], need_ptr[i + 1]):
            x = need_nodes[e]
            if mark[x] != stamp:
                mark[x] = stamp
                remaining += 1
        t = targets[i]
        dist[off + t] = 0
        if mark[t] == stamp:
            remaining -= 1
        stop = 0 if remaining == 0 else FAR
        head = 0
        tail = 1
        queue[0] = t
        while head < tail:
            v = queue[head]
            head += 1
            dv = dist[off + v]
            if dv >= stop:           # every needed node found, and its level is complete
                break
            level = dv + 1
            for j in range(in_ptr[v], in_ptr[v + 1]):
                lk = in_link[j]
                x = link_src[lk]
                dx = dist[off + x]
                if dx == FAR:
                    dist[off + x] = level
                    nh[off + x] = lk
                    queue[tail] = x
                    tail += 1
                    if mark[x] == stamp:
                        remaining -= 1
                        if remaining == 0:
                            stop = level
                elif dx == level and lk < nh[off + x]:
                    nh[off + x] = lk
    return dist, nh
