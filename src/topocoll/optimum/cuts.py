"""The cut bound: bytes that must cross a cut divided by the cut's capacity, over the
candidate cuts or (``method="exact"``) over every cut by max-flow
(:mod:`~topocoll.optimum.maxflow`); the concurrent bound of disjoint groups that share
cuts (:func:`concurrent_cut_bound`). Combined with the others in
:func:`~topocoll.optimum.bounds.lower_bound`.

References
----------
.. [1] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461 (cut bounds on graphs with switches).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..errors import NotSupportedError, TopologyError
from ..numeric import matmul
from .bound_sets import BOUND_CACHE_SIZE, MemberSets, collective_sets, memo_part

if TYPE_CHECKING:
    from ..collective import Collective
    from ..topology import Topology

__all__ = ["CutBound", "cut_bound", "concurrent_cut_bound", "candidate_cuts", "CUT_METHODS",
           "EXACT_KINDS", "CUT_CELLS"]

#: Ways :func:`cut_bound` can choose cuts: the candidate family, or the exact maximum
#: over all cuts by max-flow (:mod:`topocoll.optimum.maxflow`); :func:`lower_bound` also
#: takes "best" (both, where the exact one is available and within :data:`EXACT_WORK`).
CUT_METHODS = ("candidates", "exact")
#: Collectives whose exact cut maximum is available (:func:`cut_bound`).
EXACT_KINDS = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce")
#: Cells (cuts x max(nodes, chunk classes)) evaluated together by :func:`cut_bound`.
CUT_CELLS = 1 << 22


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


def _candidate_masks(topology: Topology, singles: bool = True,
                     shifts: tuple[int, ...] = ()) -> np.ndarray:
    """:func:`candidate_cuts` as a boolean (cuts x ranks) matrix (read-only), remembered in
    the topology; ``singles=False`` leaves out the one-rank cuts.

    ``shifts`` (dimensions whose unit shifts are automorphisms of the fabric and of the
    collective, :func:`_orbit_shifts`) keeps one cut of each orbit under those shifts: the
    single ranks whose coordinates along them are 0, and of a ring dimension among them
    only the arc from 0. These are the first of their orbits in the full list, in its
    order, so the first largest bound, and the cut reported, are the full list's.
    """
    return topology.memo(("candidate masks", singles, shifts),
                         lambda: _build_candidate_masks(topology, singles, shifts))


def _build_candidate_masks(topology: Topology, singles: bool,
                           shifts: tuple[int, ...] = ()) -> np.ndarray:
    R = topology.num_ranks
    if singles and shifts:
        coords = np.unravel_index(np.arange(R), [d.size for d in topology.dims], order="F")
        fixed = np.ones(R, dtype=bool)
        for k in shifts:
            fixed &= coords[k] == 0
        reps = np.flatnonzero(fixed)
        eye = np.zeros((len(reps), R), dtype=bool)
        eye[np.arange(len(reps)), reps] = True
        rows = [eye]
    else:
        rows = [np.eye(R, dtype=bool)] if singles else [np.zeros((0, R), dtype=bool)]
    groups = list((topology.meta or {}).get("groups", ()) or ())
    if groups:
        g = np.zeros((len(groups), R), dtype=bool)
        for i, grp in enumerate(groups):
            g[i, np.asarray(list(grp), dtype=np.int64)] = True
        rows.append(g)
    if topology.dims:
        x = np.arange(R)
        for k, d in enumerate(topology.dims):
            coord, x = x % d.size, x // d.size
            half = d.size // 2
            base = np.arange(d.size) < half
            if d.kind == "ring" and k not in shifts:  # row a: the arc [a, a + half)
                windows = np.lib.stride_tricks.sliding_window_view(np.tile(base, 2), d.size)
                table = windows[(d.size - np.arange(d.size)) % d.size]
            else:
                table = base[None, :]
            rows.append(table[:, coord])
    if topology.num_switches:
        near = _switch_nearest(topology)
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


def _switch_nearest(topology: Topology) -> np.ndarray:
    """Each switch's nearest ranks (fewest hops from it), as a switches x ranks mask: one
    search per switch that stops at the first level holding a rank (the hop counts to
    every rank from every switch took 5.6 s and 304 MB on ``dgx-h100:2048``)."""
    from ._nearest import nearest_ranks

    a = topology.adjacency()
    sw = np.asarray(topology.switches, dtype=np.int64)
    ptr, ranks = nearest_ranks(a.indptr.astype(np.int64), a.indices.astype(np.int64), sw,
                               topology.num_ranks)
    near = np.zeros((len(sw), topology.num_ranks), dtype=bool)
    near[np.repeat(np.arange(len(sw)), np.diff(ptr)), ranks] = True
    return near


@dataclass(frozen=True, eq=False)
class _Classes:
    """Chunks grouped by identical (pre, post); explicit sets as sparse rows, built when
    first asked for (an allreduce's sets are all ``every``: none is needed) over the
    ranks ``cols`` (all of them when None)."""

    mult: np.ndarray
    p_every: np.ndarray
    q_every: np.ndarray
    p_size: np.ndarray
    q_size: np.ndarray
    pre: MemberSets
    post: MemberSets
    row_of: np.ndarray
    R: int
    cols: np.ndarray | None = None

    def _mat(self, s: MemberSets):
        from scipy.sparse import csr_matrix

        row, col = self.row_of[s.e_chunk], np.asarray(s.e_rank, dtype=np.int64)
        width = self.R
        if self.cols is not None:                     # the ranks' positions among cols
            pos = np.full(self.R, -1, dtype=np.int64)
            pos[self.cols] = np.arange(len(self.cols))
            col, width = pos[col], len(self.cols)
        sel = (row >= 0) & (col >= 0)
        return csr_matrix((np.ones(int(sel.sum()), dtype=np.float32), (row[sel], col[sel])),
                          shape=(len(self.mult), width))

    @cached_property
    def p_mat(self):      # classes x ranks (rows of `every` classes are empty)
        return self._mat(self.pre)

    @cached_property
    def q_mat(self):
        return self._mat(self.post)


def _classes(pre: MemberSets, post: MemberSets, R: int,
             cols: np.ndarray | None = None) -> _Classes:
    nc = len(pre.size)

    def code(s: MemberSets) -> np.ndarray:  # -1: everyone; rank: one rank; else unique per chunk
        return np.where(s.every, -1, np.where(s.size == 1, s.single, -2 - np.arange(nc)))

    codes = np.stack([code(pre), code(post)], axis=1)
    _, rep, mult = np.unique(codes, axis=0, return_index=True, return_counts=True)
    row_of = np.full(nc, -1, dtype=np.int64)
    row_of[rep] = np.arange(len(rep))
    return _Classes(mult, pre.every[rep], post.every[rep], pre.size[rep], post.size[rep],
                    pre, post, row_of, R, cols)


def _crossing(cl: _Classes, X: np.ndarray, red: bool) -> tuple[np.ndarray, np.ndarray]:
    """Chunks that must leave / enter each cut (rows of ``X``: member masks over the
    ranks ``cl.cols``, all of them when None; with a group's own columns, one group of a
    16,384-rank fabric costs its own columns, not all of them)."""
    k = X.sum(axis=1)[None, :]
    if cl.p_every.all() and cl.q_every.all():
        pa = qa = k
    else:
        Xt = np.ascontiguousarray(X.T, dtype=np.float32)
        # sparse 0/1 times 0/1: whole-number counts, exact
        pa = np.where(cl.p_every[:, None], k, cl.p_mat @ Xt)  # exact
        qa = np.where(cl.q_every[:, None], k, cl.q_mat @ Xt)  # exact
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
        unit = memo_part(topology, collective, "cut", lambda: _cut_unit(collective, topology, None))
    else:
        unit = _cut_unit(collective, topology, cuts)
    b = collective.chunk_bytes(message_bytes)
    if unit.time == 0 or b == 0:
        return CutBound(0.0)
    return CutBound(unit.time * b, unit.ranks, unit.direction, unit.bytes * b, unit.capacity)


def _exact_cut(collective: Collective, topology: Topology, message_bytes: float) -> CutBound:
    """:func:`cut_bound` with ``method='exact'``: the maximum over every cut."""
    from .maxflow import allgather_optimum, broadcast_optimum, separating_cut

    collective_sets(collective, topology)
    kind, ranks, M = collective.kind, collective.ranks, float(message_bytes)
    if len(ranks) < 2 or M == 0:
        return CutBound(0.0)
    if kind in ("allgather", "reduce_scatter"):
        rs = kind == "reduce_scatter"
        o = memo_part(topology, collective, "exact",
                    lambda: allgather_optimum(topology, ranks, reverse=rs))
        block = M / len(ranks)
        t = float(o.value) * block
        moved = len(o.cut) * block
        return CutBound(t, o.cut, "in" if rs else "out", moved, moved / t if t else 0.0,
                        o.value)
    if kind in ("broadcast", "reduce"):
        red = kind == "reduce"
        o = memo_part(topology, collective, "exact",
                    lambda: broadcast_optimum(topology, collective.root, ranks, reverse=red))
        return CutBound(M / float(o.value), o.cut, "in" if red else "out", M,
                        float(o.value), o.value)
    if kind == "allreduce":
        o = memo_part(topology, collective, "exact", lambda: separating_cut(topology, ranks))
        return CutBound(M / float(o.value), o.cut, "out", M, float(o.value), o.value)
    raise NotSupportedError(f"the exact cut bound is not available for {kind} "
                            "(maximum concurrent flow; use method='candidates')")


def _cut_unit(collective: Collective, topology: Topology,
              cuts: Iterable[Sequence[int]] | None) -> CutBound:
    """:func:`cut_bound` for chunks of one byte."""
    members, pre, post = collective_sets(collective, topology)
    R, n = topology.num_ranks, topology.num_nodes
    is_member = np.zeros(R, dtype=bool)
    is_member[members] = True
    if cuts is None:
        X = _candidate_masks(topology, shifts=_orbit_shifts(collective, topology, pre, post,
                                                            is_member))
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


def _orbit_shifts(collective: Collective, topology: Topology, pre: MemberSets,
                  post: MemberSets, is_member: np.ndarray) -> tuple[int, ...]:
    """Dimensions whose unit shift maps the fabric (:func:`~topocoll.topology.symmetry.
    shift_dims`) and the collective onto themselves: its members, and the multiset of its
    chunks' (pre, post) sets, each "every member" or one rank (chunks with other sets: no
    shift is claimed). A cut and its image then give the same bound."""
    from ..topology.symmetry import shift_dims, shift_permutation

    dims = shift_dims(topology)
    if not dims or not ((pre.every | (pre.size == 1)).all()
                        and (post.every | (post.size == 1)).all()):
        return ()
    codes = np.stack([np.where(pre.every, -1, pre.single),
                      np.where(post.every, -1, post.single)], axis=1)
    rows, mult = np.unique(codes, axis=0, return_counts=True)
    out = []
    for k in dims:
        p = shift_permutation(topology, k)
        if not np.array_equal(is_member[p], is_member):
            continue
        moved = np.where(rows >= 0, p[np.maximum(rows, 0)], -1)
        order = np.lexsort((moved[:, 1], moved[:, 0]))
        if np.array_equal(moved[order], rows) and np.array_equal(mult[order], mult):
            out.append(k)
    return tuple(out)


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
        members, pre, post = collective_sets(c, topology)
        mask = np.zeros(R, dtype=bool)
        mask[members] = True
        if (union & mask).any():
            raise TopologyError("concurrent collectives must have disjoint ranks",
                                item=f"rank {int(np.flatnonzero(union & mask)[0])}")
        union |= mask
        prepared.append((c, _classes(pre, post, R, np.flatnonzero(mask))))
    X = _candidate_masks(topology, singles) & union
    k = X.sum(axis=1)
    X = _unique_rows(X[(k > 0) & (k < int(union.sum()))])
    if not len(X):
        return CutBound(0.0)
    out = np.zeros(len(X))
    inn = np.zeros(len(X))
    for c, cl in prepared:
        o, i = _crossing(cl, X[:, cl.cols], c.is_reduction)
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


