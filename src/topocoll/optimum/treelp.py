"""Optimal overlapped tree allreduce rate by column generation (free partition sizes).

The INFOCOM'21 model of topology-adaptive allreduce [1]_: the data is cut into
partitions, partition ``t`` is reduced up a spanning tree ``T`` over the member ranks
and broadcast back down the same tree, and both run at once (overlapped), pipelined at
rate ``x_T``. A tree edge ``{u, v}`` is realized by a path ``u -> v`` and a path
``v -> u`` through the fabric (switches and non-member ranks only forward). Whatever
node roots the tree, every tree edge carries ``x_T`` in *each* direction (the reduce one
way, the broadcast the other), so the joint capacity constraint per arc ``a`` is

.. math:: \\sum_T x_T \\, u_{a,T} \\le c_a,

with ``u_{a,T}`` the number of the tree's paths that use ``a``. Maximizing
``X = Σ_T x_T`` gives the allreduce bandwidth term ``M / X``; tree ``T`` carries
``x_T / X`` of the data (partition sizes are free, not ``1/N`` per rank).

The LP has one column per tree, so it is solved by column generation [2]_: the master
LP over the trees found so far (HiGHS dual simplex, duals ``y_a >= 0``); pricing is a
minimum spanning tree over the members on the metric closure where pair ``{u, v}``
costs ``d_y(u, v) + d_y(v, u)`` (shortest paths under arc lengths ``y``; each direction
routed independently). A tree of cost ``< 1`` improves the master; when the cheapest
tree costs ``>= 1`` the master is optimal. At every iteration
``X* <= (Σ_a c_a y_a) / min_T cost_y(T)`` (Farley's bound: ``y / min cost`` is dual
feasible), so a capped run still certifies its gap.

References
----------
.. [1] Zhang, Wu and Li, "Near-Optimal Topology-adaptive Parameter Synchronization in
   Distributed DNN Training", IEEE INFOCOM 2021.
.. [2] Gilmore and Gomory, "A linear programming approach to the cutting-stock
   problem", Operations Research 9(6), 1961; Farley, "A note on bounding a class of
   linear programming problems, including cutting stock problems", Operations Research
   38(5), 1990.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import TopologyError
from ..numeric import dot
from .highs import quiet_highs
from .maxflow import capacity_graph, separating_cut

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["TreeLP", "tree_allreduce_lp", "prim_tree", "add_columns", "solve_master",
           "MAX_ITERATIONS"]

#: Default cap on column-generation iterations (the certified gap is reported if hit).
MAX_ITERATIONS = 5000
#: A priced tree must cost less than ``1 - _TOL`` to enter (relative, in dual units).
_TOL = 1e-9

Path = tuple[int, ...]


@dataclass(frozen=True)
class TreeLP:
    """Result of :func:`tree_allreduce_lp`.

    Attributes
    ----------
    members : tuple of int
        The ranks spanned by every tree.
    trees : tuple
        One entry per tree with a positive rate: a tuple of ``(u, v, path_uv, path_vu)``,
        the tree edges with their fabric paths (node tuples from ``u`` to ``v`` and back).
    rates : numpy.ndarray
        Rate ``x_T`` of each tree (bytes/s).
    value : float
        ``X = Σ x_T`` (bytes/s); the allreduce of ``M`` bytes takes ``M / X``.
    upper : float
        Certified upper bound on the LP optimum (bytes/s); ``upper == value`` (to the
        tolerance) when ``optimal``.
    optimal : bool
        True when pricing proved that no tree improves the master LP.
    iterations : int
        Column-generation iterations (master solves).
    seconds : float
        Wall time of the solve.
    certificate : str
        What proved optimality: ``"pricing"`` (no tree has negative reduced cost),
        ``"cut"`` (``X`` equals the minimum capacity of a cut separating members, which
        every tree crosses both ways), or ``""`` (not proved; see ``upper``).
    """

    members: tuple[int, ...]
    trees: tuple[tuple[tuple[int, int, Path, Path], ...], ...]
    rates: np.ndarray
    value: float
    upper: float
    optimal: bool
    iterations: int
    seconds: float
    certificate: str = ""

    @property
    def gap(self) -> float:
        """``upper / value - 1`` (0 when proved optimal)."""
        return 0.0 if self.optimal else max(0.0, self.upper / self.value - 1.0)


def prim_tree(cost: np.ndarray) -> list[tuple[int, int]]:
    """Minimum spanning tree of a complete graph given by a symmetric cost matrix.

    Prim's algorithm in ``O(n^2)``; zero and equal costs are fine (unlike sparse MST
    routines that read a zero as "no edge").

    Examples
    --------
    >>> import numpy as np
    >>> prim_tree(np.array([[0, 1, 4], [1, 0, 2], [4, 2, 0]], dtype=float))
    [(0, 1), (1, 2)]
    """
    n = len(cost)
    inside = np.zeros(n, dtype=bool)
    inside[0] = True
    best = cost[0].astype(float).copy()
    link = np.zeros(n, dtype=np.int64)
    edges = []
    for _ in range(n - 1):
        cand = np.where(inside, np.inf, best)
        v = int(np.argmin(cand))
        if not np.isfinite(cand[v]):
            raise TopologyError("the member ranks are not strongly connected",
                                item=f"member index {v}")
        edges.append((int(link[v]), v))
        inside[v] = True
        better = cost[v] < best
        best = np.where(better, cost[v], best)
        link = np.where(better, v, link)
    return edges


class _Pricer:
    """Shortest paths from every member under arc lengths ``y``, then Prim."""

    def __init__(self, g) -> None:
        self.n = g.num_nodes
        self.src = np.asarray(g.src, dtype=np.int64)
        self.dst = np.asarray(g.dst, dtype=np.int64)
        self.members = np.asarray(g.members, dtype=np.int64)
        self.arc = {(int(u), int(v)): i for i, (u, v) in enumerate(zip(self.src, self.dst,
                                                                          strict=True))}
        self._usage: dict = {}

    def price(self, y: np.ndarray):
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import dijkstra

        # explicit zeros stay edges in csgraph's sparse input (zero-length arcs are common)
        m = csr_matrix((y, (self.src, self.dst)), shape=(self.n, self.n))
        dist, pred = dijkstra(m, directed=True, indices=self.members,
                              return_predecessors=True)
        D = dist[:, self.members]
        if not np.isfinite(D).all():
            i, j = np.argwhere(~np.isfinite(D))[0]
            raise TopologyError(f"rank {self.members[j]} cannot be reached from rank "
                                f"{self.members[i]}", item=f"rank {self.members[j]}")
        C = D + D.T
        edges = prim_tree(C)
        cost = float(sum(C[i, j] for i, j in edges))
        return cost, self._tree(edges, pred)

    def _tree(self, edges, pred):
        return tuple((int(self.members[i]), int(self.members[j]),
                      self._path(pred, i, int(self.members[j])),
                      self._path(pred, j, int(self.members[i]))) for i, j in edges)

    def batch(self, y: np.ndarray, cap: np.ndarray, k: int):
        """The cheapest tree under ``y`` (exact pricing) and up to ``k - 1`` more,
        each priced after raising the lengths of the arcs the previous ones use (a
        multiplicative-weights sweep that diversifies the columns). Returns
        ``(cost under y, tree)`` pairs, the exact minimum first."""
        cost, tree = self.price(y)
        out = [(cost, tree)]
        z = y.copy()
        bump = max(float(dot(y, cap)) / max(len(self.members) - 1, 1), 1e-12)
        load = np.zeros(len(y))
        for _ in range(k - 1):
            for e, u in self.usage(out[-1][1]).items():
                load[e] += u
            z = y + bump * load / cap / len(out)
            _, t = self.price(z)
            out.append((self.cost(t, y), t))
        return out

    def _path(self, pred, i: int, v: int) -> Path:
        u = int(self.members[i])
        out = [v]
        while out[-1] != u:
            out.append(int(pred[i, out[-1]]))
        return tuple(reversed(out))

    def cost(self, tree, y: np.ndarray) -> float:
        """Cost of ``tree`` under arc lengths ``y``."""
        return float(sum(y[e] * u for e, u in self.usage(tree).items()))

    def usage(self, tree) -> dict[int, int]:
        """Arc index -> number of the tree's paths that use the arc (cached)."""
        hit = self._usage.get(tree)
        if hit is not None:
            return hit
        use: dict[int, int] = {}
        for _, _, p, q in tree:
            for path in (p, q):
                for a, b in zip(path, path[1:], strict=False):
                    e = self.arc[a, b]
                    use[e] = use.get(e, 0) + 1
        self._usage[tree] = use
        return use


def add_columns(h, cost: np.ndarray, cols: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """Append columns ``x >= 0`` with objective ``cost`` to the HiGHS model ``h``; column
    ``j`` has entries ``cols[j] = (row indices, values)`` (one ``addCols`` call)."""
    import highspy

    k = len(cols)
    starts = np.cumsum([0] + [len(i) for i, _ in cols[:-1]]).astype(np.int32)
    idx = np.concatenate([i for i, _ in cols]).astype(np.int32)
    val = np.concatenate([v for _, v in cols]).astype(float)
    h.addCols(k, np.asarray(cost, dtype=float), np.zeros(k), np.full(k, highspy.kHighsInf),
              len(idx), starts, idx, val)


def solve_master(h, what: str):
    """Run the HiGHS model ``h`` (warm-started) and return its solution; RuntimeError
    naming ``what`` unless it is optimal."""
    import highspy

    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:  # pragma: no cover
        raise RuntimeError(f"{what} failed: {h.modelStatusToString(status)}")
    return h.getSolution()


class _Master:
    """The restricted master LP ``max Σ x_T, A x <= c, x >= 0`` in HiGHS, warm-started
    (columns are appended and the dual simplex restarts from the previous basis)."""

    def __init__(self, cap: np.ndarray) -> None:
        import highspy

        h = quiet_highs()
        m = len(cap)
        h.addRows(m, np.full(m, -highspy.kHighsInf), cap, 0, np.zeros(m, np.int32),
                  np.zeros(0, np.int32), np.zeros(0))
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        self.h = h

    def add(self, cols: list[dict[int, int]]) -> None:
        add_columns(self.h, np.ones(len(cols)),
                    [(np.fromiter(c, dtype=np.int32, count=len(c)),
                      np.fromiter(c.values(), dtype=float, count=len(c))) for c in cols])

    def solve(self):
        sol = solve_master(self.h, "master LP")
        return (np.array(sol.col_value), np.maximum(np.array(sol.row_dual), 0.0),
                float(self.h.getInfo().objective_function_value))


def tree_allreduce_lp(topology: Topology, ranks: Sequence[int] | None = None, *,
                      max_iterations: int = MAX_ITERATIONS, per_round: int = 32,
                      stabilize: float = 0.5, use_cut: bool = True,
                      work: int | None = None) -> TreeLP:
    """The optimal overlapped tree allreduce rate ``X`` and its trees (column generation).

    Parameters
    ----------
    topology : Topology
        Any topology (switches forward, never aggregate).
    ranks : sequence of int, optional
        The members (default all ranks).
    max_iterations : int
        Cap on master solves (work, not seconds: the same answer on any machine); when
        hit, ``optimal`` is False and ``upper`` certifies the gap.
    per_round : int
        Trees priced per iteration: the exact minimum, then ``per_round - 1`` more
        after penalizing the arcs already used (only those that improve are added).
    stabilize : float
        Wentges smoothing weight in ``[0, 1)``: pricing first tries
        ``stabilize * best_dual + (1 - stabilize) * master_dual``; optimality is only
        ever declared by exact pricing at the master's duals (or by the cut).
    use_cut : bool
        Also bound ``X`` by the minimum member-separating cut
        (:func:`~topocoll.optimum.maxflow.separating_cut`, ``2(N-1)`` max-flows) and
        stop as soon as the master reaches it (common on heterogeneous graphs, where a
        slow worker's links are that cut).
    work : int, optional
        Cap on the master solves' counted work: each solve counts its arcs times its
        columns (trees), summed over the solves; when the sum passes ``work`` the run
        stops like ``max_iterations`` (the primal is feasible, ``upper`` certifies the
        gap). None: no cap.

    Returns
    -------
    TreeLP

    Raises
    ------
    TopologyError
        Fewer than two members, or a member unreachable from another.

    Notes
    -----
    Closed forms (tested): a bidirectional ring of ``N`` with ``B`` per direction gives
    ``X = N B / (N - 1)`` (each tree is a path on ``N - 1`` cables); a star whose host
    ``i`` has ``b_i`` up and down gives ``X = min(min_i b_i, Σ_i b_i / (2N - 2))`` (a tree
    loads host ``i``'s links by its degree; degree sequences are exactly the integer
    vectors ``>= 1`` summing to ``2N - 2``).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> lp = tree_allreduce_lp(ring(4, bandwidth=3e9))
    >>> lp.optimal, round(lp.value / 1e9, 9)     # N B / (N - 1) = 4 GB/s
    (True, 4.0)
    """
    t0 = time.perf_counter()
    g = capacity_graph(topology, ranks)
    if len(g.members) < 2:
        raise TopologyError("an allreduce tree LP needs at least two ranks", item="ranks")
    cap_int = np.array(g.cap, dtype=float)
    scale = float(cap_int.max())
    cap = cap_int / scale                     # numerically tame: capacities in (0, 1]
    pricer = _Pricer(g)
    master = _Master(cap)
    unit = float(g.unit) * scale
    # every tree crosses every member-separating cut in both directions: X <= min cut
    cut = float(separating_cut(topology, g.members).value) / unit if use_cut else np.inf
    # start from the tree of widest arcs (lengths 1/c) so the master is bounded
    trees: list = []
    keys: set = set()

    def take(found) -> int:
        new = [t for t in found if t not in keys]
        keys.update(new)
        trees.extend(new)
        if new:
            master.add([pricer.usage(t) for t in new])
        return len(new)

    take([t for _, t in pricer.batch(1.0 / cap, cap, per_round)])
    it, optimal, upper, proof, spent = 0, False, cut, "", 0
    center, center_bound = None, np.inf
    while True:
        x, y, value = master.solve()
        it += 1
        spent += len(cap) * len(trees)
        if value >= cut * (1 - _TOL):
            optimal, proof = True, "cut"
            break
        if it >= max_iterations or (work is not None and spent > work):
            break
        if center is not None:
            # Wentges smoothing: price at a point between the best dual so far and the
            # master's, which damps the oscillation of degenerate duals
            ys = stabilize * center + (1 - stabilize) * y
            found = pricer.batch(ys, cap, per_round)
            bound = float(dot(cap, ys)) / found[0][0] if found[0][0] > 0 else np.inf
            upper = min(upper, bound)
            if bound < center_bound:
                center, center_bound = ys, bound
            if take([t for _, t in found if pricer.cost(t, y) < 1.0 - _TOL]):
                continue
        found = pricer.batch(y, cap, per_round)    # exact pricing at the master's duals
        cost = found[0][0]
        bound = value / cost if cost > 0 else np.inf
        upper = min(upper, bound)
        if bound < center_bound:
            center, center_bound = y, bound
        if cost >= 1.0 - _TOL:
            optimal, proof = True, "pricing"
            break
        if not take([t for c, t in found if c < 1.0 - _TOL]):  # pragma: no cover
            break                              # numerically stuck: report the certified gap
    keep = np.flatnonzero(x > 1e-12 * max(value, 1e-300))
    return TreeLP(g.members, tuple(trees[i] for i in keep), x[keep] * unit, value * unit,
                  max(upper, value) * unit if not optimal else value * unit, optimal, it,
                  time.perf_counter() - t0, proof)
