"""Timed spanning trees and the pricing heuristic of the timed-tree LP.

:class:`TimedTree` is one column of :func:`~topocoll.optimum.timedlp.timed_lp`: a
spanning arborescence whose arcs carry a step and a path through the fabric. :class:`Net`
is the fabric as the LP sees it (parallel links as one bundle of summed bandwidth, like the
cost model; optionally reversed). :func:`price_root` is the pricing heuristic: shortest
paths per step under the dual lengths, a Prim-like growth in the time-expanded graph
(each unreached member attached at its cheapest (parent, step) with ``step > s(parent)``;
holding data is free), then passes that re-parent / re-time single vertices while the
children's steps stay later. It is a heuristic for a directed-Steiner problem: it may miss
an improving tree, never report a wrong one (its cost is evaluated exactly).

References
----------
.. [1] Takahashi and Matsuyama, "An approximate solution for the Steiner problem in
   graphs", Math. Japonica 24, 1980.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from ..errors import TopologyError
from .maxflow import capacity_graph

if TYPE_CHECKING:
    from ..topology import Topology
    from .packing import Packing

__all__ = ["TimedTree", "Net", "price_root", "seed_trees", "packing_seeds", "suffix_min"]

Path = tuple[int, ...]
#: Length added per hop to the dual lengths (prefers short paths among equal ones).
HOP_EPS = 1e-7


@dataclass(frozen=True)
class TimedTree:
    """A spanning arborescence of ``root`` with a step per arc.

    ``arcs`` holds ``(parent, child, step, pieces)``; ``pieces`` are ``(path, fraction)``
    (node paths from parent to child, fractions summing to 1: the arc's data is split
    over them, as tree packings split arcs over switch paths).

    Examples
    --------
    >>> t = TimedTree(0, ((0, 1, 1, (((0, 1), 1.0),)), (1, 2, 2, (((1, 2), 1.0),))))
    >>> t.depth()
    2
    """

    root: int
    arcs: tuple[tuple[int, int, int, tuple[tuple[Path, float], ...]], ...]

    def depth(self) -> int:
        """The last step used."""
        return max((a[2] for a in self.arcs), default=0)

    def key(self):
        return (self.root, self.arcs)


class Net:
    """The fabric for the LP: directed bundles, bandwidths, latencies, member index."""

    def __init__(self, topology: Topology, ranks: Sequence[int] | None, reverse: bool):
        g = capacity_graph(topology, ranks)           # validates the ranks
        self.members = tuple(int(m) for m in g.members)
        self.n = topology.num_nodes
        bw: dict[tuple[int, int], float] = {}
        lat: dict[tuple[int, int], float] = {}
        for lk in topology.links:
            k = (lk.dst, lk.src) if reverse else (lk.src, lk.dst)
            bw[k] = bw.get(k, 0.0) + lk.bandwidth
            lat[k] = min(lat.get(k, np.inf), lk.latency)
        keys = sorted(bw)
        self.index = {k: i for i, k in enumerate(keys)}
        self.src = np.array([k[0] for k in keys], np.int64)
        self.dst = np.array([k[1] for k in keys], np.int64)
        self.bw = np.array([bw[k] for k in keys])
        self.lat = np.array([lat[k] for k in keys])
        self.fwd = topology.forwarding_latency
        self.bw_max = float(self.bw.max())
        self.inv_c = self.bw_max / self.bw
        self.num_links = len(keys)
        self._floor: np.ndarray | None = None      # latency_floor(), computed once
        self._usable: dict[int, np.ndarray] = {}   # usable(hops) per hop limit

    def hops(self, path: Path) -> list[int]:
        return [self.index[a, b] for a, b in zip(path, path[1:], strict=False)]

    def latency(self, path: Path) -> float:
        """Route latency of a path (link latencies plus forwarding at relays)."""
        return float(sum(self.lat[self.hops(path)]) + sum(self.fwd[list(path[1:-1])]))

    def latency_floor(self) -> np.ndarray:
        """Per link bundle the least route latency (:meth:`latency`) of a walk from a
        member to another member over it: what any transfer on the link pays at least
        (a floor: walks may repeat nodes).

        >>> from topocoll.topology import star
        >>> (Net(star(3), None, False).latency_floor() * 1e6).round(3).tolist()
        [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
        """
        if self._floor is None:
            # an arc costs its latency plus forwarding at its tail (the sender pays none)
            self._floor = np.maximum(self._through(self.lat + self.fwd[self.src],
                                                   self.fwd), 0.0)
            self._floor.flags.writeable = False
        return self._floor

    def usable(self, hops: int) -> np.ndarray:
        """Per link bundle: is it on a member-to-member walk of at most ``hops`` links
        (else no path of the pricing can use it)?"""
        if hops not in self._usable:
            u = self._through(np.ones(self.num_links), np.zeros(self.n)) <= hops + 0.5
            u.flags.writeable = False
            self._usable[hops] = u
        return self._usable[hops]

    def _through(self, w: np.ndarray, tail: np.ndarray) -> np.ndarray:
        """Per link ``l``: the least (member a -> src l) + w_l + (dst l -> member b) over
        members ``a != b``, for arc weights ``w`` that charge ``tail`` at their tail
        (which the sender ``a`` does not pay)."""
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import dijkstra

        m = np.array(self.members, np.int64)
        tiny = 1e-300                  # keeps zero-weight arcs in the sparse graph
        G = csr_matrix((w + tiny, (self.src, self.dst)), shape=(self.n, self.n))
        to = dijkstra(G, indices=m)[:, self.src] - tail[m][:, None] + tail[self.src][None, :]
        to[m[:, None] == self.src[None, :]] = 0.0
        back = dijkstra(G.T.tocsr(), indices=m)[:, self.dst]
        back[m[:, None] == self.dst[None, :]] = 0.0
        ia = np.argsort(to, axis=0, kind="stable")[:2]
        ib = np.argsort(back, axis=0, kind="stable")[:2]
        cols = np.arange(self.num_links)
        a0, a1 = to[ia[0], cols], to[ia[1], cols]
        b0, b1 = back[ib[0], cols], back[ib[1], cols]
        best = np.where(ia[0] != ib[0], a0 + b0, np.minimum(a0 + b1, a1 + b0))
        return best + w - tail[self.src]

    def hop_limits(self) -> tuple[int, ...]:
        """Path-length limits worth trying: the fewest hops that keep the members
        strongly connected (short paths: less latency per step) and the fewest that
        connect every ordered member pair directly (the default)."""
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components

        D, _ = _bellman(self.src, self.dst, np.ones(self.num_links), self.n,
                        np.array(self.members, np.int64), self.n)
        d = D[:, list(self.members)]
        if not np.isfinite(d).all():
            i, j = np.argwhere(~np.isfinite(d))[0]
            raise TopologyError(f"rank {self.members[j]} cannot be reached from rank "
                                f"{self.members[i]}", item=f"rank {self.members[j]}")
        full = int(round(d.max()))
        for k in sorted(set(np.round(d[d > 0]).astype(int).tolist())):
            if connected_components(csr_matrix((d <= k) & (d > 0)), directed=True,
                                    connection="strong")[0] == 1:
                return (k, full) if k < full else (full,)
        return (full,)  # pragma: no cover - the full limit always connects

    def distances(self, W: np.ndarray, hops: int, tie_break: bool = True
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Member-to-member shortest path lengths per step under link lengths
        ``W[s] / c`` (plus :data:`HOP_EPS` per microsecond of latency if ``tie_break``)
        over paths of at most ``hops`` links: ``D`` (H, N, N) and the per-layer
        predecessor arcs."""
        H = W.shape[0]
        N = len(self.members)
        D = np.empty((H, N, N))
        preds = []
        eps = HOP_EPS * (1.0 + self.lat / 1e-6) if tie_break else np.zeros(self.num_links)
        src = np.array(self.members, np.int64)
        for s in range(H):
            d, pe = _bellman(self.src, self.dst, W[s] * self.inv_c + eps, self.n, src, hops)
            D[s] = d[:, src]
            preds.append(pe)
        return D, np.array(preds)

    def path(self, pred: np.ndarray, s: int, i: int, j: int) -> Path:
        """Shortest path of step ``s`` (1-based) from member ``i`` to member ``j``."""
        pe = pred[s - 1]
        k, v, out = pe.shape[0] - 1, self.members[j], [self.members[j]]
        while v != self.members[i]:
            e = pe[k, i, v]
            k -= 1
            if e >= 0:
                v = int(self.src[e])
                out.append(v)
        return tuple(reversed(out))


@njit(cache=True)
def _bellman(src, dst, w, n, sources, K):  # pragma: no cover - compiled
    """Hop-limited shortest paths: distances over <= K arcs and, per layer, the arc that
    improved each node (-1: carried over from the layer before)."""
    S = len(sources)
    d = np.full((S, n), np.inf)
    pe = np.full((K + 1, S, n), -1, np.int64)
    for i in range(S):
        d[i, sources[i]] = 0.0
    for k in range(1, K + 1):
        prev = d.copy()
        for e in range(len(src)):
            a, b, we = src[e], dst[e], w[e]
            for i in range(S):
                c = prev[i, a] + we
                if c < d[i, b]:
                    d[i, b] = c
                    pe[k, i, b] = e
    return d, pe


def suffix_min(D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``SM[t] = min_{s > t} D[s - 1]`` and its earliest step (``t = 0 .. H``)."""
    H = D.shape[0]
    SM = np.full((H + 1,) + D.shape[1:], np.inf)
    AS = np.zeros((H + 1,) + D.shape[1:], np.int64)
    for t in range(H - 1, -1, -1):
        better = D[t] <= SM[t + 1]
        SM[t] = np.where(better, D[t], SM[t + 1])
        AS[t] = np.where(better, t + 1, AS[t + 1])
    return SM, AS


@njit(cache=True)
def _grow(SM, AS, root):  # pragma: no cover - compiled
    """Prim-like growth: attach the cheapest unreached member at its cheapest step."""
    N = SM.shape[1]
    H = SM.shape[0] - 1
    tm = np.full(N, -1, np.int64)
    par = np.full(N, -1, np.int64)
    done = np.zeros(N, np.bool_)
    best = SM[0, root].copy()
    bstep = AS[0, root].copy()
    bpar = np.full(N, root, np.int64)
    tm[root] = 0
    done[root] = True
    for _ in range(N - 1):
        w, m = -1, np.inf
        for x in range(N):
            if not done[x] and best[x] < m:
                m, w = best[x], x
        if w < 0:
            return par, tm, False
        done[w] = True
        tm[w] = bstep[w]
        par[w] = bpar[w]
        t = tm[w]
        if t < H:
            for x in range(N):
                if not done[x] and SM[t, w, x] < best[x]:
                    best[x] = SM[t, w, x]
                    bstep[x] = AS[t, w, x]
                    bpar[x] = w
    return par, tm, True


@njit(cache=True)
def _improve(D, par, tm, root, passes):  # pragma: no cover - compiled
    """Local search: move a vertex (children keep their steps) or its whole subtree
    (shifted by the same number of steps) under another parent; returns the cost."""
    H, N = D.shape[0], D.shape[1]
    insub = np.zeros(N, np.bool_)
    for _ in range(passes):
        changed = False
        for v in range(N):
            if v == root:
                continue
            minchild, maxsub = H + 1, 0
            for u in range(N):
                a = u
                while a != root and a != v:
                    a = par[a]
                insub[u] = a == v
                if insub[u] and tm[u] > maxsub:
                    maxsub = tm[u]
                if par[u] == v and tm[u] < minchild:
                    minchild = tm[u]
            cur = D[tm[v] - 1, par[v], v]
            sub = 0.0
            for u in range(N):
                if insub[u] and u != v:
                    sub += D[tm[u] - 1, par[u], u]
            gain, bu, bs, bshift = 1e-12 * (1.0 + cur + sub), -1, -1, False
            for u in range(N):
                if insub[u]:
                    continue
                for s in range(tm[u] + 1, H + 1):
                    if s < minchild:                  # v alone
                        g = cur - D[s - 1, u, v]
                        if g > gain:
                            gain, bu, bs, bshift = g, u, s, False
                    d = s - tm[v]
                    if d != 0 and maxsub + d <= H:   # the whole subtree shifted by d
                        c = D[s - 1, u, v]
                        for x in range(N):
                            if insub[x] and x != v:
                                c += D[tm[x] + d - 1, par[x], x]
                        g = cur + sub - c
                        if g > gain:
                            gain, bu, bs, bshift = g, u, s, True
            if bu >= 0:
                if bshift:
                    d = bs - tm[v]
                    for x in range(N):
                        if insub[x] and x != v:
                            tm[x] += d
                par[v] = bu
                tm[v] = bs
                changed = True
        if not changed:
            break
    cost = 0.0
    for v in range(N):
        if v != root:
            cost += D[tm[v] - 1, par[v], v]
    return cost


@njit(cache=True)
def _label_cost(D, tm, root, par):  # pragma: no cover - compiled
    """Cost of the time labels ``tm``: every member takes its cheapest parent among the
    members labelled earlier (written to ``par``); inf if one has none."""
    N = D.shape[1]
    total = 0.0
    for v in range(N):
        if v == root:
            continue
        s = tm[v]
        best, bu = np.inf, -1
        for u in range(N):
            if u != v and tm[u] < s and D[s - 1, u, v] < best:
                best, bu = D[s - 1, u, v], u
        if bu < 0:
            return np.inf
        par[v] = bu
        total += best
    return total


@njit(cache=True)
def _retime(D, tm, root, passes):  # pragma: no cover - compiled
    """Local search over the time labels alone (parents follow: each member's cheapest
    earlier-labelled member): move one member to another step while it lowers the cost.
    Re-timing a member re-parents all its would-be children at once, a move that the
    parent-based search cannot make. Returns the cost; ``tm`` and the parents (from
    :func:`_label_cost`) describe the tree."""
    H, N = D.shape[0], D.shape[1]
    par = np.full(N, -1, np.int64)
    cur = _label_cost(D, tm, root, par)
    for _ in range(passes):
        changed = False
        for v in range(N):
            if v == root:
                continue
            keep = tm[v]
            for s in range(1, H + 1):
                if s == keep:
                    continue
                tm[v] = s
                c = _label_cost(D, tm, root, par)
                if c < cur - 1e-12 * (1.0 + abs(cur)):
                    cur, keep, changed = c, s, True
            tm[v] = keep
        if not changed:
            break
    _label_cost(D, tm, root, par)
    return cur, par


def _as_tree(net: Net, pred: np.ndarray, i: int, par: np.ndarray, tm: np.ndarray) -> TimedTree:
    order = np.argsort(tm, kind="stable")
    return TimedTree(net.members[i], tuple(
        (net.members[int(par[v])], net.members[int(v)], int(tm[v]),
         ((net.path(pred, int(tm[v]), int(par[v]), int(v)), 1.0),))
        for v in order if v != i))


#: Most LP trees :func:`price_root` restarts the local search from (the cheapest under
#: today's lengths), and how many of the results it also re-times.
MAX_STARTS, MAX_RETIME = 12, 4


def _tree_cost(D: np.ndarray, par: np.ndarray, tm: np.ndarray, root: int) -> float:
    v = np.flatnonzero(np.arange(len(par)) != root)
    return float(D[tm[v] - 1, par[v], v].sum())


def price_root(net: Net, D: np.ndarray, SM: np.ndarray, AS: np.ndarray, pred: np.ndarray,
               i: int, starts: Sequence[TimedTree] = (), passes: int = 6, keep: int = 2
               ) -> list[tuple[float, TimedTree]]:
    """Heuristic cheap timed trees of member index ``i`` under ``D``: the growth tree and
    the :data:`MAX_STARTS` cheapest of ``starts`` (the root's trees in the current LP
    solution, re-routed along today's shortest paths), improved by local search, the
    :data:`MAX_RETIME` best also by re-timing (:func:`_retime`); the ``keep`` cheapest
    as ``(cost, tree)`` pairs."""
    cands = []
    par, tm, ok = _grow(SM, AS, i)
    if ok:
        cands.append((par, tm))
    pos = {m: k for k, m in enumerate(net.members)}
    restarts = []
    for t in starts:
        par = np.full(len(net.members), -1, np.int64)
        tm = np.zeros(len(net.members), np.int64)
        for x, y, st, _ in t.arcs:
            par[pos[y]], tm[pos[y]] = pos[x], st
        restarts.append((_tree_cost(D, par, tm, i), par, tm))
    restarts.sort(key=lambda c: c[0])
    cands += [(par, tm) for _, par, tm in restarts[:MAX_STARTS]]
    scored = []
    for par, tm in cands:
        cost = _improve(D, par, tm, i, passes)
        if np.isfinite(cost):
            scored.append((float(cost), par, tm))
    scored.sort(key=lambda c: c[0])
    for _, par, tm in scored[:MAX_RETIME]:
        tm = tm.copy()
        cost, par = _retime(D, tm, i, passes)
        cost = _improve(D, par, tm, i, passes)
        if np.isfinite(cost):
            scored.append((float(cost), par, tm))
    scored.sort(key=lambda c: c[0])
    return [(c, _as_tree(net, pred, i, par, tm)) for c, par, tm in scored[:keep]]


def seed_trees(net: Net, H: int, hops: int, roots: Sequence[int] | None = None
               ) -> list[TimedTree]:
    """Starting columns: per root (default every member) a star at every step
    (shortest-hop paths) and the pricer's tree under uniform lengths."""
    N = len(net.members)
    D, pred = net.distances(np.ones((H, net.num_links)), hops)
    SM, AS = suffix_min(D)
    out = []
    for i in (range(N) if roots is None else [net.members.index(r) for r in roots]):
        for s in range(1, H + 1) if np.isfinite(D[0, i]).all() else ():
            out.append(TimedTree(net.members[i], tuple(
                (net.members[i], net.members[j], s, ((net.path(pred, s, i, j), 1.0),))
                for j in range(N) if j != i)))
        out.extend(t for _, t in price_root(net, D, SM, AS, pred, i, keep=1))
    return out


def packing_seeds(packing: Packing, H: int, loopless) -> list[TimedTree]:
    """A tree packing's classes as timed trees at step = depth, shifted by ``0 .. H - D``
    (``loopless`` cuts cycles out of switch paths)."""
    out = []
    for tc in packing.classes():
        dep = tc.depth()
        D = max(dep.values())
        arcs = [(x, y, dep[y], tuple((loopless(p), c / tc.mult) for p, c in pieces))
                for x, y, pieces in tc.arcs]
        for k in range(H - D + 1):
            out.append(TimedTree(tc.root, tuple((x, y, s + k, pc) for x, y, s, pc in arcs)))
    return out
