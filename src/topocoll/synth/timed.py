"""Timed-tree schedules: the step-indexed tree LP as a schedule (``pipeline="timed"``).

:func:`~topocoll.optimum.timedlp.timed_lp` chooses, per root, timed spanning trees
(every arc has a step and a fabric path) and each tree's share of the root's block; it
minimizes the sum of the step lengths with steps as barriers. Here the shares are rounded
to integer chunk counts out of ``R`` chunks per block (systematic rounding with a phase
per root, :func:`_dither`), each tree's chunks sent along its arcs in their steps, and the
horizon ``H`` is chosen by the per-step alpha-beta model of the result (on symmetric
fabrics estimated from the invariant LP first, :func:`_scan`): step ``s`` costs
``alpha + max_t (latency_t + max_{l in t} load_l / c_l)`` (the kernel of
:mod:`topocoll.cost.kernel`, evaluated here on the transfers we build).

Rounding error: root ``r``'s counts differ from ``R x_T`` by less than one chunk per tree,
so a link's load over the whole schedule exceeds the LP's by less than ``b / R`` per
tree-path crossing it (:func:`rounding_slack`).

Reduce-scatter is the LP of the reversed graph run backwards with REDUCE, allreduce is
reduce-scatter then allgather (as :mod:`~topocoll.synth.forest` does).

References
----------
.. [1] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461, 2023.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..collective import allgather
from ..cost.kernel import barrier_time
from ..errors import InfeasibleError
from ..optimum.packing import optimal_packing
from ..optimum.timedlp import MAX_RANKS, MAX_STEPS, TimedLP, invariant_lp, timed_lp
from ..optimum.timedprice import Net, packing_seeds
from ..schedule import Schedule, ScheduleBuilder
from ..topology import Topology
from ..topology.symmetry import rank_symmetry
from ._common import gather_parts, require
from .forest_rows import loopless

__all__ = ["TimedPlan", "timed_plan", "build_timed", "rounding_slack", "timed_schedule",
           "timed_meta", "TIMED_RESOLUTIONS", "TIMED_WORK", "LP_ROUNDS"]

#: Chunks per block of a timed schedule (the rounding step of the tree shares) tried by
#: default; the smallest whose model time is within :data:`_ROUNDING_TOL` of the finest
#: is kept, within :data:`CHUNK_ENTRY_BUDGET`.
TIMED_RESOLUTIONS = (1024, 4096, 16384)
#: Most chunk entries (``N (N - 1) R``) a default timed allgather may hold.
CHUNK_ENTRY_BUDGET = 16_800_000
_ROUNDING_TOL = 5e-4
#: Most pricing rounds of one LP solve (column generation); the columns found by then
#: are used after it.
LP_ROUNDS = 200
#: Work budget of the horizon search of one :func:`timed_plan`, in pricing rounds
#: summed over the LPs it solves: no new horizon is started once it is spent (the best
#: plan so far is returned). Counted in work, not seconds, so that the same inputs give
#: the same schedule on any machine, loaded or idle.
TIMED_WORK = 3000
#: The horizon search stops once the model time is within this fraction of the bound.
TIMED_GOOD = 0.002


@dataclass(frozen=True)
class TimedPlan:
    """A rounded timed LP: ``transfers[s]`` lists ``(src, dst, chunk ids, path)`` of step
    ``s + 1`` in the LP's frame (the reversed graph for reduce-scatter)."""

    lp: TimedLP
    resolution: int
    transfers: tuple
    model_time: float          # per-step alpha-beta time at the size it was chosen for
    latency: float             # the longest route latency used


def _round(share: np.ndarray, R: int) -> np.ndarray:
    """Largest-remainder rounding of ``share`` (summing to 1) to integers summing to R.

    >>> _round(np.array([0.5, 0.25, 0.25]), 10).tolist()
    [5, 3, 2]
    """
    raw = share / share.sum() * R
    c = np.floor(raw).astype(np.int64)
    rest = R - int(c.sum())
    if rest > 0:
        c[np.argsort(-(raw - c), kind="stable")[:rest]] += 1
    return c


def _dither(share: np.ndarray, R: int, phase: float) -> np.ndarray:
    """Systematic rounding of ``share`` (summing to 1) to integers summing to ``R``:
    ``n_i = floor(R C_i + u) - floor(R C_(i-1) + u)`` with ``C`` the cumulative shares
    and ``u = phase`` in ``[0, 1)``. Each count is within one chunk of ``R share_i``, and
    over phases spread evenly in ``[0, 1)`` its mean is ``R share_i``: giving each root
    its own phase keeps the rounding errors of the roots' images of one tree from
    piling up on the same links.

    >>> _dither(np.array([0.5, 0.25, 0.25]), 10, 0.0).tolist()
    [5, 2, 3]
    >>> _dither(np.array([0.5, 0.25, 0.25]), 10, 0.6).tolist()
    [5, 3, 2]
    """
    c = np.cumsum(share / share.sum())
    c[-1] = 1.0
    f = np.floor(R * c + phase).astype(np.int64)
    return np.diff(np.concatenate([[0], f]))


#: Phase step of :func:`_dither` between consecutive roots (golden ratio: low discrepancy).
_GOLDEN = 0.6180339887498949


def _plan(lp: TimedLP, net: Net, R: int, block: float, alpha: float) -> TimedPlan:
    by_root: dict[int, list[int]] = defaultdict(list)
    for k, t in enumerate(lp.trees):
        by_root[t.root].append(k)
    steps: list[dict] = [dict() for _ in range(lp.steps)]
    for i, r in enumerate(lp.members):
        ks = by_root[r]
        counts = _dither(lp.share[ks], R, (i * _GOLDEN) % 1.0)
        off = i * R
        for k, c in zip(ks, counts.tolist(), strict=True):
            if c == 0:
                continue
            for x, y, s, pieces in lp.trees[k].arcs:
                sub = [c] if len(pieces) == 1 else _round(np.array([f for _, f in pieces]), c)
                o = off
                for (path, _), n in zip(pieces, list(sub), strict=True):
                    if n:
                        steps[s - 1].setdefault((x, y, path), []).append((o, n))
                    o += n
            off += c
    transfers, busy, ell = [], [], 0.0
    chunk = block / R
    for st in steps:
        if not st:
            continue
        items = [(x, y, np.concatenate([np.arange(o, o + n) for o, n in rs]), path)
                 for (x, y, path), rs in st.items()]
        load = np.zeros(net.num_links)
        hops = [net.hops(p) for *_, p in items]
        for (_, _, ids, _), h in zip(items, hops, strict=True):
            load[h] += len(ids) * chunk
        t = load / net.bw
        lat = [net.latency(p) for *_, p in items]
        ell = max(ell, *lat)
        busy.append(max(la + t[h].max() for la, h in zip(lat, hops, strict=True)))
        transfers.append(tuple(items))
    # each transfer's latency is inside its step's busy time (the slowest transfer)
    return TimedPlan(lp, R, tuple(transfers), barrier_time(np.array(busy), 0.0, alpha), ell)


def _resolve(lp: TimedLP, net: Net, block: float, alpha: float,
             resolution: int | None) -> TimedPlan:
    """The plan at ``resolution`` chunks per block, or the smallest of
    :data:`TIMED_RESOLUTIONS` (within the chunk budget) that rounds almost as well as the
    finest."""
    if resolution is not None:
        return _plan(lp, net, resolution, block, alpha)
    N = len(lp.members)
    cands = [R for R in TIMED_RESOLUTIONS if N * (N - 1) * R <= CHUNK_ENTRY_BUDGET] or \
        [TIMED_RESOLUTIONS[0]]
    plans = [_plan(lp, net, R, block, alpha) for R in cands]
    fine = min(p.model_time for p in plans)
    return next(p for p in plans if p.model_time <= fine * (1 + _ROUNDING_TOL))


def timed_plan(topology: Topology, group: tuple[int, ...], message_bytes: float, alpha: float, *,
               reverse: bool, steps: int | None = None, resolution: int | None = None,
               rounds: int = LP_ROUNDS, work: int = TIMED_WORK) -> TimedPlan:
    """The timed LP for ``steps`` steps, or the best horizon by the per-step model at
    ``message_bytes`` bytes: ``H = ceil(log2 N), +1, ...`` until the LP reaches the bound or the
    model time stops improving (at most ``2 ceil(log2 N) + 4`` steps), for each path
    limit of :meth:`~topocoll.optimum.timedprice.Net.hop_limits` (short paths cost less
    latency per step). Stops early once within :data:`TIMED_GOOD` of the bound or once
    ``work`` pricing rounds are spent (``rounds``: the most of one LP)."""
    N = len(group)
    require(N <= MAX_RANKS, f"pipeline='timed' is built for at most {MAX_RANKS} ranks, "
                            f"got {N}")
    require(resolution is None or isinstance(resolution, int) and resolution >= 1,
            f"resolution must be a positive integer, got {resolution!r}")
    net = Net(topology, group, reverse)
    packing = optimal_packing(topology, group, reverse=reverse)
    block = message_bytes / N
    best = None
    left = _Work(work)
    for hops in net.hop_limits():
        plan = _horizon(topology, group, packing, net, block, alpha, reverse, steps,
                        resolution, rounds, hops, left)
        if best is None or plan.model_time < best.model_time:
            best = plan
        if _excess(plan.lp, net, block, alpha, hops) <= 1e-4 * plan.lp.bound * block or \
                left.spent:
            break                  # at the bound with short paths: longer ones only add latency
    return best


class _Work:
    """Pricing rounds left to a horizon search (a counter of work, never of seconds)."""

    def __init__(self, rounds: int) -> None:
        self.left = int(rounds)

    def charge(self, lp: TimedLP) -> TimedLP:
        self.left -= lp.iterations
        return lp

    @property
    def spent(self) -> bool:
        return self.left <= 0


def _horizon(topology, group, packing, net, block, alpha, reverse, steps, resolution,
             rounds, hops, left: _Work) -> TimedPlan:
    sym = rank_symmetry(topology, group)
    if steps is None and sym.generators and len(sym.reps) < len(group):
        H, inv = _scan(topology, group, packing, net, block, alpha, reverse, hops, rounds,
                       left)
        lp = left.charge(timed_lp(topology, group, steps=H, reverse=reverse, hops=hops,
                                  invariant=inv, seeds=packing_seeds(packing, H, loopless),
                                  max_iterations=rounds, block=block, alpha=alpha))
        return _resolve(lp, net, block, alpha, resolution)
    lo = max(1, math.ceil(math.log2(len(group))))
    horizons = [steps] if steps is not None else range(lo, 2 * lo + 5)
    best = None
    ell = _least_step(net, alpha, hops)
    for H in horizons:
        if steps is not None:
            require(isinstance(H, int) and H >= 1, f"steps must be an integer >= 1, got {H!r}")
        try:
            lp = left.charge(timed_lp(topology, group, steps=H, reverse=reverse, hops=hops,
                                      seeds=packing_seeds(packing, H, loopless),
                                      max_iterations=rounds, block=block, alpha=alpha))
        except InfeasibleError:
            if steps is not None:
                raise
            continue                           # no tree fits: try a longer horizon
        plan = _resolve(lp, net, block, alpha, resolution)
        if best is not None and plan.model_time >= best.model_time:
            break
        best = plan
        # more steps cannot save more than the bandwidth above the bound, and each
        # costs at least alpha plus the least route latency
        if _excess(lp, net, block, alpha, hops) <= ell or \
                plan.model_time <= lp.bound * block * (1 + TIMED_GOOD) or left.spent:
            break
    require(best is not None, f"no timed tree fits in {max(horizons)} steps with paths of at "
                              f"most {hops} links on {topology.name}")
    return best


def _scan(topology, group, packing, net, block, alpha, reverse, hops, rounds, left: _Work
          ) -> tuple[int, TimedLP]:
    """The horizon with the smallest estimated model time by the invariant LP
    (:func:`~topocoll.optimum.timedlp.invariant_lp`, one row per link orbit: cheap
    enough to try every horizon from ``ceil(log2 N)`` on), with alpha and latency in
    its rows: the estimate is its value. Stops after :data:`_SCAN_PATIENCE` horizons
    without improvement, when more steps cannot save what one more costs (the
    bandwidth above the bound is below alpha plus the least route latency), within
    :data:`TIMED_GOOD` of the bound, at :data:`MAX_STEPS` or when the work budget is
    spent."""
    best = None
    worse = 0
    ell = _least_step(net, alpha, hops)
    for H in range(max(1, math.ceil(math.log2(len(group)))), MAX_STEPS + 1):
        try:
            inv = left.charge(invariant_lp(topology, group, steps=H, reverse=reverse,
                                           hops=hops, seeds=packing_seeds(packing, H, loopless),
                                           max_iterations=rounds + 100, block=block,
                                           alpha=alpha))
        except InfeasibleError:
            continue                           # no tree fits: try a longer horizon
        est = inv.value * block
        if best is None or est < best[0]:
            best, worse = (est, H, inv), 0
        else:
            worse += 1
        if worse >= _SCAN_PATIENCE or _excess(inv, net, block, alpha, hops) <= ell or \
                best[0] <= inv.bound * block * (1 + TIMED_GOOD) or left.spent:
            break
    require(best is not None, f"no timed tree fits in {MAX_STEPS} steps with paths of at "
                              f"most {hops} links on {topology.name}")
    return best[1], best[2]


def _excess(lp: TimedLP, net: Net, block: float, alpha: float, hops: int) -> float:
    """Seconds by which the bandwidth part of ``lp`` (solved with ``block`` and
    ``alpha``) exceeds the bound, at most: every step carries at least ``alpha`` plus
    the least floor of the links usable within ``hops``, so its bandwidth part is at
    most ``value b - H (alpha + that floor)``."""
    return (lp.value - lp.bound) * block - lp.steps * _least_step(net, alpha, hops)


def _least_step(net: Net, alpha: float, hops: int) -> float:
    """What a step costs at least: alpha plus the least latency floor of a link usable
    within ``hops``."""
    return alpha + float(net.latency_floor()[net.usable(hops)].min())


#: Horizons without improvement after which :func:`_scan` stops.
_SCAN_PATIENCE = 3


def build_timed(group: tuple[int, ...], plan: TimedPlan) -> Schedule:
    """The allgather-shaped schedule of ``plan`` (split = resolution chunks per block)."""
    b = ScheduleBuilder(allgather(group, split=plan.resolution))
    for items in plan.transfers:
        b.new_step()
        ptr = np.concatenate([[0], np.cumsum([len(ids) for _, _, ids, _ in items])])
        paths = [p if len(p) > 2 else None for *_, p in items]
        b.add_many([x for x, *_ in items], [y for _, y, *_ in items],
                   (ptr, np.concatenate([ids for _, _, ids, _ in items])),
                   paths=paths if any(p is not None for p in paths) else None)
    return b.build()


def timed_meta(plan: TimedPlan) -> dict[str, str]:
    """Schedule metadata of a timed plan (no timings: schedule files are reproducible)."""
    lp = plan.lp
    return {"pipeline": "timed", "steps": str(lp.steps), "timed_gap": f"{lp.gap:.6f}",
            "chunks_per_block": str(plan.resolution), "trees": str(len(lp.trees))}


def rounding_slack(plan: TimedPlan, net: Net) -> np.ndarray:
    """Per link (of ``net``) the most the rounded schedule's total bytes per block byte
    can exceed the LP's: ``1/R`` per tree path crossing it (``(1 + f)/R`` for a piece
    of fraction ``f`` of a split arc: the tree's count and the piece's split both round)."""
    out = np.zeros(net.num_links)
    for t in plan.lp.trees:
        for *_, pieces in t.arcs:
            for path, f in pieces:        # < 1 chunk per tree, < 1 + f per piece
                out[net.hops(path)] += (1.0 if len(pieces) == 1 else 1.0 + f) / plan.resolution
    return out


def timed_schedule(kind: str, topology: Topology, group: tuple[int, ...], message_bytes: float,
                   alpha: float, steps: int | None, plans: dict | None = None,
                   work: int = TIMED_WORK) -> tuple[Schedule, float]:
    """The ``pipeline="timed"`` schedule of ``kind`` (allgather, reduce_scatter or
    allreduce) and its model time at ``message_bytes``; ``work``: pricing rounds per part
    (:func:`timed_plan`)."""
    from ..collective import allreduce, reduce_scatter
    from ..schedule import concat, reverse

    plans = {} if plans is None else plans
    R = None
    for rev in gather_parts(kind):
        if rev not in plans or (R is not None and plans[rev].resolution != R):
            plans[rev] = timed_plan(topology, group, message_bytes, alpha, reverse=rev, steps=steps,
                                    resolution=R, work=work)
        R = plans[rev].resolution
    parts, info = [], {}
    for rev in gather_parts(kind):
        p = plans[rev]
        s = build_timed(group, p)
        if rev:
            s = reverse(s, reduce_scatter(group, split=R))
        parts.append(s)
        info.update({k + ("_rs" if rev and kind == "allreduce" else ""): v
                     for k, v in timed_meta(p).items()})
    total = sum(plans[rev].model_time for rev in gather_parts(kind))
    if kind == "allreduce":
        s = concat(parts, allreduce(group, split=len(group) * R), name="optimal", meta=info)
    else:
        s = parts[0].replace(name="optimal", meta=info)
    return s, total
