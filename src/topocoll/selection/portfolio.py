"""The ``optimal`` portfolio: the fastest of several synthesizers for one size.

The algorithm name ``optimal`` (for allgather, reduce-scatter and allreduce) runs
:func:`auto_pick`: the ForestColl tree-packing pipeline in batches
(:func:`topocoll.synth.forest.optimal_batches`) if it is within :data:`AUTO_SLACK` of the
exact bound at the size asked for, else the fastest of it, the one-pass constructions of
:func:`structured_candidates` (spread direct, two-level, halfway ring, Swing, mirrored
recursive doubling, weighted Hamiltonian rings), the timed-tree schedule where
:func:`timed_in_reach`, and deeper batches, each estimated with the alpha-beta kernel
(:mod:`topocoll.cost.kernel`). It is selection, not synthesis: it calls other
synthesizers, so it lives in this layer, and no synthesizer imports it.

Every budget is counted in work (pricing rounds, transfers), so the same inputs give the
same schedule on any machine.

References
----------
.. [1] Zhao et al., "ForestColl: Throughput-Optimal Collective Communications on
   Heterogeneous Network Fabrics", arXiv 2402.06787, 2024.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..cost.kernel import model_time
from ..errors import NotSupportedError, OverBudgetError
from ..optimum.maxflow import allgather_optimum
from ..optimum.timedlp import MAX_RANKS
from ..schedule import Schedule
from ..synth import DEFAULT_SIZE, forest, gather_parts, resolve_group, resolve_order
from ..synth.direct import SPREAD_BUDGET
from ..synth.forest import PipelinePart, optimal_batches, optimal_batches_plan
from ..synth.forest_rows import TRANSFER_BUDGET
from ..synth.registry import find_synthesizer
from ..synth.timed import timed_schedule
from ..topology import Topology
from ..topology.symmetry import rank_symmetry

__all__ = ["portfolio_allgather", "portfolio_reduce_scatter", "portfolio_allreduce", "auto_pick",
           "structured_candidates", "timed_in_reach", "AUTO_SLACK", "AUTO_WORK",
           "AUTO_DEEP_BUDGET", "AUTO_MAX_RANKS", "AUTO_MAX_SYMMETRIC",
           "AUTO_MAX_SYMMETRIC_SWITCHED", "AUTO_MAX_PORTFOLIO"]

#: Largest group for which ``pipeline="auto"`` (the ``optimal`` default) also tries the
#: timed LP on any fabric (about 0.1-20 s per schedule at 8-16 ranks on 2 cores).
AUTO_MAX_RANKS = 16
#: Largest group for which ``pipeline="auto"`` tries it on a fabric without switches
#: whose automorphisms leave fewer member orbits than members (the invariant LP keeps it
#: to seconds: 1.2 s on ``torus:8x8``, 5-6 s on ``hypercube:6`` and ``torus:4x4x4`` on 2
#: cores).
AUTO_MAX_SYMMETRIC = MAX_RANKS
#: The same on a fabric with switches, where paths through switches multiply the LP's
#: columns and each tree's images: 5 s for 32 ranks on ``hier:ring(4)x switch(8)``
#: (0.963 of the bound against the batches' 0.884), while a 64-rank data-parallel group
#: of a two-tier DGX H100 fat-tree took 26 s for 20 of its 1,500 pricing rounds (and
#: reached 1.055 of the bound against the two-level schedule's 1.031).
AUTO_MAX_SYMMETRIC_SWITCHED = 32
#: ``pipeline="auto"`` keeps the batches schedule when its model time is within this
#: fraction of the exact bound.
AUTO_SLACK = 0.005
#: Horizon-search budget per allgather-shaped part under ``pipeline="auto"``, in pricing
#: rounds of the timed LP (:func:`~topocoll.synth.timed.timed_plan`): work, not seconds,
#: so that the choice is the same on a loaded machine.
AUTO_WORK = 1500
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
    :data:`AUTO_MAX_SYMMETRIC` (:data:`AUTO_MAX_SYMMETRIC_SWITCHED` on a fabric with
    switches) on a fabric whose automorphisms leave fewer member orbits than members.

    >>> from topocoll.topology import hypercube, random_regular
    >>> timed_in_reach(hypercube(5), tuple(range(32)))
    True
    >>> timed_in_reach(random_regular(32, 3, seed=1), tuple(range(32)))
    False
    """
    N = len(group)
    if N < 2 or N > (AUTO_MAX_SYMMETRIC_SWITCHED if topology.num_switches
                     else AUTO_MAX_SYMMETRIC):
        return False
    return N <= AUTO_MAX_RANKS or len(rank_symmetry(topology, group).reps) < N


def structured_candidates(kind: str, topology: Topology, group: tuple[int, ...],
                          message_bytes: float = DEFAULT_SIZE, alpha: float = 0.0,
                          only: Sequence[str] | None = None, skip: Sequence[str] = ()):
    """``(label, schedule)`` of the one-pass constructions that ``pipeline="auto"`` also
    weighs when the trees are not within :data:`AUTO_SLACK` of the bound: on fabrics with
    switches, the direct schedule with pieces spread over equal-cost paths (``spread``:
    the bound in one step per part on full-bisection switched fabrics); on fabrics whose
    ranks form equal groups behind switches or in boxes, the two-level schedule
    (``two_level``, planned for ``message_bytes`` and ``alpha``: rails overlapped with the
    in-group exchange, the bound in a few steps on oversubscribed two-tier fabrics);
    where the ring order runs over links both ways, the bidirectional ring with whole
    blocks half way round (``halfway_ring``: half the latency terms of the ring); the
    multi-port butterflies (``swing``, ``mirrored_recursive_doubling``: the bound in
    ``log2 p`` steps on tori and hypercubes); on direct-connect fabrics, weighted
    Hamiltonian rings (``ring_cover``: the single-rank cut bound in ``p / 2`` steps
    where the rings cover the links evenly). Groups of more than
    :data:`AUTO_MAX_PORTFOLIO` ranks get none. ``only`` / ``skip``: labels to restrict
    to or leave out."""
    N = len(group)
    if N < 2 or N > AUTO_MAX_PORTFOLIO:
        return
    options = {"spread": ("direct", {"paths": "spread"}),
               "two_level": ("two_level", {"message_bytes": message_bytes, "alpha": alpha}),
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
    o = resolve_order(topology, group, None).tolist()
    pairs = {(lk.src, lk.dst) for lk in topology.links}
    return all((a, b) in pairs and (b, a) in pairs
               for a, b in zip(o, o[1:] + o[:1], strict=True))


def auto_pick(kind: str, topology: Topology, group: tuple[int, ...],
              batched: Callable[[], Schedule] | None, parts: Sequence[PipelinePart],
              message_bytes: float, alpha: float, steps: int | None) -> Schedule:
    """``pipeline="auto"``: the fastest, by the alpha-beta model at ``message_bytes`` (as upper
    bounds: :meth:`~topocoll.synth.forest.PipelinePart.time`,
    :func:`~topocoll.cost.kernel.model_time`), of
    ``batched``, the :func:`structured_candidates`, where :func:`timed_in_reach` the
    timed schedule, and the batches pipeline with the transfer budget
    :data:`AUTO_DEEP_BUDGET` (``deep_batches``). Stops at the first that is within
    :data:`AUTO_SLACK` of the exact bound, in that order (the timed LP costs seconds; the
    others milliseconds to a second; the deeper batches come last because the timed
    schedule, where in reach, is as fast to build and closer).
    ``batched`` builds the batches pipeline (:func:`~topocoll.synth.forest.
    optimal_batches_plan`; called only if it is kept), ``parts`` are its allgather-shaped
    parts, which time it without building it. ``batched`` None (the exact
    packing over its work budget, :data:`~topocoll.optimum.packing.PACKING_WORK`): the
    one-pass constructions only (the timed LP and the deeper batches start from the
    packing), :class:`~topocoll.errors.OverBudgetError` if none applies. The choice and
    the times of the candidates weighed, as fractions of the bound, go to
    ``meta["auto"]``; ``meta["pipeline"]`` names the winner."""
    if message_bytes <= 0 and batched is not None:
        return batched()
    bound = sum(float(allgather_optimum(topology, group, reverse=rev).value) * message_bytes
                / len(group) for rev in gather_parts(kind))
    if batched is not None:
        t_b = sum(p.time(topology, message_bytes / len(group), alpha) for p in parts)
        if t_b <= bound * (1 + AUTO_SLACK):
            return batched()
        best, t_best, label, extra = None, t_b, "batches", {}
        weighed = {"batches": t_b}
    else:       # the exact packing is over its work budget: the one-pass constructions
        best, t_best, label, extra = None, float("inf"), "", {}
        weighed = {}
    # the timed LP and the deeper batches start from the exact packing
    reach = batched is not None and timed_in_reach(topology, group)
    # where the timed LP is in reach, it comes before the rings (closer to the bound on
    # small graphs: the random heterogeneous ones, circulants)
    late = ("ring_cover",) if reach else ()

    def weigh(cands):
        nonlocal best, t_best, label
        for name, s in cands:
            weighed[name] = model_time(s, topology, message_bytes, alpha)
            if weighed[name] < t_best:
                best, t_best, label = s, weighed[name], name
            if t_best <= bound * (1 + AUTO_SLACK):
                return

    weigh(structured_candidates(kind, topology, group, message_bytes, alpha, skip=late))
    if t_best > bound * (1 + AUTO_SLACK) and reach:
        s, t_t = timed_schedule(kind, topology, group, message_bytes, alpha, steps, work=AUTO_WORK)
        weighed["timed"] = t_t
        if t_t < t_best:
            best, t_best, label = s, t_t, "timed"
        else:
            extra = {k: v for k, v in s.meta.items() if k.startswith("timed_gap")}
    if t_best > bound * (1 + AUTO_SLACK) and late:
        weigh(structured_candidates(kind, topology, group, message_bytes, alpha, only=late))
    if t_best > bound * (1 + AUTO_SLACK) and batched is not None:
        deep, _ = optimal_batches(kind, topology, ranks=group, message_bytes=message_bytes,
                                  alpha=alpha, budget=AUTO_DEEP_BUDGET * len(gather_parts(kind)))
        if deep.meta.get("batches") != str(parts[0].P):   # else the same as the batches
            weighed["deep_batches"] = model_time(deep, topology, message_bytes, alpha)
            if weighed["deep_batches"] < t_best:
                best, t_best, label = deep, weighed["deep_batches"], "deep_batches"
    if label == "batches":
        best = batched()
    if best is None:
        raise OverBudgetError(f"optimal: the exact tree packing is over its work budget and "
                              f"no one-pass construction applies to {len(group)} ranks on "
                              f"{topology.name}")

    def frac(v: float) -> float:
        return v / bound if bound > 0 else 1.0

    others = ", ".join(f"{k} {frac(v):.4f}" for k, v in weighed.items() if k != label)
    note = f"{label} ({frac(t_best):.4f} of the bound" + (f"; {others})" if others else ")")
    if batched is None:
        note += "; batches: the exact packing is over its work budget"
    meta = {**best.meta, **extra, "auto": note}
    if label not in ("batches", "timed", "deep_batches"):
        meta["pipeline"] = label
    return best.replace(name="optimal", meta=meta)


def _optimal(kind: str, topology: Topology, ranks: Sequence[int] | None,
             batches: int | None, message_bytes: float, alpha: float, budget: int, pipeline: str,
             steps: int | None) -> Schedule:
    if pipeline != "auto" or batches is not None:
        func = {"allgather": forest.optimal_allgather,
                "reduce_scatter": forest.optimal_reduce_scatter,
                "allreduce": forest.optimal_allreduce}[kind]
        return func(topology, ranks=ranks, batches=batches, message_bytes=message_bytes,
                    alpha=alpha,
                    budget=budget, pipeline="batches" if pipeline == "auto" else pipeline,
                    steps=steps)
    group = resolve_group(topology, ranks)
    try:
        batched, parts = optimal_batches_plan(kind, topology, ranks=group,
                                              message_bytes=message_bytes,
                                              alpha=alpha, budget=budget)
    except OverBudgetError:
        batched, parts = None, ()
    return auto_pick(kind, topology, group, batched, parts, message_bytes, alpha, steps)


def portfolio_allgather(topology: Topology, *, ranks: Sequence[int] | None = None,
                      batches: int | None = None, message_bytes: float = DEFAULT_SIZE,
                      alpha: float = 0.0, budget: int = TRANSFER_BUDGET,
                      pipeline: str = "auto", steps: int | None = None) -> Schedule:
    """The allgather the algorithm name ``optimal`` stands for.

    With ``pipeline="auto"`` (default) and no ``batches``: :func:`auto_pick` for
    ``message_bytes`` bytes and per-step overhead ``alpha``. Otherwise the tree-packing pipeline
    :func:`topocoll.synth.forest.optimal_allgather` with the same arguments.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = portfolio_allgather(ring(4), message_bytes=2**20)
    >>> s.name, s.collective.kind
    ('optimal', 'allgather')
    """
    return _optimal("allgather", topology, ranks, batches, message_bytes, alpha, budget, pipeline,
                    steps)


def portfolio_reduce_scatter(topology: Topology, *, ranks: Sequence[int] | None = None,
                           batches: int | None = None, message_bytes: float = DEFAULT_SIZE,
                           alpha: float = 0.0, budget: int = TRANSFER_BUDGET,
                           pipeline: str = "auto", steps: int | None = None) -> Schedule:
    """The reduce-scatter the algorithm name ``optimal`` stands for (see
    :func:`portfolio_allgather`).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> portfolio_reduce_scatter(ring(4), message_bytes=2**20).collective.kind
    'reduce_scatter'
    """
    return _optimal("reduce_scatter", topology, ranks, batches, message_bytes, alpha, budget,
                    pipeline, steps)


def portfolio_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                      batches: int | None = None, message_bytes: float = DEFAULT_SIZE,
                      alpha: float = 0.0, budget: int = TRANSFER_BUDGET,
                      pipeline: str = "auto", steps: int | None = None) -> Schedule:
    """The allreduce the algorithm name ``optimal`` stands for (see
    :func:`portfolio_allgather`).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> portfolio_allreduce(ring(4), message_bytes=2**20).collective.kind
    'allreduce'
    """
    return _optimal("allreduce", topology, ranks, batches, message_bytes, alpha, budget, pipeline,
                    steps)
