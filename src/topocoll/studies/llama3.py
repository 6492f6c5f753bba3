"""Validation of the iteration model against Meta's Llama 3 405B pre-training runs.

Dubey et al., "The Llama 3 Herd of Models" (arXiv:2407.21783, 2024), Table 4: the 405B
model (126 blocks, hidden 16,384, GQA with 8 key/value heads, vocabulary 128,256) on 8,192
and 16,384 H100 80 GB GPUs of Meta's RoCE cluster (eight 400 Gb/s NICs per 8-GPU server),
sequence 8,192, 16 M tokens per batch (2,048 sequences), BF16, tensor parallelism 8,
pipeline parallelism 16, and the TFLOP/s per GPU and BF16 MFU they measured. The same
figures were shown by Meta at SC'24 (P. Balaji, "Herding Llamas").

What the table does not give, and this study therefore varies: the pipeline schedule.
The paper describes an interleaved 1F1B schedule with a tunable number of contiguous
micro-batches, but not the number of model chunks per stage (``interleave``); each row is
predicted with 1, 2, 4 and 8 chunks per stage (a stage holds 7 or 8 of the 126 blocks).
The row with context parallelism 16 (131,072-token sequences) is reported as not
predicted: the toolkit has no context parallelism.

``docs/studies/validation.md`` is written from :func:`run_llama3`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
from ._common import write_json

__all__ = ["LLAMA3_TABLE4", "Llama3Row", "LLAMA3_INTERLEAVES", "run_llama3", "write_llama3"]

#: Rows of Table 4 of the Llama 3 paper for the 405B model: (GPUs, TP, CP, PP, DP,
#: sequence length, sequences per DP rank, TFLOP/s per GPU, BF16 MFU).
LLAMA3_TABLE4 = (
    (8192, 8, 1, 16, 64, 8192, 32, 430, 0.43),
    (16384, 8, 1, 16, 128, 8192, 16, 400, 0.41),
    (16384, 8, 16, 16, 8, 131072, 16, 380, 0.38),
)

#: Model chunks per pipeline stage tried for every row (1: plain 1F1B).
LLAMA3_INTERLEAVES = (1, 2, 4, 8)


@dataclass(frozen=True)
class Llama3Row:
    """One row of Table 4 at one pipeline interleave, with our prediction.

    ``model_tflops`` is our model FLOP/s per GPU (MFU times the H100's dense BF16 peak:
    what Meta's TFLOP/s per GPU and MFU count, no recomputation); ``fits`` says whether our
    memory model fits the configuration in 80 GB, ``memory_gib`` the fullest stage;
    ``note`` says why a row is not predicted (then the figures are None).
    """

    gpus: int
    parallel: str
    interleave: int
    paper_tflops: float
    paper_mfu: float
    mfu: float | None
    model_tflops: float | None
    bubble_share: float | None
    memory_gib: float | None
    fits: bool | None
    note: str = ""

    @property
    def error(self) -> float | None:
        """Relative error of our model FLOP/s per GPU against the paper's TFLOP/s."""
        return None if self.model_tflops is None else self.model_tflops / self.paper_tflops - 1


def run_llama3(interleaves: Sequence[int] = LLAMA3_INTERLEAVES, *,
               rows: Sequence[int] | None = None, device: Device | None = None,
               cache: ScheduleCache | None = None) -> list[Llama3Row]:
    """Our prediction of every row of :data:`LLAMA3_TABLE4` (indices ``rows``; default
    all) at every interleave.

    Each row runs on ``dgx-h100:<GPUs/8>`` with the paper's TP, PP and DP, 2,048 sequences
    per iteration in micro-batches of one, ZeRO-1 over data parallelism, Megatron sequence
    parallelism and selective recomputation, the collectives costed by the NCCL model
    (``-a nccl``), on ``device`` (default the ``h100`` preset). Configurations that our
    memory model does not fit in 80 GB are still timed and marked ``fits=False``.
    """
    dev = device or find_device("h100")
    model = parse_model("llama3-405b")
    out: list[Llama3Row] = []
    for i in rows if rows is not None else range(len(LLAMA3_TABLE4)):
        gpus, tp, cp, pp, dp, seq, per_dp, paper, mfu = LLAMA3_TABLE4[i]
        label = f"tp={tp},cp={cp},pp={pp},dp={dp}"
        if cp > 1 or seq != model.seq:
            out.append(Llama3Row(gpus, label, 0, paper, mfu, None, None, None, None, None,
                                 "not predicted: context parallelism (and a 131,072-token "
                                 "sequence) is not modelled"))
            continue
        topo = parse_spec(f"dgx-h100:{gpus // 8}")
        coster = CollectiveCoster(topo, algorithms=["nccl"], cache=cache, bounds=False)
        for v in interleaves:
            par = parse_parallel(f"tp={tp},pp={pp},dp={dp}", world=gpus, micro_batch=1,
                                 recompute="selective", zero=1, sequence_parallel=True,
                                 interleave=v).with_(global_batch=dp * per_dp)
            r = simulate_iteration(model, par, topo, dev, coster=coster, check_memory=False)
            peak = r.memory.peak_stage.total
            out.append(Llama3Row(gpus, par.label(), v, paper, mfu, r.mfu,
                                 r.mfu * dev.peak_flops / 1e12, r.bubble_s / r.iteration_s,
                                 peak / 2**30, peak <= dev.memory))
    return out


def write_llama3(directory: str | Path, results: Sequence[Llama3Row]) -> list[Path]:
    """Write ``validation_llama3.json`` into ``directory``; returns its path."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    recs = [{"gpus": r.gpus, "parallel": r.parallel, "interleave": r.interleave,
             "paper_tflops": r.paper_tflops, "paper_mfu": r.paper_mfu, "mfu": r.mfu,
             "model_tflops": r.model_tflops, "error": r.error,
             "bubble_share": r.bubble_share, "memory_gib": r.memory_gib, "fits": r.fits,
             "note": r.note} for r in results]
    return [write_json(d / "validation_llama3.json", {
        "source": "Dubey et al., The Llama 3 Herd of Models, arXiv:2407.21783, Table 4",
        "rows": recs})]
