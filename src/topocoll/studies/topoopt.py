"""TopoOpt's evaluation with our search: training time against network cost for TopoOpt
designs and fat-trees, the speedup at equal cost, and the effect of the port split
(``docs/studies/topoopt.md``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..fabric import (
    SPLITS,
    TOPOOPT_BATCH,
    FabricEval,
    Job,
    equivalent_fattree_bandwidth,
    fattree_cost,
    mcmc,
    optimize,
    switch_fabric,
    topoopt_cost,
)
from ..workload import LAYERED, find_device
from ._common import save_figure

__all__ = ["STUDY_MODELS", "STUDY_DEGREES", "STUDY_GBPS", "FATTREE_GBPS", "run_topoopt_study",
           "write_topoopt_study"]

#: Models of TopoOpt's evaluation (algorithms.md section 1.7).
STUDY_MODELS = ("dlrm", "bert-topoopt", "candle-uno", "vgg16", "resnet50", "ncf")
STUDY_DEGREES = (4, 6, 8)
STUDY_GBPS = (10, 25, 40, 100, 200)
#: Per-server fat-tree bandwidths of TopoOpt's scripts.
FATTREE_GBPS = (10, 25, 40, 80, 100, 160, 200, 320, 400, 800, 1600)
_G = 1e9 / 8


def _fattree(job: Job, bandwidth: float, steps: int, seed: int) -> dict:
    fe = FabricEval(job, switch_fabric(job.servers, bandwidth))
    _, t = mcmc(fe, job.initial_strategy(), steps=steps, rng=np.random.default_rng(seed))
    return t.to_dict()


def run_topoopt_study(models: Sequence[str] = STUDY_MODELS,
                      degrees: Sequence[int] = STUDY_DEGREES,
                      gbps: Sequence[float] = STUDY_GBPS,
                      fattree_gbps: Sequence[float] = FATTREE_GBPS, *, servers: int = 128,
                      rounds: int = 2, steps: int = 1000, seed: int = 0,
                      device: str = "a100-80g",
                      progress: Callable[[str], None] | None = None) -> dict:
    """Every model x degree x port bandwidth as a TopoOpt design and its cost-equivalent
    fat-tree, the fat-tree curve at ``fattree_gbps``, and DLRM's port split at the largest
    degree and 100 Gb/s (or the largest bandwidth given)."""
    dev = find_device(device)
    points, curves, splits = [], [], []
    for name in models:
        job = Job(LAYERED[name], servers=servers, device=dev, batch_per_gpu=TOPOOPT_BATCH[name])
        for b in fattree_gbps:
            t = _fattree(job, b * _G, steps, seed)
            curves.append({"model": name, "gbps": b,
                           "cost_usd": fattree_cost(servers, b * _G), **t})
        for d in degrees:
            for b in gbps:
                if progress is not None:
                    progress(f"{name} d={d} {b:g} Gb/s")
                r = optimize(job, degree=d, port_bandwidth=b * _G, rounds=rounds, steps=steps,
                             seed=seed)
                cost = topoopt_cost(servers, d, b * _G)
                bft = equivalent_fattree_bandwidth(servers, cost)
                ft = _fattree(job, bft, steps, seed)
                points.append({"model": name, "degree": d, "gbps": b, "cost_usd": cost,
                               **r.timing.to_dict(), "diameter": r.diameter,
                               "degree_allreduce": r.finder.degree_allreduce,
                               "degree_mp": r.finder.degree_mp,
                               "fattree_gbps": bft / _G,
                               "fattree_iteration_s": ft["iteration_s"],
                               "speedup": ft["iteration_s"] / r.timing.iteration_s})
    if "dlrm" in models:
        job = Job(LAYERED["dlrm"], servers=servers, device=dev,
                  batch_per_gpu=TOPOOPT_BATCH["dlrm"])
        d = max(degrees)
        b = 100 if 100 in gbps else max(gbps)
        for sp in SPLITS:
            r = optimize(job, degree=d, port_bandwidth=b * _G, rounds=rounds, steps=steps,
                         seed=seed, split=sp)
            splits.append({"split": sp, "degree": d, "gbps": b, **r.timing.to_dict(),
                           "degree_allreduce": r.finder.degree_allreduce,
                           "degree_mp": r.finder.degree_mp, "diameter": r.diameter})
    best = {}
    for p in points:
        if p["model"] not in best or p["speedup"] > best[p["model"]]["speedup"]:
            best[p["model"]] = p
    return {"setup": {"servers": servers, "gpus_per_server": 4, "device": device,
                      "rounds": rounds, "steps": steps, "seed": seed,
                      "batch_per_gpu": {m: TOPOOPT_BATCH[m] for m in models}},
            "topoopt": points, "fattree": curves, "split": splits,
            "max_speedup": {m: {"speedup": p["speedup"], "degree": p["degree"],
                                "gbps": p["gbps"]} for m, p in best.items()}}


def write_topoopt_study(directory: str | Path, res: dict) -> list[Path]:
    """``topoopt-results.json`` and ``topoopt-cost.png`` (time against cost per model) in
    ``directory``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    pj = d / "topoopt-results.json"
    pj.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    models = list(dict.fromkeys(p["model"] for p in res["topoopt"]))
    cols = min(3, len(models))
    rows = (len(models) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    for ax, m in zip(axes.flat, models, strict=False):
        ft = [c for c in res["fattree"] if c["model"] == m]
        ax.plot([c["cost_usd"] / 1e6 for c in ft], [c["iteration_s"] * 1e3 for c in ft],
                "k.-", label="fat-tree")
        for deg, mark in zip(sorted({p["degree"] for p in res["topoopt"]}), "osD^v",
                             strict=False):
            pts = [p for p in res["topoopt"] if p["model"] == m and p["degree"] == deg]
            ax.plot([p["cost_usd"] / 1e6 for p in pts], [p["iteration_s"] * 1e3 for p in pts],
                    mark + "-", ms=4, label=f"TopoOpt d={deg}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(m, fontsize=9)
        ax.set_xlabel("network cost (million $)", fontsize=8)
        ax.set_ylabel("iteration (ms)", fontsize=8)
        ax.grid(alpha=0.3, which="both")
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(models):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    return [pj, save_figure(fig, d / "topoopt-cost.png", dpi=100)]
