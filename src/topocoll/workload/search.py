"""Parallelism search: every TP x PP x DP (x EP) factorization with recomputation,
micro-batch and ZeRO choices, pruned by memory, ranked by iteration time.

The configurations are costed in the order of a lower bound of their iteration, the
iteration with every collective free (:class:`~topocoll.workload.iteration.
FreeCollectives`: compute, pipeline bubbles, optimizer; no collective is chosen for it).
Once a costed configuration is faster than a configuration's bound, that configuration and
every later one (their bounds are no smaller) cannot be the best and are not costed
(branch and bound: the best and every configuration within reach of it are exactly what
costing all of them gives; ``exhaustive=True`` costs all of them).

Examples
--------
>>> from topocoll.topology.spec import parse_spec
>>> from topocoll.workload import parse_model, find_device
>>> s = search_parallelism(parse_model("transformer:hidden=1024,ffn=4096,heads=16,layers=8,"
...                                    "seq=512,vocab=32000"), 8, parse_spec("dgx:1"),
...                        find_device("a100-80g"), global_batch=16, algorithms=["ring"],
...                        recompute=("none",), zero=(0,))
>>> s.best.parallel.world, s.evaluated == len(s.ranked)
(8, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..cost import CostModel
from ..errors import InputError
from ..selection import ScheduleCache
from ..topology import Topology
from .devices import Device
from .iteration import CollectiveCoster, FreeCollectives, IterationResult, simulate_iteration
from .memory import memory_per_gpu
from .models import Transformer
from .parallel import RECOMPUTE, Parallelism

__all__ = ["SearchPoint", "SkippedPoint", "SearchResult", "search_parallelism",
           "candidate_parallelisms"]


@dataclass(frozen=True)
class SearchPoint:
    """One evaluated configuration."""

    parallel: Parallelism
    result: IterationResult


@dataclass(frozen=True)
class SkippedPoint:
    """A configuration that fits but was not costed: its iteration with every collective
    free, ``lower_bound_s``, is already slower than the best costed one."""

    parallel: Parallelism
    lower_bound_s: float


@dataclass(frozen=True)
class SearchResult:
    """Every configuration that fits and was costed, fastest first; those that fit but
    cannot beat the best (``skipped``, by their lower bound); how many did not fit."""

    ranked: tuple[SearchPoint, ...]
    enumerated: int
    pruned_memory: int
    skipped: tuple[SkippedPoint, ...] = ()

    @property
    def best(self) -> SearchPoint:
        if not self.ranked:
            raise InputError("no parallel configuration fits in memory", item="search")
        return self.ranked[0]

    @property
    def evaluated(self) -> int:
        return len(self.ranked)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidate_parallelisms(model: Transformer, gpus: int, *, global_batch: int,
                           micro_batches: Sequence[int] = (1,),
                           recompute: Sequence[str] = RECOMPUTE,
                           zero: Sequence[int] = (0, 1), tp_max: int = 8,
                           max_pp: int | None = None) -> list[Parallelism]:
    """Every valid configuration: ``tp`` divides the heads (at most ``tp_max``: one box),
    ``pp`` at most the layers, ``dp`` fills the GPUs and divides the batch; experts
    spread over the largest ``ep`` that divides both ``dp`` and the expert count."""
    out = []
    for tp in _divisors(gpus):
        if tp > tp_max or model.heads % tp:
            continue
        for pp in _divisors(gpus // tp):
            if pp > min(model.layers, max_pp or model.layers):
                continue
            dp = gpus // (tp * pp)
            ep = max((e for e in _divisors(dp) if model.experts % e == 0), default=1) \
                if model.moe else 1
            for mb in micro_batches:
                if global_batch % (mb * dp):
                    continue
                for rc in recompute:
                    for z in zero:
                        out.append(Parallelism(tp=tp, pp=pp, dp=dp, ep=ep, micro_batch=mb,
                                               global_batch=global_batch, zero=z,
                                               recompute=rc))
    return out


def search_parallelism(model: Transformer, gpus: int, topology: Topology, device: Device,
                       *, global_batch: int, micro_batches: Sequence[int] = (1,),
                       recompute: Sequence[str] = RECOMPUTE, zero: Sequence[int] = (0, 1),
                       tp_max: int | None = None, cost_model: CostModel | None = None,
                       algorithms: Sequence[str] | None = None,
                       cache: ScheduleCache | None = None,
                       progress: Callable[[int, int], None] | None = None,
                       exhaustive: bool = False) -> SearchResult:
    """Rank every configuration of ``gpus`` ranks of ``topology`` that fits in memory.

    ``tp_max`` defaults to the size of the fabric's first group (``meta["groups"]``: a
    box) or 8. Collectives are chosen without proving bounds (``choose(bound=False)``) and
    remembered across configurations. Configurations are costed in the order of their
    lower bound (the iteration with free collectives); those whose bound exceeds the best
    costed iteration are returned in ``skipped`` instead, unless ``exhaustive``. Ties are
    broken by the configuration's label, so the ranking is the same on every machine.
    """
    if not 1 <= gpus <= topology.num_ranks:
        raise InputError(f"gpus must be 1..{topology.num_ranks} on {topology.name}, got "
                         f"{gpus}", item="gpus")
    groups = topology.meta.get("groups") if isinstance(topology.meta, dict) else None
    tmax = tp_max or (len(groups[0]) if groups else 8)
    cands = candidate_parallelisms(model, gpus, global_batch=global_batch,
                                   micro_batches=micro_batches, recompute=recompute,
                                   zero=zero, tp_max=tmax)
    fits = [p for p in cands if memory_per_gpu(model, p).peak <= device.memory]
    cc = CollectiveCoster(topology, model=cost_model, algorithms=algorithms, cache=cache,
                          bounds=False)
    free = FreeCollectives(topology)
    bounds = [simulate_iteration(model, p, topology, device, coster=free,
                                 check_memory=False).iteration_s for p in fits]
    order = sorted(range(len(fits)), key=lambda i: (bounds[i], fits[i].label()))
    points: list[SearchPoint] = []
    skipped: list[SkippedPoint] = []
    best = math.inf
    for done, i in enumerate(order):
        p = fits[i]
        # the bound holds for 1F1B (FreeCollectives); a configuration equal to the best
        # is costed (the tie is broken by the label)
        if not exhaustive and p.interleave == 1 and bounds[i] > best:
            skipped.append(SkippedPoint(p, bounds[i]))
        else:
            r = simulate_iteration(model, p, topology, device, coster=cc, check_memory=False)
            points.append(SearchPoint(p, r))
            best = min(best, r.iteration_s)
        if progress is not None:
            progress(done + 1, len(fits))
    points.sort(key=lambda x: (x.result.iteration_s, x.parallel.label()))
    return SearchResult(tuple(points), len(cands), len(cands) - len(fits), tuple(skipped))
