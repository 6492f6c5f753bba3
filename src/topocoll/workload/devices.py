"""Accelerators: peak compute, memory and what a kernel of a given size achieves.

Compute time is a roofline per operation: a matrix multiply of ``F`` FLOPs runs at
``peak * gemm_efficiency(F)``, where ``gemm_efficiency(F) = gemm_max * F / (F + gemm_half)``
rises from 0 toward ``gemm_max`` (small multiplies leave the chip idle); memory-bound work
(norms, activations, softmax, dropout, the optimizer) moves its bytes at
``memory_bandwidth * memory_efficiency``.

Where the constants come from: peaks and memory sizes are the vendors' data sheets (dense
16-bit tensor FLOP/s, no sparsity). ``gemm_max`` and ``gemm_half`` are not fitted to any
training result: ``gemm_max = 0.8`` is the fraction of peak that cuBLAS reaches on large
16-bit multiplies on A100 and H100 (about 250 of 312 TFLOP/s on A100), ``gemm_half`` the
multiply size (FLOPs) at which half of that is reached, set to the work of a few waves of
tiles across the chip. ``memory_efficiency = 0.8`` is the usual STREAM-like fraction of HBM
bandwidth. ``docs/studies/validation.md`` shows what these give against Narayanan et al.
(SC'21) and says how sensitive the result is to them.

Examples
--------
>>> d = DEVICES["a100-80g"]
>>> d.peak_flops / 1e12, round(d.memory / 2**30)
(312.0, 80)
>>> 0 < d.gemm_efficiency(1e9) < d.gemm_efficiency(1e12) < d.gemm_max
True
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError, InputTypeError
from ..units import GiB

__all__ = ["Device", "DEVICES", "DEVICE_NAMES", "find_device"]


@dataclass(frozen=True)
class Device:
    """One accelerator.

    Parameters
    ----------
    name : str
    peak_flops : float
        Dense 16-bit tensor FLOP/s.
    memory : float
        Bytes of device memory.
    memory_bandwidth : float
        Bytes/s of device memory.
    gemm_max, gemm_half : float
        The multiply efficiency curve (see the module docstring).
    memory_efficiency : float
        Fraction of ``memory_bandwidth`` that memory-bound kernels reach.
    """

    name: str
    peak_flops: float
    memory: float
    memory_bandwidth: float
    gemm_max: float = 0.8
    gemm_half: float = 2e9
    memory_efficiency: float = 0.8

    def __post_init__(self) -> None:
        for f in ("peak_flops", "memory", "memory_bandwidth", "gemm_max", "gemm_half",
                  "memory_efficiency"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InputTypeError(f"device field {f!r} must be a number, got {v!r}",
                                     item=f"field '{f}'")
            if not v > 0 or v != v or v == float("inf"):
                raise InputError(f"device field {f!r} must be positive and finite, got {v}",
                                 item=f"field '{f}'")
        for f in ("gemm_max", "memory_efficiency"):
            if getattr(self, f) > 1:
                raise InputError(f"device field {f!r} is a fraction, got {getattr(self, f)}",
                                 item=f"field '{f}'")

    def gemm_efficiency(self, flops: float) -> float:
        """Fraction of peak a matrix multiply of ``flops`` FLOPs reaches."""
        return self.gemm_max * flops / (flops + self.gemm_half)

    def gemm_time(self, flops: float, count: float = 1.0) -> float:
        """Seconds for ``count`` multiplies of ``flops`` FLOPs each."""
        if flops <= 0:
            return 0.0
        return count * flops / (self.peak_flops * self.gemm_efficiency(flops))

    def memory_time(self, nbytes: float) -> float:
        """Seconds to move ``nbytes`` through device memory."""
        return nbytes / (self.memory_bandwidth * self.memory_efficiency)


#: Device presets (data-sheet peaks; efficiency constants as in the module docstring).
DEVICES: dict[str, Device] = {d.name: d for d in (
    Device("v100", 125e12, 32 * GiB, 900e9, gemm_half=1e9),
    Device("a100-40g", 312e12, 40 * GiB, 1.555e12),
    Device("a100-80g", 312e12, 80 * GiB, 2.039e12),
    Device("h100", 989e12, 80 * GiB, 3.35e12, gemm_max=0.75, gemm_half=6e9),
    Device("h200", 989e12, 141e9, 4.8e12, gemm_max=0.75, gemm_half=6e9),
    Device("mi250x", 383e12, 128 * GiB, 3.2e12, gemm_max=0.6, gemm_half=3e9),
    Device("tpu-v4", 275e12, 32 * GiB, 1.2e12, gemm_max=0.85, gemm_half=2e9),
    # Google Cloud TPU v5p documentation (peak, HBM); the multiply efficiency of tpu-v4, for
    # want of a published v5p measurement
    Device("tpu-v5p", 459e12, 95 * GiB, 2.765e12, gemm_max=0.85, gemm_half=2e9),
    # NVIDIA HGX B200 data sheet: BF16 tensor 36 PFLOP/s for eight GPUs with sparsity
    # (2.25 PFLOP/s dense per GPU), 1,440 GB HBM3e (180 GB each), 64 TB/s (8 TB/s each); the
    # multiply efficiency of h100, for want of a published B200 measurement
    Device("b200", 2.25e15, 180e9, 8e12, gemm_max=0.75, gemm_half=6e9),
    # AMD Instinct MI300X data sheet: 1,307.4 TFLOP/s dense BF16, 192 GB HBM3 at 5.3 TB/s;
    # the multiply efficiency of mi250x, for want of a published measurement
    Device("mi300x", 1307.4e12, 192e9, 5.3e12, gemm_max=0.6, gemm_half=3e9),
)}

DEVICE_NAMES = tuple(DEVICES)


def find_device(name: str) -> Device:
    """The preset ``name`` (case-insensitive).

    Raises
    ------
    InputError
        Naming the unknown device and the valid ones.
    """
    if not isinstance(name, str):
        raise InputTypeError(f"a device must be a name, got {name!r}", item="device")
    key = name.strip().lower()
    if key not in DEVICES:
        raise InputError(f"unknown device {name!r} (valid: {', '.join(DEVICE_NAMES)})",
                         item=f"device '{name}'")
    return DEVICES[key]
