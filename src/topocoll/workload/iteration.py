"""One training iteration of a transformer on a fabric: compute, collectives, pipeline.

The model (``docs/design-workload.md``):

- **Compute** per block and micro-batch on one rank: each matrix multiply at the device's
  efficiency for its size (:meth:`Device.gemm_time`), the attention scores as one batched
  multiply, and the memory-bound rest (norms, activations, softmax, dropout) as twice the
  block's activation bytes through device memory (each stored tensor written once and read
  once); the backward pass is twice the forward; recomputation adds the forward (``full``)
  or the attention core (``selective``) to the backward.
- **Collectives** are real schedules: :func:`~topocoll.selection.choose` picks (among
  ``algorithms``, every applicable one by default) the fastest verified schedule for the
  group's ranks on the topology, costed by ``model``; one representative group per kind
  (TP, DP, EP, and the point-to-point pipeline hop) is costed, its members placed by
  :func:`~topocoll.workload.parallel.groups`.
  Tensor parallelism: two all-reduces of the block's activations per block forward and two
  backward (sequence parallelism: all-gathers and reduce-scatters of the same bytes), not
  overlapped (Megatron-LM). Experts: two all-to-alls per MoE block each way. Pipeline: one
  activation (forward) and one gradient (backward) per micro-batch and stage boundary,
  split over the TP ranks (the scatter/gather optimisation of Narayanan et al.). Data
  parallel: the stage's gradients all-reduced (ZeRO 1-2: reduce-scatter then all-gather of
  the weights; ZeRO-3 also gathers weights in the forward and backward, overlapped with
  compute), overlapped with the last micro-batch's backward in buckets (``overlap_dp``).
- **Pipeline**: plain 1F1B is scheduled exactly, op by op (each stage runs its warm-up
  forwards, then one forward one backward, then the cool-down backwards; a forward waits
  for the previous stage's and the hop, a backward for the next stage's); interleaved 1F1B
  with ``v`` chunks uses the bubble ``(pp - 1) (t_f + t_b) / v`` of Narayanan et al.
- **Optimizer**: the Adam update streams 16 bytes per (sharded) parameter in and out.

Examples
--------
>>> from topocoll.topology.spec import parse_spec
>>> from topocoll.workload import parse_model, parse_parallel, find_device
>>> r = simulate_iteration(parse_model("transformer:hidden=1024,ffn=4096,heads=16,layers=4,"
...                                    "seq=512,vocab=32000"),
...                        parse_parallel("tp=2,pp=2,dp=2,mb=1,gb=8"), parse_spec("dgx:1"),
...                        find_device("a100-80g"), algorithms=["ring", "direct"])
>>> r.iteration_s > r.compute_s > 0 and 0 < r.mfu < 1
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..collective import make_collective
from ..cost import AlphaBeta, CostModel
from ..errors import InputError, NotSupportedError
from ..schedule import Schedule
from ..selection import ScheduleCache, choose
from ..topology import Topology
from ..topology.subfabric import SubFabric, route_subfabric
from .compute import ELEMENT_BYTES, layer_compute, stage_extras
from .devices import Device
from .memory import (
    MemoryReport,
    check_configuration,
    stage_layers,
    stage_parameters,
)
from .models import Transformer
from .parallel import Parallelism, groups

__all__ = ["IterationResult", "simulate_iteration", "CollectiveCoster", "FreeCollectives", "Task",
           "pipeline_1f1b"]

#: Gradient bucket of the data-parallel overlap (PyTorch DDP's default, 25 MB).
BUCKET_BYTES = 25e6


@dataclass(frozen=True)
class Task:
    """One span of the timeline: ``stage``'s ``kind`` (``F``, ``B``, ``dp``, ``opt``) for
    ``micro`` (-1 for per-iteration work) from ``start`` to ``end`` seconds."""

    stage: int
    kind: str
    micro: int
    start: float
    end: float


@dataclass(frozen=True)
class IterationResult:
    """What one iteration costs (see :func:`simulate_iteration`)."""

    model: str
    parallel: str
    topology: str
    device: str
    iteration_s: float
    compute_s: float
    exposed_comm_s: float
    bubble_s: float
    breakdown: dict
    mfu: float
    tflops_per_gpu: float
    memory: MemoryReport
    collectives: dict
    tasks: tuple[Task, ...] = field(repr=False, default=())

    @property
    def memory_gib(self) -> float:
        return self.memory.peak / 2**30

    def to_dict(self) -> dict:
        """The ``--json`` record."""
        return {"model": self.model, "parallel": self.parallel, "topology": self.topology,
                "device": self.device, "iteration_s": self.iteration_s,
                "compute_s": self.compute_s, "exposed_comm_s": self.exposed_comm_s,
                "bubble_s": self.bubble_s, "mfu": self.mfu,
                "tflops_per_gpu": self.tflops_per_gpu, "memory_gib": self.memory_gib,
                "memory_per_stage_gib": [s.total / 2**30 for s in self.memory.stages],
                "breakdown": self.breakdown, "collectives": self.collectives}


class CollectiveCoster:
    """Times of collectives on one topology through :func:`choose`, remembered by
    (kind, ranks, size, root), with the chosen schedule kept (:meth:`schedule`): the link
    loads and the groups run together are costed on the schedule that was chosen, never a
    second synthesis of it."""

    def __init__(self, topology: Topology, *, model: CostModel | None = None,
                 algorithms: Sequence[str] | None = None,
                 cache: ScheduleCache | None = None, bounds: bool = True,
                 contention: bool = False, subfabric: bool = True) -> None:
        self.topology = topology
        self.bounds = bounds
        self.contention = contention
        # a group is synthesized, verified and bounded on the links its routes reach
        # (topology.subfabric), and groups with the same sub-fabric are costed once
        self.subfabric = subfabric
        self._sub_choice: dict[tuple, Any] = {}
        self._nccl_bounds: dict[tuple, float] = {}
        self._sub_of: dict[tuple, tuple[SubFabric, Schedule]] = {}
        self._global: dict[tuple, Schedule] = {}
        # without bounds, the alpha-beta model need not attach one to every candidate
        self.model = model if model is not None or bounds else AlphaBeta(bound=False)
        self.algorithms = list(algorithms) if algorithms is not None else None
        self.cache = cache
        self.chosen: dict[str, dict] = {}
        # one dict per kind of remembered value, each keyed by (kind, ranks, size, root)
        # or, for groups, (kind, groups, size)
        self._times: dict[tuple, float] = {}
        self._picked: dict[tuple, tuple[str, dict, Schedule]] = {}
        self._use: dict[tuple, dict[int, float]] = {}
        self._together: dict[tuple, float] = {}
        self._shared: dict[tuple, float] = {}

    def time(self, label: str, kind: str, ranks: tuple[int, ...], message_bytes: float,
             root: int | None = None, algorithms: Sequence[str] | None = None) -> float:
        """Seconds for ``kind`` of ``message_bytes`` bytes among ``ranks`` (0 for one rank);
        ``algorithms`` overrides the coster's candidates for this call."""
        if len(ranks) < 2 or message_bytes <= 0:
            return 0.0
        key = (kind, ranks, float(message_bytes), root)
        if key not in self._times:
            coll = make_collective(kind, ranks, 1, root)
            cands = list(algorithms) if algorithms is not None else self.algorithms
            nccl: list[str] = []
            if cands is not None:
                from ..selection import algorithms_for, nccl_names
                nccl = [a for a in cands if a in nccl_names(kind)]
                ok = {a.name for a in algorithms_for(kind)}
                sched = [a for a in cands if a in ok]
                cands = sched or (None if not nccl else [])
            if nccl:
                self._nccl(label, key, nccl)
            if cands != []:
                sub = route_subfabric(self.topology, ranks) if self.subfabric else None
                if sub is None:
                    c = choose(coll, self.topology, message_bytes, model=self.model,
                               candidates=cands, cache=self.cache, keep=1, bound=self.bounds,
                               stop_at_bound=self._stop(cands))
                else:
                    lroot = None if root is None else ranks.index(root)
                    skey = (kind, sub.topology.fingerprint(), float(message_bytes), lroot,
                            None if cands is None else tuple(cands))
                    if skey not in self._sub_choice:
                        local = make_collective(kind, tuple(range(len(ranks))), 1, lroot)
                        self._sub_choice[skey] = choose(
                            local, sub.topology, message_bytes, model=self.model, candidates=cands,
                            cache=self.cache, keep=1, bound=self.bounds,
                            stop_at_bound=self._stop(cands))
                    c = self._sub_choice[skey]
                if key not in self._times or c.best.time < self._times[key]:
                    self._times[key] = c.best.time
                    self._picked[key] = (c.best.algorithm, dict(c.best.options),
                                         c.best.schedule if sub is None else None)
                    if sub is not None:
                        self._sub_of[key] = (sub, c.best.schedule)
                    self.chosen[label] = {"kind": kind, "ranks": len(ranks),
                                          "size_bytes": message_bytes,
                                          "algorithm": c.best.algorithm,
                                          "time_s": c.best.time,
                                          "bound_s": c.bound.time if c.bound else None,
                                          "bound_fraction": c.bound_fraction}
        return self._times[key]

    def _stop(self, cands: Sequence[str] | None) -> bool:
        """Stop at the first schedule within reach of the bound when the candidates are
        every algorithm (the portfolio's exact optima are what stopping early saves);
        a short list named by the caller is tried whole: without a proof to report, the
        bound it would stop at costs more than the few candidates on a large sub-fabric."""
        return cands is None or self.bounds

    def _nccl(self, label: str, key: tuple, names: Sequence[str]) -> None:
        """Cost ``key``'s collective with the NCCL model (:mod:`topocoll.selection.nccl`):
        the fastest of ``names``; it has no schedule, so :meth:`link_use` and contention
        refuse it."""
        from ..selection import nccl_evaluate

        kind, ranks, size, root = key
        name, _, e, in_net = min(nccl_evaluate(self.topology, kind, [size], names,
                                               ranks=ranks), key=lambda x: x[2].time)
        bound = None
        if self.bounds and in_net is not None:
            bound = in_net
        elif self.bounds:
            from ..optimum import lower_bound

            # NCCL's traffic follows the routes between the members: their sub-fabric
            sub = route_subfabric(self.topology, ranks) if self.subfabric else None
            if sub is None:
                bound = lower_bound(make_collective(kind, ranks, 1, root), self.topology,
                                    size).time
            else:
                local = make_collective(kind, tuple(range(len(ranks))), 1,
                                        None if root is None else ranks.index(root))
                bkey = (kind, sub.topology.fingerprint(), float(size), local.root)
                if bkey not in self._nccl_bounds:
                    self._nccl_bounds[bkey] = lower_bound(local, sub.topology, size).time
                bound = self._nccl_bounds[bkey]
        self._times[key] = e.time
        self._picked[key] = (name, {"algorithm": e.algorithm, "protocol": e.protocol}, None)
        self.chosen[label] = {"kind": kind, "ranks": len(ranks), "size_bytes": size,
                              "algorithm": f"{name} ({e.algorithm}/{e.protocol})",
                              "time_s": e.time, "bound_s": bound,
                              "bound_fraction": None if bound is None else bound / e.time}

    def schedule(self, kind: str, ranks: tuple[int, ...], message_bytes: float,
                 root: int | None = None) -> Schedule:
        """The schedule :meth:`time` chose for this collective (choosing it if needed).

        Raises
        ------
        NotSupportedError
            If the NCCL model costed it (no schedule)."""
        self.time(f"{kind} {len(ranks)} ranks", kind, ranks, message_bytes, root)
        key = (kind, tuple(ranks), float(message_bytes), root)
        name, _, sched = self._picked[key]
        if sched is None and key in self._sub_of:
            if key not in self._global:
                from ..schedule import relabel

                sub, local = self._sub_of[key]
                self._global[key] = relabel(local, sub.nodes, make_collective(
                    kind, tuple(ranks), local.collective.split, root))
            return self._global[key]
        if sched is None:
            raise NotSupportedError(f"{kind} on {len(ranks)} ranks was costed by the NCCL "
                                    f"model ({name}), which has no schedule for link loads "
                                    f"or contention; name schedule algorithms instead")
        return sched

    def link_use(self, kind: str, ranks: tuple[int, ...], message_bytes: float,
                 root: int | None = None) -> dict[int, float]:
        """Link index -> the fraction of that link's capacity the collective chosen by
        :meth:`time` uses on average over its duration when it runs alone (its schedule's
        bytes on the link over capacity times duration); ``{}`` for a free collective."""
        t = self.time(f"{kind} {len(ranks)} ranks", kind, ranks, message_bytes, root)
        if t <= 0:
            return {}
        key = (kind, ranks, float(message_bytes), root)
        if key not in self._use:
            from ..cost.kernel import step_loads

            load, _ = step_loads(self.schedule(kind, ranks, message_bytes, root), self.topology,
                                 message_bytes)
            frac = load.sum(axis=0) / (self.topology.link_bandwidth * t)
            self._use[key] = {int(i): float(frac[i]) for i in np.flatnonzero(frac > 0)}
        return self._use[key]

    def _same_as_first(self, kind: str, first: tuple[int, ...], group: tuple[int, ...],
                       size: float) -> Schedule | None:
        """``first``'s chosen schedule moved onto ``group`` when both were costed on
        sub-fabrics that are the same up to renaming (the same data-parallel group on
        another rail); None otherwise."""
        key = (kind, first, float(size), None)
        if key not in self._sub_of:
            return None
        sub, local = self._sub_of[key]
        other = route_subfabric(self.topology, group)
        if other is None or other.topology.fingerprint() != sub.topology.fingerprint():
            return None
        from ..schedule import relabel

        return relabel(local, other.nodes,
                       make_collective(kind, group, local.collective.split, None))

    def _share_bound(self, label: str, kind: str, groups: Sequence[tuple[int, ...]],
                     size: float) -> None:
        """The bound of ``label``'s group when every group of ``groups`` runs at once:
        the larger of its own and the groups' concurrent cut bound (what they share,
        such as a box's NICs, counted once for all of them). A time below it was costed
        with the group alone (``concurrent_bound_s`` in the record says so)."""
        from ..optimum import concurrent_cut_bound

        key = (kind, tuple(map(tuple, groups)), float(size))
        if key not in self._shared:
            colls = [make_collective(kind, tuple(g), 1) for g in groups]
            # one-rank cuts are in each group's own bound already
            self._shared[key] = concurrent_cut_bound(colls, self.topology, size,
                                                     singles=False).time
        rec = self.chosen[label]
        shared = self._shared[key]
        rec["concurrent_groups"] = len(groups)
        rec["concurrent_bound_s"] = shared
        if rec["bound_s"] is not None and shared > rec["bound_s"]:
            rec["bound_s"] = shared
            rec["bound_fraction"] = shared / rec["time_s"]

    def time_all(self, label: str, kind: str, groups: Sequence[tuple[int, ...]],
                 message_bytes: float) -> float:
        """Seconds for ``kind`` run by every group at once. The algorithm is chosen on the
        first group; with ``contention`` every group runs it at the same time (the
        schedules overlaid step by step: the first group's chosen schedule and the same
        algorithm on the others) and the cost model charges the shared links; without,
        the first group's time (groups costed alone)."""
        first = tuple(groups[0])
        t1 = self.time(label, kind, first, message_bytes)
        if self.bounds and len(groups) >= 2 and t1 > 0.0 and label in self.chosen:
            self._share_bound(label, kind, groups, message_bytes)
        if not self.contention or len(groups) < 2 or t1 == 0.0:
            return t1
        key = (kind, tuple(map(tuple, groups)), float(message_bytes))
        if key not in self._together:
            from ..schedule import overlay
            from ..selection import find_algorithm, synthesize

            sched = self.schedule(kind, first, message_bytes)
            alg, opts, _ = self._picked[(kind, first, float(message_bytes), None)]
            syn = find_algorithm(alg, kind)
            scheds = [sched if tuple(g) == first else
                      self._same_as_first(kind, first, tuple(g), message_bytes) or
                      synthesize(syn, self.topology, {**opts, "ranks": tuple(g)},
                                 cache=self.cache) for g in groups]
            model = self.model or AlphaBeta(bound=False)
            t = model.evaluate(overlay(scheds), self.topology, message_bytes).time
            self._together[key] = max(t, t1)
            self.chosen[label + " (all groups)"] = {
                "kind": kind, "ranks": len(groups[0]), "groups": len(groups),
                "size_bytes": message_bytes, "algorithm": alg, "time_s": self._together[key],
                "alone_s": t1, "bound_s": None, "bound_fraction": None}
        return self._together[key]


class FreeCollectives(CollectiveCoster):
    """A coster that charges nothing for any collective. Under the 1F1B schedule
    (``interleave=1``) without ``dear``, the iteration it gives is a lower bound of the
    iteration under any cost model: :func:`simulate_iteration`'s time never decreases
    when a collective takes longer (sums and maxima of the times, the 1F1B schedule's
    starts, and the exposed data-parallel time ``max(t - b, t f)``, where the backward
    ``b`` it hides behind ends the stage's pipeline, so the stage ends no earlier).
    :func:`~topocoll.workload.search_parallelism` uses it to skip configurations that
    cannot beat one already costed."""

    def time(self, label: str, kind: str, ranks: tuple[int, ...], message_bytes: float,
             root: int | None = None, algorithms: Sequence[str] | None = None) -> float:
        return 0.0

    def time_all(self, label: str, kind: str, groups: Sequence[tuple[int, ...]],
                 message_bytes: float) -> float:
        return 0.0


def simulate_iteration(model: Transformer, par: Parallelism, topology: Topology,
                       device: Device, *, cost_model: CostModel | None = None,
                       algorithms: Sequence[str] | None = None,
                       cache: ScheduleCache | None = None, overlap_dp: bool = True,
                       dear: bool = False,
                       check_memory: bool = True, timeline: bool = False,
                       coster: CollectiveCoster | None = None,
                       contention: bool = False) -> IterationResult:
    """Time one training iteration of ``model`` under ``par`` on ``topology``.

    Parameters
    ----------
    model : Transformer
    par : Parallelism
        Its ``world`` must not exceed the topology's ranks (ranks ``0 .. world - 1`` are
        used, numbered as :mod:`~topocoll.workload.parallel` says).
    topology : Topology
    device : Device
    cost_model : CostModel, optional
        How collectives are timed (default alpha-beta; :class:`~topocoll.sim.FlowSim`
        for the flow level).
    algorithms : sequence of str, optional
        Candidate algorithms for every collective (default: all that apply).
    cache : ScheduleCache, optional
    overlap_dp : bool
        Overlap the data-parallel gradient reduction with the last backward (buckets).
    dear : bool
        DeAR (Zhang et al., ICDCS 2023): the all-reduce split into its reduce-scatter,
        overlapped with the last micro-batch's backward, and its all-gather, overlapped
        with the next iteration's first forward (the layer's weights are needed only
        there); each exposes what its compute does not cover, at least one bucket.
    check_memory : bool
        Refuse a configuration that does not fit in the device's memory.
    timeline : bool
        Keep every :class:`Task` (for :func:`~topocoll.workload.trace.write_timeline`).
    coster : CollectiveCoster, optional
        Reuse one (and its remembered collectives) across calls.
    contention : bool
        Cost the groups of a kind running at the same time with shared links (see
        :meth:`CollectiveCoster.time_all`); default: each group alone.

    Returns
    -------
    IterationResult

    Raises
    ------
    InputError
        If the configuration does not fit the topology, the model or the memory.
    """
    if par.world > topology.num_ranks:
        raise InputError(f"parallel uses {par.world} ranks but {topology.name} has "
                         f"{topology.num_ranks}", item="parallel")
    mem = check_configuration(model, par, device, check_memory=check_memory)
    cc = coster or CollectiveCoster(topology, model=cost_model, algorithms=algorithms,
                                    cache=cache, contention=contention)
    b, s, h, t = par.micro_batch, model.seq, model.hidden, par.tp
    m = par.micro_batches
    act = ELEMENT_BYTES * b * s * h          # one micro-batch's hidden states

    # -- per block -------------------------------------------------------------------------
    mm, mem_t = layer_compute(model, par, device)
    f_block = mm + mem_t
    tp_groups = groups(par, "tp")
    if par.sequence_parallel and t > 1:
        tp_one = (cc.time_all("tp allgather", "allgather", tp_groups, act)
                  + cc.time_all("tp reduce_scatter", "reduce_scatter", tp_groups, act))
    else:
        tp_one = cc.time_all("tp allreduce", "allreduce", tp_groups, act)
    tp_block = 2 * tp_one                    # per block, each direction
    ep_block = 0.0
    if model.moe and par.ep > 1:
        ep_block = 2 * cc.time_all("ep alltoall", "alltoall", groups(par, "ep"),
                                   act * model.top_k / t)
    recompute_extra, logit, embed = stage_extras(model, par, device)
    recompute_comm = tp_block + ep_block if par.recompute == "full" else 0.0

    # -- pipeline --------------------------------------------------------------------------
    layers = stage_layers(model, par)
    pp_ranks = groups(par, "pp")[0]
    hop = 0.0
    if par.pp > 1:
        # a point-to-point send: the two-rank broadcast, one transfer on the route
        hop = cc.time("pp send", "broadcast", (pp_ranks[0], pp_ranks[1]), act / t,
                      root=pp_ranks[0], algorithms=["binomial_tree"])
    fwd = []
    bwd = []
    comp = []
    for st in range(par.pp):
        n = layers[st]
        extra_f = (embed if st == 0 else 0.0) + (logit if st == par.pp - 1 else 0.0)
        cf = n * f_block + extra_f
        cb = 2 * cf + n * recompute_extra
        fwd.append(cf + n * (tp_block + ep_block))
        bwd.append(cb + n * (tp_block + ep_block + recompute_comm))
        comp.append(cf + cb)
    tasks: list[Task] = []
    if par.interleave > 1:
        v = par.interleave
        per = [fwd[i] + bwd[i] for i in range(par.pp)]
        slow = max(range(par.pp), key=lambda i: per[i])
        pipe_end = [m * per[slow] + (par.pp - 1) * per[slow] / v
                    + 2 * (par.pp - 1) * hop * v] * par.pp
    else:
        pipe_end = pipeline_1f1b(par.pp, m, fwd, bwd, hop, tasks if timeline else None)

    # -- data parallel and optimizer -------------------------------------------------------
    # the DP groups of one stage run together (every TP rank of every replica's stage)
    dp_all = groups(par, "dp")
    dp_ranks = dp_all[0]
    finish = []
    dp_exposed_all = []
    for st in range(par.pp):
        p = stage_parameters(model, par, st)
        g = ELEMENT_BYTES * p
        # alone, every stage's groups are translates of the first stage's (one choose per
        # size; their concurrent bound is the first stage's); with contention, the groups
        # of this stage
        stage_groups = [dp_ranks]
        if par.order == "tp-dp-pp":
            on = st if cc.contention else dp_ranks[0] // (par.tp * par.dp)
            stage_groups = [gr for gr in dp_all if gr[0] // (par.tp * par.dp) == on] or \
                [dp_ranks]
        t_rs = t_ag = 0.0
        if par.zero >= 1 or dear:
            t_rs = cc.time_all(f"dp reduce_scatter stage {st}", "reduce_scatter",
                               stage_groups, g)
            t_ag = cc.time_all(f"dp allgather stage {st}", "allgather", stage_groups, g)
            t_dp = t_rs + t_ag
        else:
            t_dp = cc.time_all(f"dp allreduce stage {st}", "allreduce", stage_groups, g)
        if par.zero >= 3 and par.dp > 1:   # weights gathered per micro-batch, fwd and bwd
            ag = cc.time(f"dp allgather stage {st}", "allgather", dp_ranks, g)
            t_dp += 2 * m * max(0.0, ag - comp[st] / 2)
        frac = min(1.0, BUCKET_BYTES / g) if g > 0 else 0.0
        if dear and par.dp > 1:
            exposed = (max(t_rs - bwd[st], t_rs * frac) + max(t_ag - fwd[st], t_ag * frac)
                       + (t_dp - t_rs - t_ag))      # ZeRO-3's weight gathers stay exposed
        elif overlap_dp and par.dp > 1:
            exposed = max(t_dp - bwd[st], t_dp * frac)
        else:
            exposed = t_dp
        shard = p / (par.dp if par.zero >= 1 else 1)
        opt = device.memory_time(2 * 16 * shard)
        end = pipe_end[st] + exposed + opt
        if timeline:
            tasks.append(Task(st, "dp", -1, pipe_end[st], pipe_end[st] + exposed))
            tasks.append(Task(st, "opt", -1, pipe_end[st] + exposed, end))
        finish.append(end)
        dp_exposed_all.append((exposed, opt))
    crit = max(range(par.pp), key=lambda i: finish[i])
    iteration = finish[crit]
    n = layers[crit]
    compute = m * comp[crit] + dp_exposed_all[crit][1]
    passes = 3 if par.recompute == "full" else 2   # forward, backward, recomputed forward
    tp_total = m * n * passes * tp_block
    ep_total = m * n * passes * ep_block
    pp_total = 2 * m * hop if par.pp > 1 else 0.0
    dp_total = dp_exposed_all[crit][0]
    exposed = tp_total + ep_total + pp_total + dp_total
    bubble = iteration - compute - exposed
    if bubble < 1e-9 * iteration:     # rounding of the sums: no bubble
        bubble = 0.0
    flops_model = 3 * model.forward_flops() * par.global_batch
    flops_hw = model.training_flops(par.recompute) * par.global_batch
    world = par.world
    return IterationResult(
        model=model.name, parallel=par.label(), topology=topology.name, device=device.name,
        iteration_s=iteration, compute_s=compute, exposed_comm_s=exposed, bubble_s=bubble,
        breakdown={"compute_s": compute, "tp_s": tp_total, "ep_s": ep_total,
                   "pp_s": pp_total, "dp_exposed_s": dp_total,
                   "optimizer_s": dp_exposed_all[crit][1], "bubble_s": bubble,
                   "critical_stage": crit},
        mfu=flops_model / (iteration * world * device.peak_flops),
        tflops_per_gpu=flops_hw / (iteration * world) / 1e12,
        memory=mem, collectives=dict(cc.chosen), tasks=tuple(tasks))


def pipeline_1f1b(pp: int, m: int, fwd: Sequence[float], bwd: Sequence[float], hop: float,
                  tasks: list[Task] | None = None) -> list[float]:
    """Finish time of every stage under 1F1B (PipeDream-Flush), scheduled op by op.

    Stage ``s`` runs ``min(pp - s - 1, m)`` warm-up forwards, then alternates one forward
    and one backward, then the remaining backwards; a forward of micro-batch ``j`` waits
    for stage ``s - 1``'s forward of ``j`` plus ``hop``, a backward for stage ``s + 1``'s
    backward of ``j`` plus ``hop`` (the last stage: its own forward). ``tasks``, when
    given, receives every op.

    Examples
    --------
    >>> pipeline_1f1b(4, 8, [1.0] * 4, [2.0] * 4, 0.0)[0]   # (m + pp - 1) (f + b)
    33.0
    """
    orders = []
    for st in range(pp):
        warm = min(pp - st - 1, m)
        seq = [("F", j) for j in range(warm)]
        f, bb = warm, 0
        while bb < m:
            if f < m:
                seq.append(("F", f))
                f += 1
            seq.append(("B", bb))
            bb += 1
        orders.append(seq)
    done: dict[tuple[str, int, int], float] = {}
    pos = [0] * pp
    free = [0.0] * pp
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for st in range(pp):
            while pos[st] < len(orders[st]):
                kind, j = orders[st][pos[st]]
                if kind == "F":
                    dep = 0.0 if st == 0 else done.get(("F", st - 1, j))
                    dep = dep if dep is None or st == 0 else dep + hop
                else:
                    dep = done.get(("F", st, j)) if st == pp - 1 else done.get(("B", st + 1, j))
                    dep = dep if dep is None or st == pp - 1 else dep + hop
                if dep is None:
                    break
                start = max(free[st], dep)
                end = start + (fwd[st] if kind == "F" else bwd[st])
                done[(kind, st, j)] = end
                free[st] = end
                if tasks is not None:
                    tasks.append(Task(st, kind, j, start, end))
                pos[st] += 1
                remaining -= 1
                progressed = True
        if not progressed:   # pragma: no cover - the 1F1B order has no cycle
            raise RuntimeError("1F1B schedule deadlocked")
    return free
