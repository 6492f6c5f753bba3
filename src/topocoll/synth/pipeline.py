"""Batch sizes for pipelined tree schedules under the alpha-beta model.

A pipelined tree schedule (:mod:`topocoll.synth.forest`) sends batch ``b`` over an arc
at level ``σ = depth - 1`` in step ``b + σ``. Let ``L[σ, l]`` be the seconds link ``l``
is busy at level ``σ`` for all the data, and ``w_b`` the share of batch ``b``. With
steps as barriers step ``s`` costs ``alpha + ℓ + max_l sum_σ w_{s-σ} L[σ, l]``. With
``P`` equal batches and ``D`` levels the bandwidth part is ``(1 + O/P)`` times the
bound, with the *fill overhead* (:func:`fill_overhead`)

    ``O = sum_{s < D-1} (max_l C[s, l] + max_l (F_l - C[s, l])) / F - (D - 1)``

(``C`` the prefix sums over levels, ``F_l`` a link's total, ``F`` the largest): fill step
``s`` and drain step ``P + s`` together cost one batch only when one link is the most
loaded in both, as on a ring or a translation-symmetric torus packing. ``O`` is fixed
by the trees, so equal batches trade ``O T / P`` against ``(P + D - 1) ℓ``.
:func:`batch_units` chooses unequal batch sizes by a linear program instead: the steps'
maxima are linear in ``w``, so the best sizes for a given ``P`` are exact (e.g. batches
shrinking geometrically where the last level only loads fast links).

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

__all__ = ["fill_overhead", "pipeline_time", "batch_units", "LP_CELLS"]

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
