"""Validation of the iteration model against Narayanan et al., SC'21, Table 1.

"Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM": GPT
models from 1.7 B to 1 T parameters on 32 to 3072 A100 GPUs of Selene (DGX A100 boxes,
eight 200 Gb/s HDR NICs each), sequence 2048, vocabulary 51200, activation recomputation,
TFLOP/s per GPU counted with their equation 3 (which includes the recomputed forward).
``docs/studies/validation.md`` is written from :func:`run_validation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..selection import ScheduleCache
from ..topology.spec import parse_spec
from ..workload import (
    CollectiveCoster,
    Device,
    find_device,
    parse_model,
    parse_parallel,
    simulate_iteration,
)
from ._common import headless_pyplot, save_figure, write_json

__all__ = ["SC21_TABLE1", "ValidationRow", "run_validation", "VALIDATION_ALGORITHMS",
           "SCHEDULE_ALGORITHMS",
           "calibrate_gemm", "write_validation", "mean_abs_error"]

#: (parameters in billions, heads, hidden, layers, TP, PP, GPUs, batch, TFLOP/s per GPU)
#: as printed in Table 1 of the paper.
SC21_TABLE1 = (
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
)

#: The collectives as Megatron-LM ran them: NCCL, costed by the NCCL model
#: (:mod:`topocoll.cost.nccl`: NCCL's algorithms at the rates NCCL reaches).
VALIDATION_ALGORITHMS = ("nccl",)
#: The ablation: NCCL's algorithms (ring and tree) plus bidirectional ring and direct as
#: schedules on ideal links (the study's setting before the NCCL model existed).
SCHEDULE_ALGORITHMS = ("ring", "double_binary_tree", "bidirectional_ring", "direct")


@dataclass(frozen=True)
class ValidationRow:
    """One row: the paper's configuration and figure beside ours."""

    params_b: float
    model: str
    parallel: str
    gpus: int
    paper_tflops: float
    tflops: float
    iteration_s: float
    breakdown: dict

    @property
    def error(self) -> float:
        """Relative error of our TFLOP/s per GPU against the paper's."""
        return self.tflops / self.paper_tflops - 1


def _row(i: int, dev: Device, micro_batch: int, algorithms: Sequence[str],
         cache: ScheduleCache | None, costers: dict) -> ValidationRow:
    p_b, heads, hidden, layers, tp, pp, gpus, batch, paper = SC21_TABLE1[i]
    m = parse_model(f"transformer:hidden={hidden},ffn={4 * hidden},heads={heads},"
                    f"layers={layers},seq=2048,vocab=51200")
    dp = gpus // (tp * pp)
    par = parse_parallel(f"tp={tp},pp={pp},dp={dp},mb={micro_batch},gb={batch},"
                         f"recompute=full")
    if i not in costers:
        costers[i] = CollectiveCoster(parse_spec(f"dgx-a100:{gpus // 8}"),
                                      algorithms=list(algorithms), cache=cache)
    cc = costers[i]
    r = simulate_iteration(m, par, cc.topology, dev, coster=cc)
    return ValidationRow(p_b, m.name, par.label(), gpus, paper, r.tflops_per_gpu,
                         r.iteration_s, r.breakdown)


def calibrate_gemm(row: int = 0, *, device: Device | None = None, micro_batch: int = 1,
                   algorithms: Sequence[str] = VALIDATION_ALGORITHMS,
                   cache: ScheduleCache | None = None, rounds: int = 6) -> Device:
    """The device with ``gemm_max`` scaled so that row ``row`` matches the paper (a
    fixed-point iteration on the ratio of the figures, ``rounds`` times)."""
    dev = device or find_device("a100-80g")
    costers: dict = {}
    for _ in range(rounds):
        r = _row(row, dev, micro_batch, algorithms, cache, costers)
        dev = replace(dev, gemm_max=min(1.0, dev.gemm_max * r.paper_tflops / r.tflops))
    return dev


def mean_abs_error(rows: Sequence[ValidationRow]) -> float:
    """Mean of ``|error|`` over ``rows``."""
    return sum(abs(r.error) for r in rows) / len(rows)


def run_validation(rows: Sequence[int] | None = None, *, device: Device | None = None,
                   micro_batch: int = 1, algorithms: Sequence[str] = VALIDATION_ALGORITHMS,
                   cache: ScheduleCache | None = None) -> list[ValidationRow]:
    """Our TFLOP/s per GPU for the rows (indices into :data:`SC21_TABLE1`; default all).

    Each row runs on ``dgx-a100:<GPUs/8>`` with the paper's TP, PP and batch, data
    parallelism filling the GPUs, full recomputation, ``micro_batch`` sequences per
    micro-batch and plain 1F1B, on ``device`` (default the ``a100-80g`` preset).
    """
    dev = device or find_device("a100-80g")
    costers: dict = {}
    return [_row(i, dev, micro_batch, algorithms, cache, costers)
            for i in (rows if rows is not None else range(len(SC21_TABLE1)))]


def write_validation(directory: str | Path, plain: Sequence[ValidationRow],
                     calibrated: Sequence[ValidationRow], device: Device,
                     calibrated_device: Device, calibration_row: int = 0,
                     schedules: Sequence[ValidationRow] = ()) -> list[Path]:
    """Write ``validation.json`` and ``validation.png`` (ours against the paper) into
    ``directory``; returns the paths. ``schedules``: the ablation rows (collectives as
    schedules on ideal links, :data:`SCHEDULE_ALGORITHMS`), if run. The Markdown page
    quotes them."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)

    def rec(r: ValidationRow) -> dict:
        return {"params_b": r.params_b, "model": r.model, "parallel": r.parallel,
                "gpus": r.gpus, "paper_tflops": r.paper_tflops, "tflops": r.tflops,
                "error": r.error, "iteration_s": r.iteration_s, "breakdown": r.breakdown}

    others = [r for i, r in enumerate(calibrated) if i != calibration_row]
    data = {"device": {"name": device.name, "gemm_max": device.gemm_max,
                       "gemm_half": device.gemm_half,
                       "memory_efficiency": device.memory_efficiency},
            "calibrated_gemm_max": calibrated_device.gemm_max,
            "calibration_row": calibration_row,
            "mae_plain": mean_abs_error(plain),
            "mae_calibrated_others": mean_abs_error(others) if others else None,
            "plain": [rec(r) for r in plain], "calibrated": [rec(r) for r in calibrated],
            "schedules": [rec(r) for r in schedules],
            "mae_schedules": mean_abs_error(schedules) if schedules else None}
    paths = [write_json(d / "validation.json", data)]
    plt = headless_pyplot()
    if plt is None:
        return paths
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    x = [r.params_b for r in plain]
    ax.plot(x, [r.paper_tflops for r in plain], "ko-", label="Narayanan et al. SC'21")
    ax.plot(x, [r.tflops for r in plain], "s--", label="topocoll (data-sheet constants)")
    ax.plot(x, [r.tflops for r in calibrated], "^-",
            label=f"topocoll (gemm_max fitted on row {calibration_row + 1})")
    if schedules:
        ax.plot(x, [r.tflops for r in schedules], "x:",
                label="topocoll, data-sheet, ideal-link schedules (ablation)")
    ax.set_xscale("log")
    ax.set_xlabel("parameters (billions)")
    ax.set_ylabel("TFLOP/s per GPU")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    paths.append(save_figure(fig, d / "validation.png"))
    return paths
