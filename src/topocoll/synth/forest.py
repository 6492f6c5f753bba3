"""Bandwidth-optimal schedules from spanning-tree packings (ForestColl), any topology.

Allgather: every member roots ``k`` spanning out-trees (:func:`~topocoll.optimum.packing.
optimal_packing`, exact optimum ``x* = U/k``); tree class ``T`` with multiplicity ``m_T``
carries ``m_T/k`` of its root's block. The block is cut into ``P`` batches of ``Q``
chunks (``Q`` the smallest count that makes every class an integer number of chunks) and
the batches are pipelined down the trees: in step ``s`` the arc into a vertex at depth
``d`` carries batch ``s - d + 1``. Arcs that came from edge splitting carry their path
through the switches. Per batch, arc ``e`` carries at most ``U c_e / k`` blocks' worth,
so the fluid (bandwidth) time is ``(M/N) x*`` exactly: the bound. Reduce-scatter runs
the packing of the reversed graph backwards (REDUCE); allreduce is reduce-scatter then
allgather; broadcast and reduce use Edmonds' ``λ`` arborescences from the root.

The number of batches ``P`` comes from the alpha-beta model of the pipeline itself:
step ``s`` costs ``alpha + ℓ + max_e load_e(s)/c_e`` (``ℓ`` the longest arc latency),
evaluated exactly per step for ``P = 1, 2, 4, ...`` within a budget of chunk entries;
with ``pipeline="weighted"`` unequal batch sizes (:func:`~topocoll.synth.pipeline.
batch_units`, a linear program on the same per-step model) replace equal ones when
they are faster. Switch
paths are used without the cycles that chained edge splits leave in them.

References
----------
.. [1] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461, 2023.
.. [2] Zhao et al., "ForestColl: Throughput-Optimal Collective Communications on
   Heterogeneous Network Fabrics", arXiv 2402.06787, 2024.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..collective import allgather, allreduce, broadcast, reduce, reduce_scatter
from ..optimum.maxflow import capacity_graph
from ..optimum.packing import Packing, broadcast_packing, eulerian_reason, optimal_packing
from ..schedule import Schedule, concat, reverse
from ..topology import Topology
from ._common import DEFAULT_SIZE, require, resolve_group
from .forest_rows import (
    CHUNK_BUDGET,
    TRANSFER_BUDGET,
    Rows,
    arc_units,
    batches_time,
    build_fluid,
    build_rows,
    choose_batches,
    quantum,
    row_entries,
    tree_rows,
)
from .pipeline import (
    batch_units,
    fill_overhead,
    fluid_counts,
    fluid_sends,
    pipeline_time,
)
from .timed import timed_schedule

__all__ = ["optimal_allgather", "optimal_reduce_scatter", "optimal_allreduce",
           "optimal_broadcast", "optimal_reduce", "optimal_unsupported_reason",
           "optimal_batches", "optimal_batches_plan", "PipelinePart", "PIPELINES",
           "choose_batches", "CHUNK_BUDGET"]

#: How the trees are pipelined: equal batches, LP-sized batches (more chunks: ``16 P``
#: per slot, too many for MSCCL export), or per-arc sends from a time-expanded LP
#: (:func:`~topocoll.synth.pipeline.fluid_sends`; seconds per solve), or the step-indexed
#: tree LP (:mod:`~topocoll.synth.timed`). The choice among these and other synthesizers
#: (``pipeline="auto"``, what the algorithm name ``optimal`` runs) is the selection
#: layer's: :mod:`topocoll.selection.portfolio`.
PIPELINES = ("batches", "weighted", "fluid", "timed")
#: Most tree arcs (classes x arcs) a ``pipeline="fluid"`` program is built for
#: (dgx-a100:2 has 1,135 and takes minutes on 2 shared cores).
FLUID_MAX_ARCS = 2_000
#: Chunks per ``Q``-slot of a ``pipeline="fluid"`` schedule (its rounding step).
FLUID_RESOLUTION = 1024
#: Most rows (tree arcs) for which unequal batch sizes are searched (:func:`_weighted`).
WEIGHT_ROWS = 20_000


def optimal_unsupported_reason(topology: Topology, group: tuple[int, ...]) -> str | None:
    """None if edge splitting applies (every relay node has equal in/out capacity)."""
    if len(group) < 2:
        return "needs at least two ranks"
    return eulerian_reason(capacity_graph(topology, group))


def _fluid(topology: Topology, group: tuple[int, ...], packing: Packing, Q: int,
           message_bytes: float, alpha: float, *, reverse_graph: bool, steps: int | None,
           resolution: int = FLUID_RESOLUTION) -> tuple[Rows, np.ndarray, np.ndarray]:
    """Rows, their arcs and the integer cumulative sends (:func:`~.pipeline.fluid_sends`)
    for ``steps`` steps, or the best of a few horizons by ``bandwidth + steps (alpha +
    ℓ)`` if ``steps`` is None."""
    rows = tree_rows(packing, {r: 0 for r in packing.per_root}, Q, 1)
    unit, parent = arc_units(packing)
    require(len(parent) <= FLUID_MAX_ARCS,
            f"pipeline='fluid' needs one LP column per tree arc and step; {topology.name} "
            f"has {len(parent)} tree arcs (limit {FLUID_MAX_ARCS})")
    ent_row, ent_link, ent_w, ell, _ = row_entries(rows, topology, reverse_graph)
    chunk = message_bytes / len(group) / Q
    D = rows.D
    horizons = [steps] if steps is not None else [D + e for e in (1, 3, 7)]
    best = None
    w = ent_w * chunk
    norm = float(np.bincount(ent_link, weights=w).max())   # LP in units of the bound
    for H in horizons:
        require(isinstance(H, int) and H >= D, f"steps must be >= the tree depth {D}, got {H}")
        sol = fluid_sends(parent, unit[ent_row], ent_link, w / norm, H)
        if sol is None:
            break
        t = sol[1] * norm + H * (alpha + ell)
        if best is not None and t >= best[0]:
            break
        best = (t, sol[0])
    require(best is not None, f"the fluid pipeline program was not solved for {topology.name}")
    K = fluid_counts(best[1], parent, resolution)
    require(K is not None, "fluid pipeline: rounding left an arc short (numerical)")
    base = {r: i * Q * resolution for i, r in enumerate(group)}
    return tree_rows(packing, base, Q, resolution), unit, K


def _weighted(rows: Rows, topology: Topology, chunk_bytes_per_batch: float, P: int, *,
              alpha: float, reverse_graph: bool, budget: int) -> np.ndarray | None:
    """Unequal batch sizes (:func:`~.pipeline.batch_units`) for ``P`` or nearby counts
    that beat ``P`` equal batches under the per-step model of :func:`choose_batches`;
    None if none does."""
    if not len(rows.src) or rows.D < 2 or len(rows.src) > WEIGHT_ROWS:
        return None
    ent_row, ent_link, ent_w, ell, nlinks = row_entries(rows, topology, reverse_graph)
    L = np.zeros((rows.D, nlinks))
    np.add.at(L, (rows.depth[ent_row] - 1, ent_link), ent_w * chunk_bytes_per_batch)
    if fill_overhead(L) <= 1e-9:
        return None
    step = alpha + ell
    best, best_u = pipeline_time(L, np.ones(P), step), None
    per_batch = max(int(rows.count.sum()), 1)
    chunk_limit = max(CHUNK_BUDGET, 20 * budget)
    for p in sorted({max(1, P // 4), max(1, P // 2), P}):
        if p * len(rows.src) > budget and p > 1:
            continue
        res = min(16 * p, chunk_limit // per_batch)
        if res < 2 * p:
            continue
        u = batch_units(L, p, res)
        if u is None:
            continue
        t = pipeline_time(L, u, step)
        if t < best * (1 - 1e-9):
            best, best_u = t, u
    return best_u


def _pipelined(topology: Topology, group: tuple[int, ...], packing: Packing, Q: int,
               batches: int | None, message_bytes: float, alpha: float, *, rooted: int | None,
               reverse_graph: bool, budget: int, units: np.ndarray | None = None,
               weighted: bool = False) -> tuple[Rows, int, np.ndarray | None]:
    """Rows with levels, the batch count and (if unequal) the batch sizes in units."""
    rows = tree_rows(packing, {r: 0 for r in packing.per_root}, Q, 1)
    if batches is None:
        per_root_bytes = message_bytes / len(group) if rooted is None else message_bytes
        batches = choose_batches(rows, topology, per_root_bytes / Q, alpha=alpha,
                                 reverse_graph=reverse_graph, budget=budget)
        if weighted:
            units = _weighted(rows, topology, per_root_bytes / Q, batches, alpha=alpha,
                              reverse_graph=reverse_graph, budget=budget)
        if units is not None:
            batches = len(units)
    require(isinstance(batches, int) and batches >= 1, f"batches must be >= 1, got {batches}")
    U = batches if units is None else int(np.sum(units))
    base = {r: i * Q * U for i, r in enumerate(group)} if rooted is None else {rooted: 0}
    rows = tree_rows(packing, base, Q, batches)
    return rows, batches, units


def _gather_like(topology, ranks, batches, message_bytes, alpha, reverse_graph: bool, Q=None,
                 budget=TRANSFER_BUDGET, units=None, weighted=False):
    group = resolve_group(topology, ranks)
    reason = optimal_unsupported_reason(topology, group)
    require(reason is None, f"optimal does not apply to {topology.name}: {reason}")
    p = optimal_packing(topology, group, reverse=reverse_graph)
    Q = Q or quantum(p)
    rows, P, units = _pipelined(topology, group, p, Q, batches, message_bytes, alpha, rooted=None,
                                reverse_graph=reverse_graph, budget=budget, units=units,
                                weighted=weighted)
    return group, rows, P, units


def _split(rows: Rows, P: int, units: np.ndarray | None) -> int:
    return rows.Q * (P if units is None else int(np.sum(units)))


def _meta(rows: Rows, P: int, units: np.ndarray | None, key: str) -> dict[str, str]:
    meta = {"batches": str(P), key: str(rows.Q)}
    if units is not None:
        meta["batch_units"] = ",".join(str(int(u)) for u in units)
    return meta


def _fluid_forward(topology, ranks, message_bytes, alpha, reverse_graph: bool, steps, Q=None
                   ) -> tuple[tuple[int, ...], Schedule, int, int]:
    """The allgather-shaped fluid pipeline (of the reversed graph if ``reverse_graph``):
    group, schedule, split and steps."""
    group = resolve_group(topology, ranks)
    reason = optimal_unsupported_reason(topology, group)
    require(reason is None, f"optimal does not apply to {topology.name}: {reason}")
    p = optimal_packing(topology, group, reverse=reverse_graph)
    Q = Q or quantum(p)
    rows, unit, K = _fluid(topology, group, p, Q, message_bytes, alpha, reverse_graph=reverse_graph,
                           steps=steps)
    split = Q * FLUID_RESOLUTION
    return group, build_fluid(allgather(group, split=split), rows, unit, K), split, \
        K.shape[1] - 1


def _timed(kind: str, topology, ranks, message_bytes, alpha, steps) -> Schedule:
    group = resolve_group(topology, ranks)
    reason = optimal_unsupported_reason(topology, group)
    require(reason is None, f"optimal does not apply to {topology.name}: {reason}")
    return timed_schedule(kind, topology, group, message_bytes, alpha, steps)[0]


def _check_pipeline(pipeline: str) -> None:
    require(pipeline != "auto", "pipeline='auto' chooses among synthesizers, which is the "
                                "selection layer's job: call topocoll.selection."
                                "optimal_allgather (or the algorithm name 'optimal')")
    require(pipeline in PIPELINES, f"pipeline must be one of {PIPELINES}, got {pipeline!r}")


def optimal_allgather(topology: Topology, *, ranks: Sequence[int] | None = None,
                      batches: int | None = None, message_bytes: float = DEFAULT_SIZE,
                      alpha: float = 0.0, budget: int = TRANSFER_BUDGET,
                      pipeline: str = "batches", steps: int | None = None) -> Schedule:
    """Return the bandwidth-optimal pipelined tree-packing allgather.

    Parameters
    ----------
    topology : Topology
        Any topology whose relay nodes (switches, non-member ranks) have equal in- and
        out-capacity.
    ranks : sequence of int, optional
        The participants (default all ranks).
    batches : int, optional
        Pipeline depth ``P``; default chosen by :func:`choose_batches` for ``message_bytes`` bytes
        and per-transfer overhead ``alpha``.
    message_bytes, alpha : float
        Message size and overhead the default ``P`` is chosen for.
    budget : int
        Most transfers the default ``P`` may produce (:func:`choose_batches`).
    pipeline : {'batches', 'weighted', 'fluid', 'timed'}
        'batches' (default): ``P`` equal batches down the trees (:func:`choose_batches`).
        'timed': timed trees from the step-indexed tree LP (:mod:`~topocoll.synth.timed`;
        seconds per schedule). The fastest of these and other synthesizers is the
        algorithm name ``optimal`` (:func:`topocoll.selection.portfolio_allgather`).
        'weighted': then unequal batch sizes from
        :func:`~topocoll.synth.pipeline.batch_units` where they are faster (more chunks
        per block). 'fluid': every tree arc spreads its
        data over ``steps`` steps as the time-expanded LP of
        :func:`~topocoll.synth.pipeline.fluid_sends` says (closer to the bound on
        switched fabrics at 1 GiB, but seconds to a minute per schedule).
    steps : int, optional
        Horizon of the fluid pipeline (default: the best of depth + 1, 3, 7) or of the
        timed LP (default: chosen by the per-step model, see
        :func:`~topocoll.synth.timed.timed_plan`).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = optimal_allgather(ring(4), batches=2)
    >>> s.collective.describe(), s.num_steps
    ('allgather(p=4, k=4)', 4)
    >>> optimal_allgather(ring(4), pipeline="fluid", steps=4).num_steps
    4
    """
    _check_pipeline(pipeline)
    if pipeline == "timed":
        return _timed("allgather", topology, ranks, message_bytes, alpha, steps)
    if pipeline == "fluid":
        group, s, _, H = _fluid_forward(topology, ranks, message_bytes, alpha, False, steps)
        return s.replace(name="optimal", meta={"pipeline": "fluid", "steps": str(H)})
    return optimal_batches("allgather", topology, ranks=ranks, batches=batches,
                           message_bytes=message_bytes,
                           alpha=alpha, budget=budget, weighted=pipeline == "weighted")[0]


def optimal_reduce_scatter(topology: Topology, *, ranks: Sequence[int] | None = None,
                           batches: int | None = None, message_bytes: float = DEFAULT_SIZE,
                           alpha: float = 0.0, budget: int = TRANSFER_BUDGET,
                           pipeline: str = "batches", steps: int | None = None) -> Schedule:
    """Return the bandwidth-optimal reduce-scatter: the packing of the reversed graph,
    run backwards with REDUCE (see :func:`optimal_allgather`).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> optimal_reduce_scatter(ring(4), batches=1).step(0)[0].op.name
    'REDUCE'
    """
    _check_pipeline(pipeline)
    if pipeline == "timed":
        return _timed("reduce_scatter", topology, ranks, message_bytes, alpha, steps)
    if pipeline == "fluid":
        group, fwd, split, H = _fluid_forward(topology, ranks, message_bytes, alpha, True, steps)
        return reverse(fwd, reduce_scatter(group, split=split), name="optimal",
                       meta={"pipeline": "fluid", "steps": str(H)})
    return optimal_batches("reduce_scatter", topology, ranks=ranks, batches=batches,
                           message_bytes=message_bytes, alpha=alpha, budget=budget,
                           weighted=pipeline == "weighted")[0]


def optimal_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                      batches: int | None = None, message_bytes: float = DEFAULT_SIZE,
                      alpha: float = 0.0, budget: int = TRANSFER_BUDGET,
                      pipeline: str = "batches", steps: int | None = None) -> Schedule:
    """Return reduce-scatter then allgather, both optimal (time ``T*_RS + T*_AG``).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = optimal_allreduce(ring(4), batches=1)
    >>> s.collective.kind, s.num_steps
    ('allreduce', 6)
    """
    group = resolve_group(topology, ranks)
    reason = optimal_unsupported_reason(topology, group)
    require(reason is None, f"optimal does not apply to {topology.name}: {reason}")
    _check_pipeline(pipeline)
    if pipeline == "timed":
        return _timed("allreduce", topology, group, message_bytes, alpha, steps)
    if pipeline == "fluid":
        Q = _allreduce_quantum(topology, group)
        _, ag, split, H = _fluid_forward(topology, group, message_bytes, alpha, False, steps, Q)
        _, rs_fwd, _, H2 = _fluid_forward(topology, group, message_bytes, alpha, True, steps, Q)
        rs = reverse(rs_fwd, reduce_scatter(group, split=split))
        return concat([rs, ag], allreduce(group, split=len(group) * split), name="optimal",
                      meta={"pipeline": "fluid", "steps": f"{H2}+{H}"})
    return optimal_batches("allreduce", topology, ranks=group, batches=batches,
                           message_bytes=message_bytes,
                           alpha=alpha, budget=budget, weighted=pipeline == "weighted")[0]


def _allreduce_quantum(topology: Topology, group: tuple[int, ...]) -> int:
    """Chunks per batch slot that suit both the reduce-scatter and the allgather packing."""
    return math.lcm(quantum(optimal_packing(topology, group)),
                    quantum(optimal_packing(topology, group, reverse=True)))


@dataclass(frozen=True)
class PipelinePart:
    """One allgather-shaped part of a batches pipeline: its rows, batch count ``P``, the
    batch sizes in units (None: equal) and whether it runs on the reversed graph (a
    reduce-scatter)."""

    rows: Rows
    P: int
    units: np.ndarray | None
    reversed: bool

    def time(self, topology: Topology, per_root_bytes: float, alpha: float) -> float:
        """Alpha-beta time of this part (:func:`~topocoll.synth.forest_rows.batches_time`)."""
        return batches_time(topology, self.rows, self.P, self.units, per_root_bytes, alpha,
                            self.reversed)


def optimal_batches_plan(kind: str, topology: Topology, *,
                         ranks: Sequence[int] | None = None, batches: int | None = None,
                         message_bytes: float = DEFAULT_SIZE, alpha: float = 0.0,
                         budget: int = TRANSFER_BUDGET, weighted: bool = False
                         ) -> tuple[Callable[[], Schedule], tuple[PipelinePart, ...]]:
    """The plan of :func:`optimal_batches`: a function that builds the schedule, and its
    allgather-shaped parts in run order, for callers that estimate its time per part
    (:meth:`PipelinePart.time`) and build it only if they keep it (the portfolio).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> build, parts = optimal_batches_plan("allreduce", ring(4), batches=1)
    >>> [p.reversed for p in parts], build().num_steps
    ([True, False], 6)
    """
    group = resolve_group(topology, ranks)
    reason = optimal_unsupported_reason(topology, group)
    require(reason is None, f"optimal does not apply to {topology.name}: {reason}")
    if kind == "allgather" or kind == "reduce_scatter":
        rev = kind == "reduce_scatter"
        group, rows, P, u = _gather_like(topology, group, batches, message_bytes, alpha, rev, None,
                                         budget, weighted=weighted)
        def build() -> Schedule:
            split = _split(rows, P, u)
            meta = _meta(rows, P, u, "trees_per_root")
            s = build_rows(allgather(group, split=split), rows, P, units=u)
            return reverse(s, reduce_scatter(group, split=split), name="optimal",
                           meta=meta) if rev else s.replace(name="optimal", meta=meta)
        return build, (PipelinePart(rows, P, u, rev),)
    require(kind == "allreduce", f"optimal batches are built for allgather, reduce_scatter "
                                 f"and allreduce, not {kind}")
    Q = _allreduce_quantum(topology, group)
    _, ag_rows, P, u = _gather_like(topology, group, batches, message_bytes, alpha, False, Q,
                                    budget // 2, weighted=weighted)
    _, rs_rows, _, _ = _gather_like(topology, group, P, message_bytes, alpha, True, Q, units=u)

    def build() -> Schedule:
        split = _split(ag_rows, P, u)
        ag = build_rows(allgather(group, split=split), ag_rows, P, units=u)
        # the reduce-scatter runs its batches in reverse: its small last batches come first
        rs = reverse(build_rows(allgather(group, split=split), rs_rows, P, units=u),
                     reduce_scatter(group, split=split))
        return concat([rs, ag], allreduce(group, split=len(group) * split), name="optimal",
                      meta=_meta(ag_rows, P, u, "trees_per_root"))
    return build, (PipelinePart(rs_rows, P, u, True), PipelinePart(ag_rows, P, u, False))


def optimal_batches(kind: str, topology: Topology, *, ranks: Sequence[int] | None = None,
                    batches: int | None = None, message_bytes: float = DEFAULT_SIZE,
                    alpha: float = 0.0, budget: int = TRANSFER_BUDGET,
                    weighted: bool = False) -> tuple[Schedule, tuple[PipelinePart, ...]]:
    """The batches pipeline of ``kind`` (allgather, reduce_scatter or allreduce) and its
    allgather-shaped parts in run order (:func:`optimal_batches_plan`, built).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s, parts = optimal_batches("allreduce", ring(4), batches=1)
    >>> s.num_steps, [p.reversed for p in parts]
    (6, [True, False])
    """
    build, parts = optimal_batches_plan(kind, topology, ranks=ranks, batches=batches,
                                        message_bytes=message_bytes, alpha=alpha, budget=budget,
                                        weighted=weighted)
    return build(), parts


def _rooted(topology, ranks, root, batches, message_bytes, alpha, red: bool, budget: int):
    group = resolve_group(topology, ranks)
    root = group[0] if root is None else int(root)
    require(root in group, f"root {root} is not one of the ranks {list(group)}")
    reason = optimal_unsupported_reason(topology, group)
    require(reason is None, f"optimal does not apply to {topology.name}: {reason}")
    p = broadcast_packing(topology, root, group, reverse=red)
    Q = quantum(p)
    rows, P, u = _pipelined(topology, group, p, Q, batches, message_bytes, alpha, rooted=root,
                            reverse_graph=red, budget=budget)
    return group, root, rows, P, u


def optimal_broadcast(topology: Topology, *, ranks: Sequence[int] | None = None,
                      root: int | None = None, batches: int | None = None,
                      message_bytes: float = DEFAULT_SIZE, alpha: float = 0.0,
                      budget: int = TRANSFER_BUDGET) -> Schedule:
    """Return the optimal pipelined broadcast: ``λ = min_v maxflow(root -> v)``
    arc-disjoint spanning trees (Edmonds), each carrying ``1/λ`` of the buffer.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> s = optimal_broadcast(torus((3, 3)), root=4, batches=1)
    >>> s.collective.split   # four trees: one per direction out of the root
    4
    """
    group, root, rows, P, u = _rooted(topology, ranks, root, batches, message_bytes, alpha, False,
                                      budget)
    s = build_rows(broadcast(group, root=root, split=_split(rows, P, u)), rows, P, units=u)
    return s.replace(name="optimal", meta=_meta(rows, P, u, "trees"))


def optimal_reduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                   root: int | None = None, batches: int | None = None,
                   message_bytes: float = DEFAULT_SIZE, alpha: float = 0.0,
                   budget: int = TRANSFER_BUDGET) -> Schedule:
    """Return the optimal pipelined reduce: broadcast trees of the reversed graph, run
    backwards (rate ``min_v maxflow(v -> root)``).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> optimal_reduce(ring(5), root=0, batches=1).collective.kind
    'reduce'
    """
    group, root, rows, P, u = _rooted(topology, ranks, root, batches, message_bytes, alpha, True,
                                      budget)
    split = _split(rows, P, u)
    fwd = build_rows(broadcast(group, root=root, split=split), rows, P, units=u)
    return reverse(fwd, reduce(group, root=root, split=split), name="optimal",
                   meta=_meta(rows, P, u, "trees"))
