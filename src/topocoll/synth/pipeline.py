"""Pipeline levels for tree schedules: which step offset each tree arc runs at.

A pipelined tree schedule (:mod:`topocoll.synth.forest`) sends batch ``b`` over an arc
at level ``σ`` in step ``b + σ``. The natural choice ``σ = depth - 1`` is causal, but
any levels that grow by at least one from an arc to its children are too (the verifier
checks this). With ``P`` batches and ``D`` levels, the time under the alpha-beta model
with steps as barriers is, in units of one batch's bottleneck time ``F = max_l
sum_σ L[σ, l]`` (``L[σ, l]`` the seconds link ``l`` is busy per batch at level ``σ``),

    ``P + O``,  ``O = sum_{s < D-1} (max_l C[s, l] + max_l (F_l - C[s, l])) / F - 1``

when ``P >= D`` (``C`` the prefix sums over levels, ``F_l`` the row total): the ``D - 1``
fill steps pair with the ``D - 1`` drain steps, and a pair costs one full batch exactly
when some link is the most loaded in both, as on a ring. ``O`` does not depend on ``P``,
so the total is ``T (1 + O/P) + (P + D - 1) ℓ`` with ``T`` the bandwidth time and ``ℓ``
the per-step latency; :func:`assign_levels` lowers ``O`` by moving arcs between their
parent's and children's levels (local search, first improvement), and the number of
batches is then chosen on the exact per-step cost.

References
----------
.. [1] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461, 2023 (pipelining a tree packing).
.. [2] Zhao et al., "ForestColl", arXiv 2402.06787, 2024.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

__all__ = ["fill_overhead", "assign_levels", "pipeline_time", "batch_units", "LEVEL_WORK",
           "LP_CELLS"]

#: Largest ``moves tried x levels x links`` a level search may spend (about a second).
LEVEL_WORK = 60_000_000
#: Largest ``steps x links x levels`` (nonzeros) of a batch-size linear program.
LP_CELLS = 400_000


def fill_overhead(L: np.ndarray) -> float:
    """The pipeline overhead ``O`` (in batches) of level loads ``L`` (levels x links).

    Examples
    --------
    A ring's links carry one chunk at every level: no overhead. One link busy only at
    level 0 and another only at level 1 cost a whole extra batch:

    >>> import numpy as np
    >>> fill_overhead(np.ones((3, 4)))
    0.0
    >>> fill_overhead(np.array([[1.0, 0.0], [0.0, 1.0]]))
    1.0
    """
    if L.shape[0] < 2:
        return 0.0
    C = np.cumsum(L, axis=0)
    total = C[-1]
    F = float(total.max())
    if F <= 0:
        return 0.0
    head = C[:-1].max(axis=1)
    tail = (total[None, :] - C[:-1]).max(axis=1)
    return float((head + tail).sum() / F - (L.shape[0] - 1))


def assign_levels(depth: np.ndarray, parent: np.ndarray, ent_row: np.ndarray,
                  ent_link: np.ndarray, ent_w: np.ndarray, num_links: int, *,
                  sweeps: int = 4, work: int = LEVEL_WORK) -> np.ndarray:
    """Levels (``>= 0``) for tree arcs that lower :func:`fill_overhead`.

    Parameters
    ----------
    depth : ndarray of int
        Depth (``>= 1``) of each arc's head in its tree; ``depth - 1`` is the start.
    parent : ndarray of int
        Index of the arc into each arc's tail, or ``-1`` at the root. Arcs with the same
        parent index and depth may be several pieces of one arc; each moves on its own.
    ent_row, ent_link, ent_w : ndarray
        Sparse load: arc ``ent_row[i]`` keeps link ``ent_link[i]`` busy ``ent_w[i]``
        seconds per batch.
    num_links : int
        Number of distinct links.
    sweeps : int
        Passes over all arcs (stops early when a pass improves nothing).
    work : int
        Budget in ``candidates x levels x links``; the search stops when it is spent.

    Returns
    -------
    ndarray of int
        Levels with ``level[parent] < level`` for every arc and the same largest level
        as ``depth - 1``, so the step count does not grow.

    Examples
    --------
    Link 0 is the bottleneck (1 s per arc), link 1 fast (0.1 s). Path ``a`` crosses
    link 0 then link 1, path ``b`` link 1, link 0, link 1, and a single arc ``c`` crosses
    link 0. At ``depth - 1`` link 0 has two arcs at level 0, one at level 1 and is idle
    at level 2; moving the leaf ``c`` to level 2 loads it equally in every step:

    >>> import numpy as np
    >>> depth = np.array([1, 2, 1, 2, 3, 1]); parent = np.array([-1, 0, -1, 2, 3, -1])
    >>> link = np.array([0, 1, 1, 0, 1, 0]); w = np.array([1, .1, .1, 1, .1, 1])
    >>> lv = assign_levels(depth, parent, np.arange(6), link, w, 2)
    >>> lv.tolist()
    [0, 1, 0, 1, 2, 2]
    >>> L = np.zeros((3, 2)); np.add.at(L, (lv, link), w); fill_overhead(L)
    0.0
    """
    n = len(depth)
    level = np.asarray(depth, dtype=np.int64) - 1
    D = int(level.max()) + 1 if n else 0
    if n == 0 or D < 2:
        return level
    L = np.zeros((D, num_links))
    np.add.at(L, (level[ent_row], ent_link), ent_w)
    order = np.argsort(ent_row, kind="stable")
    ptr = np.searchsorted(ent_row[order], np.arange(n + 1))
    links_of = [ent_link[order[ptr[i]:ptr[i + 1]]] for i in range(n)]
    w_of = [ent_w[order[ptr[i]:ptr[i + 1]]] for i in range(n)]
    children: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(parent.tolist()):
        if p >= 0:
            children[p].append(i)
    best = fill_overhead(L)
    spent = 0
    per_try = D * num_links
    for _ in range(sweeps):
        improved = False
        for i in range(n):
            if best <= 1e-12 or spent > work:
                return level
            lo = int(level[parent[i]]) + 1 if parent[i] >= 0 else 0
            hi = min((int(level[c]) for c in children[i]), default=D) - 1
            a = int(level[i])
            if lo == hi:
                continue
            lk, w = links_of[i], w_of[i]
            L[a, lk] -= w
            choice, choice_cost = a, best
            for b in range(lo, hi + 1):
                if b == a:
                    continue
                L[b, lk] += w
                c = fill_overhead(L)
                L[b, lk] -= w
                spent += per_try
                if c < choice_cost - 1e-12:
                    choice, choice_cost = b, c
            L[choice, lk] += w
            if choice != a:
                level[i] = choice
                best = choice_cost
                improved = True
        if not improved:
            break
    return level


def pipeline_time(L: np.ndarray, units: np.ndarray, step_cost: float) -> float:
    """Alpha-beta time of a pipeline whose batch ``b`` holds ``units[b] / sum(units)`` of
    the data (``L``: levels x links, seconds per link for all the data at that level).

    A step costs ``step_cost`` (overhead plus latency) plus its most loaded link; steps
    without data cost nothing.

    Examples
    --------
    >>> import numpy as np
    >>> L = np.array([[1.0, 0.0], [0.0, 1.0]])      # two levels, each on its own link
    >>> pipeline_time(L, np.array([1, 1]), 0.0)      # three steps of half a batch
    1.5
    """
    units = np.asarray(units, dtype=float)
    w = units / units.sum()
    D, P = L.shape[0], len(w)
    total = 0.0
    for s in range(P + D - 1):
        lo, hi = max(0, s - P + 1), min(D - 1, s)
        ws = w[s - np.arange(lo, hi + 1)]
        if not np.any(ws > 0):
            continue
        total += step_cost + float((ws @ L[lo:hi + 1]).max())
    return total


def batch_units(L: np.ndarray, P: int, resolution: int) -> np.ndarray | None:
    """Integer batch sizes (units, summing to about ``resolution``) for ``P`` batches
    that minimize the pipeline's bandwidth time, or None if the program is too big.

    The linear program: weights ``w_b >= 0`` summing to 1 and step times ``t_s`` with
    ``t_s >= sum_σ w_{s-σ} L[σ, l]`` for every link, minimizing ``sum_s t_s``. Equal
    batches are feasible, so the optimum is never worse; small first and last batches
    shorten fill and drain where a link is idle at the first or last levels. Weights are
    rounded by largest remainder; empty batches are dropped.

    Examples
    --------
    Level 0 loads link 0 fully and level 1 loads link 1 at a third: a large first batch
    and batches shrinking by a third each keep the drain short.

    >>> import numpy as np
    >>> L = np.array([[1.0, 0.0], [0.0, 1 / 3]])
    >>> u = batch_units(L, 4, 64)
    >>> u.tolist(), pipeline_time(L, u, 0.0) < pipeline_time(L, np.ones(4), 0.0)
    ([43, 14, 5, 2], True)
    """
    D, nl = L.shape
    S = P + D - 1
    lev, lk = np.nonzero(L)
    if S * len(lev) > LP_CELLS:
        return None
    s = np.arange(S)[:, None]
    b = s - lev[None, :]                                  # batch in step s at (lev, lk)
    ok = (b >= 0) & (b < P)
    rows = (s * nl + lk[None, :])[ok]
    A = sp.csr_matrix((np.broadcast_to(L[lev, lk], ok.shape)[ok], (rows, b[ok])),
                      shape=(S * nl, P + S))
    A = A - sp.csr_matrix((np.ones(S * nl), (np.arange(S * nl), P + np.arange(S * nl) // nl)),
                          shape=(S * nl, P + S))
    cost = np.r_[np.zeros(P), np.ones(S)]
    eq = np.r_[np.ones(P), np.zeros(S)][None, :]
    res = linprog(cost, A_ub=A, b_ub=np.zeros(S * nl), A_eq=eq, b_eq=[1.0],
                  bounds=(0, None), method="highs")
    if res.status != 0:
        return None
    x = np.maximum(res.x[:P], 0) * resolution
    units = np.floor(x).astype(np.int64)
    short = resolution - int(units.sum())
    if short > 0:
        units[np.argsort(-(x - units), kind="stable")[:short]] += 1
    return units[units > 0]
