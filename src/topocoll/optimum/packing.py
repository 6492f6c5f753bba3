"""Spanning out-tree packing that attains the exact allgather optimum (ForestColl).

Given the optimum ``x* = U/k`` of :func:`~topocoll.optimum.maxflow.allgather_optimum`
(in capacity units), scale every arc to ``U·c`` and look for ``k`` spanning out-trees
per member rank, arc-disjoint up to those capacities. Edmonds' branching theorem with
root sets says they exist iff ``maxflow(s -> v) >= (number of trees)`` for every member
``v``, where ``s`` feeds each root (and each partial tree's vertex set) with its tree
count; the optimum is exactly where this holds. Two constructive steps keep it true:

1. **Edge splitting** (:func:`split_switches`): each switch (and each non-member rank)
   ``w`` must have equal in- and out-capacity. Pairs ``(u, w), (w, t)`` are replaced by
   ``(u, t)`` by the largest amount ``μ`` that keeps the test. Only cuts with ``w`` on
   one side and ``u, t`` on the other lose ``μ``, so with ``μ_try`` tested, one round of
   max-flows gives ``μ_max = μ_try - max_v (need - flow_v)``. New arcs remember their
   path through switches.
2. **Tree growth** (:func:`pack_trees`): a class of ``m`` identical partial trees grows
   by an arc ``(x, y)`` (``x`` inside, ``y`` outside) taken by ``μ`` of its copies; the
   same one-round formula gives the largest ``μ``, and ``μ < m`` splits the class.

Arcs leaving the tree are tried shallowest ``x`` first, which keeps trees shallow.

References
----------
.. [1] Zhao et al., "ForestColl", arXiv 2402.06787, 2024 (algorithm and conventions).
.. [2] Edmonds, "Edge-disjoint branchings", 1973; Lovász, "On two minimax theorems in
   graph", JCT B 21, 1976 (the constructive proof).
.. [3] Bang-Jensen, Frank and Jackson, "Preserving and increasing local edge-connectivity
   in mixed graphs", SIAM J. Discrete Math. 8(2), 1995 (splitting off in Eulerian digraphs).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError, NotSupportedError, OverBudgetError
from .maxflow import (
    CapacityGraph,
    FlowGraph,
    allgather_optimum,
    broadcast_optimum,
    capacity_graph,
    sink_members,
)

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["Packing", "TreeClass", "split_switches", "pack_trees", "eulerian_reason",
           "optimal_packing", "broadcast_packing", "packing_work", "packing_budget",
           "PACKING_WORK"]

#: Default work budget of one exact tree packing (:func:`pack_trees` behind
#: :func:`optimal_packing`), in the units of :func:`packing_work`. Measured on the 2-core
#: Xeon of ``docs/performance.md``: about 5 us per unit (0.8 s at 8e5 on ``fat-tree:6``,
#: 12 s at 2.1e6 on ``dgx-h100:16``, 61 s at 8e6 on ``fat-tree:8``, 217 s at 4.5e7 on a
#: 256-rank data-parallel group of a 1,024-GPU fat-tree), so a packing within the default
#: takes seconds. Counted, never timed: the same inputs are packed or refused on any
#: machine. ``$TOPOCOLL_PACKING_WORK`` changes it.
PACKING_WORK = 4_000_000

Path = tuple[int, ...]


@dataclass(frozen=True)
class TreeClass:
    """``mult`` identical spanning out-trees rooted at ``root``.

    ``arcs`` lists ``(parent, child, pieces)`` in growth order; ``pieces`` are
    ``(path, copies)`` with the node path through switches and how many of the
    ``mult`` copies use it (they sum to ``mult``).
    """

    root: int
    mult: int
    arcs: tuple[tuple[int, int, tuple[tuple[Path, int], ...]], ...]

    def depth(self) -> dict[int, int]:
        """Depth of every vertex (root 0)."""
        d = {self.root: 0}
        for x, y, _ in self.arcs:
            d[y] = d[x] + 1
        return d


@dataclass(frozen=True)
class Packing:
    """Spanning out-tree classes with per-root totals, fitting capacities ``scale·c``.

    Attributes
    ----------
    scale : int
        Arc ``e`` may carry ``scale * cap[e]`` trees (``cap`` from :class:`CapacityGraph`).
    per_root : dict
        Root -> number of trees (sum of its class multiplicities).
    trees : tuple of TreeClass
        Every class.
    unit : Fraction
        Bytes/s per capacity unit of the graph.
    max_flows : int
        Max-flow computations used.

    Notes
    -----
    Allgather: ``per_root = k`` for every member and ``scale/k = x*``; each tree carries
    ``1/k`` of its root's block, so the time is ``(M/N) (scale/k) / unit``. Broadcast:
    one root with ``per_root = λ`` (the min-cut rate in capacity units) and ``scale = 1``.
    """

    scale: int
    per_root: dict
    trees: tuple[TreeClass, ...]
    unit: Fraction
    max_flows: int
    torus_shape: tuple[int, ...] = ()

    def classes(self):
        """Every tree class; for a translation-symmetric torus packing (``trees`` holds
        root 0's classes and ``torus_shape`` is set) the translates are generated."""
        if not self.torus_shape:
            yield from self.trees
            return
        shape = self.torus_shape
        N = int(np.prod(shape))
        stride = np.cumprod((1,) + shape[:-1])
        coords = (np.arange(N)[:, None] // stride[None, :]) % np.array(shape)
        for r in range(N):
            perm = (((coords + coords[r]) % np.array(shape)) @ stride).tolist()  # exact
            for tc in self.trees:
                yield TreeClass(r, tc.mult, tuple(
                    (perm[x], perm[y], tuple((tuple(perm[u] for u in path), c)
                                             for path, c in pieces))
                    for x, y, pieces in tc.arcs))

    @property
    def ratio(self) -> Fraction:
        """``scale / trees per root`` in capacity units (allgather: ``x*``)."""
        return Fraction(self.scale, max(self.per_root.values()))

    def arc_loads(self) -> dict[tuple[int, int], int]:
        """Trees crossing each physical arc (paths expanded)."""
        load: dict[tuple[int, int], int] = defaultdict(int)
        for tc in self.classes():
            for _, _, pieces in tc.arcs:
                for path, c in pieces:
                    for u, v in zip(path, path[1:], strict=False):
                        load[u, v] += c
        return dict(load)


def eulerian_reason(g: CapacityGraph) -> str | None:
    """None if every non-member node has equal in- and out-capacity, else why not."""
    members = set(g.members)
    io = defaultdict(int)
    for u, v, c in zip(g.src.tolist(), g.dst.tolist(), g.cap, strict=True):
        io[u] += c
        io[v] -= c
    bad = [w for w, d in io.items() if d and w not in members]
    if bad:
        return (f"node {bad[0]} relays data but its in- and out-capacity differ "
                "(edge splitting needs equal capacities)")
    return None


class _Checker:
    """Max-flow test over a mutable arc map plus auxiliary root-set nodes."""

    def __init__(self, num_nodes: int, members: tuple[int, ...]):
        self.n = num_nodes
        self.members = members
        self.flows = 0

    def flows_for(self, caps: dict[tuple[int, int], int], roots: dict[int, int],
                  sets: list[tuple[frozenset[int], int]],
                  sinks: list[int] | None = None) -> list[int]:
        """``maxflow(s -> v)`` for every sink (default: every member), with ``s -> r``
        of capacity ``roots[r]`` and, per ``(vertex set, m)``, an auxiliary node fed
        ``m`` that reaches every vertex of the set."""
        n = self.n
        s = n + len(sets)
        items = [(u, v, c) for (u, v), c in caps.items() if c > 0]
        src = [u for u, _, _ in items]
        dst = [v for _, v, _ in items]
        cap = [c for _, _, c in items]
        total = sum(roots.values()) + sum(m for _, m in sets)
        for r, c in roots.items():
            if c > 0:
                src.append(s)
                dst.append(r)
                cap.append(c)
        for i, (vs, m) in enumerate(sets):
            if m > 0:
                src.append(s)
                dst.append(n + i)
                cap.append(m)
                src.extend([n + i] * len(vs))
                dst.extend(vs)
                cap.extend([total + 1] * len(vs))
        g = CapacityGraph(s + 1, np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
                          tuple(cap), Fraction(1), self.members)
        f = FlowGraph(g)
        f.set(cap)
        out = [f.value(s, v) for v in (self.members if sinks is None else sinks)]
        self.flows += f.flows
        return out


def _flows_arr(chk: _Checker, asrc: np.ndarray, adst: np.ndarray, cap: np.ndarray,
               roots: dict[int, int], sets: list[tuple[frozenset[int], int]],
               sinks: list[int]) -> list[int]:
    """:meth:`_Checker.flows_for` with the arcs as arrays (the tree-growth hot path)."""
    n = chk.n
    s = n + len(sets)
    total = sum(roots.values()) + sum(m for _, m in sets)
    src, dst, cp = [asrc], [adst], [cap]
    rs = [(r, c) for r, c in roots.items() if c > 0]
    if rs:
        src.append(np.full(len(rs), s))
        dst.append(np.array([r for r, _ in rs]))
        cp.append(np.array([c for _, c in rs]))
    for i, (vs, m) in enumerate(sets):
        if m > 0:
            src.append(np.array([s] + [n + i] * len(vs)))
            dst.append(np.array([n + i] + sorted(vs)))
            cp.append(np.array([m] + [total + 1] * len(vs)))
    src_a = np.concatenate(src).astype(np.int64)
    dst_a = np.concatenate(dst).astype(np.int64)
    cap_a = np.concatenate(cp).astype(np.int64)
    keep = cap_a > 0
    g = CapacityGraph(s + 1, src_a[keep], dst_a[keep], (), Fraction(1), chk.members)
    f = FlowGraph(g)
    f.caps = None
    f.big = False
    m = int(keep.sum())
    c = np.zeros(2 * m, dtype=np.int64)
    c[f.pos[:m]] = cap_a[keep]
    f.cap = c
    out = [f.value(s, v) for v in sinks]
    chk.flows += f.flows
    return out


def _scaled(g: CapacityGraph, scale: int) -> dict[tuple[int, int], int]:
    return {(int(u), int(v)): c * scale
            for u, v, c in zip(g.src.tolist(), g.dst.tolist(), g.cap, strict=True)}


def split_switches(g: CapacityGraph, scale: int, roots: dict[int, int],
                   chk: _Checker | None = None
                   ) -> tuple[dict[tuple[int, int], int], dict[tuple[int, int], list], int]:
    """Remove every non-member node by edge splitting at arc capacities ``scale·c``,
    keeping ``maxflow(s -> v) >= sum(roots)`` for every member ``v`` (``s -> r`` of
    capacity ``roots[r]``).

    Returns
    -------
    caps : dict
        ``(u, t) -> capacity`` between members only.
    pieces : dict
        ``(u, t) -> [[path, capacity], ...]`` (paths through switches).
    max_flows : int

    Raises
    ------
    NotSupportedError
        If a relay node is not Eulerian or cannot be split off completely.
    """
    reason = eulerian_reason(g)
    if reason:
        raise NotSupportedError(reason)
    members = set(g.members)
    chk = chk or _Checker(g.num_nodes, g.members)
    caps = _scaled(g, scale)
    pieces = {a: [[a, c]] for a, c in caps.items()}
    need = sum(roots.values())
    relays = sorted({u for a in caps for u in a} - members)
    for w in relays:
        _split_proportional(w, caps, pieces, roots, need, chk)
        while True:
            ins = [u for (u, x), c in caps.items() if x == w and c > 0]
            outs = [t for (x, t), c in caps.items() if x == w and c > 0]
            if not ins and not outs:
                break
            done = False
            for t in outs:
                # prefer real pairs; a u == t pair only deletes capacity
                for u in sorted(ins, key=lambda u: u == t):
                    mu = min(caps[u, w], caps[w, t])
                    trial = dict(caps)
                    trial[u, w] -= mu
                    trial[w, t] -= mu
                    if u != t:
                        trial[u, t] = trial.get((u, t), 0) + mu
                    quick = [t if t in members else u, w] if {u, t} & members else None
                    if quick is None or min(chk.flows_for(trial, roots, [], quick)) < need:
                        # exact: only cuts with w on one side and u, t on the other lose
                        # mu, so the worst member's shortfall is what must be given back
                        flows = chk.flows_for(trial, roots, [])
                        mu -= max(0, max(need - f for f in flows))
                    if mu <= 0:
                        continue
                    _move(caps, pieces, u, w, t, mu)
                    done = True
                    break
                if done:
                    break
            if not done:
                raise NotSupportedError(f"node {w} cannot be split off while keeping the "
                                        "optimum (no admissible pair)")
    keep = {a: c for a, c in caps.items() if c > 0}
    return keep, {a: [p for p in pieces[a] if p[1] > 0] for a in keep}, chk.flows


def _split_proportional(w, caps, pieces, roots, need, chk) -> None:
    """Try splitting ``w`` in one go, each pair getting ``a_u b_t / total`` (rounded
    down): on a switch that every member reaches symmetrically this yields direct arcs
    (shallow trees). Kept only if the test passes for every member."""
    ins = {u: c for (u, x), c in caps.items() if x == w and c > 0}
    outs = {t: c for (x, t), c in caps.items() if x == w and c > 0}
    if not ins or not outs:
        return
    U, T = list(ins), list(outs)
    a = np.array([ins[u] for u in U], dtype=float)
    b = np.array([outs[t] for t in T], dtype=float)
    y = np.outer(a, b)
    y[np.equal.outer(np.array(U), np.array(T))] = 0.0
    for _ in range(50):  # iterative proportional fitting to both margins, no u == t
        y *= (a / np.maximum(y.sum(axis=1), 1e-300))[:, None]
        y *= (b / np.maximum(y.sum(axis=0), 1e-300))[None, :]
    q = np.floor(y + 1e-9).astype(np.int64)
    for i in range(len(U)):  # floors of an approximate solution may overshoot a margin
        while q[i].sum() > ins[U[i]]:
            q[i, int(np.argmax(q[i]))] -= 1
    for j in range(len(T)):
        while q[:, j].sum() > outs[T[j]]:
            q[int(np.argmax(q[:, j])), j] -= 1
    # hand out what rounding left, one unit at a time, largest remainders first
    r = np.array([ins[u] for u in U]) - q.sum(axis=1)
    c = np.array([outs[t] for t in T]) - q.sum(axis=0)
    # remainders equal up to the fitting's rounding are ties, broken along anti-diagonals
    # ((i + j) mod |T|, then i: a Latin square, so every row and column gets one unit
    # before any gets two); the order is canonical, never the sort's or the CPU's
    frac = np.round(y - q, 9)
    ii, jj = np.indices(frac.shape)
    flat = np.lexsort((ii.ravel(), ((ii + jj) % len(T)).ravel(), -frac.ravel()))
    order = [(i, j) for i, j in zip(*np.unravel_index(flat, frac.shape), strict=True)
             if U[i] != T[j]]
    while r.sum() and c.sum():
        moved = False
        for i, j in order:
            if r[i] and c[j]:
                q[i, j] += 1
                r[i] -= 1
                c[j] -= 1
                moved = True
        if not moved:
            break
    plan = [(U[i], T[j], int(q[i, j])) for i in range(len(U)) for j in range(len(T))
            if q[i, j] > 0]
    if not plan:
        return
    trial = dict(caps)
    for u, t, mu in plan:
        trial[u, w] -= mu
        trial[w, t] -= mu
        trial[u, t] = trial.get((u, t), 0) + mu
    if min(chk.flows_for(trial, roots, [])) >= need:
        for u, t, mu in plan:
            _move(caps, pieces, u, w, t, mu)


def _take(pieces: list, amount: int) -> list[tuple[Path, int]]:
    """Remove ``amount`` capacity from ``pieces`` (first pieces first)."""
    out = []
    for p in pieces:
        if amount == 0:
            break
        t = min(p[1], amount)
        if t:
            out.append((p[0], t))
            p[1] -= t
            amount -= t
    return out


def _move(caps, pieces, u, w, t, mu) -> None:
    caps[u, w] -= mu
    caps[w, t] -= mu
    a = _take(pieces[u, w], mu)
    b = _take(pieces[w, t], mu)
    if u == t:
        return
    caps[u, t] = caps.get((u, t), 0) + mu
    lst = pieces.setdefault((u, t), [])
    i = j = 0
    a = [list(x) for x in a]
    b = [list(x) for x in b]
    while i < len(a) and j < len(b):
        q = min(a[i][1], b[j][1])
        lst.append([a[i][0] + b[j][0][1:], q])
        a[i][1] -= q
        b[j][1] -= q
        i += a[i][1] == 0
        j += b[j][1] == 0


def pack_trees(g: CapacityGraph, scale: int, roots: dict[int, int]) -> Packing:
    """Pack ``roots[r]`` spanning out-trees per root ``r`` at capacities ``scale·c``.

    Allgather at the optimum ``x* = U/k``: ``scale = U``, ``roots = {v: k}`` for every
    member; broadcast from ``r`` at rate ``λ``: ``scale = 1``, ``roots = {r: λ}``.

    Raises
    ------
    NotSupportedError
        If a relay node is not Eulerian (see :func:`split_switches`) or the demand is
        infeasible.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> from topocoll.optimum.maxflow import capacity_graph
    >>> p = pack_trees(capacity_graph(ring(4, bandwidth=1.0)), 3, {v: 2 for v in range(4)})
    >>> p.ratio, sum(t.mult for t in p.trees if t.root == 0), max(p.arc_loads().values())
    (Fraction(3, 2), 2, 3)
    """
    chk = _Checker(g.num_nodes, g.members)
    caps, pieces, _ = split_switches(g, scale, roots, chk)
    need_total = sum(roots.values())
    if min(chk.flows_for(caps, roots, [])) < need_total:
        raise NotSupportedError(f"{need_total} trees do not fit at scale {scale}")
    arcs_all = list(caps)
    index = {a: i for i, a in enumerate(arcs_all)}
    asrc = np.array([a for a, _ in arcs_all], dtype=np.int64)
    adst = np.array([b for _, b in arcs_all], dtype=np.int64)
    capa = np.array([caps[a] for a in arcs_all], dtype=np.int64)
    out_adj: dict[int, list[int]] = defaultdict(list)
    for (u, v) in arcs_all:
        out_adj[u].append(v)
    unstarted = dict(roots)
    N = len(g.members)
    done: list[TreeClass] = []
    for root, k in roots.items():
        unstarted[root] = 0
        # (root, mult, vertices in order, arcs, arcs that failed, try whole layers)
        stack = [(root, k, [root], [], set(), True)]
        while stack:
            root_, m, verts, arcs, failed, layers = stack[-1]
            if len(verts) == N:
                stack.pop()
                done.append(TreeClass(root_, m, tuple(
                    (x, y, tuple(_take(pieces[x, y], m))) for x, y in arcs)))
                for a in arcs:
                    capa[index[a]] -= m
                continue
            vset = set(verts)
            # arcs already used by partial classes are reserved
            cur = capa.copy()
            for entry in stack:
                for a in entry[3]:
                    cur[index[a]] -= entry[1]
            others = [(frozenset(e[2]), e[1]) for e in stack[:-1]]
            need = sum(unstarted.values()) + sum(e[1] for e in stack)
            grown = False
            # whole layer at once: every outside vertex reachable from the tree by an arc
            # that can carry all m copies; only cuts holding a new vertex lose capacity,
            # so the new vertices are the only sinks to test
            if layers:
                layer, seen = [], set()
                for x in verts:
                    for y in out_adj[x]:
                        if y not in vset and y not in seen and cur[index[x, y]] >= m:
                            layer.append((x, y))
                            seen.add(y)
                if len(layer) > 1:
                    trial = cur.copy()
                    for a in layer:
                        trial[index[a]] -= m
                    sets = others + [(frozenset(vset | seen), m)]
                    if min(_flows_arr(chk, asrc, adst, trial, unstarted, sets,
                                      sorted(seen))) >= need:
                        stack[-1] = (root_, m, verts + [y for _, y in layer], arcs + layer,
                                     failed, True)
                        continue
                    layers = False      # a failed layer rarely succeeds later
            for attempt in (0, 1):      # skip arcs that failed before; then retry them all
                for x in verts:                      # shallowest first
                    for y in out_adj[x]:
                        i = index[x, y]
                        if y in vset or cur[i] <= 0 or (attempt == 0 and (x, y) in failed):
                            continue
                        mu = int(min(m, cur[i]))
                        trial = cur.copy()
                        trial[i] -= mu
                        sets = others + [(frozenset(vset | {y}), mu),
                                         (frozenset(vset), m - mu)]
                        # only cuts holding y but not x lose mu, and every such cut is a
                        # cut for sink y: one max-flow gives the exact admissible count
                        flow = _flows_arr(chk, asrc, adst, trial, unstarted, sets, [y])[0]
                        mu -= max(0, need - flow)
                        if mu <= 0:
                            failed.add((x, y))
                            continue
                        stack.pop()
                        if mu < m:
                            stack.append((root_, m - mu, list(verts), list(arcs), set(failed),
                                          layers))
                        stack.append((root_, mu, verts + [y], arcs + [(x, y)], failed, layers))
                        grown = True
                        break
                    if grown:
                        break
                if grown:
                    break
                failed.clear()
            if not grown:
                raise NotSupportedError(f"tree of root {root_} cannot grow at scale {scale}")
    return Packing(scale, dict(roots), tuple(done), g.unit, chk.flows)


# --------------------------------------------------------------- high level
def _symmetric(g: CapacityGraph) -> bool:
    fwd = set(zip(g.src.tolist(), g.dst.tolist(), g.cap, strict=True))
    return fwd == set(zip(g.dst.tolist(), g.src.tolist(), g.cap, strict=True))


def _torus_trees(topology: Topology, g: CapacityGraph, x: Fraction) -> Packing | None:
    """Translation-symmetric optimal packing of a uniform ``a^d`` torus (``a >= 3``).

    Root 0 gets ``2d`` trees, one per (sign, cyclic dimension order): walk the whole
    ring of the first dimension, then from every reached vertex the whole ring of the
    next, and so on. Each direction is used ``sum_p a^p (a - 1) = N - 1`` times over the
    ``d`` cyclic orders, so the translates of these trees to every root load every arc
    with exactly ``N - 1`` trees, the single-vertex cut's optimum. Returns None unless
    that holds exactly (checked from the per-direction counts).
    """
    dims = topology.dims
    N = topology.num_ranks
    if (topology.num_switches or not dims or any(d.kind != "ring" for d in dims)
            or len({d.size for d in dims}) != 1 or dims[0].size < 3
            or tuple(g.members) != tuple(range(N)) or len(sink_members(topology, g)) != 1):
        return None
    a, D = dims[0].size, len(dims)
    K = 2 * D
    caps = {(int(u), int(v)): c for u, v, c in zip(g.src.tolist(), g.dst.tolist(), g.cap,
                                                    strict=True)}
    if len(set(caps.values())) != 1 or x != Fraction(N - 1, K * next(iter(caps.values()))):
        return None
    c = next(iter(caps.values()))
    stride = [a ** i for i in range(D)]

    def step(v: int, dim: int, sign: int) -> int:
        co = (v // stride[dim]) % a
        return v + (((co + sign) % a) - co) * stride[dim]

    trees = []
    for sign in (1, -1):
        for shift in range(D):
            verts, arcs = [0], []
            for i in range(D):
                dim = (shift + i) % D
                new = []
                for v in verts:
                    u = v
                    for _ in range(a - 1):
                        w = step(u, dim, sign)
                        if (u, w) not in caps:
                            return None
                        arcs.append((u, w))
                        new.append(w)
                        u = w
                verts = verts + new
            trees.append(arcs)
    # per-direction counts over root 0's trees = load of every arc after translation
    count: dict[tuple[int, int], int] = defaultdict(int)
    for arcs in trees:
        for u, w in arcs:
            dim = next(i for i in range(D) if (u // stride[i]) % a != (w // stride[i]) % a)
            sgn = 1 if step(u, dim, 1) == w else -1
            count[dim, sgn] += 1
    if any(v > x.numerator * (K // x.denominator) * c for v in count.values()) \
            or len(count) != K:
        return None
    classes = tuple(TreeClass(0, 1, tuple((u, w, (((u, w), 1),)) for u, w in arcs))
                    for arcs in trees)
    scale = x.numerator * (K // x.denominator)
    return Packing(scale, {r: K for r in range(N)}, classes, g.unit, 1,
                   tuple(d.size for d in dims))


def optimal_packing(topology: Topology, ranks: Sequence[int] | None = None, *,
                    reverse: bool = False) -> Packing:
    """The allgather-optimal packing (reduce-scatter with ``reverse``), cached.

    Trees are out-trees of the (reversed, if ``reverse``) graph, ``k`` per member, at
    the exact optimum ``x*`` of :func:`~topocoll.optimum.maxflow.allgather_optimum`.

    Raises
    ------
    NotSupportedError
        If edge splitting does not apply (a relay node with unequal in/out capacity).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> p = optimal_packing(ring(5, bandwidth=1.0))
    >>> p.ratio, p.per_root[0]
    (Fraction(2, 1), 2)
    """
    g = capacity_graph(topology, ranks)
    if reverse and _symmetric(g):
        reverse = False

    def compute() -> Packing:
        gg = g.reversed() if reverse else g
        x = allgather_optimum(topology, g.members, reverse=reverse).value * g.unit
        trees = None if reverse else _torus_trees(topology, gg, x)
        if trees is not None:
            return trees
        work, budget = packing_work(gg), packing_budget()
        if work > budget:
            raise OverBudgetError(
                f"the exact tree packing of {len(g.members)} ranks on {topology.name} is "
                f"estimated at {work:,} units of work, over the budget of {budget:,} "
                "(TOPOCOLL_PACKING_WORK raises it; `topocoll bound` gives the optimum)")
        return pack_trees(gg, x.numerator, {v: x.denominator for v in g.members})

    return topology.memo(("optimal_packing", g.members, reverse), compute)


def packing_work(g: CapacityGraph) -> int:
    """The work :func:`pack_trees` is estimated to need on ``g``, counted from its size:
    ``(relays + 1) x members x arcs``, the max-flow arc visits of one round of member
    max-flows per relay split (edge splitting tests every member after each split; tree
    growth is a round of the same size). A size estimate, not a bound: the number of
    splits per relay varies; it orders fabrics as their packing times do (see
    :data:`PACKING_WORK`).

    >>> from topocoll.topology import ring, fat_tree
    >>> packing_work(capacity_graph(ring(4)))            # 1 x 4 members x 8 arcs
    32
    >>> packing_work(capacity_graph(fat_tree(4)))        # 21 x 16 x 96
    32256
    """
    members = len(g.members)
    return (g.num_nodes - members + 1) * members * len(g.src)


def packing_budget() -> int:
    """The work budget of one packing: ``$TOPOCOLL_PACKING_WORK`` or
    :data:`PACKING_WORK`.

    Raises
    ------
    InputError
        For a value that is not a positive integer (the message names the variable).
    """
    raw = os.environ.get("TOPOCOLL_PACKING_WORK")
    if raw is None:
        return PACKING_WORK
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise InputError(f"TOPOCOLL_PACKING_WORK={raw!r} must be a positive integer",
                         item="TOPOCOLL_PACKING_WORK")
    return value


def broadcast_packing(topology: Topology, root: int, ranks: Sequence[int] | None = None, *,
                      reverse: bool = False) -> Packing:
    """``λ = min_v maxflow(root -> v)`` arc-disjoint spanning out-trees from ``root``
    (Edmonds), after edge splitting; with ``reverse``, on the reversed graph (reduce).

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> p = broadcast_packing(torus((3, 3), bandwidth=1.0), 4)
    >>> p.per_root, p.scale, max(p.arc_loads().values())
    ({4: 4}, 1, 1)
    """
    g = capacity_graph(topology, ranks)

    def compute() -> Packing:
        lam = broadcast_optimum(topology, root, g.members, reverse=reverse).value / g.unit
        return pack_trees(g.reversed() if reverse else g, 1, {root: int(lam)})

    return topology.memo(("broadcast_packing", g.members, root, reverse), compute)
