"""The latency bound: data must travel from every contributor to every receiver, so no
schedule is faster than the farthest required pair's route latency plus ``alpha`` per
step it needs (:func:`latency_bound`; combined with the others in
:func:`~topocoll.optimum.bounds.lower_bound`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .bound_sets import collective_sets, memo_part

if TYPE_CHECKING:
    from ..collective import Collective
    from ..topology import Topology

__all__ = ["latency_bound", "LATENCY_WORK", "LATENCY_SWEEPS"]

#: Dijkstra work (sources x (nodes + links)) above which :func:`latency_bound` switches from
#: all required sources to alternating sweeps (still a valid bound, maybe not the maximum).
LATENCY_WORK = 1 << 24
#: Sweeps (each one forward and one backward search) in that case.
LATENCY_SWEEPS = 8


def _latency_graph(topology: Topology):
    """CSR of the cheapest link latency ``u -> v`` plus the forwarding latency of ``v``
    when ``v`` is a switch (ranks may relay data as the endpoint of one transfer and the
    start of the next, which costs no forwarding latency, so charging them would not be a
    valid bound)."""
    def compute():
        from scipy.sparse import csr_matrix

        n = topology.num_nodes
        src, dst = topology.link_src, topology.link_dst
        cost = topology.link_latency + np.where(dst >= topology.num_ranks,
                                                topology.forwarding_latency[dst], 0.0)
        key = src * n + dst
        order = np.argsort(key, kind="stable")
        first = np.ones(len(key), dtype=bool)
        first[1:] = key[order][1:] != key[order][:-1]
        starts = np.flatnonzero(first)
        k = key[order][first]
        val = np.minimum.reduceat(cost[order], starts) if len(starts) else np.zeros(0)
        w = csr_matrix((val, (k // n, k % n)), shape=(n, n))
        return w, w.T.tocsr()

    return topology.memo("latency_graph", compute)


def _block_max(topology: Topology, S: np.ndarray, D: np.ndarray) -> float:
    """Largest min-latency from a node of ``S`` to a different node of ``D``."""
    from scipy.sparse.csgraph import dijkstra

    if not len(S) or not len(D) or (len(S) == 1 and len(D) == 1 and S[0] == D[0]):
        return 0.0
    fw, bw = _latency_graph(topology)
    per = topology.num_nodes + len(topology.links)

    def far(graph, a, others) -> tuple[float, int]:
        row = dijkstra(graph, directed=True, indices=a)[others]
        row[others == a] = -np.inf
        j = int(np.argmax(row))
        return float(row[j]), int(others[j])

    if min(len(S), len(D)) * per <= LATENCY_WORK:
        fwd = len(S) <= len(D)
        a, b = (S, D) if fwd else (D, S)
        d = np.atleast_2d(dijkstra(fw if fwd else bw, directed=True, indices=a))[:, b]
        d[a[:, None] == b[None, :]] = -np.inf
        return float(d.max())
    best, s = 0.0, int(S[0])
    for _ in range(LATENCY_SWEEPS):  # alternate farthest receiver / farthest sender
        v, d = far(fw, s, D)
        u, s_next = far(bw, d, S)
        best = max(best, v, u)
        if s_next == s:
            break
        s = s_next
    return best


def latency_bound(collective: Collective, topology: Topology, alpha: float = 0.0) -> float:
    """Lower bound from latency: the farthest required (source, destination) pair.

    Parameters
    ----------
    collective : Collective
        What must happen.
    topology : Topology
        The network.
    alpha : float
        Per-transfer overhead of the cost model; added once if any data must move.

    Returns
    -------
    float
        ``alpha + max`` over required pairs of the minimum path latency (seconds), or 0.

    Raises
    ------
    TopologyError
        If a rank of the collective is not a rank of the topology.

    Notes
    -----
    Required pairs: for a reduction chunk ``c`` every rank of ``post(c)`` other than ``s``
    must receive data derived from every ``s`` in ``pre(c)``; for a copy with one owner,
    every other rank of ``post(c)`` needs it from the owner (copies with several holders
    are skipped: any of them may serve). The data travels along a chain of transfers, one
    per step, each costing at least ``alpha`` plus its route latency, and chained routes
    are at least the minimum-latency path: link latencies plus the forwarding latency of
    intermediate *switches* (Dijkstra, :func:`scipy.sparse.csgraph.dijkstra`).

    The maximum is exact when the sources (or destinations) of each group of pairs need at
    most :data:`LATENCY_WORK` Dijkstra work; above that it comes from alternating
    farthest-node sweeps, which is still a valid bound and exact on vertex-transitive
    networks such as rings and tori.

    Examples
    --------
    >>> from topocoll.collective import allreduce
    >>> from topocoll.topology import ring
    >>> round(latency_bound(allreduce(8), ring(8, latency=1e-6), alpha=1e-6), 12)   # 4 hops
    5e-06
    """
    base, any_pair = memo_part(topology, collective, "latency",
                             lambda: _latency_base(collective, topology))
    return float(alpha + base) if any_pair else 0.0


def _latency_base(collective: Collective, topology: Topology) -> tuple[float, bool]:
    """(largest min-latency over required pairs, whether any pair is required)."""
    members, pre, post = collective_sets(collective, topology)
    red = collective.is_reduction
    R = topology.num_ranks
    use = np.ones(len(pre.size), dtype=bool) if red else pre.size == 1
    use &= post.size > 0
    best = 0.0
    any_pair = False
    # rectangular groups: (all members) x (all members), members x Q, P x members
    ee = use & pre.every & post.every
    if ee.any():
        best = max(best, _block_max(topology, members, members))
        any_pair |= len(members) > 1
    pe_q = use & pre.every & ~post.every
    q_ranks = np.unique(post.e_rank[pe_q[post.e_chunk]])
    if len(q_ranks):
        best = max(best, _block_max(topology, members, q_ranks))
        any_pair |= len(members) > 1 or bool((q_ranks != members[0]).any())
    p_eq = use & ~pre.every & post.every
    p_ranks = np.unique(pre.e_rank[p_eq[pre.e_chunk]])
    if len(p_ranks):
        best = max(best, _block_max(topology, p_ranks, members))
        any_pair |= len(members) > 1 or bool((p_ranks != members[0]).any())
    # both explicit: the product of the two sets, chunk by chunk
    both = use & ~pre.every & ~post.every
    if both.any():
        pc, pr = pre.e_chunk[both[pre.e_chunk]], pre.e_rank[both[pre.e_chunk]]
        qsel = both[post.e_chunk]
        qc, qr = post.e_chunk[qsel], post.e_rank[qsel]
        qptr = np.searchsorted(qc, np.arange(len(pre.size) + 1))
        cnt = qptr[pc + 1] - qptr[pc]
        s = np.repeat(pr, cnt)
        d = qr[np.repeat(qptr[pc] - (np.cumsum(cnt) - cnt), cnt) + np.arange(cnt.sum())]
        keep = s != d
        keys = np.unique(s[keep] * R + d[keep])
        if len(keys):
            any_pair = True
            best = max(best, _pairs_max(topology, keys // R, keys % R))
    return best, any_pair


def _pairs_max(topology: Topology, s: np.ndarray, d: np.ndarray) -> float:
    """Largest min-latency over explicit pairs (grouped by the smaller side)."""
    from scipy.sparse.csgraph import dijkstra

    fw, bw = _latency_graph(topology)
    per = topology.num_nodes + len(topology.links)
    us, ud = np.unique(s), np.unique(d)
    fwd = len(us) <= len(ud)
    a, b = (s, d) if fwd else (d, s)
    ua = us if fwd else ud
    ua = ua[: max(1, LATENCY_WORK // per)]  # beyond the budget: a subset, still a bound
    keep = np.isin(a, ua)
    a, b = a[keep], b[keep]
    dist = np.atleast_2d(dijkstra(fw if fwd else bw, directed=True, indices=ua))
    return float(dist[np.searchsorted(ua, a), b].max())


