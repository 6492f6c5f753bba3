"""Routing: turn ``(src, dst)`` node pairs into the links they use.

A route is a set of ``(link, fraction)`` entries plus a latency: ``fraction`` is the share
of the pair's bytes that crosses ``link``. Routes of many pairs are returned together as
one :class:`Routes` object in CSR form, so that cost models can add up link loads with a
single ``np.bincount``.

Routing policies (:data:`ROUTINGS`):

``"shortest"``
    One deterministic minimum-hop path. At every hop the next node is the one reached by
    the lowest-index link that lies on a shortest path to the destination. Generators emit
    dimension-0 links first and ``+`` before ``-``, so on tori this is dimension-order
    routing, and on a ring an even tie goes the ``+`` way. Parallel links between the same
    two nodes form a *bundle*; the bytes of a hop are split over the bundle in proportion to
    bandwidth, so a bundle acts as one link of summed capacity.
``"ecmp"``
    Per-hop even split over all equal-cost next-hop *links* (each parallel link is one
    port), as switch ECMP hashing does on average.
``"spray"``
    Uniform over all shortest paths, counting paths as link sequences. Equivalently, per
    hop the split is proportional to the number of shortest paths downstream of each link.

Latency of a path: the sum of its link latencies plus the forwarding latency
(:attr:`Topology.forwarding_latency`) of every *intermediate* node, not of its endpoints.
A bundle hop costs the largest latency of its links (all of them carry bytes). For
``"ecmp"`` and ``"spray"`` the latency of a route is the largest latency over the paths
it uses (every shortest path gets a positive share under both policies).

Implementation. Pairs joined by a direct link are routed without any search. The others
are grouped by destination; for blocks of destinations, hop distances to the destination
come from a breadth-first search on the reversed graph
(:func:`scipy.sparse.csgraph.shortest_path`), blocks being sized to bound memory. The
deterministic policy walks all pairs of a block at once through a next-link table; the
multipath policies propagate flow fractions hop by hop over the shortest-path DAG,
vectorized over the pairs of a block. Results are memoized per (policy, pairs) in the
topology's cache.

Examples
--------
>>> import numpy as np
>>> from topocoll.topology import ring
>>> r = routes(ring(6), np.array([[0, 2], [3, 3]]), "shortest")
>>> r.hops.tolist(), r.links(0)[0].tolist(), r.links(1)[0].tolist()
([2, 0], [0, 1], [])
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..errors import TopologyError


class RoutedFabric(Protocol):
    """What routing reads of a fabric (:class:`~topocoll.topology.core.Topology` has it):
    a structural type, so that this module does not import ``core``, which imports it."""

    num_nodes: int
    routing: str
    link_src: np.ndarray
    link_dst: np.ndarray
    link_bandwidth: np.ndarray
    link_latency: np.ndarray
    forwarding_latency: np.ndarray

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any: ...


__all__ = ["ROUTINGS", "Routes", "routes", "path_routes", "shortest_path_nodes", "spread_paths",
           "shortest_path_sets", "RoutedFabric"]

#: Routing policies understood by :func:`routes` (and :meth:`Topology.routes`).
ROUTINGS = ("shortest", "ecmp", "spray")
#: Elements (destinations x max(nodes, links)) in one block of the distance computation.
BLOCK_ELEMENTS = 1 << 22
#: How many :func:`routes` results a topology memoizes.
CACHE_SIZE = 8
_FAR = np.int32(1 << 30)


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class Routes:
    """Routes of ``m`` node pairs in CSR form (read-only arrays).

    Attributes
    ----------
    ptr : ndarray of int64, shape (m + 1,)
        Entries of pair ``i`` are ``ptr[i]:ptr[i+1]``.
    link : ndarray of int64
        Link index of each entry.
    frac : ndarray of float64
        Fraction of the pair's bytes carried by that link (the fractions leaving the
        source add up to 1).
    latency : ndarray of float64, shape (m,)
        Seconds from the first byte leaving the source to it arriving, see module notes.
    hops : ndarray of int64, shape (m,)
        Number of links on a path (all paths used have the same hop count).
    """

    ptr: np.ndarray
    link: np.ndarray
    frac: np.ndarray
    latency: np.ndarray
    hops: np.ndarray

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def links(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``(link indices, fractions)`` of pair ``i``."""
        a, b = self.ptr[i], self.ptr[i + 1]
        return self.link[a:b], self.frac[a:b]


@dataclass(frozen=True, eq=False)
class _Graph:
    """Link arrays of a topology rearranged for routing (cached per topology)."""

    n: int
    src: np.ndarray
    dst: np.ndarray
    lat: np.ndarray
    fwd: np.ndarray
    in_ptr: np.ndarray    # links entering node v: in_link[in_ptr[v]:in_ptr[v+1]]
    in_link: np.ndarray   # link ids sorted by (dst, id)
    bkey: np.ndarray      # sorted src * n + dst of every bundle
    bptr: np.ndarray      # links of bundle b: blinks[bptr[b]:bptr[b+1]], lowest id first
    blinks: np.ndarray
    bfrac: np.ndarray     # bandwidth share of each blinks entry within its bundle
    bsize: np.ndarray
    blat: np.ndarray      # largest latency in the bundle
    bundle_of: np.ndarray
    hop_lat: np.ndarray   # per link: its bundle's latency + forwarding latency at its head
    simple: bool          # no parallel links

    @property
    def m(self) -> int:
        return len(self.src)


def _graph(topology: RoutedFabric) -> _Graph:
    return topology.memo("routing_graph", lambda: _build_graph(topology))


def _build_graph(topology: RoutedFabric) -> _Graph:
    n = topology.num_nodes
    src, dst = topology.link_src, topology.link_dst
    bw, lat = topology.link_bandwidth, topology.link_latency
    m = len(src)
    key = src * n + dst
    order = np.argsort(key, kind="stable")
    skey = key[order]
    first = np.ones(m, dtype=bool)
    first[1:] = skey[1:] != skey[:-1]
    starts = np.flatnonzero(first)
    bptr = np.append(starts, m).astype(np.int64)
    bsize = np.diff(bptr)
    bundle_of = np.empty(m, dtype=np.int64)
    bundle_of[order] = np.cumsum(first) - 1
    bw_sorted = bw[order]
    bw_sum = np.add.reduceat(bw_sorted, starts) if m else np.zeros(0)
    blat = np.maximum.reduceat(lat[order], starts) if m else np.zeros(0)
    fwd = topology.forwarding_latency
    in_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=in_ptr[1:])
    g = _Graph(
        n=n, src=src, dst=dst, lat=lat, fwd=fwd, in_ptr=in_ptr,
        in_link=np.argsort(dst, kind="stable").astype(np.int64),
        bkey=skey[first], bptr=bptr, blinks=order.astype(np.int64),
        bfrac=bw_sorted / np.repeat(bw_sum, bsize), bsize=bsize, blat=blat,
        bundle_of=bundle_of, hop_lat=blat[bundle_of] + fwd[dst],
        simple=bool(np.all(bsize == 1)),
    )
    return g


def _bundle(g: _Graph, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Bundle id of each hop ``u -> v`` or -1 where there is no link."""
    if not len(g.bkey):
        return np.full(len(u), -1, dtype=np.int64)
    k = u.astype(np.int64) * g.n + v
    i = np.minimum(np.searchsorted(g.bkey, k), len(g.bkey) - 1)
    return np.where(g.bkey[i] == k, i, -1)


def _check_nodes(g: _Graph, nodes: np.ndarray) -> None:
    if len(nodes) and (nodes.min() < 0 or nodes.max() >= g.n):
        bad = int(nodes[(nodes < 0) | (nodes >= g.n)][0])
        raise TopologyError(f"node {bad} does not exist (nodes 0..{g.n - 1})", item=f"node {bad}")


def _segments(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of the index ranges ``starts[i] : starts[i] + counts[i]``."""
    return np.repeat(starts - (np.cumsum(counts) - counts), counts) + \
        np.arange(int(counts.sum()), dtype=np.int64)


@dataclass(frozen=True, eq=False)
class _Dag:
    """Shortest-path DAGs towards a block of targets, explored just far enough.

    ``dist`` is the flattened (targets x nodes) hop distance to the row's target (``_FAR``
    where not explored). DAG links are listed by ``key = row * n + tail`` (sorted) with
    ``link`` and ``head = row * n + head node``; ``ptr`` is their CSR over keys.
    """

    n: int
    targets: np.ndarray
    dist: np.ndarray
    key: np.ndarray
    link: np.ndarray
    head: np.ndarray
    ptr: np.ndarray


def _bfs(g: _Graph, targets: np.ndarray, need: np.ndarray) -> _Dag:
    """Breadth-first search from all ``targets`` at once along reversed links, level by
    level, stopping once every flattened ``row * n + node`` in ``need`` is reached.

    Vectorized over targets; the work is proportional to the explored balls, so routing
    between nearby ranks of a large network stays cheap. It keeps every shortest-path
    link (multipath routing); the deterministic walk uses :func:`_nearest` instead.
    """
    n = g.n
    size = len(targets) * n
    flat = np.full(size, _FAR, dtype=np.int32)
    claim = np.empty(size, dtype=np.int64)  # dedupes a frontier without sorting it
    front = np.arange(len(targets), dtype=np.int64) * n + targets
    flat[front] = 0
    keys, links = [], []
    level = 0
    while len(front) and (flat[need] == _FAR).any():
        level += 1
        v = front % n
        c = g.in_ptr[v + 1] - g.in_ptr[v]
        lk = g.in_link[_segments(g.in_ptr[v], c)]
        tail = np.repeat(front - v, c) + g.src[lk]
        t_new = tail[flat[tail] == _FAR]
        flat[t_new] = level
        on_dag = flat[tail] == level
        keys.append(tail[on_dag])
        links.append(lk[on_dag])
        claim[t_new] = np.arange(len(t_new))
        front = t_new[claim[t_new] == np.arange(len(t_new))]
    key = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    link = np.concatenate(links) if links else np.zeros(0, dtype=np.int64)
    order = np.argsort(key, kind="stable")
    key, link = key[order], link[order]
    ptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(key, minlength=size), out=ptr[1:])
    return _Dag(n, targets, flat, key, link, key - g.src[link] + g.dst[link], ptr)


def _blocks(g: _Graph, pairs: np.ndarray, rest: np.ndarray, whole_dag: bool):
    """Per block of destinations: ``(dag, idx, node)`` where ``idx`` are pair indices and
    ``node`` the flattened ``row * n + src`` of each pair; ``dag`` is every shortest-path
    link (:func:`_bfs`) or, without ``whole_dag``, the next hops of :func:`_nearest`."""
    dst = pairs[rest, 1]
    order = np.argsort(dst, kind="stable")
    idx_sorted, dst_sorted = rest[order], dst[order]
    targets, first, inverse = np.unique(dst_sorted, return_index=True, return_inverse=True)
    per_block = max(1, BLOCK_ELEMENTS // max(g.n, g.m, 1))
    bounds = np.append(first, len(dst_sorted))
    for a in range(0, len(targets), per_block):
        b = min(a + per_block, len(targets))
        idx = idx_sorted[bounds[a]:bounds[b]]
        node = (inverse[bounds[a]:bounds[b]] - a).astype(np.int64) * g.n + pairs[idx, 0]
        if whole_dag:
            dag = _bfs(g, targets[a:b], node)
        else:
            dag = _nearest(g, targets[a:b], inverse[bounds[a]:bounds[b]] - a, pairs[idx, 0])
        bad = dag.dist[node] == _FAR
        if bad.any():
            s, d = (int(x) for x in pairs[idx[bad][0]])
            raise TopologyError(f"no path from node {s} to node {d}", item=f"path {s}->{d}")
        yield dag, idx, node


# ----------------------------------------------------------------- deterministic
@dataclass(frozen=True, eq=False)
class _NextHops:
    """Per flattened ``row * n + node``: hop distance to the row's target and the
    lowest-index link leaving ``node`` on a shortest path to it."""

    dist: np.ndarray
    nh: np.ndarray


def _nearest(g: _Graph, targets: np.ndarray, rows: np.ndarray, sources: np.ndarray
             ) -> _NextHops:
    """The compiled search (:mod:`._nexthop`) for ``targets``; ``rows`` (sorted) and
    ``sources`` list the pairs that must be reached."""
    from ._nexthop import nearest_links

    need_ptr = np.zeros(len(targets) + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=len(targets)), out=need_ptr[1:])
    dist, nh = nearest_links(g.in_ptr, g.in_link, g.src.astype(np.int64), g.n,
                             targets.astype(np.int64), need_ptr, sources.astype(np.int64))
    return _NextHops(dist, nh)


def _walk(g: _Graph, dag: _NextHops, node: np.ndarray, hops: np.ndarray, starts: np.ndarray,
          out: np.ndarray) -> np.ndarray:
    """Walk all pairs of a block at once, writing the lowest-index shortest-path link of
    hop ``h`` of pair ``i`` to ``out[starts[i] + h]``; returns the summed hop latencies."""
    nh = dag.nh
    delta = g.dst - g.src
    order = np.argsort(-hops, kind="stable")
    cur, hops_o, starts_o = node[order], hops[order], starts[order]
    lat = np.zeros(len(order))
    for h in range(int(hops_o[0]) if len(hops_o) else 0):
        k = int(np.searchsorted(-hops_o, -h, side="left"))  # pairs with more than h hops
        lk = nh[cur[:k]]
        out[starts_o[:k] + h] = lk
        lat[:k] += g.hop_lat[lk]
        cur[:k] += delta[lk]
    res = np.empty_like(lat)
    res[order] = lat
    return res


def _shortest_links(g: _Graph, pairs: np.ndarray):
    """Deterministic routing: ``(hops, bptr, rep, latency)`` where ``rep`` lists the
    lowest-index link of each hop's bundle."""
    s, d = pairs[:, 0], pairs[:, 1]
    hops = np.zeros(len(pairs), dtype=np.int64)
    lat = np.zeros(len(pairs))
    b = _bundle(g, s, d)
    direct = (b >= 0) & (s != d)
    hops[direct] = 1
    lat[direct] = g.blat[b[direct]]
    rest = np.flatnonzero((b < 0) & (s != d))
    blocks = []
    for dag, idx, node in _blocks(g, pairs, rest, whole_dag=False):
        hops[idx] = dag.dist[node]
        blocks.append((dag, idx, node))
    bptr = np.zeros(len(pairs) + 1, dtype=np.int64)
    np.cumsum(hops, out=bptr[1:])
    rep = np.empty(bptr[-1], dtype=np.int64)
    rep[bptr[:-1][direct]] = g.blinks[g.bptr[b[direct]]]
    for dag, idx, node in blocks:
        lat[idx] = _walk(g, dag, node, hops[idx], bptr[idx], rep) - g.fwd[d[idx]]
    return hops, bptr, rep, lat


def _from_bundles(g: _Graph, bptr: np.ndarray, seq: np.ndarray, latency: np.ndarray,
                  hops: np.ndarray) -> Routes:
    """Routes whose hop ``k`` uses all of bundle ``seq[k]``, split by bandwidth."""
    sizes = g.bsize[seq]
    cs = np.zeros(len(seq) + 1, dtype=np.int64)
    np.cumsum(sizes, out=cs[1:])
    e = _segments(g.bptr[seq], sizes)
    return Routes(_ro(cs[bptr]), _ro(g.blinks[e]), _ro(g.bfrac[e]), _ro(latency), _ro(hops))


def _route_shortest(g: _Graph, pairs: np.ndarray) -> Routes:
    hops, bptr, rep, latency = _shortest_links(g, pairs)
    if not g.simple:
        return _from_bundles(g, bptr, g.bundle_of[rep], latency, hops)
    return Routes(_ro(bptr), _ro(rep), _ro(np.ones(len(rep))), _ro(latency), _ro(hops))


# ------------------------------------------------------------------- multipath
def _weights(g: _Graph, dag: _Dag, spray: bool, depth: int) -> np.ndarray:
    """Share of a node's flow that each DAG link carries."""
    cnt = np.diff(dag.ptr)
    if not spray:
        return 1.0 / cnt[dag.key]
    init = np.zeros(len(dag.dist))
    init[np.arange(len(dag.targets)) * dag.n + dag.targets] = 1.0
    npaths = init
    for _ in range(depth):  # after k rounds, nodes k hops away hold their path counts
        npaths = init + np.bincount(dag.key, weights=npaths[dag.head], minlength=len(init))
    return npaths[dag.head] / npaths[dag.key]


def _max_latency(g: _Graph, dag: _Dag, depth: int) -> np.ndarray:
    """Per flattened node: the largest latency over its shortest paths to the target."""
    head = dag.head % dag.n
    row = dag.key // dag.n
    step = g.lat[dag.link] + np.where(head == dag.targets[row], 0.0, g.fwd[head])
    lmax = np.zeros(len(dag.dist))
    has = np.diff(dag.ptr) > 0
    seg = dag.ptr[:-1][has]
    for _ in range(depth if len(seg) else 0):
        lmax[has] = np.maximum.reduceat(step + lmax[dag.head], seg)
    return lmax


def _propagate(dag: _Dag, node: np.ndarray, weight: np.ndarray):
    """Split one unit of flow per pair over its DAG, hop by hop; returns the
    ``(pair, link, fraction)`` entries (each pair meets each of its links once)."""
    size = len(dag.dist)
    j = np.arange(len(node), dtype=np.int64)
    flow = np.ones(len(node))
    out_j, out_l, out_f = [], [], []
    while len(j):
        c = dag.ptr[node + 1] - dag.ptr[node]
        e = _segments(dag.ptr[node], c)
        jj = np.repeat(j, c)
        ff = np.repeat(flow, c) * weight[e]
        out_j.append(jj)
        out_l.append(dag.link[e])
        out_f.append(ff)
        merged, inv = np.unique(jj * size + dag.head[e], return_inverse=True)
        flow = np.bincount(inv, weights=ff)
        j, node = merged // size, merged % size
    return np.concatenate(out_j), np.concatenate(out_l), np.concatenate(out_f)


def _route_multipath(g: _Graph, pairs: np.ndarray, spray: bool) -> Routes:
    s, d = pairs[:, 0], pairs[:, 1]
    m = len(pairs)
    hops = np.zeros(m, dtype=np.int64)
    latency = np.zeros(m)
    b = _bundle(g, s, d)
    direct = np.flatnonzero((b >= 0) & (s != d))
    hops[direct] = 1
    latency[direct] = g.blat[b[direct]]
    # a direct bundle is the whole shortest-path DAG: each parallel link is one path/port
    sz = g.bsize[b[direct]]
    ent_j = [np.repeat(direct, sz)]
    ent_l = [g.blinks[_segments(g.bptr[b[direct]], sz)]]
    ent_f = [1.0 / np.repeat(sz, sz)]
    rest = np.flatnonzero((b < 0) & (s != d))
    for dag, idx, node in _blocks(g, pairs, rest, whole_dag=True):
        h = dag.dist[node].astype(np.int64)
        hops[idx] = h
        depth = int(h.max())
        latency[idx] = _max_latency(g, dag, depth)[node]
        jj, ll, ff = _propagate(dag, node, _weights(g, dag, spray, depth))
        ent_j.append(idx[jj])
        ent_l.append(ll)
        ent_f.append(ff)
    j = np.concatenate(ent_j)
    order = np.argsort(j, kind="stable")
    ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(j, minlength=m), out=ptr[1:])
    return Routes(_ro(ptr), _ro(np.concatenate(ent_l)[order].astype(np.int64)),
                  _ro(np.concatenate(ent_f)[order]), _ro(latency), _ro(hops))


# ---------------------------------------------------------------------- public
def _as_pairs(pairs) -> np.ndarray:
    p = np.asarray(pairs)
    if p.ndim != 2 or p.shape[1] != 2:
        raise TopologyError(f"pairs must have shape (m, 2), got {p.shape}", item="pairs")
    if p.size and not np.issubdtype(p.dtype, np.integer):
        raise TopologyError(f"pairs must be integers, got dtype {p.dtype}", item="pairs")
    return np.ascontiguousarray(p, dtype=np.int64)


def routes(topology: RoutedFabric, pairs, routing: str | None = None) -> Routes:
    """Route many ``(src, dst)`` node pairs at once.

    Parameters
    ----------
    topology : Topology
        The network.
    pairs : array_like of int, shape (m, 2)
        Source and destination node of each pair; ``(s, s)`` gives an empty route.
    routing : {'shortest', 'ecmp', 'spray'}, optional
        Policy (see the module docstring). Defaults to ``topology.routing``.

    Returns
    -------
    Routes
        One route per pair, in the order of ``pairs``. Memoized per (policy, pairs) in the
        topology's cache (the last :data:`CACHE_SIZE` calls).

    Raises
    ------
    TopologyError
        On an unknown policy, a node that does not exist, or a pair with no path.

    Notes
    -----
    Cost: a search-free lookup for pairs joined by a link; otherwise one BFS per distinct
    destination plus, per hop, vectorized work over the pairs (``"shortest"``) or over
    the shortest-path DAG entries (``"ecmp"``, ``"spray"``).

    Examples
    --------
    Two equal paths ``0 -> 2 -> 1`` and ``0 -> 3 -> 1`` through switches 2 and 3:

    >>> from topocoll.topology import Link, Topology
    >>> cables = [(0, 2), (2, 1), (0, 3), (3, 1)]
    >>> links = [Link(a, b, 1e9) for a, b in cables] + [Link(b, a, 1e9) for a, b in cables]
    >>> t = Topology("two-paths", 2, 2, tuple(links))
    >>> r = routes(t, [[0, 1]], "ecmp")
    >>> r.link.tolist(), r.frac.tolist()
    ([0, 2, 1, 3], [0.5, 0.5, 0.5, 0.5])
    >>> routes(t, [[0, 1]], "shortest").link.tolist()
    [0, 1]
    """
    routing = routing or topology.routing
    if routing not in ROUTINGS:
        raise TopologyError(f"routing must be one of {ROUTINGS}, got {routing!r}",
                            item="routing")
    p = _as_pairs(pairs)
    cache = topology.memo("routes", OrderedDict)
    key = (routing, len(p), hashlib.blake2b(p.tobytes(), digest_size=16).digest())
    hit = cache.get(key)
    if hit is not None:
        cache.move_to_end(key)
        return hit
    g = _graph(topology)
    _check_nodes(g, p.reshape(-1))
    r = _route_shortest(g, p) if routing == "shortest" else \
        _route_multipath(g, p, spray=routing == "spray")
    cache[key] = r
    while len(cache) > CACHE_SIZE:
        cache.popitem(last=False)
    return r


def path_routes(topology: RoutedFabric, path_ptr: np.ndarray, path_nodes: np.ndarray,
                idx: np.ndarray) -> Routes:
    """Routes of transfers that carry explicit node paths.

    Parameters
    ----------
    topology : Topology
        The network.
    path_ptr, path_nodes : ndarray
        CSR node paths as in :class:`~topocoll.schedule.ir.Schedule`: path ``t`` is
        ``path_nodes[path_ptr[t]:path_ptr[t+1]]`` (``src, ..., dst``).
    idx : ndarray of int
        Which paths to route; the result has one route per entry of ``idx``.

    Returns
    -------
    Routes
        Each hop uses its whole bundle, split in proportion to bandwidth. Latency as for
        routed pairs: link latencies plus forwarding latency of intermediate nodes.

    Raises
    ------
    TopologyError
        If a path names a node that does not exist or a hop ``u -> v`` has no link
        (``item`` is ``"link u->v"``).

    Examples
    --------
    >>> import numpy as np
    >>> from topocoll.topology import ring
    >>> r = path_routes(ring(4), np.array([0, 3]), np.array([0, 3, 2]), np.array([0]))
    >>> r.link.tolist(), r.latency.tolist()
    ([4, 7], [2e-06])
    >>> path_routes(ring(4), np.array([0, 2]), np.array([0, 2]), np.array([0]))
    Traceback (most recent call last):
    ...
    topocoll.errors.TopologyError: path 0: no link 0->2
    """
    g = _graph(topology)
    idx = np.asarray(idx, dtype=np.int64)
    path_ptr = np.asarray(path_ptr, dtype=np.int64)
    lens = path_ptr[idx + 1] - path_ptr[idx]
    nodes = np.asarray(path_nodes, dtype=np.int64)[_segments(path_ptr[idx], lens)]
    _check_nodes(g, nodes)
    hops = np.maximum(lens - 1, 0)
    # hop k of a path joins node k and k+1; drop each path's last node as a tail
    last = np.cumsum(lens) - 1
    is_tail = np.ones(len(nodes), dtype=bool)
    is_tail[last[lens > 0]] = False
    tails = np.flatnonzero(is_tail)
    u, v = nodes[tails], nodes[tails + 1]
    seq = _bundle(g, u, v)
    if (seq < 0).any():
        k = int(np.flatnonzero(seq < 0)[0])
        which = int(np.searchsorted(np.cumsum(hops), k, side="right"))
        a, b = int(u[k]), int(v[k])
        raise TopologyError(f"path {int(idx[which])}: no link {a}->{b}", item=f"link {a}->{b}")
    bptr = np.zeros(len(idx) + 1, dtype=np.int64)
    np.cumsum(hops, out=bptr[1:])
    owner = np.repeat(np.arange(len(idx)), hops)
    latency = np.bincount(owner, weights=g.blat[seq] + g.fwd[v],
                          minlength=len(idx)).astype(np.float64)
    has = lens > 1
    latency[has] -= g.fwd[nodes[last[has]]]
    return _from_bundles(g, bptr, seq, latency, hops)


def shortest_path_nodes(topology: RoutedFabric, src: int, dst: int) -> tuple[int, ...]:
    """The deterministic minimum-hop path from ``src`` to ``dst`` as a node tuple.

    Each hop goes to the neighbour reached by the lowest-index link that lies on a
    shortest path to ``dst``: dimension-order routing on tori, the ``+`` direction on an
    even ring tie.

    Raises
    ------
    TopologyError
        If an endpoint does not exist or ``dst`` cannot be reached.

    Examples
    --------
    >>> from topocoll.topology import ring, torus
    >>> shortest_path_nodes(ring(4), 0, 2)
    (0, 1, 2)
    >>> shortest_path_nodes(torus((4, 4)), 0, 10)
    (0, 1, 2, 6, 10)
    """
    g = _graph(topology)
    pairs = np.array([[src, dst]], dtype=np.int64)
    _check_nodes(g, pairs.reshape(-1))
    _, _, rep, _ = _shortest_links(g, pairs)
    return (int(src), *(int(x) for x in g.dst[rep]))


def shortest_path_sets(topology: RoutedFabric, nodes, limit: int = 16
                       ) -> dict[tuple[int, int], list[tuple[int, ...]]]:
    """Every minimum-hop path between every ordered pair of ``nodes``, at most ``limit``
    per pair, as link indices (of parallel links, the lowest id), the first ``limit`` in
    the lexicographic order of their node sequences.

    For engines that pick among explicit paths per packet or per message (DLCP's,
    :mod:`topocoll.sim.dlcp.engine`). A depth-first walk from the source over next hops
    in increasing node order, along the hop distances of a breadth-first search from the
    destination, so no path outside the first ``limit`` is built.

    Raises
    ------
    TopologyError
        On a node that does not exist, ``limit < 1``, or a pair with no path.

    Examples
    --------
    >>> from topocoll.topology import fat_tree
    >>> p = shortest_path_sets(fat_tree(4), [0, 15], limit=3)
    >>> len(p[(0, 15)]), len(p[(0, 15)][0])
    (3, 6)
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    g = _graph(topology)
    ends = np.asarray(list(nodes), dtype=np.int64).reshape(-1)
    _check_nodes(g, ends)
    if limit < 1:
        raise TopologyError(f"limit must be at least 1, got {limit}", item="limit")
    n = g.n
    bsrc, bdst = g.bkey // n, g.bkey % n          # bundles sorted by (src, dst)
    first = g.blinks[g.bptr[:-1]]                  # each bundle's lowest link id
    out_ptr = np.searchsorted(bsrc, np.arange(n + 1))
    rev = csr_matrix((np.ones(len(bsrc)), (bdst, bsrc)), shape=(n, n))
    dist = shortest_path(rev, unweighted=True, indices=np.unique(ends))
    row = {int(t): i for i, t in enumerate(np.unique(ends))}
    out: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    for d in ends.tolist():
        dd = dist[row[d]]
        for s in ends.tolist():
            if s == d:
                continue
            if not np.isfinite(dd[s]):
                raise TopologyError(f"node {s} cannot reach node {d}", item=f"node {s}")
            found: list[tuple[int, ...]] = []
            stack: list[tuple[int, tuple[int, ...]]] = [(s, ())]
            while stack and len(found) < limit:
                u, links = stack.pop()
                if u == d:
                    found.append(links)
                    continue
                lo, hi = out_ptr[u], out_ptr[u + 1]
                nxt = [b for b in range(lo, hi) if dd[bdst[b]] == dd[u] - 1]
                for b in reversed(nxt):           # the smallest next node on top
                    stack.append((int(bdst[b]), links + (int(first[b]),)))
            out[(s, d)] = found
    return out


def spread_paths(topology: RoutedFabric, pairs, choice, *, spans: bool = False):
    """Explicit minimum-hop node paths, one per ``(pair, choice)``, spread over the
    equal-cost next hops like per-packet ECMP.

    Walker ``k`` starts at ``pairs[k, 0]``; at each hop it reads the next digit of
    ``choice[k]`` in the mixed radix of the equal-cost next hops it meets (``i =
    choice mod n``, ``choice //= n``) and takes the ``i``-th shortest-path link out of
    its node (in link-id order). Consecutive choices therefore differ in their first
    hop, and ``n_1 n_2 ...`` consecutive choices visit every shortest path once where
    the branching is the same on every path (fat-trees, leaf-spine, tori).

    Parameters
    ----------
    topology : Topology
        The network.
    pairs : array_like of int, shape (m, 2)
        Source and destination node of each walker (``(s, s)`` gives the path ``(s,)``).
    choice : array_like of int, shape (m,)
        Non-negative path selector of each walker.

    Returns
    -------
    ptr, nodes : ndarray
        CSR node paths: walker ``k`` takes ``nodes[ptr[k]:ptr[k+1]]`` (``src, ..., dst``),
        the layout of :class:`~topocoll.schedule.ir.Schedule` paths.
    span : ndarray
        Only with ``spans=True``: per walker, the product of the equal-cost next-hop
        counts met on its path (the number of paths its pair has where the branching is
        uniform).

    Raises
    ------
    TopologyError
        On a node that does not exist, a negative choice or a pair with no path.

    Examples
    --------
    Host 0 to host 15 of a k=4 fat-tree: 2 aggregation x 2 core switches, four paths:

    >>> from topocoll.topology import fat_tree
    >>> ptr, nodes = spread_paths(fat_tree(4), [[0, 15]] * 4 + [[3, 3]], [0, 1, 2, 3, 0])
    >>> for k in range(5):
    ...     print(nodes[ptr[k]:ptr[k + 1]].tolist())
    [0, 16, 24, 32, 30, 23, 15]
    [0, 16, 25, 34, 31, 23, 15]
    [0, 16, 24, 33, 30, 23, 15]
    [0, 16, 25, 35, 31, 23, 15]
    [3]
    """
    g = _graph(topology)
    p = _as_pairs(pairs)
    choice = np.asarray(choice, dtype=np.int64).reshape(-1)
    if len(choice) != len(p):
        raise TopologyError(f"choice has {len(choice)} entries for {len(p)} pairs",
                            item="choice")
    if len(choice) and choice.min() < 0:
        raise TopologyError(f"choice must be >= 0, got {int(choice.min())}", item="choice")
    _check_nodes(g, p.reshape(-1))
    hops = np.zeros(len(p), dtype=np.int64)
    span = np.ones(len(p), dtype=np.int64)
    rows: list[tuple[np.ndarray, np.ndarray]] = []       # (walker ids, padded node matrix)
    rest = np.flatnonzero(p[:, 0] != p[:, 1])
    for dag, idx, node in _blocks(g, p, rest, whole_dag=True):
        h = dag.dist[node].astype(np.int64)
        hops[idx] = h
        mat = np.full((len(idx), int(h.max()) + 1), -1, dtype=np.int64)
        mat[:, 0] = p[idx, 0]
        cur, rem = node.copy(), choice[idx].copy()
        for step in range(int(h.max())):
            a = np.flatnonzero(h > step)
            lo = dag.ptr[cur[a]]
            cnt = dag.ptr[cur[a] + 1] - lo
            lk = dag.link[lo + rem[a] % cnt]
            rem[a] //= cnt
            span[idx[a]] = np.minimum(span[idx[a]] * cnt, 1 << 40)
            cur[a] += g.dst[lk] - g.src[lk]
            mat[a, step + 1] = g.dst[lk]
        rows.append((idx, mat))
    ptr = np.zeros(len(p) + 1, dtype=np.int64)
    np.cumsum(hops + 1, out=ptr[1:])
    nodes = np.empty(int(ptr[-1]), dtype=np.int64)
    same = np.flatnonzero(p[:, 0] == p[:, 1])
    nodes[ptr[same]] = p[same, 0]
    for idx, mat in rows:
        keep = mat >= 0
        walker = np.repeat(idx, keep.sum(axis=1))
        nodes[ptr[walker] + np.nonzero(keep)[1]] = mat[keep]
    return (ptr, nodes, span) if spans else (ptr, nodes)
