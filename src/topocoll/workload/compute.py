"""Compute time of a transformer block on one device: the multiplies at the device's
efficiency curve, attention, and the memory-bound rest (``docs/design-workload.md``).

Examples
--------
>>> from topocoll.workload import find_device, parse_model, parse_parallel
>>> t = block_compute_time(parse_model("gpt3-175b"), parse_parallel("tp=8"),
...                        find_device("a100-80g"))
>>> 0.001 < t < 0.1
True
"""

from __future__ import annotations

from .devices import Device
from .models import Transformer
from .parallel import Parallelism

__all__ = ["block_compute_time", "layer_compute", "stage_extras", "layered_forward_time",
           "ELEMENT_BYTES"]

#: Bytes per activation and gradient element (16-bit training).
ELEMENT_BYTES = 2


def block_compute_time(model: Transformer, par: Parallelism, device: Device) -> float:
    """Seconds of one block's forward on one rank for one micro-batch (multiplies,
    attention and the memory-bound rest; the backward is twice this)."""
    mm, mem = layer_compute(model, par, device)
    return mm + mem


def layer_compute(model: Transformer, par: Parallelism, dev: Device) -> tuple[float, float]:
    """Seconds of one block's forward on one rank for one micro-batch: (multiplies and
    attention, memory-bound rest); and the attention core alone is recomputed by
    ``selective``."""
    b, t, s, h = par.micro_batch, par.tp, model.seq, model.hidden
    tok = b * s
    gemms = [2 * tok * h * (h + 2 * model.kv_dim) / t,             # QKV
             2 * tok * h * h / t]                                    # output projection
    mlp_mats = 3 if model.gated else 2
    # Expert parallelism: a rank holds ``experts / ep`` experts and each of them serves
    # the tokens the ``ep`` ranks of its group route to it, so a rank's experts process
    # ``top_k`` times its own tokens whatever ``ep`` is (a balanced router).
    ep = par.ep if model.moe else 1
    per_expert_tok = tok * model.top_k * ep / (model.experts if model.moe else 1)
    n_exp = model.experts / ep if model.moe else 1
    for _ in range(mlp_mats):
        gemms.append(2 * per_expert_tok * h * model.ffn / t)
    mm = sum(dev.gemm_time(f) for f in gemms[:2])
    mm += n_exp * sum(dev.gemm_time(f) for f in gemms[2:]) if model.moe else sum(
        dev.gemm_time(f) for f in gemms[2:])
    attn = dev.gemm_time(b * model.layer_attention_flops() / t)
    rep, split, scores = model.layer_activation_terms()
    rd = t if par.sequence_parallel else 1
    mem = dev.memory_time(2 * b * (rep / rd + split / t + scores / t))
    return mm + attn, mem


def stage_extras(model: Transformer, par: Parallelism, device: Device
                 ) -> tuple[float, float, float]:
    """Seconds per micro-batch on one rank of what is not a block's forward: the
    recomputation a block's backward adds (``selective``: the attention core; ``full``:
    the whole block, :func:`block_compute_time`), the logits on the last stage and the
    embedding lookup on the first (memory-bound)."""
    b, s, t = par.micro_batch, model.seq, par.tp
    recompute = 0.0
    if par.recompute == "full":
        recompute = block_compute_time(model, par, device)
    elif par.recompute == "selective":
        _, _, scores = model.layer_activation_terms()
        recompute = (device.gemm_time(b * model.layer_attention_flops() / t)
                     + device.memory_time(2 * b * scores / t))
    logit = device.gemm_time(b * model.logit_flops() / t) + device.memory_time(
        6 * b * s * model.vocab / t)
    embed = device.memory_time(2 * ELEMENT_BYTES * b * s * model.hidden / t)
    return recompute, logit, embed


def layered_forward_time(flops: float, activation_bytes: float, device: Device,
                         batch: int) -> float:
    """Seconds of a layer's forward for ``batch`` samples (``flops`` and output
    ``activation_bytes`` per sample): its multiplies at the device's efficiency, its
    output written and read once."""
    return device.gemm_time(flops * batch) + device.memory_time(2 * activation_bytes * batch)
