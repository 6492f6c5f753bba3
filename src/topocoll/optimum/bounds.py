"""Lower bounds on the time of *any* schedule of a collective on a topology.

Each bound holds for every schedule evaluated by :class:`~topocoll.cost.alphabeta.AlphaBeta`
(with the same ``alpha``), whatever its routing, so ``lower_bound(...).time <= cost`` is a
test oracle and ``bound / time`` is the "fraction of optimum" reported next to algbw and
busbw.

Three families, each derived from the collective's pre- and postconditions only:

- :func:`latency_bound`: data must travel from every contributor to every receiver.
- :func:`injection_bound`: every rank must send or receive some bytes through its own
  links, and the ranks together must make a minimum number of transmissions.
- :func:`cut_bound`: bytes that must cross a cut divided by the cut's capacity.

Why each is valid for AlphaBeta. A step costs at least ``alpha`` plus the latency of each
of its transfers, and at least ``load_l / bandwidth_l`` for every link it loads; a sum of
per-step maxima is at least the sum of per-step weighted averages over any link set, so
``time >= (bytes over the set) / (capacity of the set)`` for the links leaving a rank, the
links leaving all ranks, or the links crossing a cut. The latency and bandwidth parts are
*not* added: a step's latency and serialization overlap in the model, so
:func:`lower_bound` takes their maximum.

References
----------
.. [1] Hedetniemi, Hedetniemi and Liestman, "A survey of gossiping and broadcasting in
   communication networks", Networks 18(4), 1988 (the ``2n - 2`` one-way gossip bound).
.. [2] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461 (cut bounds on graphs with switches).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError, NotSupportedError, TopologyError
from ..numeric import matmul

if TYPE_CHECKING:
    from ..collective import ChunkSets, Collective
    from ..topology import Topology

__all__ = ["Bound", "CutBound", "lower_bound", "latency_bound", "injection_bound",
           "cut_bound", "concurrent_cut_bound", "candidate_cuts", "CUT_METHODS"]

#: Ways :func:`cut_bound` can choose cuts: the candidate family, or the exact maximum
#: over all cuts by max-flow (:mod:`topocoll.optimum.maxflow`); :func:`lower_bound` also
#: takes "best" (both, where the exact one is available and within :data:`EXACT_WORK`).
CUT_METHODS = ("candidates", "exact")
#: Largest ``nodes x links`` for which :func:`lower_bound` adds the exact cut over every
#: cut (max-flows; about 4 s for allreduce on a 64x64 torus, 33 M) to the candidate cuts.
EXACT_WORK = 64_000_000
#: Collectives whose exact cut maximum is available (:func:`cut_bound`).
EXACT_KINDS = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce")
#: Dijkstra work (sources x (nodes + links)) above which :func:`latency_bound` switches from
#: all required sources to alternating sweeps (still a valid bound, maybe not the maximum).
LATENCY_WORK = 1 << 24
#: Sweeps (each one forward and one backward search) in that case.
LATENCY_SWEEPS = 8
#: Cells (cuts x max(nodes, chunk classes)) evaluated together by :func:`cut_bound`.
CUT_CELLS = 1 << 22
#: Size-independent bound parts memoized per topology (three per collective).
BOUND_CACHE_SIZE = 24


@dataclass(frozen=True)
class Bound:
    """The strongest proven lower bound on the time of any schedule, with its parts.

    Attributes
    ----------
    time : float
        ``max(latency, injection, cut)`` in seconds: no schedule is faster.
    latency, injection, cut : float
        The three bounds (see the module docstring).
    binding : {'cut', 'injection', 'latency', 'none'}
        Which part gives ``time`` (ties go to the first in that order; 'none' if all are 0).
    cut_ranks : tuple of int
        The ranks inside the binding cut, or () unless ``binding == 'cut'``.
    certificate : str
        What proves ``time``, in words: ``"cut (max-flow over every cut)"``, ``"cut
        (candidate cuts)"``, ``"injection (ranks' own links)"``, ``"latency (farthest
        required pair)"`` or ``"none"``.
    """

    time: float
    latency: float
    injection: float
    cut: float
    binding: str
    cut_ranks: tuple[int, ...] = ()
    certificate: str = "none"

    @property
    def time_s(self) -> float:
        """``time``, in the name the reports use."""
        return self.time

    @property
    def kind(self) -> str:
        """``binding``: which family of bound gives ``time``."""
        return self.binding


@dataclass(frozen=True)
class CutBound:
    """Result of :func:`cut_bound`: the binding cut and its numbers.

    Attributes
    ----------
    time : float
        ``bytes / capacity`` of the binding cut (0 if no candidate cut must be crossed).
    ranks : tuple of int
        Collective ranks inside the binding cut.
    direction : {'out', 'in', ''}
        Whether the binding bytes leave or enter ``ranks``.
    bytes : float
        Bytes that must cross the binding cut in that direction.
    capacity : float
        Capacity (bytes/s) of the minimum cut separating ``ranks`` from the other ranks.
    exact : Fraction or None
        With ``method='exact'``: the size-independent part as an exact rational (seconds
        per byte of one block for allgather/reduce_scatter, bytes/s of the cut for
        allreduce, broadcast and reduce).
    """

    time: float
    ranks: tuple[int, ...] = ()
    direction: str = ""
    bytes: float = 0.0
    capacity: float = 0.0
    exact: Fraction | None = None


# ------------------------------------------------------------------ chunk sets
@dataclass(frozen=True, eq=False)
class _Sets:
    """Pre- or postconditions with "all members" chunks kept implicit.

    Collectives store ``all ranks`` as a full list per chunk (4096 x 4096 entries for a
    4096-rank ring allreduce); the bounds only need to know that such a set is everything.
    """

    size: np.ndarray         # |set| per chunk
    every: np.ndarray        # set == all members
    single: np.ndarray       # the rank if |set| == 1 else -1
    e_chunk: np.ndarray      # explicit entries of the chunks that are not `every`
    e_rank: np.ndarray


def _sets(cs: ChunkSets, p: int) -> _Sets:
    size = cs.sizes()
    every = size == p
    single = np.full(len(size), -1, dtype=np.int64)
    one = size == 1
    single[one] = cs.indices[cs.indptr[:-1][one]]
    if every.all():
        e_chunk = e_rank = np.zeros(0, dtype=np.int64)
    else:
        keep = np.repeat(~every, size)
        e_rank = cs.indices[keep].astype(np.int64)
        e_chunk = np.repeat(np.arange(len(size)), size)[keep]
    return _Sets(size, every, single, e_chunk, e_rank)


def _prepare(collective: Collective, topology: Topology):
    members = np.array(sorted(collective.ranks), dtype=np.int64)
    if members.max() >= topology.num_ranks:
        r = int(members[members >= topology.num_ranks][0])
        raise TopologyError(f"rank {r} of the collective is not a rank of topology "
                            f"{topology.name!r} (0..{topology.num_ranks - 1})", item=f"rank {r}")
    p = len(members)
    return members, _sets(collective.pre_sets(), p), _sets(collective.post_sets(), p)


def _in_set(c: np.ndarray, r: np.ndarray, s: _Sets, R: int) -> np.ndarray:
    """Whether rank ``r[i]`` belongs to the set of chunk ``c[i]`` (members only)."""
    out = s.every[c].copy()
    rest = ~out
    if rest.any():
        out[rest] = np.isin(c[rest] * R + r[rest], s.e_chunk * R + s.e_rank)
    return out


def _cached(topology: Topology, collective: Collective, what: str, compute):
    """Size-independent parts of the bounds, memoized per collective in the topology."""
    cache = topology.memo("bounds", OrderedDict)
    key = (what, collective.kind, collective.ranks, collective.split, collective.root)
    if key not in cache:
        cache[key] = compute()
        while len(cache) > BOUND_CACHE_SIZE:
            cache.popitem(last=False)
    return cache[key]


# --------------------------------------------------------------------- latency
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
    base, any_pair = _cached(topology, collective, "latency",
                             lambda: _latency_base(collective, topology))
    return float(alpha + base) if any_pair else 0.0


def _latency_base(collective: Collective, topology: Topology) -> tuple[float, bool]:
    """(largest min-latency over required pairs, whether any pair is required)."""
    members, pre, post = _prepare(collective, topology)
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


# ------------------------------------------------------------------- injection
def _transmissions(collective: Collective, pre: _Sets, post: _Sets, R: int,
                   p: int) -> np.ndarray:
    """Minimum number of rank-to-rank transmissions of each chunk.

    For a reduction (or a copy with one owner) with ``|pre| = a``, ``|post| = b``: take
    the first transfer after which some node ``x`` holds all of ``pre``. Before it, every
    contributor other than ``x`` has sent (distinct senders); after it, every receiver
    other than ``x`` must still receive (distinct receivers). So at least
    ``a + b - 2`` transfers if ``pre`` and ``post`` meet, else ``a + b - 1``: ``2(p - 1)``
    for allreduce (the one-way gossip bound), ``p - 1`` for reduce, ``|post \\ pre|`` for
    a copy. Serializing a step's transfers only adds knowledge, so the count also holds
    for concurrent transfers; relays (switches or other ranks on a route) do not count.
    For copies with several holders: ``|post \\ pre|`` receptions.
    """
    nc = len(pre.size)
    meet = np.zeros(nc, dtype=np.int64)  # |pre & post|
    meet[pre.every & post.every] = p
    meet[pre.every & ~post.every] = post.size[pre.every & ~post.every]
    meet[~pre.every & post.every] = pre.size[~pre.every & post.every]
    both = ~pre.every & ~post.every
    if both.any():
        sel = both[post.e_chunk]
        c, r = post.e_chunk[sel], post.e_rank[sel]
        meet += np.bincount(c[_in_set(c, r, pre, R)], minlength=nc)
    a, b = pre.size.astype(np.int64), post.size.astype(np.int64)
    gossip = a + b - 2 + (meet == 0)
    single = collective.is_reduction | (a == 1)
    t = np.where(single, gossip, b - meet)
    return np.where((b == 0) | (a == 0), 0, np.maximum(t, 0))


def _per_rank(collective: Collective, members, pre: _Sets, post: _Sets, R: int):
    """Chunks each rank must send and receive (see :func:`injection_bound` Notes)."""
    red = collective.is_reduction
    send = np.zeros(R, dtype=np.int64)
    recv = np.zeros(R, dtype=np.int64)
    qone = post.size == 1
    # sender rule: r in pre(c) sends c if post(c) has a rank other than r
    eligible = np.full(len(pre.size), red) | (pre.size == 1)
    pall = eligible & pre.every
    send[members] += int((pall & (post.size >= 2)).sum()) + int((pall & qone).sum())
    send -= np.bincount(post.single[pall & qone], minlength=R)
    sel = eligible[pre.e_chunk]
    c, r = pre.e_chunk[sel], pre.e_rank[sel]
    ok = (post.size[c] >= 2) | (qone[c] & (post.single[c] != r))
    send += np.bincount(r[ok], minlength=R)
    # receiver rule: r in post(c) receives c unless it already holds all of it
    pone = pre.size == 1
    qall = post.every
    if red:
        recv[members] += int((qall & ((pre.size >= 2) | pone)).sum())
        recv -= np.bincount(pre.single[qall & pone], minlength=R)
    else:
        recv[members] += int((qall & ~pre.every).sum())
        sel = (qall & ~pre.every)[pre.e_chunk]
        recv -= np.bincount(pre.e_rank[sel], minlength=R)
    sel = ~qall[post.e_chunk]
    c, r = post.e_chunk[sel], post.e_rank[sel]
    holds = _in_set(c, r, pre, R)
    need = ~holds | (red & ~(pone[c] & (pre.single[c] == r)))
    recv += np.bincount(r[need], minlength=R)
    return send, recv


def injection_bound(collective: Collective, topology: Topology, message_bytes: float) -> float:
    """Lower bound from the bandwidth of the ranks' own links.

    Parameters
    ----------
    collective : Collective
        What must happen.
    topology : Topology
        The network; uses :meth:`~Topology.egress_bandwidth` and
        :meth:`~Topology.ingress_bandwidth` of its ranks.
    message_bytes : float
        The nccl-tests size ``S``.

    Returns
    -------
    float
        The largest of the per-rank and aggregate bounds below, in seconds.

    Raises
    ------
    TopologyError
        If a rank of the collective is not a rank of the topology.

    Notes
    -----
    With ``b`` = ``collective.chunk_bytes(message_bytes)``:

    - Egress of rank ``r``: ``r`` must send chunk ``c`` (or a reduction containing it)
      when ``r`` is in ``pre(c)`` and ``post(c)`` holds another rank, for reductions and
      single-owner copies (nobody else has its contribution). Time >= chunks * b /
      egress(r).
    - Ingress of rank ``r``: ``r`` in ``post(c)`` must receive ``c`` unless it is in
      ``pre(c)`` and, for reductions, ``pre(c) = {r}``. Time >= chunks * b / ingress(r).
    - Aggregate: chunk ``c`` needs at least ``T(c)`` rank-to-rank transfers (see
      ``_transmissions``: ``2(p - 1)`` for allreduce, ``p - 1`` per chunk of
      reduce-scatter or reduce, ``|post \\ pre|`` for copies). Each leaves a rank and
      enters a rank, so time >= ``sum(T) * b`` / (total egress of all ranks), and the same
      over ingress. All ranks of the topology count, since non-members may relay.

    Each is valid because a step lasts at least ``load_l / bandwidth_l`` on every link,
    and so at least the bytes crossing a set of links over that set's capacity.

    Examples
    --------
    Allreduce on a bidirectional ring (egress ``2B`` per rank) needs
    ``2(p - 1) n / (2 p B)``:

    >>> from topocoll.collective import allreduce
    >>> from topocoll.topology import ring
    >>> injection_bound(allreduce(4), ring(4, bandwidth=1e9), 8e9)   # 2*3*8e9/(2*4*1e9)
    6.0
    """
    unit = _cached(topology, collective, "injection",
                   lambda: _injection_unit(collective, topology))
    return float(unit * collective.chunk_bytes(message_bytes))


def _injection_unit(collective: Collective, topology: Topology) -> float:
    """:func:`injection_bound` for chunks of one byte."""
    members, pre, post = _prepare(collective, topology)
    R = topology.num_ranks
    b = 1.0
    egress = topology.egress_bandwidth()[:R]
    ingress = topology.ingress_bandwidth()[:R]
    send, recv = _per_rank(collective, members, pre, post, R)
    total = float(_transmissions(collective, pre, post, R, len(members)).sum()) * b
    with np.errstate(divide="ignore", invalid="ignore"):
        per_rank = max(_safe_max(send * b / egress), _safe_max(recv * b / ingress))
    if total == 0:
        return float(per_rank)
    return float(max(per_rank, total / egress.sum(), total / ingress.sum()))


def _safe_max(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    return float(x.max()) if len(x) else 0.0


# ------------------------------------------------------------------------ cuts
def candidate_cuts(topology: Topology) -> list[tuple[int, ...]]:
    """Default rank sets for :func:`cut_bound`, without duplicates.

    Every single rank; each group in ``topology.meta["groups"]``; for each dimension the
    half-space ``x_d < size_d / 2`` and, for ring dimensions, every contiguous half-arc;
    for each switch, the ranks at minimum hop distance from it when they are a proper
    subset (an edge switch gives its hosts, an aggregation switch its pod).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> len(candidate_cuts(ring(6)))   # 6 single ranks + 6 half-arcs (the half-space is one)
    12
    """
    return [tuple(np.flatnonzero(m).tolist()) for m in _candidate_masks(topology)]


def _candidate_masks(topology: Topology, singles: bool = True) -> np.ndarray:
    """:func:`candidate_cuts` as a boolean (cuts x ranks) matrix (read-only), remembered in
    the topology; ``singles=False`` leaves out the one-rank cuts."""
    return topology.memo(("candidate masks", singles),
                         lambda: _build_candidate_masks(topology, singles))


def _build_candidate_masks(topology: Topology, singles: bool) -> np.ndarray:
    R = topology.num_ranks
    rows = [np.eye(R, dtype=bool)] if singles else [np.zeros((0, R), dtype=bool)]
    groups = list((topology.meta or {}).get("groups", ()) or ())
    if groups:
        g = np.zeros((len(groups), R), dtype=bool)
        for i, grp in enumerate(groups):
            g[i, np.asarray(list(grp), dtype=np.int64)] = True
        rows.append(g)
    if topology.dims:
        x = np.arange(R)
        for d in topology.dims:
            coord, x = x % d.size, x // d.size
            half = d.size // 2
            base = np.arange(d.size) < half
            if d.kind == "ring":  # row a: the arc [a, a + half) = base rotated by a
                windows = np.lib.stride_tricks.sliding_window_view(np.tile(base, 2), d.size)
                table = windows[(d.size - np.arange(d.size)) % d.size]
            else:
                table = base[None, :]
            rows.append(table[:, coord])
    if topology.num_switches:
        hops = _switch_hops(topology)
        near = hops == hops.min(axis=1, keepdims=True)
        rows.append(near[(near.sum(axis=1) > 0) & (near.sum(axis=1) < R)])
    out = _unique_rows(np.concatenate(rows))
    out.flags.writeable = False
    return out


def _unique_rows(X: np.ndarray) -> np.ndarray:
    """Distinct rows of a boolean matrix, in order of first appearance."""
    if not len(X):
        return X
    packed = np.ascontiguousarray(np.packbits(X, axis=1))
    _, first = np.unique(packed.view(f"V{packed.shape[1]}").ravel(), return_index=True)
    return X[np.sort(first)]


def _switch_hops(topology: Topology) -> np.ndarray:
    from scipy.sparse.csgraph import shortest_path

    a = topology.adjacency()
    d = shortest_path(a, directed=True, unweighted=True, indices=np.array(topology.switches))
    return np.atleast_2d(d)[:, : topology.num_ranks]


@dataclass(frozen=True, eq=False)
class _Classes:
    """Chunks grouped by identical (pre, post); explicit sets as sparse rows."""

    mult: np.ndarray
    p_every: np.ndarray
    q_every: np.ndarray
    p_size: np.ndarray
    q_size: np.ndarray
    p_mat: object  # classes x ranks (rows of `every` classes are empty)
    q_mat: object


def _classes(pre: _Sets, post: _Sets, R: int) -> _Classes:
    from scipy.sparse import csr_matrix

    nc = len(pre.size)

    def code(s: _Sets) -> np.ndarray:  # -1: everyone; rank: one rank; else unique per chunk
        return np.where(s.every, -1, np.where(s.size == 1, s.single, -2 - np.arange(nc)))

    codes = np.stack([code(pre), code(post)], axis=1)
    _, rep, mult = np.unique(codes, axis=0, return_index=True, return_counts=True)
    row_of = np.full(nc, -1, dtype=np.int64)
    row_of[rep] = np.arange(len(rep))

    def mat(s: _Sets):
        row = row_of[s.e_chunk]
        sel = row >= 0
        return csr_matrix((np.ones(int(sel.sum()), dtype=np.float32), (row[sel], s.e_rank[sel])),
                          shape=(len(rep), R))

    return _Classes(mult, pre.every[rep], post.every[rep], pre.size[rep], post.size[rep],
                    mat(pre), mat(post))


def _crossing(cl: _Classes, X: np.ndarray, red: bool, cols: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Chunks that must leave / enter each cut (rows of ``X``: member masks over ranks, or
    over the ranks ``cols`` only, when every other rank is outside every cut: one group of
    a 16,384-rank fabric then costs its own columns, not all of them)."""
    k = X.sum(axis=1)[None, :]
    if cl.p_every.all() and cl.q_every.all():
        pa = qa = k
    else:
        Xt = np.ascontiguousarray(X.T, dtype=np.float32)
        p_mat = cl.p_mat if cols is None else cl.p_mat[:, cols]
        q_mat = cl.q_mat if cols is None else cl.q_mat[:, cols]
        # sparse 0/1 times 0/1: whole-number counts, exact
        pa = np.where(cl.p_every[:, None], k, p_mat @ Xt)  # exact
        qa = np.where(cl.q_every[:, None], k, q_mat @ Xt)  # exact
    ps, qs = cl.p_size[:, None], cl.q_size[:, None]
    if red:
        out = (pa > 0) & (qa < qs)
        inn = (pa < ps) & (qa > 0)
    else:
        out = (pa == ps) & (qa < qs)
        inn = (pa == 0) & (qa > 0)
    return cl.mult @ out, cl.mult @ inn  # exact: integers


def _capacities_memo(topology: Topology, X: np.ndarray, is_member: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_capacities`, remembered in the topology: they depend only on the cuts and
    the members, not on the collective's kind or chunking, so the candidates of one
    ``choose`` (each with its own chunking) share them."""
    cache = topology.memo("cut capacities", OrderedDict)
    key = (X.shape, np.packbits(X).tobytes(), np.packbits(is_member).tobytes())
    if key not in cache:
        caps = _capacities(topology, X, is_member)
        for a in caps:
            a.flags.writeable = False
        cache[key] = caps
        while len(cache) > BOUND_CACHE_SIZE:
            cache.popitem(last=False)
    return cache[key]


def _capacities(topology: Topology, X: np.ndarray, is_member: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Minimum capacities out of and into each cut (rows of ``X``: member ranks inside).

    Members inside are on one side, the other members on the other; switches and
    non-member ranks float to whichever side minimizes capacity. Closed form (the links
    leaving, resp. entering, the cut's ranks) when no node floats or when every floating
    node fed across the cut can pass that inflow straight on; otherwise a max-flow.
    """
    n, R = topology.num_nodes, topology.num_ranks
    free = np.ones(n, dtype=bool)
    free[:R] = ~is_member
    if not free.any() and (X.sum(axis=1) == 1).all():  # single ranks: their own links
        r = np.argmax(X, axis=1)
        return topology.egress_bandwidth()[r], topology.ingress_bandwidth()[r]
    A = topology.adjacency()  # A[u, v]: summed bandwidth u -> v
    At = topology.memo("adjacency_t", lambda: A.T.tocsr())
    XT = np.zeros((n, len(X)))
    XT[:R] = X.T
    # scipy's sparse products sum each row in storage order on every machine
    into = At @ XT                       # into[v, i]: bandwidth from cut i into v  # exact
    internal = np.multiply(into, XT).sum(axis=0)
    cap_out = matmul(topology.egress_bandwidth(), XT) - internal
    cap_in = matmul(topology.ingress_bandwidth(), XT) - internal
    if not free.any():
        return cap_out, cap_in
    TT = np.zeros_like(XT)
    TT[:R] = (is_member & ~X).T
    feeds = A @ XT                       # feeds[v, i]: bandwidth from v into cut i  # exact
    tol = 1 + 1e-12
    short_out = (into[free] > (A @ TT)[free] * tol).any(axis=0)  # exact: sparse
    short_in = (feeds[free] > (At @ TT)[free] * tol).any(axis=0)  # exact: sparse
    src, dst, bw = topology.link_src, topology.link_dst, topology.link_bandwidth
    for i in np.flatnonzero(short_out):
        cap_out[i] = _max_flow_cut(src, dst, bw, XT[:, i] > 0, TT[:, i] > 0)
    for i in np.flatnonzero(short_in):
        cap_in[i] = _max_flow_cut(dst, src, bw, XT[:, i] > 0, TT[:, i] > 0)
    return cap_out, cap_in


def _max_flow_cut(src, dst, bw, S: np.ndarray, T: np.ndarray) -> float:
    """Capacity of a minimum S-T cut via :func:`scipy.sparse.csgraph.maximum_flow`.

    ``S`` and ``T`` are contracted to two nodes; capacities are scaled to int32 and rounded
    up, the source side is read off the residual graph and its exact float capacity is
    returned (a valid cut, and minimum up to the rounding).
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    free = np.flatnonzero(~(S | T))
    F = len(free)
    node = np.empty(len(S), dtype=np.int64)
    node[free] = np.arange(F)
    node[S], node[T] = F, F + 1
    u, v = node[src], node[dst]
    keep = (u != v) & (v != F) & (u != F + 1)
    u, v, w = u[keep], v[keep], bw[keep]
    unit = max(w.sum() / (1 << 28), np.finfo(float).tiny)
    caps = np.maximum(np.ceil(w / unit), 1).astype(np.int32)
    g = csr_matrix((caps, (u, v)), shape=(F + 2, F + 2))
    g.sum_duplicates()
    flow = maximum_flow(g, F, F + 1).flow
    residual = (g - flow).tocsr()
    residual.data = (residual.data > 0).astype(np.int32)
    residual.eliminate_zeros()
    side = np.zeros(F + 2, dtype=bool)
    side[breadth_first_order(residual, F, directed=True, return_predecessors=False)] = True
    src_side = side[node]
    return float(bw[src_side[src] & ~src_side[dst]].sum())


def cut_bound(collective: Collective, topology: Topology, message_bytes: float,
              cuts: Iterable[Sequence[int]] | None = None, *,
              method: str = "candidates") -> CutBound:
    """Lower bound from cuts: bytes that must cross a cut over its capacity.

    Parameters
    ----------
    collective : Collective
        What must happen.
    topology : Topology
        The network.
    message_bytes : float
        The nccl-tests size ``S``.
    cuts : iterable of sequences of int, optional
        Rank sets to try; default :func:`candidate_cuts`. Each is intersected with the
        collective's ranks; empty or full intersections are skipped.
    method : {'candidates', 'exact'}
        How cuts are chosen. 'candidates' tries ``cuts``. 'exact' maximizes over *all*
        cuts by max-flow (``cuts`` is ignored): for allgather and reduce-scatter this is
        the ForestColl optimum ``(M/N) max |A ∩ V| / B⁺(A)``, which tree packing attains;
        for allreduce ``M`` over the minimum cut separating two ranks; for broadcast and
        reduce ``M / min_v maxflow``. Not available for alltoall.

    Returns
    -------
    CutBound
        The largest ``bytes / capacity`` over the cuts and both directions, with the cut.

    Raises
    ------
    NotSupportedError
        For an unknown ``method``.
    TopologyError
        If a rank of the collective is not a rank of the topology.

    Notes
    -----
    For a cut ``R``: ranks of the collective in ``R`` are the source side, the other ranks
    of the collective the sink side, and switches and non-member ranks go to whichever
    side minimizes capacity (a minimum cut: closed form when it is the links leaving ``R``,
    else a max-flow with :func:`scipy.sparse.csgraph.maximum_flow`). Chunk ``c`` must leave
    ``R`` when, for reductions, ``pre(c)`` meets ``R`` and ``post(c)`` leaves it (a
    contribution inside must reach a receiver outside); for copies, when ``pre(c)`` lies
    inside ``R`` and ``post(c)`` does not. Entering ``R`` is symmetric. Every byte that
    must cross crosses some link of every cut, so time >= bytes / capacity.

    Examples
    --------
    Allreduce on a ring: half the ring sends ``n`` bytes over two links:

    >>> from topocoll.collective import allreduce
    >>> from topocoll.topology import ring
    >>> cb = cut_bound(allreduce(8), ring(8, bandwidth=1e9), 8e9)
    >>> cb.time, cb.capacity
    (4.0, 2000000000.0)
    """
    if method not in CUT_METHODS:
        raise NotSupportedError(f"cut method must be one of {CUT_METHODS}, got {method!r}")
    if method == "exact":
        return _exact_cut(collective, topology, message_bytes)
    if cuts is None:
        unit = _cached(topology, collective, "cut", lambda: _cut_unit(collective, topology, None))
    else:
        unit = _cut_unit(collective, topology, cuts)
    b = collective.chunk_bytes(message_bytes)
    if unit.time == 0 or b == 0:
        return CutBound(0.0)
    return CutBound(unit.time * b, unit.ranks, unit.direction, unit.bytes * b, unit.capacity)


def _exact_cut(collective: Collective, topology: Topology, message_bytes: float) -> CutBound:
    """:func:`cut_bound` with ``method='exact'``: the maximum over every cut."""
    from .maxflow import allgather_optimum, broadcast_optimum, separating_cut

    _prepare(collective, topology)
    kind, ranks, M = collective.kind, collective.ranks, float(message_bytes)
    if len(ranks) < 2 or M == 0:
        return CutBound(0.0)
    if kind in ("allgather", "reduce_scatter"):
        rs = kind == "reduce_scatter"
        o = _cached(topology, collective, "exact",
                    lambda: allgather_optimum(topology, ranks, reverse=rs))
        block = M / len(ranks)
        t = float(o.value) * block
        moved = len(o.cut) * block
        return CutBound(t, o.cut, "in" if rs else "out", moved, moved / t if t else 0.0,
                        o.value)
    if kind in ("broadcast", "reduce"):
        red = kind == "reduce"
        o = _cached(topology, collective, "exact",
                    lambda: broadcast_optimum(topology, collective.root, ranks, reverse=red))
        return CutBound(M / float(o.value), o.cut, "in" if red else "out", M,
                        float(o.value), o.value)
    if kind == "allreduce":
        o = _cached(topology, collective, "exact", lambda: separating_cut(topology, ranks))
        return CutBound(M / float(o.value), o.cut, "out", M, float(o.value), o.value)
    raise NotSupportedError(f"the exact cut bound is not available for {kind} "
                            "(maximum concurrent flow; use method='candidates')")


def _cut_unit(collective: Collective, topology: Topology,
              cuts: Iterable[Sequence[int]] | None) -> CutBound:
    """:func:`cut_bound` for chunks of one byte."""
    members, pre, post = _prepare(collective, topology)
    R, n = topology.num_ranks, topology.num_nodes
    is_member = np.zeros(R, dtype=bool)
    is_member[members] = True
    if cuts is None:
        X = _candidate_masks(topology)
    else:
        cuts = [np.asarray(list(c), dtype=np.int64) for c in cuts]
        X = np.zeros((len(cuts), R), dtype=bool)
        for i, c in enumerate(cuts):
            if len(c) and (c.min() < 0 or c.max() >= R):
                raise TopologyError(f"cut {i} names a node that is not a rank: {c.tolist()}",
                                    item=f"cut {i}")
            X[i, c] = True
    X = X & is_member
    k = X.sum(axis=1)
    X = _unique_rows(X[(k > 0) & (k < len(members))])
    if not len(X):
        return CutBound(0.0)
    cl = _classes(pre, post, R)
    b = 1.0
    best = CutBound(0.0)
    per = max(1, CUT_CELLS // max(n, len(cl.mult)))
    X = X[np.argsort(X.sum(axis=1) > 1, kind="stable")]  # single ranks first: cheap blocks
    for a in range(0, len(X), per):
        Xb = X[a:a + per]
        out, inn = _crossing(cl, Xb, collective.is_reduction)
        need = (out > 0) | (inn > 0)
        if not need.any():
            continue
        Xb, out, inn = Xb[need], out[need], inn[need]
        cap_out, cap_in = _capacities_memo(topology, Xb, is_member)
        for count, cap, name in ((out, cap_out, "out"), (inn, cap_in, "in")):
            t = count * b / cap
            i = int(np.argmax(t))
            if t[i] > best.time:
                best = CutBound(float(t[i]), tuple(np.flatnonzero(Xb[i]).tolist()), name,
                                float(count[i] * b), float(cap[i]))
    return best


def concurrent_cut_bound(collectives: Sequence[Collective], topology: Topology,
                         message_bytes: float, *, singles: bool = True) -> CutBound:
    """Cut bound for several collectives running at once (each of ``message_bytes``),
    such as the data-parallel groups of a training job.

    Each collective's bytes must cross every cut that separates its members, so over a
    cut ``R`` (of the union's members, switches floating as in :func:`cut_bound`) the
    time is at least the *sum* over the collectives of the bytes each must move across
    it, over the cut's capacity. The groups share what they share: one group alone may
    use all of a box's NICs, eight concurrent groups cannot. Candidate cuts as in
    :func:`candidate_cuts`; ``singles=False`` leaves out the one-rank cuts, which one
    group's own bound already covers (a rank is in one group), and which on a
    16,384-rank fabric are most of the work.

    Examples
    --------
    Two allreduces on disjoint halves of a ring of 8 each split the half-ring cuts:

    >>> from topocoll.collective import allreduce
    >>> from topocoll.topology import ring
    >>> t = ring(8, bandwidth=1e9)
    >>> one = cut_bound(allreduce((0, 2, 4, 6)), t, 8e9).time
    >>> both = concurrent_cut_bound([allreduce((0, 2, 4, 6)), allreduce((1, 3, 5, 7))], t,
    ...                             8e9).time
    >>> one, both
    (4.0, 8.0)
    """
    colls = list(collectives)
    if not colls:
        return CutBound(0.0)
    R = topology.num_ranks
    union = np.zeros(R, dtype=bool)
    prepared = []
    for c in colls:
        members, pre, post = _prepare(c, topology)
        mask = np.zeros(R, dtype=bool)
        mask[members] = True
        if (union & mask).any():
            raise TopologyError("concurrent collectives must have disjoint ranks",
                                item=f"rank {int(np.flatnonzero(union & mask)[0])}")
        union |= mask
        prepared.append((c, mask, _classes(pre, post, R)))
    X = _candidate_masks(topology, singles) & union
    k = X.sum(axis=1)
    X = _unique_rows(X[(k > 0) & (k < int(union.sum()))])
    if not len(X):
        return CutBound(0.0)
    out = np.zeros(len(X))
    inn = np.zeros(len(X))
    for c, mask, cl in prepared:
        cols = np.flatnonzero(mask)
        o, i = _crossing(cl, X[:, cols], c.is_reduction, cols)
        b = c.chunk_bytes(message_bytes)
        out += o * b
        inn += i * b
    need = (out > 0) | (inn > 0)
    if not need.any():
        return CutBound(0.0)
    X, out, inn = X[need], out[need], inn[need]
    cap_out, cap_in = _capacities_memo(topology, X, union)
    best = CutBound(0.0)
    for count, cap, name in ((out, cap_out, "out"), (inn, cap_in, "in")):
        tm = count / cap
        i = int(np.argmax(tm))
        if tm[i] > best.time:
            best = CutBound(float(tm[i]), tuple(np.flatnonzero(X[i]).tolist()), name,
                            float(count[i]), float(cap[i]))
    return best


# ----------------------------------------------------------------------- total
def lower_bound(collective: Collective, topology: Topology, message_bytes: float,
                alpha: float = 0.0, *, cuts: Iterable[Sequence[int]] | None = None,
                method: str = "best") -> Bound:
    """The strongest proven lower bound: the best of the latency, injection and cut bounds.

    The one bound every report uses (``topocoll compare``, ``cost``, ``simulate``,
    ``bound``, the demo, :func:`~topocoll.selection.choose`): "% of bound" is always this
    time over the schedule's.

    Parameters
    ----------
    collective, topology, message_bytes
        As for the individual bounds; ``message_bytes`` is a finite number >= 0.
    alpha : float
        Per-transfer overhead of the cost model (used by the latency bound).
    cuts : iterable of rank sets, optional
        Candidate cuts to try (default :func:`candidate_cuts`).
    method : {'best', 'candidates', 'exact'}
        'best' (default): the candidate cuts, and the maximum over every cut by max-flow
        where it is available (allgather, reduce-scatter, allreduce, broadcast, reduce) and
        the fabric is within :data:`EXACT_WORK`; the larger counts. 'candidates' or
        'exact': only that cut family.

    Returns
    -------
    Bound
        ``time = max(latency, alpha + injection, alpha + cut)`` (the bandwidth parts
        without ``alpha`` in the ``injection`` and ``cut`` fields) and the
        ``certificate`` that gives it.

    Raises
    ------
    TopologyError
        If a rank of the collective is not a rank of the topology.
    TypeError
        If ``topology`` is not a Topology.
    ValueError
        If ``message_bytes`` is negative or not finite.

    Notes
    -----
    Valid for :class:`~topocoll.cost.alphabeta.AlphaBeta` with the same ``alpha`` under
    any routing, and for the simulators of :mod:`topocoll.sim` (they never move a link
    faster than its bandwidth, nor a transfer faster than its route's latency). Latency
    and bandwidth parts are combined by ``max``, not ``+``: the model overlaps a
    transfer's latency with its serialization, and a schedule can have its
    latency-critical and bandwidth-critical steps in different places, so adding them is
    not valid in general. ``alpha`` is added to the bandwidth parts: every step (every
    transfer, in the simulators) pays it before it moves a byte, so the bytes across the
    critical cut cannot all have crossed before ``alpha`` plus their serialization.

    Examples
    --------
    >>> from topocoll.collective import allreduce
    >>> from topocoll.topology import ring
    >>> b = lower_bound(allreduce(4), ring(4, bandwidth=1e9), 8e9)
    >>> b.time, b.binding, b.certificate
    (6.0, 'injection', "injection (ranks' own links)")
    >>> lower_bound(allreduce(4), ring(4, bandwidth=1e9), 8e9, alpha=0.5).time
    6.5
    """
    from ..topology import Topology as _Topology

    if not isinstance(topology, _Topology):
        raise TypeError(f"topology must be a Topology, got {type(topology).__name__}")
    if isinstance(message_bytes, bool) or not isinstance(message_bytes, int | float) or \
            not math.isfinite(message_bytes) or message_bytes < 0:
        raise InputError(f"size (message_bytes) must be a finite number of bytes >= 0, got "
                         f"{message_bytes!r}", item="message_bytes")
    if method not in (*CUT_METHODS, "best"):
        raise NotSupportedError(f"method must be one of best, {', '.join(CUT_METHODS)}, got "
                                f"{method!r}")
    lat = latency_bound(collective, topology, alpha)
    inj = injection_bound(collective, topology, message_bytes)
    exact = method == "exact" or (
        method == "best" and cuts is None and collective.kind in EXACT_KINDS
        and topology.num_nodes * max(1, len(topology.links)) <= EXACT_WORK)
    cut = cut_bound(collective, topology, message_bytes, cuts, method="exact") \
        if method == "exact" else cut_bound(collective, topology, message_bytes, cuts)
    how = "cut (max-flow over every cut)" if method == "exact" else "cut (candidate cuts)"
    if exact and method == "best":
        ex = cut_bound(collective, topology, message_bytes, method="exact")
        if ex.time >= cut.time:
            cut, how = ex, "cut (max-flow over every cut)"
    # nothing moves before the first step's (or transfer's) overhead alpha is paid, and
    # every later step pays it again: the bandwidth parts start after one alpha
    a = float(alpha)
    parts = (("cut", cut.time + a if cut.time > 0 else 0.0),
             ("injection", inj + a if inj > 0 else 0.0), ("latency", lat))
    name, best = max(parts, key=lambda kv: kv[1])  # max keeps the first of equal values
    if best <= 0:
        name = "none"
    certificate = {"cut": how, "injection": "injection (ranks' own links)",
                   "latency": "latency (farthest required pair)", "none": "none"}[name]
    return Bound(float(max(best, 0.0)), lat, inj, cut.time, name,
                 cut.ranks if name == "cut" else (), certificate)
