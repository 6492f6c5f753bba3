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
LP (:func:`~topocoll.topology.timedlp.invariant_lp`), whose optimum is ``LP_H``.

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

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .timedlp import _generate, _Orbits, _setup

if TYPE_CHECKING:
    from .core import Topology

__all__ = ["StepBound", "timed_lower_bound", "barrier_lower_bound", "cheapest_timed_tree"]


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


def cheapest_timed_tree(D: np.ndarray, root: int, time_limit: float = 60.0
                        ) -> tuple[float, float]:
    """Exact pricing: the cheapest timed arborescence of ``root`` under step costs
    ``D[s - 1, u, v]`` (member ``u`` sends to ``v`` in step ``s``; ``v`` must have no
    data before, ``u`` must have received it in an earlier step), by a MIP.

    Returns ``(best found, proven lower bound)``; equal when solved to optimality.

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
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit))
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


def timed_lower_bound(topology: Topology, ranks: Sequence[int] | None = None, *, steps: int,
                      reverse: bool = False, time_limit: float = 600.0,
                      mip_time_limit: float = 120.0) -> StepBound:
    """Certified lower bound on the bandwidth time (seconds per block byte) of any
    allgather schedule with at most ``steps`` barrier steps (see the module).

    Examples
    --------
    Three steps cannot reach the bound on a 4-cube (a block needs four hops, and the
    timed LP's optimum there is 16/15 of it):

    >>> from topocoll.topology import hypercube
    >>> b = timed_lower_bound(hypercube(4, bandwidth=1.0), steps=3)
    >>> b.exact, round(b.lower / b.bound, 4), round(b.upper / b.bound, 4)
    (True, 1.0667, 1.0667)
    """
    t0 = time.perf_counter()
    full = topology.num_nodes - 1               # every simple route
    net, sym, H, hops, bound, seeds = _setup(topology, ranks, steps, reverse, full, (), True)
    orb = _Orbits(net, sym, "orbits")
    duals: dict = {}
    inv = _generate(net, orb, H, hops, bound, seeds, cap_total=False, max_iterations=400,
                    stop=1e-7, tail=1e-6, per_root=None, stabilize=0.5, t0=t0,
                    time_limit=time_limit, duals=duals)
    y = duals["y"]                              # (H, link orbits), >= 0
    y = y / np.maximum(1.0, y.sum(axis=1))[:, None]     # sum_l y_{l,s} <= 1: dual feasible
    lower, exact = 0.0, True
    for k, rep in enumerate(orb.reps):
        D, _ = net.distances(orb.pull(k, y), hops, tie_break=False)
        best, lo = cheapest_timed_tree(D, net.members.index(rep), mip_time_limit)
        exact &= lo >= best - 1e-9 * max(1.0, abs(best))
        lower += lo
    return StepBound(H, lower / duals["scale"], inv.value, bound, bool(exact),
                     time.perf_counter() - t0)


def barrier_lower_bound(topology: Topology, size: float, *, alpha: float = 0.0,
                        checkpoints: Sequence[int], reverse: bool = False,
                        **kw) -> tuple[float, list[StepBound]]:
    """Certified lower bound (seconds) on the :class:`~topocoll.cost.AlphaBeta` time of
    any allgather of ``size`` bytes on every rank of ``topology``, over every number of
    steps: a schedule with ``H`` steps, ``H_(i-1) < H <= H_i`` for consecutive
    ``checkpoints``, takes at least ``lower(H_i) b + (H_(i-1) + 1)(alpha + l_min)``;
    one with more steps than the last checkpoint at least ``T* b + (H_last + 1)(alpha
    + l_min)``. Returns the minimum over these cases and the per-checkpoint bounds."""
    from .timedprice import Net

    hs = sorted(set(int(h) for h in checkpoints))
    n = topology.num_ranks
    block = size / n
    ell = alpha + float(Net(topology, None, reverse).lat.min())
    parts = [timed_lower_bound(topology, steps=h, reverse=reverse, **kw) for h in hs]
    cases, prev = [], 0
    for p in parts:
        cases.append(max(p.lower, p.bound) * block + (prev + 1) * ell)
        prev = p.steps
    cases.append(parts[-1].bound * block + (prev + 1) * ell)
    return float(min(cases)) if not math.isnan(min(cases)) else 0.0, parts
