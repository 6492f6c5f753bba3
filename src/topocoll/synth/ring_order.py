"""Best-ordered rings: a ring order chosen for the slowest hop, not ``0 .. p-1``.

A ring allreduce runs at the speed of its slowest hop, so the order matters on
heterogeneous networks. :func:`best_ring_order` is a heuristic for this bottleneck
travelling-salesman problem: the hop ``u -> v`` is worth the bottleneck bandwidth of
its routed path (both directions for a bidirectional ring); from every start a greedy
widest-next tour is built and then improved by 2-opt moves that raise the worst hop.
The best tour over :data:`STARTS` evenly spaced starts wins.

References
----------
.. [1] Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
   workstations", JPDC 69(2), 2009.
.. [2] Zhang, Wu and Li, INFOCOM 2021 (ring all-reduce is limited by its slowest link on
   heterogeneous networks; the baseline needs a good order).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..schedule import Schedule
from ..topology import Topology
from ._common import resolve_group
from .ring import (
    bidirectional_ring_allgather,
    bidirectional_ring_allreduce,
    bidirectional_ring_reduce_scatter,
)

#: Greedy tours started (evenly spaced start ranks).
STARTS = 8

__all__ = ["best_ring_order", "hop_bandwidth", "best_ring_allgather",
           "best_ring_reduce_scatter", "best_ring_allreduce"]


def hop_bandwidth(topology: Topology, group: Sequence[int]) -> np.ndarray:
    """``W[i, j]``: rate of a lone transfer ``group[i] -> group[j]`` on its route (the
    slowest of ``bandwidth / fraction`` over the links it uses)."""
    g = np.asarray(group, dtype=np.int64)
    p = len(g)
    i, j = np.nonzero(~np.eye(p, dtype=bool))
    rt = topology.routes(np.stack([g[i], g[j]], axis=1))
    eff = topology.link_bandwidth[rt.link] / rt.frac
    W = np.zeros((p, p))
    W[i, j] = np.minimum.reduceat(eff, rt.ptr[:-1])
    return W


def _worst(tour: list[int], S: np.ndarray) -> float:
    return float(min(S[a, b] for a, b in zip(tour, tour[1:] + tour[:1], strict=True)))


def best_ring_order(topology: Topology, ranks: Sequence[int] | None = None) -> list[int]:
    """A ring order over ``ranks`` maximizing the slowest hop (heuristic).

    Examples
    --------
    >>> from topocoll.topology import from_matrix
    >>> fast, slow = 100e9, 1e9
    >>> m = [[0, fast, slow, fast], [fast, 0, fast, slow],
    ...      [slow, fast, 0, fast], [fast, slow, fast, 0]]
    >>> best_ring_order(from_matrix(m))      # avoids the slow diagonals
    [0, 1, 2, 3]
    >>> m2 = [[0, slow, fast, fast], [slow, 0, fast, fast],
    ...       [fast, fast, 0, slow], [fast, fast, slow, 0]]
    >>> best_ring_order(from_matrix(m2))
    [0, 2, 1, 3]
    """
    group = resolve_group(topology, ranks)
    p = len(group)
    if p <= 3:
        return list(group)
    W = hop_bandwidth(topology, group)
    S = np.minimum(W, W.T)            # a bidirectional ring uses both directions
    best, best_val = list(range(p)), _worst(list(range(p)), S)
    for start in range(0, p, max(1, p // STARTS)):
        tour, left = [start], set(range(p)) - {start}
        while left:
            cur = tour[-1]
            nxt = max(left, key=lambda v: (S[cur, v], -v))
            tour.append(nxt)
            left.remove(nxt)
        improved = True
        while improved:  # 2-opt on the worst hop
            improved = False
            val = _worst(tour, S)
            for i in range(p - 1):
                for j in range(i + 2, p):
                    a, b, c, d = tour[i], tour[i + 1], tour[j], tour[(j + 1) % p]
                    if min(S[a, c], S[b, d]) > min(S[a, b], S[c, d]):
                        cand = tour[:i + 1] + tour[i + 1:j + 1][::-1] + tour[j + 1:]
                        if _worst(cand, S) > val:
                            tour, improved = cand, True
                            break
                if improved:
                    break
        v = _worst(tour, S)
        if v > best_val:
            best, best_val = tour, v
    k = best.index(0)
    best = best[k:] + best[:k]
    return [group[i] for i in best]


def best_ring_allgather(topology: Topology, *, ranks: Sequence[int] | None = None
                        ) -> Schedule:
    """Bidirectional ring allgather in :func:`best_ring_order`."""
    s = bidirectional_ring_allgather(topology, ranks=ranks,
                                     order=best_ring_order(topology, ranks))
    return s.replace(name="best_ring")


def best_ring_reduce_scatter(topology: Topology, *, ranks: Sequence[int] | None = None
                             ) -> Schedule:
    """Bidirectional ring reduce-scatter in :func:`best_ring_order`."""
    s = bidirectional_ring_reduce_scatter(topology, ranks=ranks,
                                          order=best_ring_order(topology, ranks))
    return s.replace(name="best_ring")


def best_ring_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None
                        ) -> Schedule:
    """Bidirectional ring allreduce in :func:`best_ring_order`.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> best_ring_allreduce(ring(6)).meta["order"]
    '0,1,2,3,4,5'
    """
    s = bidirectional_ring_allreduce(topology, ranks=ranks,
                                     order=best_ring_order(topology, ranks))
    return s.replace(name="best_ring")
