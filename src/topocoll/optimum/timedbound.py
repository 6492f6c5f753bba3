"""Certified lower bounds for allgathers whose steps are barriers.

The cut bound ``T*`` holds for any schedule, but a schedule whose steps are barriers (the
model of :class:`~topocoll.cost.AlphaBeta`) may be unable to approach it in few steps:
when the cut of a box and the cut of each of its members are tight together, data that
enters the box in a step still has to be spread inside it in a later one. This module
bounds that from below, for every schedule and not only ours.

Any allgather schedule with ``H`` non-empty steps gives, per chunk, a *timed
arborescence* (the step and route by which each rank first receives it); its per-step
link loads are at least those of these arborescences, so its bandwidth time is at least
the optimum ``LP_H`` of the timed-tree LP over **every** route (no hop limit) and without
the per-link total rows. ``LP_H`` does not increase with ``H`` (a step may stay empty).
Weak duality gives a certificate: for dual prices ``y >= 0`` with ``sum_l y_{l,s} <= 1`` in
every step and one price per root orbit, ``LP_H >= sum_k min_T cost_y(T)``, a sum of
*pricing problems* (cheapest timed arborescence of each root orbit's representative).
Solved exactly by a mixed-integer program (HiGHS; its dual bound is used, so a time limit
keeps the certificate valid), the sum is a proof. The prices come from the group-invariant
LP (:func:`~topocoll.optimum.timedlp.invariant_lp`), whose optimum is ``LP_H``.

Every step also costs at least ``alpha`` plus the smallest link latency, so an ``H``-step
schedule takes at least ``LP_H b + H (alpha + l_min)``; :func:`barrier_lower_bound` takes
the minimum of that over all ``H``, with ``LP_H`` bounded at a few horizons.

References
----------
.. [1] Geoffrion, "Lagrangean relaxation for integer programming", Math. Programming
   Study 2, 1974 (the Lagrangian bound of a column-generation master).
.. [2] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461, 2023 (time-expanded view of tree pipelines).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .highs import quiet_highs
from .stockbound import MIP_NODES
from .timedlp import LinkOrbits, generate_columns, setup_lp

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["StepBound", "timed_lower_bound", "barrier_lower_bound", "cheapest_timed_tree",
           "timed_tree_relaxation"]


@dataclass(frozen=True)
class StepBound:
    """Certified ``LP_H >= lower`` (seconds per block byte) for one horizon.

    ``upper`` is the invariant LP value (an achievable ``LP_H``, heuristic pricing);
    ``exact`` tells whether every pricing MIP was solved to optimality."""

    steps: int
    lower: float
    upper: float
    bound: float
    exact: bool
    seconds: float


def cheapest_timed_tree(D: np.ndarray, root: int, node_limit: int = MIP_NODES
                        ) -> tuple[float, float]:
    """Exact pricing: the cheapest timed arborescence of ``root`` under step costs
    ``D[s - 1, u, v]`` (member ``u`` sends to ``v`` in step ``s``; ``v`` must have no
    data before, ``u`` must have received it in an earlier step), by a MIP.

    Returns ``(best found, proven lower bound)``; equal when solved to optimality
    (within ``node_limit`` branch-and-bound nodes).

    Examples
    --------
    Relaying through member 1 costs 1 + 1 against 5 directly:

    >>> D = np.full((2, 3, 3), 5.0)
    >>> D[0, 0, 1] = D[1, 1, 2] = 1.0
    >>> cheapest_timed_tree(D, 0)
    (2.0, 2.0)
    """
    import highspy

    H, N, _ = D.shape
    idx: dict[tuple[int, int, int], int] = {}
    cost: list[float] = []
    for s in range(1, H + 1):
        for u in range(N):
            if s == 1 and u != root:
                continue                        # only the root holds data in step 1
            for v in range(N):
                if v != u and v != root and np.isfinite(D[s - 1, u, v]):
                    idx[u, v, s] = len(cost)
                    cost.append(float(D[s - 1, u, v]))
    h = quiet_highs()
    h.setOptionValue("mip_max_nodes", int(node_limit))
    n = len(cost)
    h.addVars(n, np.zeros(n), np.ones(n))
    cols = np.arange(n, dtype=np.int32)
    h.changeColsCost(n, cols, np.array(cost))
    h.changeColsIntegrality(n, cols, np.full(n, highspy.HighsVarType.kInteger))
    into: dict[int, list[tuple[int, int]]] = {}
    for (_, v, s), i in idx.items():
        into.setdefault(v, []).append((s, i))
    for v in range(N):                          # every other member receives once
        if v != root:
            c = [i for _, i in into.get(v, [])]
            h.addRow(1.0, 1.0, len(c), np.array(c, np.int32), np.ones(len(c)))
    for (u, _, s), i in idx.items():            # a sender received in an earlier step
        if u != root:
            c = [i] + [j for s2, j in into.get(u, []) if s2 < s]
            h.addRow(-highspy.kHighsInf, 0.0, len(c), np.array(c, np.int32),
                     np.array([1.0] + [-1.0] * (len(c) - 1)))
    h.run()
    info = h.getInfo()
    best = float(info.objective_function_value)
    lower = float(info.mip_dual_bound)
    if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        lower = max(lower, best - 1e-9 * max(1.0, abs(best)))
    return best, lower


def timed_tree_relaxation(D: np.ndarray, root: int) -> float:
    """A lower bound on :func:`cheapest_timed_tree`: the LP relaxation of its flow
    formulation (arc choices ``x`` in ``[0, 1]``, each other member receiving once, and
    for each member ``t`` a unit flow from ``(root, 0)`` to ``t`` through the
    time-expanded graph, members holding data from step to step for free, over arcs
    with ``f <= x``). Much tighter than the relaxation of the MIP's formulation (on
    the duals of mi250:2 at 10 steps it equals the integer optimum) and solved in
    seconds, so :func:`timed_lower_bound` uses it.

    Examples
    --------
    >>> D = np.full((2, 3, 3), 5.0)
    >>> D[0, 0, 1] = D[1, 1, 2] = 1.0
    >>> round(timed_tree_relaxation(D, 0), 6)
    2.0
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, vstack

    H, N, _ = D.shape
    s_, u_, v_ = np.meshgrid(np.arange(1, H + 1), np.arange(N), np.arange(N), indexing="ij")
    ok = (u_ != v_) & (v_ != root) & ((s_ > 1) | (u_ == root)) & np.isfinite(D)
    s_, u_, v_ = s_[ok], u_[ok], v_[ok]
    A = len(s_)
    cost = D[s_ - 1, u_, v_]
    others = [t for t in range(N) if t != root]
    # variables: x (A), then per commodity t: f (A, zero where u == t), g (N * H holding)
    per = A + N * H
    nvar = A + len(others) * per
    eq_rows, eq_cols, eq_vals, eq_rhs = [], [], [], []
    ub_rows, ub_cols, ub_vals = [], [], []
    r = 0
    for v in others:                                   # each member receives once
        idx = np.flatnonzero(v_ == v)
        eq_rows.append(np.full(len(idx), r))
        eq_cols.append(idx)
        eq_vals.append(np.ones(len(idx)))
        eq_rhs.append(1.0)
        r += 1
    node = np.arange(N * (H + 1)).reshape(N, H + 1)     # (u, s): u holds after step s
    cap_r = 0
    for k, t in enumerate(others):
        base = A + k * per
        live = u_ != t                                 # t absorbs its own flow
        fa = np.flatnonzero(live)
        # conservation rows for every (u, s), u != t; inflow - outflow = -supply
        rows0 = r
        into_t = fa[v_[fa] == t]
        mid = fa[v_[fa] != t]
        eq_rows += [rows0 + node[v_[mid], s_[mid]], rows0 + node[u_[fa], s_[fa] - 1]]
        eq_cols += [base + mid, base + fa]
        eq_vals += [np.ones(len(mid)), -np.ones(len(fa))]
        hu, hs = np.meshgrid(np.arange(N), np.arange(H), indexing="ij")
        hu, hs = hu.ravel(), hs.ravel()
        hold = hu != t
        g = base + A + hu * H + hs
        eq_rows += [rows0 + node[hu[hold], hs[hold] + 1], rows0 + node[hu[hold], hs[hold]]]
        eq_cols += [g[hold], g[hold]]
        eq_vals += [np.ones(int(hold.sum())), -np.ones(int(hold.sum()))]
        rhs = np.zeros(N * (H + 1))
        rhs[node[root, 0]] = -1.0
        rhs[node[t]] = 0.0
        eq_rhs += rhs.tolist()
        r += N * (H + 1)
        eq_rows.append(np.full(len(into_t), r))       # the unit reaches t
        eq_cols.append(base + into_t)
        eq_vals.append(np.ones(len(into_t)))
        eq_rhs.append(1.0)
        r += 1
        ub_rows += [cap_r + np.arange(len(fa))] * 2    # f <= x
        ub_cols += [base + fa, fa]
        ub_vals += [np.ones(len(fa)), -np.ones(len(fa))]
        cap_r += len(fa)
    Aeq = coo_matrix((np.concatenate(eq_vals), (np.concatenate(eq_rows),
                                                np.concatenate(eq_cols))), shape=(r, nvar))
    Aub = coo_matrix((np.concatenate(ub_vals), (np.concatenate(ub_rows),
                                                np.concatenate(ub_cols))), shape=(cap_r, nvar))
    c = np.concatenate([cost, np.zeros(nvar - A)])
    ub = np.full(nvar, np.inf)
    ub[:A] = 1.0
    for k, t in enumerate(others):                    # t's own arcs out carry no t-flow
        base = A + k * per
        ub[base + np.flatnonzero(u_ == t)] = 0.0
        ub[base + A + t * H + np.arange(H)] = 0.0
    res = linprog(c, A_ub=vstack([Aub]).tocsr(), b_ub=np.zeros(cap_r), A_eq=Aeq.tocsr(),
                  b_eq=np.array(eq_rhs), bounds=np.column_stack([np.zeros(nvar), ub]),
                  method="highs")
    if res.status != 0:                                 # pragma: no cover
        raise RuntimeError(f"timed-tree flow relaxation failed: {res.message}")
    # the dual bound of HiGHS' optimum: use the objective, less its tolerance
    return float(res.fun) - 1e-7 * max(1.0, abs(float(res.fun)))


def timed_lower_bound(topology: Topology, ranks: Sequence[int] | None = None, *, steps: int,
                      reverse: bool = False, max_iterations: int = 400,
                      mip_nodes: int = 0) -> StepBound:
    """Certified lower bound on the bandwidth time (seconds per block byte) of any
    allgather schedule with at most ``steps`` barrier steps (see the module). Pricing
    is bounded by the flow relaxation (:func:`timed_tree_relaxation`) and, if
    ``mip_nodes > 0``, by the MIP's dual bound too (at most that many branch-and-bound
    nodes per root) (``exact`` then tells whether
    every MIP closed, i.e. whether the bound is the Lagrangian value itself).

    Examples
    --------
    Three steps cannot reach the bound on a 4-cube (a block needs four hops, and the
    timed LP's optimum there is 16/15 of it):

    >>> from topocoll.topology import hypercube
    >>> b = timed_lower_bound(hypercube(4, bandwidth=1.0), steps=3)
    >>> round(b.lower / b.bound, 4), round(b.upper / b.bound, 4)
    (1.0667, 1.0667)
    """
    t0 = time.perf_counter()
    full = topology.num_nodes - 1               # every simple route
    net, sym, H, hops, bound, seeds = setup_lp(topology, ranks, steps, reverse, full, (), True)
    orb = LinkOrbits(net, sym, "orbits")
    duals: dict = {}
    inv = generate_columns(net, orb, H, hops, bound, seeds, cap_total=False,
                           max_iterations=max_iterations, stop=1e-7, tail=1e-6, per_root=None,
                           stabilize=0.5, t0=t0, duals=duals)
    y = duals["y"]                              # (H, link orbits), >= 0
    y = y / np.maximum(1.0, y.sum(axis=1))[:, None]     # sum_l y_{l,s} <= 1: dual feasible
    lower, exact = 0.0, True
    for k, rep in enumerate(orb.reps):
        D, _ = net.distances(orb.pull(k, y), hops, tie_break=False)
        lo = timed_tree_relaxation(D, net.members.index(rep))
        if mip_nodes > 0:                       # the MIP's dual bound may be higher
            best, lo2 = cheapest_timed_tree(D, net.members.index(rep), mip_nodes)
            lo = max(lo, lo2)
            exact &= lo >= best - 1e-6 * max(1.0, abs(best))
        else:
            exact = False
        lower += lo
    return StepBound(H, lower / duals["scale"], inv.value, bound, bool(exact),
                     time.perf_counter() - t0)


def barrier_lower_bound(topology: Topology, message_bytes: float, *, alpha: float = 0.0,
                        checkpoints: Sequence[int], reverse: bool = False,
                        **kw) -> tuple[float, list[StepBound]]:
    """Certified lower bound (seconds) on the :class:`~topocoll.cost.AlphaBeta` time of
    any allgather of ``message_bytes`` bytes on every rank of ``topology``, over every number of
    steps: a schedule with ``H`` steps, ``H_(i-1) < H <= H_i`` for consecutive
    ``checkpoints``, takes at least ``lower(H_i) b + (H_(i-1) + 1)(alpha + l_min)``;
    one with more steps than the last checkpoint at least ``T* b + (H_last + 1)(alpha
    + l_min)``. Returns the minimum over these cases and the per-checkpoint bounds."""
    from .timedprice import Net

    hs = sorted(set(int(h) for h in checkpoints))
    n = topology.num_ranks
    block = message_bytes / n
    ell = alpha + float(Net(topology, None, reverse).lat.min())
    parts = [timed_lower_bound(topology, steps=h, reverse=reverse, **kw) for h in hs]
    cases, prev = [], 0
    for p in parts:
        cases.append(max(p.lower, p.bound) * block + (prev + 1) * ell)
        prev = p.steps
    cases.append(parts[-1].bound * block + (prev + 1) * ell)
    return float(min(cases)), parts
