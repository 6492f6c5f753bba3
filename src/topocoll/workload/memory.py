"""Memory per GPU: weights, gradients, optimizer state and activations, per pipeline stage.

Mixed-precision Adam as in the ZeRO paper (Rajbhandari et al., SC'20): 2 bytes of 16-bit
weights, 2 of 16-bit gradients and 12 of fp32 master weights, momentum and variance per
parameter; ZeRO-1 shards the 12 over the data-parallel group, ZeRO-2 the gradients too,
ZeRO-3 the weights as well (plus one gathered block in flight). Activations per block are
:meth:`~topocoll.workload.models.Transformer.layer_activation_terms` divided as tensor and
sequence parallelism divide them (Korthikanti et al., MLSys 2023, table 2); with 1F1B the
first stage keeps ``min(pp, micro-batches)`` micro-batches in flight, times
``1 + (pp - 1) / (pp v)`` when interleaved with ``v`` chunks.

Examples
--------
>>> from topocoll.workload import parse_model, parse_parallel, find_device
>>> m = memory_per_gpu(parse_model("gpt3-175b"),
...                    parse_parallel("tp=8,pp=8,dp=16,mb=1,gb=1536,recompute=full"))
>>> round(m.peak / 2**30, 1) < 80
True
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from .devices import Device
from .models import Transformer
from .parallel import Parallelism

__all__ = ["StageMemory", "MemoryReport", "memory_per_gpu", "stage_layers",
           "stage_parameters", "check_fits", "activation_bytes_per_layer",
           "check_configuration"]


def stage_layers(model: Transformer, par: Parallelism) -> list[int]:
    """Blocks per pipeline stage. When ``pp`` does not divide the block count, the stages
    with one block fewer are the two ends, taken alternately from the outside in (first,
    last, second, second to last, ...): the first stage holds the most micro-batches in
    flight and the embedding, the last the output layer, so the lighter stages go there.
    This is how Meta split Llama 3 405B's 126 blocks over 16 stages ("we reduce one
    Transformer layer each from the first and the last stages", Dubey et al. 2024,
    section 3.3.2).

    >>> from topocoll.workload import parse_model, parse_parallel
    >>> stage_layers(parse_model("llama3-405b"), parse_parallel("tp=8,pp=16"))
    [7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7]
    """
    if par.pp > model.layers:
        raise InputError(f"pp={par.pp} exceeds the model's {model.layers} layers", item="pp")
    q, r = divmod(model.layers, par.pp)
    out = [q + 1] * par.pp
    for k in range(par.pp - r):                  # the lighter stages, from the ends in
        out[k // 2 if k % 2 == 0 else par.pp - 1 - k // 2] = q
    return out


def stage_parameters(model: Transformer, par: Parallelism, stage: int) -> float:
    """Parameters one rank of pipeline stage ``stage`` holds (its TP shard; experts split
    over the EP group)."""
    n = stage_layers(model, par)[stage]
    dense = model.attention_parameters + model.norm_parameters + (
        model.hidden * model.experts if model.moe else 0)
    experts = model.experts * model.expert_parameters / (par.ep if model.moe else 1)
    p = n * (dense + experts) / par.tp
    emb = model.embedding_parameters / par.tp
    if par.pp == 1:
        p += emb
    elif stage in (0, par.pp - 1):
        # input embedding on the first stage, output head on the last (a tied model keeps
        # a copy there): about vocab x hidden each
        p += model.vocab * model.hidden / par.tp
    return p


@dataclass(frozen=True)
class StageMemory:
    """Bytes per GPU of one pipeline stage."""

    stage: int
    weights: float
    gradients: float
    optimizer: float
    activations: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations


@dataclass(frozen=True)
class MemoryReport:
    """Memory per GPU of every pipeline stage; ``peak`` is the largest."""

    stages: tuple[StageMemory, ...]

    @property
    def peak(self) -> float:
        return max(s.total for s in self.stages)

    @property
    def peak_stage(self) -> StageMemory:
        return max(self.stages, key=lambda s: s.total)


def activation_bytes_per_layer(model: Transformer, par: Parallelism) -> float:
    """Bytes one block keeps per micro-batch on one rank."""
    rep, split, scores = model.layer_activation_terms()
    b, t = par.micro_batch, par.tp
    rep_div = t if par.sequence_parallel else 1
    if par.recompute == "full":
        return b * 2 * model.seq * model.hidden / rep_div
    if par.recompute == "selective":
        return b * (rep / rep_div + split / t)
    return b * (rep / rep_div + split / t + scores / t)


def memory_per_gpu(model: Transformer, par: Parallelism) -> MemoryReport:
    """Bytes per GPU of every stage (see the module docstring)."""
    layers = stage_layers(model, par)
    per_layer = activation_bytes_per_layer(model, par)
    m = par.micro_batches
    stages = []
    for s in range(par.pp):
        p = stage_parameters(model, par, s)
        dp = par.dp
        weights = 2 * p / (dp if par.zero >= 3 else 1)
        if par.zero >= 3:   # one gathered block (and its gradient) in flight
            weights += 2 * 2 * (model.layer_parameters / par.tp)
        grads = 2 * p / (dp if par.zero >= 2 else 1)
        opt = 12 * p / (dp if par.zero >= 1 else 1)
        in_flight = min(par.pp - s, m)
        if par.interleave > 1:
            in_flight *= 1 + (par.pp - 1) / (par.pp * par.interleave)
        act = per_layer * layers[s] * in_flight
        if par.recompute == "full":   # the block being recomputed, in full
            rep, split, scores = model.layer_activation_terms()
            rd = par.tp if par.sequence_parallel else 1
            act += par.micro_batch * (rep / rd + split / par.tp + scores / par.tp)
        if s == par.pp - 1:           # logits (16-bit) and their fp32 softmax
            act += par.micro_batch * model.seq * model.vocab * 6 / par.tp
        stages.append(StageMemory(s, weights, grads, opt, act))
    return MemoryReport(tuple(stages))


def check_fits(report: MemoryReport, device: Device) -> None:
    """Raise :class:`~topocoll.errors.InputError` naming the stage and the parts when the
    peak does not fit in ``device``'s memory."""
    st = report.peak_stage
    if st.total > device.memory:
        g = 2**30
        raise InputError(
            f"does not fit: pipeline stage {st.stage} needs {st.total / g:.1f} GiB per GPU "
            f"of the {device.name}'s {device.memory / g:.1f} GiB (weights "
            f"{st.weights / g:.1f}, gradients {st.gradients / g:.1f}, optimizer "
            f"{st.optimizer / g:.1f}, activations {st.activations / g:.1f}); try more "
            f"tp/pp, --zero, --recompute or a smaller --micro-batch",
            item=f"stage {st.stage}")


def check_configuration(model: Transformer, par: Parallelism, device: Device, *,
                        check_memory: bool = True) -> MemoryReport:
    """Refuse a configuration the model cannot be split by or the device cannot hold; the
    one check every consumer of a configuration runs (the iteration model, the task graph
    and its exporters). Returns the per-GPU memory report.

    Raises
    ------
    InputError
        Naming ``tp``, ``ep`` or the memory that does not fit.
    """
    if model.heads % par.tp:
        raise InputError(f"tp={par.tp} must divide the model's {model.heads} heads",
                         item="tp")
    if model.moe and model.experts % par.ep:
        raise InputError(f"ep={par.ep} must divide the model's {model.experts} experts",
                         item="ep")
    if not model.moe and par.ep > 1:
        raise InputError("ep > 1 needs a mixture-of-experts model", item="ep")
    mem = memory_per_gpu(model, par)
    if check_memory:
        check_fits(mem, device)
    return mem
