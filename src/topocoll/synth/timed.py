"""Timed-tree schedules: the step-indexed tree LP as a schedule (``pipeline="timed"``).

:func:`~topocoll.topology.timedlp.timed_lp` chooses, per root, timed spanning trees
(every arc has a step and a fabric path) and each tree's share of the root's block; it
minimizes the sum of the step lengths with steps as barriers. Here the shares are rounded
to integer chunk counts out of ``R`` chunks per block (systematic rounding with a phase
per root, :func:`_dither`), each tree's chunks sent along its arcs in their steps, and the
horizon ``H`` is chosen by the per-step alpha-beta model of the result (on symmetric
fabrics estimated from the invariant LP first, :func:`_scan`): step ``s`` costs
``alpha + max_t (latency_t + max_{l in t} load_l / c_l)`` (the model of
:class:`~topocoll.cost.AlphaBeta`; synth may not import cost, so it is evaluated here on
the transfers we build).

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
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..collective import allgather
from ..errors import InfeasibleError
from ..schedule import Schedule, ScheduleBuilder
from ..topology import Topology
from ..topology.packing import optimal_packing
from ..topology.symmetry import rank_symmetry
from ..topology.timedlp import MAX_RANKS, MAX_STEPS, TimedLP, invariant_lp, timed_lp
from ..topology.timedprice import Net, packing_seeds
from ._common import gather_parts, require
from .forest_rows import _loopless
from .two_level import DEFAULT_SIZE

__all__ = ["TimedPlan", "timed_plan", "build_timed", "rounding_slack", "TIMED_RESOLUTIONS",
           "TIMED_TIME_LIMIT", "timed_in_reach"]

#: Chunks per block of a timed schedule (the rounding step of the tree shares) tried by
#: default; the smallest whose model time is within :data:`_ROUNDING_TOL` of the finest
#: is kept, within :data:`CHUNK_ENTRY_BUDGET`.
TIMED_RESOLUTIONS = (1024, 4096, 16384)
#: Most chunk entries (``N (N - 1) R``) a default timed allgather may hold.
CHUNK_ENTRY_BUDGET = 16_800_000
_ROUNDING_TOL = 5e-4
#: Wall-clock cap (s) of one LP solve; the best columns found so far are used after it.
TIMED_TIME_LIMIT = 60.0
#: Wall-clock budget (s) of the horizon search of one :func:`timed_plan`: no new
#: horizon is started after it (the best plan so far is returned; a started LP runs to
#: its own stopping rule or :data:`TIMED_TIME_LIMIT`).
TIMED_BUDGET = 30.0
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
    transfers, total, ell = [], 0.0, 0.0
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
        total += alpha + max(la + t[h].max() for la, h in zip(lat, hops, strict=True))
        transfers.append(tuple(items))
    return TimedPlan(lp, R, tuple(transfers), total, ell)


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


def timed_plan(topology: Topology, group: tuple[int, ...], size: float, alpha: float, *,
               reverse: bool, steps: int | None = None, resolution: int | None = None,
               time_limit: float = TIMED_TIME_LIMIT, budget: float = TIMED_BUDGET
               ) -> TimedPlan:
    """The timed LP for ``steps`` steps, or the best horizon by the per-step model at
    ``size`` bytes: ``H = ceil(log2 N), +1, ...`` until the LP reaches the bound or the
    model time stops improving (at most ``2 ceil(log2 N) + 4`` steps), for each path
    limit of :meth:`~topocoll.topology.timedprice.Net.hop_limits` (short paths cost less
    latency per step). Stops early once within :data:`TIMED_GOOD` of the bound or after
    ``budget`` seconds."""
    N = len(group)
    require(N <= MAX_RANKS, f"pipeline='timed' is built for at most {MAX_RANKS} ranks, "
                            f"got {N}")
    require(resolution is None or isinstance(resolution, int) and resolution >= 1,
            f"resolution must be a positive integer, got {resolution!r}")
    net = Net(topology, group, reverse)
    packing = optimal_packing(topology, group, reverse=reverse)
    block = size / N
    best = None
    t0 = time.perf_counter()
    for hops in net.hop_limits():
        plan = _horizon(topology, group, packing, net, block, alpha, reverse, steps,
                        resolution, time_limit, hops, t0 + budget)
        if best is None or plan.model_time < best.model_time:
            best = plan
        if _excess(plan.lp, net, block, alpha, hops) <= 1e-4 * plan.lp.bound * block or \
                time.perf_counter() > t0 + budget:
            break                  # at the bound with short paths: longer ones only add latency
    return best


def _horizon(topology, group, packing, net, block, alpha, reverse, steps, resolution,
             time_limit, hops, deadline) -> TimedPlan:
    sym = rank_symmetry(topology, group)
    if steps is None and sym.generators and len(sym.reps) < len(group):
        H, inv = _scan(topology, group, packing, net, block, alpha, reverse, hops, deadline)
        lp = timed_lp(topology, group, steps=H, reverse=reverse, hops=hops, invariant=inv,
                      seeds=packing_seeds(packing, H, _loopless), time_limit=time_limit,
                      block=block, alpha=alpha)
        return _resolve(lp, net, block, alpha, resolution)
    lo = max(1, math.ceil(math.log2(len(group))))
    horizons = [steps] if steps is not None else range(lo, 2 * lo + 5)
    best = None
    ell = _least_step(net, alpha, hops)
    for H in horizons:
        if steps is not None:
            require(isinstance(H, int) and H >= 1, f"steps must be an integer >= 1, got {H!r}")
        try:
            lp = timed_lp(topology, group, steps=H, reverse=reverse, hops=hops,
                          seeds=packing_seeds(packing, H, _loopless), time_limit=time_limit,
                          block=block, alpha=alpha)
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
                plan.model_time <= lp.bound * block * (1 + TIMED_GOOD) or \
                time.perf_counter() > deadline:
            break
    require(best is not None, f"no timed tree fits in {max(horizons)} steps with paths of at "
                              f"most {hops} links on {topology.name}")
    return best


def _scan(topology, group, packing, net, block, alpha, reverse, hops, deadline
          ) -> tuple[int, TimedLP]:
    """The horizon with the smallest estimated model time by the invariant LP
    (:func:`~topocoll.topology.timedlp.invariant_lp`, one row per link orbit: cheap
    enough to try every horizon from ``ceil(log2 N)`` on), with alpha and latency in
    its rows: the estimate is its value. Stops after :data:`_SCAN_PATIENCE` horizons
    without improvement, when more steps cannot save what one more costs (the
    bandwidth above the bound is below alpha plus the least route latency), within
    :data:`TIMED_GOOD` of the bound, at :data:`MAX_STEPS` or at the deadline."""
    best = None
    worse = 0
    ell = _least_step(net, alpha, hops)
    for H in range(max(1, math.ceil(math.log2(len(group)))), MAX_STEPS + 1):
        try:
            inv = invariant_lp(topology, group, steps=H, reverse=reverse, hops=hops,
                               seeds=packing_seeds(packing, H, _loopless), block=block,
                               alpha=alpha)
        except InfeasibleError:
            continue                           # no tree fits: try a longer horizon
        est = inv.value * block
        if best is None or est < best[0]:
            best, worse = (est, H, inv), 0
        else:
            worse += 1
        if worse >= _SCAN_PATIENCE or _excess(inv, net, block, alpha, hops) <= ell or \
                best[0] <= inv.bound * block * (1 + TIMED_GOOD) or \
                time.perf_counter() > deadline:
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


def meta(plan: TimedPlan) -> dict[str, str]:
    """Schedule metadata of a timed plan."""
    lp = plan.lp
    return {"pipeline": "timed", "steps": str(lp.steps), "timed_gap": f"{lp.gap:.6f}",
            "chunks_per_block": str(plan.resolution), "trees": str(len(lp.trees)),
            "lp_seconds": f"{lp.seconds:.2f}"}


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


# ------------------------------------------------------------------ optimal(pipeline=...)
#: Largest group for which ``pipeline="auto"`` (the ``optimal`` default) also tries the
#: timed LP on any fabric (about 0.1-20 s per schedule at 8-16 ranks on 2 cores).
AUTO_MAX_RANKS = 16
#: Largest group for which ``pipeline="auto"`` tries it on a fabric whose automorphisms
#: leave fewer member orbits than members (the invariant LP keeps it to seconds).
AUTO_MAX_SYMMETRIC = MAX_RANKS
#: ``pipeline="auto"`` keeps the batches schedule when its model time is within this
#: fraction of the exact bound.
AUTO_SLACK = 0.005
#: Horizon-search budget (s) per allgather-shaped part under ``pipeline="auto"``.
AUTO_BUDGET = 10.0
#: Transfer budget per allgather-shaped part (the allreduce has two) of the deeper
#: batches pipeline that ``pipeline="auto"`` weighs when the default batches
#: (``TRANSFER_BUDGET``) are not within :data:`AUTO_SLACK` (on sparse random graphs the
#: default budget leaves one batch: 3.4x the bound on rrg:64).
AUTO_DEEP_BUDGET = 400_000
#: Largest group for which ``pipeline="auto"`` weighs the :func:`structured_candidates`.
AUTO_MAX_PORTFOLIO = 1024


def timed_in_reach(topology: Topology, group: tuple[int, ...]) -> bool:
    """Whether ``pipeline="auto"`` (and ``topocoll compare``) try the timed LP on
    ``group``: at most :data:`AUTO_MAX_RANKS` ranks, or at most
    :data:`AUTO_MAX_SYMMETRIC` on a fabric whose automorphisms leave fewer member
    orbits than members.

    >>> from topocoll.topology import hypercube, random_regular
    >>> timed_in_reach(hypercube(5), tuple(range(32)))
    True
    >>> timed_in_reach(random_regular(32, 3, seed=1), tuple(range(32)))
    False
    """
    N = len(group)
    if N < 2 or N > AUTO_MAX_SYMMETRIC:
        return False
    return N <= AUTO_MAX_RANKS or len(rank_symmetry(topology, group).reps) < N


def timed_schedule(kind: str, topology: Topology, group: tuple[int, ...], size: float,
                   alpha: float, steps: int | None, plans: dict | None = None,
                   budget: float = TIMED_BUDGET) -> tuple[Schedule, float]:
    """The ``pipeline="timed"`` schedule of ``kind`` (allgather, reduce_scatter or
    allreduce) and its model time at ``size``."""
    from ..collective import allreduce, reduce_scatter
    from ..schedule import concat, reverse

    plans = {} if plans is None else plans
    R = None
    for rev in gather_parts(kind):
        if rev not in plans or (R is not None and plans[rev].resolution != R):
            plans[rev] = timed_plan(topology, group, size, alpha, reverse=rev, steps=steps,
                                    resolution=R, budget=budget)
        R = plans[rev].resolution
    parts, info = [], {}
    for rev in gather_parts(kind):
        p = plans[rev]
        s = build_timed(group, p)
        if rev:
            s = reverse(s, reduce_scatter(group, split=R))
        parts.append(s)
        info.update({k + ("_rs" if rev and kind == "allreduce" else ""): v
                     for k, v in meta(p).items()})
    total = sum(plans[rev].model_time for rev in gather_parts(kind))
    if kind == "allreduce":
        s = concat(parts, allreduce(group, split=len(group) * R), name="optimal", meta=info)
    else:
        s = parts[0].replace(name="optimal", meta=info)
    return s, total


def batches_time(topology: Topology, rows, P: int, units, per_root_bytes: float,
                 alpha: float, reverse_graph: bool) -> float:
    """Per-step alpha-beta time of a batches pipeline of ``rows`` (longest row latency in
    every step: an upper bound on the cost model's time)."""
    from .forest_rows import _entries
    from .pipeline import pipeline_time

    if not len(rows.src):
        return 0.0
    ent_row, ent_link, ent_w, ell, nlinks = _entries(rows, topology, reverse_graph)
    L = np.zeros((rows.D, nlinks))
    np.add.at(L, (rows.depth[ent_row] - 1, ent_link), ent_w * per_root_bytes / rows.Q)
    return pipeline_time(L, np.ones(P) if units is None else np.asarray(units), alpha + ell)


def structured_candidates(kind: str, topology: Topology, group: tuple[int, ...],
                          size: float = DEFAULT_SIZE, alpha: float = 0.0,
                          only: Sequence[str] | None = None, skip: Sequence[str] = ()):
    """``(label, schedule)`` of the one-pass constructions that ``pipeline="auto"`` also
    weighs when the trees are not within :data:`AUTO_SLACK` of the bound: on fabrics with
    switches, the direct schedule with pieces spread over equal-cost paths (``spread``:
    the bound in one step per part on full-bisection switched fabrics); on fabrics whose
    ranks form equal groups behind switches or in boxes, the two-level schedule
    (``two_level``, planned for ``size`` and ``alpha``: rails overlapped with the
    in-group exchange, the bound in a few steps on oversubscribed two-tier fabrics);
    where the ring order runs over links both ways, the bidirectional ring with whole
    blocks half way round (``halfway_ring``: half the latency terms of the ring); the
    multi-port butterflies (``swing``, ``mirrored_recursive_doubling``: the bound in
    ``log2 p`` steps on tori and hypercubes); on direct-connect fabrics, weighted
    Hamiltonian rings (``ring_cover``: the single-rank cut bound in ``p / 2`` steps
    where the rings cover the links evenly). Groups of more than
    :data:`AUTO_MAX_PORTFOLIO` ranks get none. ``only`` / ``skip``: labels to restrict
    to or leave out."""
    from ..errors import NotSupportedError
    from .direct import SPREAD_BUDGET
    from .registry import find_synthesizer

    N = len(group)
    if N < 2 or N > AUTO_MAX_PORTFOLIO:
        return
    options = {"spread": ("direct", {"paths": "spread"}),
               "two_level": ("two_level", {"size": size, "alpha": alpha}),
               "halfway_ring": ("bidirectional_ring", {"variant": "halfway"}),
               "swing": ("swing", {}),
               "mirrored_recursive_doubling": ("mirrored_recursive_doubling", {}),
               "ring_cover": ("ring_cover", {})}
    if not topology.num_switches or N * (N - 1) > SPREAD_BUDGET:
        del options["spread"]
    if not _ring_of_links(topology, group):
        del options["halfway_ring"]
    for label in list(options):
        if label in skip or (only is not None and label not in only):
            del options[label]
    for label, (name, kw) in options.items():
        try:
            yield label, find_synthesizer(name, kind)(topology, ranks=group, **kw)
        except NotSupportedError:
            continue


def _ring_of_links(topology: Topology, group: tuple[int, ...]) -> bool:
    """Whether consecutive members of the ring order are joined by links both ways."""
    from ._common import resolve_order

    o = resolve_order(topology, group, None).tolist()
    pairs = {(lk.src, lk.dst) for lk in topology.links}
    return all((a, b) in pairs and (b, a) in pairs
               for a, b in zip(o, o[1:] + o[:1], strict=True))


def auto_pick(kind: str, topology: Topology, group: tuple[int, ...], batched: Schedule,
              parts: list, size: float, alpha: float, steps: int | None) -> Schedule:
    """``pipeline="auto"``: the fastest, by the alpha-beta model at ``size`` (as upper
    bounds: :func:`batches_time`, :func:`~topocoll.synth._common.model_time`), of
    ``batched``, the :func:`structured_candidates`, where :func:`timed_in_reach` the
    timed schedule, and the batches pipeline with the transfer budget
    :data:`AUTO_DEEP_BUDGET` (``deep_batches``). Stops at the first that is within
    :data:`AUTO_SLACK` of the exact bound, in that order (the timed LP costs seconds; the
    others milliseconds to a second; the deeper batches come last because the timed
    schedule, where in reach, is as fast to build and closer).
    ``parts``: ``(rows, P, units, reversed)`` of each allgather-shaped part of
    ``batched``. The choice and the times of the candidates weighed, as fractions of the
    bound, go to ``meta["auto"]``; ``meta["pipeline"]`` names the winner."""
    from ..topology.maxflow import allgather_optimum
    from ._common import model_time
    from .registry import find_synthesizer

    if size <= 0:
        return batched
    t_b = sum(batches_time(topology, rows, P, u, size / len(group), alpha, rev)
              for rows, P, u, rev in parts)
    bound = sum(float(allgather_optimum(topology, group, reverse=rev).value) * size
                / len(group) for rev in gather_parts(kind))
    if t_b <= bound * (1 + AUTO_SLACK):
        return batched
    best, t_best, label, extra = batched, t_b, "batches", {}
    weighed = {"batches": t_b}
    reach = timed_in_reach(topology, group)
    # where the timed LP is in reach, it comes before the rings (closer to the bound on
    # small graphs: the random heterogeneous ones, circulants)
    late = ("ring_cover",) if reach else ()

    def weigh(cands):
        nonlocal best, t_best, label
        for name, s in cands:
            weighed[name] = model_time(s, topology, size, alpha)
            if weighed[name] < t_best:
                best, t_best, label = s, weighed[name], name
            if t_best <= bound * (1 + AUTO_SLACK):
                return

    weigh(structured_candidates(kind, topology, group, size, alpha, skip=late))
    if t_best > bound * (1 + AUTO_SLACK) and reach:
        s, t_t = timed_schedule(kind, topology, group, size, alpha, steps,
                                budget=AUTO_BUDGET)
        weighed["timed"] = t_t
        if t_t < t_best:
            best, t_best, label = s, t_t, "timed"
        else:
            extra = {k: v for k, v in s.meta.items() if k.startswith("timed_gap")}
    if t_best > bound * (1 + AUTO_SLACK) and late:
        weigh(structured_candidates(kind, topology, group, size, alpha, only=late))
    if t_best > bound * (1 + AUTO_SLACK):
        deep = find_synthesizer("optimal", kind)(topology, ranks=group, pipeline="batches",
                                                 budget=AUTO_DEEP_BUDGET * len(gather_parts(kind)),
                                                 size=size, alpha=alpha)
        if deep.meta.get("batches") != batched.meta.get("batches"):   # else the same
            weighed["deep_batches"] = model_time(deep, topology, size, alpha)
            if weighed["deep_batches"] < t_best:
                best, t_best, label = deep, weighed["deep_batches"], "deep_batches"
    others = ", ".join(f"{k} {v / bound:.4f}" for k, v in weighed.items() if k != label)
    note = f"{label} ({t_best / bound:.4f} of the bound" + (f"; {others})" if others else ")")
    meta = {**best.meta, **extra, "auto": note}
    if label not in ("batches", "timed", "deep_batches"):
        meta["pipeline"] = label
    return best.replace(name="optimal", meta=meta)
