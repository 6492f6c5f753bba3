"""Step-indexed ("timed") spanning-tree LP for allgather, solved by column generation.

A *timed tree* of root ``r`` gives every other member ``v`` a parent ``p(v)`` and a step
``s(v)`` in ``1..H`` with ``s(v) > s(p(v))`` (``s(r) = 0``): in step ``s(v)`` the arc
``p(v) -> v`` carries the tree's share of ``r``'s block along a path through the fabric
(switches and non-member ranks only forward). A vertex may hold data and forward it
later. With ``x_T`` the share of its root's block on tree ``T``, ``b`` the block size
and ``tau_s`` the length of step ``s``, the LP is

.. math:: \\min \\sum_s \\tau_s \\quad \\text{s.t.} \\quad \\sum_{T \\ni r} x_T = 1,
   \\qquad b \\sum_T x_T\\, n_{T,l,s} \\le c_l \\tau_s,
   \\qquad b \\sum_{T,s} x_T\\, n_{T,l,s} \\le c_l T^* + \\sigma,

``n_{T,l,s}`` the number of ``T``'s step-``s`` paths over link ``l`` (parallel links are
one bundle of summed bandwidth ``c_l``, as in the cost model), ``T^*`` the exact cut
bound and ``sigma >= 0`` an elastic slack with a large cost (the third family keeps each
link's total load at the bound, so a rounded schedule's bandwidth term stays at the bound
up to chunk rounding). Steps are barriers, exactly as in :class:`~topocoll.cost.AlphaBeta`,
so ``sum_s tau_s`` is the schedule's bandwidth time (before per-step latency), and
``T^* <= sum_s tau_s`` always (every step-load sum of a link is at least its total).

Columns are generated: the master LP (HiGHS dual simplex, warm-started) gives duals
``mu_r`` (root rows) and ``y_{l,s}, z_l >= 0``; a tree enters if
``sum_v d_{s(v)}(p(v), v) < mu_r`` with ``d_s`` shortest paths under link lengths
``(y_{l,s} + z_l) / c_l``. That pricing problem is a directed Steiner tree in the
time-expanded graph (NP-hard), so it is solved by a **heuristic**: a Prim-like growth
from ``(r, 0)`` that attaches the cheapest unreached member at its cheapest allowed step
(holding data is free), then re-parent / re-time passes over single vertices. The LP
objective is therefore an upper bound on the true timed-tree optimum, and ``T^*`` a
lower bound; ``value / T^* - 1`` is reported as the *timed gap*.

References
----------
.. [1] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461, 2023 (time-expanded view of tree pipelines).
.. [2] Gilmore and Gomory, Operations Research 9(6), 1961 (column generation);
   Takahashi and Matsuyama, "An approximate solution for the Steiner problem in graphs",
   Math. Japonica 24, 1980 (the shortest-path growth heuristic used for pricing).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InfeasibleError, NotSupportedError, TopologyError
from .maxflow import allgather_optimum
from .timedprice import Net, TimedTree, price_root, seed_trees, suffix_min
from .treelp import add_columns, solve_master

if TYPE_CHECKING:
    from .core import Topology

__all__ = ["TimedLP", "TimedTree", "timed_lp", "MAX_RANKS", "MAX_STEPS"]

#: Largest group the timed LP is built for (pricing is ``O(N^3 H)`` per round).
MAX_RANKS = 64
#: Largest horizon ``H``.
MAX_STEPS = 64
#: Cost of the elastic slack on the per-link total rows (in units of the objective).
_SLACK_COST = 1e3
_TOL = 1e-9
#: Iterations over which the tail-off rule of :func:`timed_lp` measures progress.
_TAIL = 25


@dataclass(frozen=True)
class TimedLP:
    """Result of :func:`timed_lp`.

    Attributes
    ----------
    members : tuple of int
        The ranks.
    steps : int
        The horizon ``H``.
    trees : tuple of TimedTree
        The trees with a positive share.
    share : numpy.ndarray
        ``x_T`` per tree (the shares of each root sum to 1).
    step_time : numpy.ndarray
        ``tau_s`` per step, seconds per byte of one block.
    value : float
        ``sum_s tau_s`` (seconds per block byte).
    bound : float
        The exact cut bound ``T^*`` (seconds per block byte).
    excess : float
        Slack ``sigma`` (seconds per block byte) by which some link's total load exceeds
        the bound (0 unless no generated column set could keep every total at it).
    iterations, columns : int
        Master solves and columns generated.
    seconds : float
        Wall time.
    """

    members: tuple[int, ...]
    steps: int
    trees: tuple[TimedTree, ...]
    share: np.ndarray
    step_time: np.ndarray
    value: float
    bound: float
    excess: float
    iterations: int
    columns: int
    seconds: float

    @property
    def gap(self) -> float:
        """The timed gap ``value / T^* - 1`` (>= 0 up to rounding)."""
        return self.value / self.bound - 1.0


class _Master:
    """``min sum tau + K sigma`` over the columns so far (HiGHS, warm-started)."""

    def __init__(self, N: int, H: int, L: int, total: float | None) -> None:
        import highspy

        inf = highspy.kHighsInf
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("presolve", "off")          # warm starts from the last basis
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("threads", 1)
        h.setOptionValue("simplex_strategy", 4)
        self.N, self.H, self.L = N, H, L
        rows_lo = np.concatenate([np.ones(N), np.full(H * L, -inf),
                                  np.full(L if total is not None else 0, -inf)])
        rows_hi = np.concatenate([np.ones(N), np.zeros(H * L),
                                  np.full(L if total is not None else 0, total or 0.0)])
        z = np.zeros(0, np.int32)
        h.addRows(len(rows_lo), rows_lo, rows_hi, 0, z, z, np.zeros(0))
        # tau_s: -1 in every (l, s) row
        idx = (N + np.arange(H * L)).astype(np.int32)
        h.addCols(H, np.ones(H), np.zeros(H), np.full(H, inf), H * L,
                  (np.arange(H) * L).astype(np.int32), idx, -np.ones(H * L))
        if total is not None:                          # sigma: -1 in every total row
            h.addCols(1, np.array([_SLACK_COST]), np.zeros(1), np.full(1, inf), L,
                      np.zeros(1, np.int32), (N + H * L + np.arange(L)).astype(np.int32),
                      -np.ones(L))
        self.fixed = H + (total is not None)
        self.total = total is not None
        self.h = h

    def add(self, cols: list[tuple[np.ndarray, np.ndarray]]) -> None:
        add_columns(self.h, np.zeros(len(cols)), cols)

    def solve(self):
        sol = solve_master(self.h, "timed master LP")
        col = np.array(sol.col_value)
        dual = np.array(sol.row_dual)
        N, H, L = self.N, self.H, self.L
        mu = dual[:N]
        y = np.maximum(-dual[N:N + H * L], 0.0).reshape(H, L)
        zl = np.maximum(-dual[N + H * L:], 0.0) if self.total else np.zeros(L)
        return col, mu, y, zl


def timed_lp(topology: Topology, ranks: Sequence[int] | None = None, *, steps: int,
             reverse: bool = False, seeds: Sequence[TimedTree] = (),
             cap_total: bool = True, max_iterations: int = 200, hops: int | None = None,
             per_root: int = 2, stop: float = 1e-5, tail: float = 1e-4,
             time_limit: float | None = None) -> TimedLP:
    """The timed-tree allgather LP with horizon ``steps`` (column generation).

    Parameters
    ----------
    topology : Topology
        Any topology.
    ranks : sequence of int, optional
        The members (default every rank).
    steps : int
        Horizon ``H`` (1 .. :data:`MAX_STEPS`).
    reverse : bool
        Use the reversed graph (reduce-scatter is this LP's allgather run backwards).
    seeds : sequence of TimedTree
        Extra starting columns (e.g. a tree packing's trees at step = depth, shifted);
        trees deeper than ``steps`` are ignored. A direct star per root and the pricer's
        trees under uniform lengths are always added.
    cap_total : bool
        Add the per-link total rows ``sum_s load_{l,s} <= c_l T^* + sigma``.
    max_iterations : int
        Cap on pricing rounds.
    hops : int, optional
        Longest path (links) an arc may take (default: the fewest that connect every
        member pair).
    per_root : int
        Most columns added per root and round.
    stop, tail : float
        Stop when the value is within ``stop`` of the bound, or improved by at most
        ``tail`` (relative) over the last 25 rounds.
    time_limit : float, optional
        Wall-clock cap in seconds.

    Returns
    -------
    TimedLP

    Raises
    ------
    NotSupportedError
        ``steps`` out of range or more than :data:`MAX_RANKS` members.
    TopologyError
        A member cannot reach another.

    Examples
    --------
    A ring of 4 reaches the cut bound ``3 b / (2 B)`` in 2 steps (every rank sends
    half its block each way at step 1, the neighbours forward at step 2):

    >>> from topocoll.topology import ring
    >>> lp = timed_lp(ring(4, bandwidth=1.0), steps=2)
    >>> round(lp.bound, 9), round(lp.value, 9)
    (1.5, 1.5)
    """
    t0 = time.perf_counter()
    if not isinstance(steps, int | np.integer) or not 1 <= steps <= MAX_STEPS:
        raise NotSupportedError(f"steps must be an integer in 1..{MAX_STEPS}, got {steps!r}")
    net = Net(topology, ranks, reverse)
    N, H, L = len(net.members), int(steps), net.num_links
    if N > MAX_RANKS:
        raise NotSupportedError(f"the timed tree LP is built for at most {MAX_RANKS} ranks, "
                                f"got {N}")
    if N < 2:
        raise TopologyError("a timed tree LP needs at least two ranks", item="ranks")
    bound = float(allgather_optimum(topology, net.members, reverse=reverse).value)
    scale = net.bw_max                     # LP time unit: 1 / bw_max seconds per byte
    master = _Master(N, H, L, bound * scale * (1 + 1e-9) if cap_total else None)
    trees: list[TimedTree] = []
    keys: set = set()

    def take(found: Sequence[TimedTree]) -> int:
        new = [t for t in found if t.key() not in keys and t.depth() <= H]
        for t in new:
            keys.add(t.key())
        trees.extend(new)
        if new:
            master.add([net.column(t, H, cap_total) for t in new])
        return len(new)

    hops = net.hop_limits()[-1] if hops is None else int(hops)
    seeds = [t for t in seeds if all(len(p) - 1 <= hops for *_, pcs in t.arcs for p, _ in pcs)]
    take(list(seeds) + seed_trees(net, H, hops))
    missing = set(net.members) - {t.root for t in trees}
    if missing:
        r = min(missing)
        raise InfeasibleError(f"no timed tree of rank {r} reaches every member in {H} steps "
                              f"with paths of at most {hops} links")
    it = 0
    history: list[float] = []
    while True:
        col, mu, y, zl = master.solve()
        it += 1
        history.append(float(col[:H].sum()))
        if it >= max_iterations or (time_limit is not None
                                    and time.perf_counter() - t0 > time_limit):
            break
        if len(history) > _TAIL and history[-_TAIL - 1] - history[-1] <= tail * history[-1]:
            break                              # tailing off: too little progress lately
        if col[:H].sum() <= bound * scale * (1 + stop):
            break                              # at the cut bound: nothing can improve
        D, pred = net.distances(y + zl[None, :], hops)
        SM, AS = suffix_min(D)
        x = col[master.fixed:]
        basic: dict[int, list[TimedTree]] = {}
        for k in np.flatnonzero(x > 1e-12):
            basic.setdefault(trees[k].root, []).append(trees[k])
        found = []
        for i in range(N):
            cands = price_root(net, D, SM, AS, pred, i, basic.get(net.members[i], ()),
                               keep=per_root)
            found.extend(t for c, t in cands
                         if c < mu[i] - _TOL * max(1.0, abs(mu[i])))
        if not take(found):
            break
    x = col[master.fixed:]
    keep = np.flatnonzero(x > 1e-12)
    tau = col[:H] / scale
    return TimedLP(net.members, H, tuple(trees[i] for i in keep), x[keep], tau,
                   float(tau.sum()), bound,
                   float(col[H] / scale) if cap_total else 0.0, it, len(trees),
                   time.perf_counter() - t0)
