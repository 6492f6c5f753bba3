"""Exact cut optima of a topology by max-flow: the bandwidth optimum of collectives.

The bandwidth-optimal allgather time on any directed graph with switches is a cut ratio
(Zhao and Krishnamurthy [1]_, ForestColl [2]_)::

    T*_AG = (M / N) * x*,   x* = max over node sets A with A ⊉ V of |A ∩ V| / B⁺(A)

with ``V`` the participating ranks, ``N = |V|``, ``M`` the gathered bytes and ``B⁺(A)``
the capacity of the links leaving ``A``. Reduce-scatter is the same on the reversed
graph; a single-root broadcast runs at ``min_v maxflow(root -> v)`` (Edmonds [3]_).

Everything is exact: bandwidths (floats) become :class:`fractions.Fraction` through their
shortest decimal repr, are summed per ordered node pair and scaled by one common factor
to coprime integers (:class:`CapacityGraph`), and ``x*`` is found by Dinkelbach's method
on the max-flow test of [1]_: ``x = a/b`` is feasible iff with a super source ``s -> u``
of capacity ``b`` for each ``u ∈ V`` and link capacities ``a·c``, every ``v ∈ V`` has
``maxflow(s, v) >= N·b``. A failing ``v`` yields the source side of a minimum cut, an
actual cut with a larger ratio; ``x`` jumps to it and the test repeats, so ``x`` rises
through finitely many cut ratios to the optimum, which comes with its critical cut.

Max-flow is a compiled (numba) Dinic on int64 capacities, else networkx preflow-push on
Python integers when the capacities sum beyond int64. Rank-transitive tori (checked: the link
multiset is invariant under every unit translation) need one sink instead of ``N``.

References
----------
.. [1] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461, 2023.
.. [2] Zhao et al., "ForestColl: Throughput-Optimal Collective Communications on
   Heterogeneous Network Fabrics", arXiv 2402.06787, 2024.
.. [3] Edmonds, "Edge-disjoint branchings", Combinatorial Algorithms, 1973.
.. [4] Dinkelbach, "On nonlinear fractional programming", Management Science 13(7), 1967.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from ..errors import TopologyError

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["CapacityGraph", "CutOptimum", "FlowGraph", "capacity_graph", "max_flow", "sink_members",
           "allgather_optimum", "broadcast_optimum", "separating_cut"]


@dataclass(frozen=True, eq=False)
class CapacityGraph:
    """A topology as an integer-capacity digraph (parallel links merged).

    Attributes
    ----------
    num_nodes : int
        Nodes ``0 .. num_nodes - 1`` (the topology's ranks then switches).
    src, dst : numpy.ndarray
        One arc per ordered node pair that has links.
    cap : tuple of int
        Integer capacity of each arc; ``cap[i] * unit`` is its bandwidth in bytes/s.
    unit : Fraction
        Bytes/s per capacity unit (exact).
    members : tuple of int
        The participating ranks ``V``.
    """

    num_nodes: int
    src: np.ndarray
    dst: np.ndarray
    cap: tuple[int, ...]
    unit: Fraction
    members: tuple[int, ...]

    def reversed(self) -> CapacityGraph:
        """The same graph with every arc reversed (reduce-scatter, reduce)."""
        return CapacityGraph(self.num_nodes, self.dst, self.src, self.cap, self.unit,
                             self.members)

    def out_capacity(self, inside: np.ndarray) -> int:
        """Integer capacity of the arcs leaving the node mask ``inside``."""
        m = inside[self.src] & ~inside[self.dst]
        return sum(c for c, k in zip(self.cap, m.tolist(), strict=True) if k)

    def cap_array(self) -> np.ndarray:
        """Capacities as int64 (object dtype if one exceeds int64)."""
        if max(self.cap, default=0) < (1 << 62):
            return np.array(self.cap, dtype=np.int64)
        return np.array(self.cap, dtype=object)


@dataclass(frozen=True)
class CutOptimum:
    """An exact optimum and the cut that attains it.

    Attributes
    ----------
    value : Fraction
        Allgather/reduce-scatter: ``x*`` in seconds per byte of one rank's block
        (``T = block_bytes * value``). Broadcast/reduce/separating cut: the minimum cut
        capacity in bytes/s.
    cut : tuple of int
        Member ranks inside the critical cut (the side the data leaves).
    nodes : tuple of int
        All nodes inside the critical cut (ranks and switches).
    max_flows : int
        Max-flow computations used.
    """

    value: Fraction
    cut: tuple[int, ...]
    nodes: tuple[int, ...]
    max_flows: int


#: Significant digits a bandwidth is read to. Floating noise below them (0.9 x 100 Gb/s
#: computes as 9.999999999999998e9 B/s) would otherwise make the exact capacities
#: 17-digit integers, and an exact packing as many trees.
BANDWIDTH_DIGITS = 12


def _exact(x: float) -> Fraction:
    """``x`` as an exact fraction, read to :data:`BANDWIDTH_DIGITS` significant digits.

    >>> _exact(0.1 * 100e9) == _exact(10e9) == 10**10
    True
    """
    return Fraction(f"{float(x):.{BANDWIDTH_DIGITS}g}")


def capacity_graph(topology: Topology, ranks: Sequence[int] | None = None) -> CapacityGraph:
    """The exact integer-capacity graph of ``topology`` with participants ``ranks``.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> g = capacity_graph(ring(4, bandwidth=50e9))
    >>> len(g.cap), set(g.cap), g.unit
    (8, {1}, Fraction(50000000000, 1))
    """
    members = tuple(range(topology.num_ranks)) if ranks is None else tuple(int(r) for r in ranks)
    for r in members:
        if not 0 <= r < topology.num_ranks:
            raise TopologyError(f"rank {r} is not a rank of topology {topology.name!r} "
                                f"(0..{topology.num_ranks - 1})", item=f"rank {r}")
    if len(set(members)) != len(members):
        raise TopologyError("ranks must be distinct", item="ranks")
    return topology.memo(("capacity_graph", members),
                         lambda: _capacity_graph(topology, members))


def _capacity_graph(topology: Topology, members: tuple[int, ...]) -> CapacityGraph:
    n = topology.num_nodes
    sums: dict[int, Fraction] = {}
    for lk in topology.links:
        k = lk.src * n + lk.dst
        sums[k] = sums.get(k, Fraction(0)) + _exact(lk.bandwidth)
    keys = sorted(sums)
    vals = [sums[k] for k in keys]
    den = math.lcm(*(v.denominator for v in vals)) if vals else 1
    nums = [v.numerator * (den // v.denominator) for v in vals]
    g = math.gcd(*nums) if nums else 1
    cap = tuple(x // g for x in nums)
    ka = np.array(keys, dtype=np.int64)
    return CapacityGraph(n, ka // n, ka % n, cap, Fraction(g, den), members)


# ----------------------------------------------------------------------- max-flow
@njit(cache=True)
def _dinic(ptr, head, rev, cap0, s, t):  # pragma: no cover - compiled
    """Dinic's max-flow on a CSR residual graph (every arc paired with its reverse).

    Returns the flow value and the residual capacities.
    """
    n = len(ptr) - 1
    cap = cap0.copy()
    level = np.empty(n, np.int64)
    it = np.empty(n, np.int64)
    queue = np.empty(n, np.int64)
    path = np.empty(n, np.int64)
    total = 0
    while True:
        level[:] = -1
        level[s] = 0
        qh, qt = 0, 1
        queue[0] = s
        while qh < qt:
            u = queue[qh]
            qh += 1
            for e in range(ptr[u], ptr[u + 1]):
                v = head[e]
                if cap[e] > 0 and level[v] < 0:
                    level[v] = level[u] + 1
                    queue[qt] = v
                    qt += 1
        if level[t] < 0:
            break
        for u in range(n):
            it[u] = ptr[u]
        while True:  # augment along level paths until blocked
            depth = 0
            u = s
            while u != t:
                advanced = False
                while it[u] < ptr[u + 1]:
                    e = it[u]
                    v = head[e]
                    if cap[e] > 0 and level[v] == level[u] + 1:
                        path[depth] = e
                        depth += 1
                        u = v
                        advanced = True
                        break
                    it[u] += 1
                if not advanced:
                    if depth == 0:
                        break
                    level[u] = -1            # dead end: never enter it again
                    depth -= 1
                    u = head[rev[path[depth]]]
                    it[u] += 1
            if u != t:
                break
            f = cap[path[0]]
            for i in range(1, depth):
                if cap[path[i]] < f:
                    f = cap[path[i]]
            for i in range(depth):
                cap[path[i]] -= f
                cap[rev[path[i]]] += f
            total += f
    return total, cap


@njit(cache=True)
def _reach(ptr, head, cap, s):  # pragma: no cover - compiled
    """Nodes reachable from ``s`` through arcs with residual capacity."""
    n = len(ptr) - 1
    seen = np.zeros(n, np.bool_)
    stack = np.empty(n, np.int64)
    seen[s] = True
    stack[0] = s
    top = 1
    while top:
        top -= 1
        u = stack[top]
        for e in range(ptr[u], ptr[u + 1]):
            v = head[e]
            if cap[e] > 0 and not seen[v]:
                seen[v] = True
                stack[top] = v
                top += 1
    return seen


@njit(cache=True)
def _residual_csr(n, src, dst):  # pragma: no cover - compiled
    """The residual graph of arcs ``src -> dst`` on ``n`` nodes in CSR form: entries
    grouped by tail in a stable order (arc ``i`` forward at ``pos[i]``, its reverse at
    ``pos[m + i]``), their heads, the row pointers and every entry's reverse entry."""
    m = len(src)
    ptr = np.zeros(n + 1, np.int64)
    for i in range(m):
        ptr[src[i] + 1] += 1
        ptr[dst[i] + 1] += 1
    for u in range(n):
        ptr[u + 1] += ptr[u]
    fill = ptr[:-1].copy()
    pos = np.empty(2 * m, np.int64)
    head = np.empty(2 * m, np.int64)
    for i in range(2 * m):
        u, v = (src[i], dst[i]) if i < m else (dst[i - m], src[i - m])
        pos[i] = fill[u]
        fill[u] += 1
        head[pos[i]] = v
    rev = np.empty(2 * m, np.int64)
    for i in range(m):
        rev[pos[i]] = pos[m + i]
        rev[pos[m + i]] = pos[i]
    return pos, head, ptr, rev


class FlowGraph:
    """A fixed arc structure with an extra super source; capacities set per test."""

    def __init__(self, g: CapacityGraph, source_arcs: Sequence[int] = ()):
        self.g = g
        self.n = g.num_nodes + 1           # node n-1 is the super source
        s = self.n - 1
        src = np.concatenate([g.src, np.full(len(source_arcs), s)]).astype(np.int64)
        dst = np.concatenate([g.dst, np.asarray(source_arcs, dtype=np.int64)])
        self.src, self.dst = src, dst
        # residual CSR: arc i is entry pos[i], its reverse entry pos[m + i]
        self.pos, self.head, self.ptr, self.rev = _residual_csr(self.n, src, dst)
        self.flows = 0

    def set(self, caps: Sequence[int]) -> None:
        """Use integer capacities ``caps`` (one per arc, source arcs last)."""
        self.caps = [int(c) for c in caps]
        self.big = sum(self.caps) >= (1 << 62)
        if not self.big:
            m = len(self.src)
            c = np.zeros(2 * m, dtype=np.int64)
            c[self.pos[:m]] = np.asarray(self.caps, dtype=np.int64)
            self.cap = c

    def value(self, s: int, t: int) -> int:
        """Max-flow value ``s -> t``."""
        self.flows += 1
        if self.big:
            return self._run_nx(s, t)[0]
        return int(_dinic(self.ptr, self.head, self.rev, self.cap, s, t)[0])

    def run(self, s: int, t: int) -> tuple[int, np.ndarray]:
        """Max-flow value ``s -> t`` and the source side of a minimum cut (node mask)."""
        self.flows += 1
        if self.big:
            return self._run_nx(s, t)
        value, res = _dinic(self.ptr, self.head, self.rev, self.cap, s, t)
        return int(value), _reach(self.ptr, self.head, res, s)

    def _run_nx(self, s: int, t: int) -> tuple[int, np.ndarray]:
        import networkx as nx

        G = nx.DiGraph()
        G.add_nodes_from(range(self.n))
        for u, v, c in zip(self.src.tolist(), self.dst.tolist(), self.caps, strict=True):
            if c:
                G.add_edge(u, v, capacity=c)
        value, (S, _) = nx.minimum_cut(G, s, t)
        side = np.zeros(self.n, dtype=bool)
        side[list(S)] = True
        return int(value), side


def max_flow(g: CapacityGraph, s: int, t: int) -> tuple[int, np.ndarray]:
    """Exact max-flow ``s -> t`` in capacity units and the source side of a minimum cut.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> value, side = max_flow(capacity_graph(ring(6)), 0, 3)
    >>> value, side[:6].tolist()
    (2, [True, False, False, False, False, False])
    """
    f = FlowGraph(g)
    f.set(g.cap)
    value, side = f.run(s, t)
    return value, side[: g.num_nodes]


# ------------------------------------------------------------------- symmetry
def sink_members(topology: Topology, g: CapacityGraph) -> list[int]:
    """Members that must be tested as sinks: one if ranks are torus-transitive."""
    members = list(g.members)
    if (topology.num_switches or not topology.dims or len(members) != topology.num_ranks
            or math.prod(d.size for d in topology.dims) != topology.num_ranks
            or max(g.cap, default=0) >= (1 << 62)):
        return members
    ok = topology.memo(("transitive",), lambda: _torus_transitive(topology, g))
    return members[:1] if ok else members


def _torus_transitive(topology: Topology, g: CapacityGraph) -> bool:
    """Whether every unit shift along each dimension maps the capacity graph onto itself."""
    r = np.arange(topology.num_ranks)
    caps = np.asarray(g.cap, dtype=np.int64)
    base = np.lexsort((caps, g.dst, g.src))
    ref = (g.src[base], g.dst[base], caps[base])
    stride = 1
    for d in topology.dims:
        c = (r // stride) % d.size
        perm = r + (((c + 1) % d.size) - c) * stride
        ps, pd = perm[g.src], perm[g.dst]
        o = np.lexsort((caps, pd, ps))
        if not (np.array_equal(ps[o], ref[0]) and np.array_equal(pd[o], ref[1])
                and np.array_equal(caps[o], ref[2])):
            return False
        stride *= d.size
    return True


# -------------------------------------------------------------------- optima
def allgather_optimum(topology: Topology, ranks: Sequence[int] | None = None, *,
                      reverse: bool = False) -> CutOptimum:
    """Exact ``x* = max |A ∩ V| / B⁺(A)`` (seconds per byte of one block) and its cut.

    Parameters
    ----------
    topology : Topology
        The network.
    ranks : sequence of int, optional
        The participants ``V`` (default every rank); other ranks relay like switches.
    reverse : bool
        Use the reversed graph (reduce-scatter: data enters the cut).

    Returns
    -------
    CutOptimum
        ``value`` is ``x*``: the optimal allgather time is ``(M / N) * value`` for ``M``
        gathered bytes. ``cut`` lists the member ranks inside the critical cut.

    Examples
    --------
    Ring of 8 at 1 B/s per direction: the best cut holds 7 ranks and 2 links leave it:

    >>> from topocoll.topology import ring
    >>> o = allgather_optimum(ring(8, bandwidth=1.0))
    >>> o.value, len(o.cut)
    (Fraction(7, 2), 7)
    """
    g = capacity_graph(topology, ranks)
    if reverse:
        g = g.reversed()
    V = list(g.members)
    N = len(V)
    if N < 2:
        return CutOptimum(Fraction(0), tuple(V), tuple(V), 0)
    sinks = sink_members(topology, g)
    isv = np.zeros(g.num_nodes, dtype=bool)
    isv[V] = True
    # start: every node but one member (its ingress)
    ing = np.zeros(g.num_nodes, dtype=object)
    np.add.at(ing, g.dst, np.asarray(g.cap, dtype=object))
    best_v = max(V, key=lambda v: Fraction(N - 1, int(ing[v])) if ing[v] else Fraction(10**30))
    if not ing[best_v]:
        raise TopologyError(f"rank {best_v} cannot receive from any node", item=f"rank {best_v}")
    x = Fraction(N - 1, int(ing[best_v]))
    inside = np.ones(g.num_nodes, dtype=bool)
    inside[best_v] = False
    f = FlowGraph(g, V)

    def load(x: Fraction) -> None:
        a, b = x.numerator, x.denominator
        f.set([c * a for c in g.cap] + [b] * N)

    load(x)
    i, clean = 0, 0
    while clean < len(sinks):
        v = sinks[i % len(sinks)]
        value, side = f.run(f.n - 1, v)
        need = N * x.denominator
        if value < need:
            A = side[: g.num_nodes]
            ratio = Fraction(int(A[isv].sum()), g.out_capacity(A))
            if ratio <= x:  # cannot happen with exact arithmetic; guard against loops
                raise RuntimeError(f"max-flow test did not improve the cut ratio at {x}")
            x, inside = ratio, A.copy()
            load(x)
            clean = 0
            continue
        clean += 1
        i += 1
    cut = tuple(int(u) for u in np.flatnonzero(inside & isv))
    return CutOptimum(x / g.unit, cut, tuple(int(u) for u in np.flatnonzero(inside)), f.flows)


def broadcast_optimum(topology: Topology, root: int, ranks: Sequence[int] | None = None, *,
                      reverse: bool = False) -> CutOptimum:
    """Exact single-root broadcast rate ``min_v maxflow(root -> v)`` (bytes/s) and its cut.

    With ``reverse`` it is the reduce rate ``min_v maxflow(v -> root)``. Edmonds' branching
    theorem makes the rate achievable by arborescence packing when there are no switches
    (or after edge splitting of Eulerian switches).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> broadcast_optimum(ring(5, bandwidth=1.0), 0).value
    Fraction(2, 1)
    """
    g = capacity_graph(topology, ranks)
    if root not in g.members:
        raise TopologyError(f"root {root} is not one of the ranks", item=f"root {root}")
    if reverse:
        g = g.reversed()
    f = FlowGraph(g)
    f.set(g.cap)
    best, side_best = None, None
    for v in g.members:
        if v == root:
            continue
        value, side = f.run(root, v)
        if best is None or value < best:
            best, side_best = value, side[: g.num_nodes]
    if best is None:
        return CutOptimum(Fraction(0), (root,), (root,), 0)
    isv = np.zeros(g.num_nodes, dtype=bool)
    isv[list(g.members)] = True
    return CutOptimum(best * g.unit, tuple(int(u) for u in np.flatnonzero(side_best & isv)),
                      tuple(int(u) for u in np.flatnonzero(side_best)), f.flows)


def separating_cut(topology: Topology, ranks: Sequence[int] | None = None) -> CutOptimum:
    """Minimum capacity (bytes/s) of a cut with members on both sides, and the cut.

    Any such cut separates the first member ``u`` from some ``v`` in one direction, so
    ``2 (N - 1)`` max-flows give it exactly. Allreduce must move the whole buffer across
    it, so ``M / value`` bounds allreduce time.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> separating_cut(ring(6, bandwidth=1.0)).value
    Fraction(2, 1)
    """
    g = capacity_graph(topology, ranks)
    V = list(g.members)
    if len(V) < 2:
        return CutOptimum(Fraction(0), tuple(V), tuple(V), 0)
    f = FlowGraph(g)
    f.set(g.cap)
    u = V[0]
    best, side_best = None, None
    for v in V[1:]:
        for s, t in ((u, v), (v, u)):
            value, side = f.run(s, t)
            if best is None or value < best:
                best, side_best = value, side[: g.num_nodes]
    isv = np.zeros(g.num_nodes, dtype=bool)
    isv[V] = True
    return CutOptimum(best * g.unit, tuple(int(x) for x in np.flatnonzero(side_best & isv)),
                      tuple(int(x) for x in np.flatnonzero(side_best)), f.flows)
