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

from ..cost.kernel import barrier_time
from ..numeric import matmul

__all__ = ["fill_overhead", "pipeline_time", "batch_units", "LP_CELLS", "fluid_counts",
           "fluid_sends"]

#: Largest ``steps x links x levels`` (nonzeros) of a batch-size linear program.
LP_CELLS = 400_000
#: Interior-point iterations :func:`fluid_sends` allows its program.
IPM_ITERATIONS = 2000


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
    without data cost nothing (the kernel :func:`~topocoll.cost.kernel.barrier_time`).

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
    busy, used = np.zeros(P + D - 1), np.zeros(P + D - 1, dtype=bool)
    for s in range(P + D - 1):
        lo, hi = max(0, s - P + 1), min(D - 1, s)
        ws = w[s - np.arange(lo, hi + 1)]
        used[s] = np.any(ws > 0)
        if used[s]:
            busy[s] = float(matmul(ws, L[lo:hi + 1]).max())
    return barrier_time(busy, step_cost, used=used)


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
    from scipy.optimize import linprog  # 0.4 s to import; few commands need it

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


def fluid_sends(parent: np.ndarray, ent_unit: np.ndarray, ent_link: np.ndarray,
                ent_w: np.ndarray, steps: int, *, max_iterations: int = IPM_ITERATIONS
                ) -> tuple[np.ndarray, float] | None:
    """The best step-by-step sending of every tree arc over ``steps`` steps.

    Time-expanded linear program over cumulative shares ``y[a, s]`` (the part of its
    class's data arc ``a`` has sent by the end of step ``s``): non-decreasing, 1 at the
    last step, and causal, ``y[a, s] <= y[parent(a), s - 1]`` (``y[a, 0] = 0`` below a
    root arc). Step ``s`` costs ``t_s >= sum_a w[a, l] (y[a, s] - y[a, s - 1])`` for every
    link ``l``; the program minimizes ``sum_s t_s``. Unlike batches, each arc spreads its
    data over the steps on its own, so a root's out-links need not be full at level 0.

    Parameters
    ----------
    parent : ndarray of int
        Per arc, the arc into its tail, or -1 (root arc); parents come first.
    ent_unit, ent_link, ent_w : ndarray
        Arc ``ent_unit[i]`` keeps link ``ent_link[i]`` busy ``ent_w[i]`` seconds for its
        whole class's data.
    steps : int
        Horizon (at least the deepest arc's depth).
    max_iterations : int
        Interior-point iterations HiGHS may take (work, not seconds).

    Returns
    -------
    (ndarray, float) or None
        ``y`` (arcs x steps) and the bandwidth time ``sum_s t_s``; None if the program
        was not solved to optimality.

    Examples
    --------
    A two-arc path with both arcs on one link: the second arc forwards only what the
    first sent a step earlier, so in two steps arc 0 sends everything first, then
    arc 1 (the link is busy 2 s in total either way):

    >>> import numpy as np
    >>> y, t = fluid_sends(np.array([-1, 0]), np.array([0, 1]), np.array([0, 0]),
    ...                    np.array([1.0, 1.0]), 2)
    >>> np.round(y, 6).tolist(), round(t, 6)
    ([[1.0, 1.0], [0.0, 1.0]], 2.0)
    """
    nu, H = len(parent), int(steps)
    nl = int(ent_link.max()) + 1
    NV = nu * H + H
    rows, cols, vals = [], [], []
    r = 0
    # monotone: y[a, s-1] - y[a, s] <= 0
    a = np.repeat(np.arange(nu), H - 1)
    s = np.tile(np.arange(1, H), nu)
    k = np.arange(len(a)) + r
    rows += [k, k]
    cols += [a * H + s - 1, a * H + s]
    vals += [np.ones(len(a)), -np.ones(len(a))]
    r += len(a)
    # causality: y[a, s] - y[p, s-1] <= 0 (s = 0: y[a, 0] <= 0)
    ch = np.flatnonzero(parent >= 0)
    a = np.repeat(ch, H)
    s = np.tile(np.arange(H), len(ch))
    k = np.arange(len(a)) + r
    m = s > 0
    rows += [k, k[m]]
    cols += [a * H + s, parent[a[m]] * H + s[m] - 1]
    vals += [np.ones(len(a)), -np.ones(int(m.sum()))]
    r += len(a)
    # step loads: sum_a w (y[a, s] - y[a, s-1]) - t_s <= 0
    S = np.arange(H)
    rr = r + S[None, :] * nl + ent_link[:, None]
    rows += [rr.ravel(), rr[:, 1:].ravel()]
    cols += [(ent_unit[:, None] * H + S[None, :]).ravel(),
             (ent_unit[:, None] * H + S[None, 1:] - 1).ravel()]
    vals += [np.repeat(ent_w, H), -np.repeat(ent_w, H - 1)]
    k = r + np.arange(H * nl)
    rows.append(k)
    cols.append(nu * H + np.arange(H * nl) // nl)
    vals.append(-np.ones(H * nl))
    r += H * nl
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(r, NV))
    eq = sp.csr_matrix((np.ones(nu), (np.arange(nu), np.arange(nu) * H + H - 1)),
                       shape=(nu, NV))
    from scipy.optimize import linprog

    cost = np.r_[np.zeros(nu * H), np.ones(H)]
    res = linprog(cost, A_ub=A, b_ub=np.zeros(r), A_eq=eq, b_eq=np.ones(nu), bounds=(0, 1),
                  method="highs-ipm", options={"maxiter": int(max_iterations)})
    if res.status != 0:
        return None
    return res.x[:nu * H].reshape(nu, H), float(res.fun)


def fluid_counts(y: np.ndarray, parent: np.ndarray, resolution: int) -> np.ndarray | None:
    """Integer cumulative sends ``K[a, s]`` (units of ``1/resolution`` of a class's data,
    ``K[a, -1] = 0`` prepended) from the shares of :func:`fluid_sends`: rounded to the
    nearest unit (so a step's amount is off by less than one unit), non-decreasing and
    causal (``K[a, s] <= K[parent, s - 1]``); None if rounding leaves
    some arc short of ``resolution`` at the last step.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([[0.5, 1.0, 1.0], [0.0, 0.5, 1.0]])
    >>> fluid_counts(y, np.array([-1, 0]), 4).tolist()
    [[0, 2, 4, 4], [0, 0, 2, 4]]
    """
    nu, H = y.shape
    K = np.floor(y * resolution + 0.5).astype(np.int64)
    K = np.maximum.accumulate(np.minimum(K, resolution), axis=1)
    for a in range(nu):
        p = parent[a]
        if p >= 0:
            K[a, 0] = 0
            K[a, 1:] = np.minimum(K[a, 1:], K[p, :-1])
    if np.any(K[:, -1] != resolution):
        return None
    return np.concatenate([np.zeros((nu, 1), np.int64), K], axis=1)
