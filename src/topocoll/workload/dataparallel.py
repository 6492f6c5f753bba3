"""One iteration of a layered model (CNN, DLRM) with data parallelism on every rank, and
DLRM's embedding tables model-parallel across them.

Compute per layer and rank: the layer's forward FLOPs for the local batch at the device's
multiply efficiency plus its output activations written and read once; the backward pass
twice that. Embedding lookups are memory-bound. Collectives are real schedules from
:func:`~topocoll.selection.choose` (through :class:`~topocoll.workload.CollectiveCoster`):
the gradient all-reduce of the dense parameters, overlapped with the backward pass in
25 MB buckets, and for embedding models one all-to-all of the pooled lookups in the forward
and one in the backward, not overlapped.

Examples
--------
>>> from topocoll.topology.spec import parse_spec
>>> from topocoll.workload import LAYERED, find_device
>>> r = simulate_dp_iteration(LAYERED["resnet50"], parse_spec("dgx:1"), find_device("v100"),
...                           batch_per_rank=32, algorithms=["ring"])
>>> r.parallel, 0 < r.exposed_comm_s < r.iteration_s
('dp=8,mb=32,gb=256', True)
"""

from __future__ import annotations

from collections.abc import Sequence

from ..cost import CostModel
from ..errors import InputError
from ..selection import ScheduleCache
from ..topology import Topology
from .compute import layered_forward_time
from .devices import Device
from .iteration import BUCKET_BYTES, CollectiveCoster, IterationResult
from .layered import LayeredModel
from .memory import MemoryReport, StageMemory

__all__ = ["simulate_dp_iteration"]


def simulate_dp_iteration(model: LayeredModel, topology: Topology, device: Device, *,
                          batch_per_rank: int = 32, ranks: int | None = None,
                          cost_model: CostModel | None = None,
                          algorithms: Sequence[str] | None = None,
                          cache: ScheduleCache | None = None, overlap_dp: bool = True,
                          coster: CollectiveCoster | None = None) -> IterationResult:
    """Time one iteration of ``model`` on the first ``ranks`` ranks of ``topology``
    (default all) with ``batch_per_rank`` samples each (see the module docstring).

    Raises
    ------
    InputError
        For a bad batch or rank count, or a model that does not fit in memory.
    """
    n = topology.num_ranks if ranks is None else ranks
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= topology.num_ranks:
        raise InputError(f"ranks must be 1..{topology.num_ranks}, got {ranks!r}", item="gpus")
    if isinstance(batch_per_rank, bool) or not isinstance(batch_per_rank, int) or \
            batch_per_rank < 1:
        raise InputError(f"batch per rank must be a positive integer, got {batch_per_rank!r}",
                         item="micro_batch")
    b = batch_per_rank
    group = tuple(range(n))
    cc = coster or CollectiveCoster(topology, model=cost_model, algorithms=algorithms,
                                    cache=cache)
    fwd = bwd = 0.0
    emb_rows_bytes = 0.0
    for ly in model.layers:
        if ly.kind == "embedding":
            emb_rows_bytes += ly.activation_bytes
            continue
        t = layered_forward_time(ly.flops, ly.activation_bytes, device, b)
        fwd += t
        bwd += 2 * t
    emb_params = model.parameters - model.dense_parameters
    a2a = 0.0
    if emb_params:
        # lookups of the whole batch for the local tables (memory-bound), then the exchange
        look = device.memory_time(emb_rows_bytes * b)
        fwd += look
        bwd += look
        a2a = 2 * cc.time("embedding alltoall", "alltoall", group, emb_rows_bytes * b)
    grads = 2.0 * model.dense_parameters
    t_dp = cc.time("dp allreduce", "allreduce", group, grads)
    if overlap_dp and n > 1:
        exposed_dp = max(t_dp - bwd, t_dp * min(1.0, BUCKET_BYTES / grads))
    else:
        exposed_dp = t_dp
    opt = device.memory_time(2 * 16 * model.dense_parameters)
    it = fwd + bwd + a2a + exposed_dp + opt
    compute = fwd + bwd + opt
    weights = 2.0 * model.dense_parameters + 4.0 * emb_params / n
    mem = MemoryReport((StageMemory(0, weights, 2.0 * model.dense_parameters,
                                    12.0 * model.dense_parameters,
                                    sum(ly.activation_bytes for ly in model.layers) * b),))
    if mem.peak > device.memory:
        raise InputError(f"does not fit: {model.name} needs {mem.peak / 2**30:.1f} GiB per GPU "
                         f"of the {device.name}'s {device.memory / 2**30:.1f} GiB; use more "
                         f"ranks or a smaller batch", item="stage 0")
    flops = 3 * model.forward_flops * b * n
    return IterationResult(
        model=model.name, parallel=f"dp={n},mb={b},gb={b * n}", topology=topology.name,
        device=device.name, iteration_s=it, compute_s=compute, exposed_comm_s=a2a + exposed_dp,
        bubble_s=0.0,
        breakdown={"compute_s": compute, "tp_s": 0.0, "ep_s": a2a, "pp_s": 0.0,
                   "dp_exposed_s": exposed_dp, "optimizer_s": opt, "bubble_s": 0.0,
                   "critical_stage": 0},
        mfu=flops / (it * n * device.peak_flops), tflops_per_gpu=flops / (it * n) / 1e12,
        memory=mem, collectives=dict(cc.chosen))
