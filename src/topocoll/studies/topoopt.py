"""TopoOpt's evaluation with our search: training time against network cost for TopoOpt
designs and routed fat-trees, the speedup at equal cost over five seeds, what the
strategy space and the overlap change, the port split, and how the prices decide the
comparison (``docs/studies/topoopt.md``).

Every (model, degree, port bandwidth, seed) design is one task: TopoOpt's alternating
optimization with the artifact's budget (4,000 moves, NCF 8,000, over two rounds), then
the same budget of strategy search on the non-blocking and the 2:1 fat-tree that cost
what the design costs. Tasks run in worker processes; each seeds itself, so the results
do not depend on how many run at once.
"""

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
    PriceTable,
    equivalent_fattree_bandwidth,
    fattree_cost,
    fattree_fabric,
    optimize,
    search_fixed,
    topoopt_cost,
)
from ..fabric.design import scaled_prices
from ..workload import LAYERED, find_device
from ._common import save_figure

__all__ = ["study_job", "SPLITS", "STUDY_MODELS", "STUDY_DEGREES", "STUDY_GBPS",
           "FATTREE_GBPS", "STUDY_SEEDS", "STUDY_BUDGET", "PRICE_PARTS", "PRICE_FACTORS",
           "budget", "run_topoopt_study",
           "write_topoopt_study", "render_tables", "study_tasks"]

#: Models of TopoOpt's evaluation (algorithms.md section 1.7).
STUDY_MODELS = ("dlrm", "bert-topoopt", "candle-uno", "vgg16", "resnet50", "ncf")
STUDY_DEGREES = (4, 8)
STUDY_GBPS = (10, 25, 100, 200)
#: Per-server fat-tree bandwidths of TopoOpt's scripts.
FATTREE_GBPS = (10, 25, 40, 80, 100, 160, 200, 320, 400, 800, 1600)
#: The artifact's runs 0-4.
STUDY_SEEDS = (0, 1, 2, 3, 4)
#: Strategy moves per design (the artifact's scripts: 4,000; NCF 8,000).
STUDY_BUDGET = {"ncf": 8000}
_DEFAULT_BUDGET = 4000
ROUNDS = 2
#: Parts whose prices the sensitivity scales, and by how much.
PRICE_PARTS = ("nic", "transceiver", "switch_port", "patch_panel_port", "fiber")
PRICE_FACTORS = (0.5, 2.0)
_G = 1e9 / 8


def budget(model: str) -> int:
    """Strategy moves per design for ``model`` (:data:`STUDY_BUDGET`)."""
    return STUDY_BUDGET.get(model, _DEFAULT_BUDGET)


def study_job(name: str, servers: int, device: str, **kw) -> Job:
    """The study's job for model ``name``: TopoOpt's per-GPU batch on ``servers``
    servers of ``device``."""
    return Job(LAYERED[name], servers=servers, device=find_device(device),
               batch_per_gpu=TOPOOPT_BATCH[name], **kw)


def _fattree(job: Job, bandwidth: float, steps: int, seed: int, o: float = 1.0,
             overlap: bool = True) -> dict:
    fe = FabricEval(job, fattree_fabric(job.servers, bandwidth, oversubscription=o),
                    overlap=overlap)
    s, t = search_fixed(fe, steps=steps, rng=np.random.default_rng(seed))
    return {**t.to_dict(), "strategy": job.describe(s)["counts"]}


def _design(name: str, degree: int, gbps: float, seed: int, servers: int, steps: int,
            device: str, split: str = "best", overlap: bool = True,
            pipeline: bool = True) -> dict:
    """One TopoOpt design and its equal-cost fat-trees (a worker task)."""
    kw = {} if pipeline else {"pipelines": (1,)}
    job = study_job(name, servers, device, **kw)
    r = optimize(job, degree=degree, port_bandwidth=gbps * _G, rounds=ROUNDS,
                 steps=steps // ROUNDS, seed=seed, split=split, overlap=overlap)
    cost = topoopt_cost(servers, degree, gbps * _G)
    rec = {"model": name, "degree": degree, "gbps": gbps, "seed": seed, "cost_usd": cost,
           **r.timing.to_dict(), "diameter": r.diameter,
           "degree_allreduce": r.finder.degree_allreduce, "degree_mp": r.finder.degree_mp,
           "strategy": job.describe(r.strategy)["counts"]}
    for o, key in ((1.0, "fattree"), (2.0, "fattree_2to1")):
        bft = equivalent_fattree_bandwidth(servers, cost, oversubscription=o)
        ft = _fattree(job, bft, steps, seed, o, overlap)
        rec[f"{key}_gbps"] = bft / _G
        rec[f"{key}_iteration_s"] = ft["iteration_s"]
        rec[f"{key}_strategy"] = ft["strategy"]
        rec[f"{key}_speedup"] = ft["iteration_s"] / r.timing.iteration_s
    return rec


def _curve(name: str, gbps: float, servers: int, steps: int, device: str) -> dict:
    job = study_job(name, servers, device)
    t = _fattree(job, gbps * _G, steps, 0)
    return {"model": name, "gbps": gbps, "cost_usd": fattree_cost(servers, gbps * _G), **t}


def _priced(name: str, part: str, factor: float, degree: int, gbps: float, topo_s: float,
            servers: int, steps: int, device: str) -> dict:
    """The equal-cost fat-tree under one part's price scaled (a worker task)."""
    p = scaled_prices(PriceTable(), part, factor)
    cost = topoopt_cost(servers, degree, gbps * _G, p)
    bft = equivalent_fattree_bandwidth(servers, cost, p)
    ft = _fattree(study_job(name, servers, device), bft, steps, 0)
    return {"model": name, "part": part, "factor": factor, "degree": degree, "gbps": gbps,
            "cost_usd": cost, "fattree_gbps": bft / _G, "topoopt_s": topo_s,
            "fattree_iteration_s": ft["iteration_s"],
            "speedup": ft["iteration_s"] / topo_s}


def _run(tasks: list[tuple[Callable, tuple, dict]], jobs: int,
         progress: Callable[[str], None] | None) -> list[dict]:
    """Every task's result, in task order (a pool of ``jobs`` workers, or in-process)."""
    out: list[dict | None] = [None] * len(tasks)
    if jobs <= 1:
        for i, (f, args, kw) in enumerate(tasks):
            out[i] = f(*args, **kw)
            if progress is not None:
                progress(" ".join(str(a) for a in args[:4]))
        return out
    from concurrent.futures import as_completed

    from ..procs import process_pool

    with process_pool(min(jobs, len(tasks))) as pool:
        futs = {pool.submit(f, *args, **kw): i for i, (f, args, kw) in enumerate(tasks)}
        for fu in as_completed(futs):
            i = futs[fu]
            out[i] = fu.result()
            if progress is not None:
                progress(" ".join(str(a) for a in tasks[i][1][:4]))
    return out


def _spread(xs: Sequence[float]) -> dict:
    a = np.array(xs, float)
    return {"median": float(np.median(a)), "min": float(a.min()), "max": float(a.max())}


def study_tasks(models: Sequence[str] = STUDY_MODELS, degrees: Sequence[int] = STUDY_DEGREES,
                gbps: Sequence[float] = STUDY_GBPS, seeds: Sequence[int] = STUDY_SEEDS) -> int:
    """How many design tasks :func:`run_topoopt_study` runs before its follow-ups."""
    return len(models) * len(degrees) * len(gbps) * len(seeds)


def run_topoopt_study(models: Sequence[str] = STUDY_MODELS,
                      degrees: Sequence[int] = STUDY_DEGREES,
                      gbps: Sequence[float] = STUDY_GBPS,
                      fattree_gbps: Sequence[float] = FATTREE_GBPS, *, servers: int = 128,
                      seeds: Sequence[int] = STUDY_SEEDS, steps: int | None = None,
                      device: str = "a100-80g", jobs: int = 1,
                      price_parts: Sequence[str] = PRICE_PARTS,
                      price_factors: Sequence[float] = PRICE_FACTORS,
                      progress: Callable[[str], None] | None = None) -> dict:
    """Every model x degree x port bandwidth x seed as a TopoOpt design beside its
    cost-equivalent fat-trees (non-blocking and 2:1), aggregated over the seeds (median,
    min, max); the fat-tree curve at ``fattree_gbps``; for each model's headline point
    (the largest median speedup) the ablations (no pipeline in the strategy space; no
    overlap of the all-reduce) and the price sensitivity (each of ``price_parts`` times
    each of ``price_factors``); DLRM's port split at the largest degree and 100 Gb/s (or
    the largest bandwidth given). ``steps`` overrides the per-model budget (tests)."""
    def moves(m):
        return steps if steps is not None else budget(m)

    tasks = [(_design, (m, d, b, s, servers, moves(m), device), {})
             for m in models for d in degrees for b in gbps for s in seeds]
    designs = _run(tasks, jobs, progress)
    points = []
    for m in models:
        for d in degrees:
            for b in gbps:
                runs = [r for r in designs if (r["model"], r["degree"], r["gbps"]) == (m, d, b)]
                pt = {"model": m, "degree": d, "gbps": b, "cost_usd": runs[0]["cost_usd"],
                      "seeds": len(runs),
                      "iteration_s": _spread([r["iteration_s"] for r in runs]),
                      "fattree_gbps": runs[0]["fattree_gbps"],
                      "fattree_iteration_s": _spread([r["fattree_iteration_s"] for r in runs]),
                      "fattree_2to1_gbps": runs[0]["fattree_2to1_gbps"],
                      "fattree_2to1_iteration_s": _spread([r["fattree_2to1_iteration_s"]
                                                           for r in runs]),
                      "speedup": _spread([r["fattree_speedup"] for r in runs]),
                      "speedup_2to1": _spread([r["fattree_2to1_speedup"] for r in runs]),
                      "pipelined_seeds": sum(r["strategy"]["pipeline"] > 1 for r in runs),
                      "tensor_parallel_seeds": sum(any(k.startswith("tp") for k in
                                                       r["strategy"]) for r in runs),
                      "mp_port_seeds": sum(r["degree_mp"] > 0 for r in runs),
                      "fattree_pipelined_seeds": sum(r["fattree_strategy"]["pipeline"] > 1
                                                     for r in runs)}
                points.append(pt)
    best = {}
    for p in points:
        if p["model"] not in best or p["speedup"]["median"] > best[p["model"]]["speedup"][
                "median"]:
            best[p["model"]] = p
    follow: list[tuple[Callable, tuple, dict]] = []
    follow += [(_curve, (m, b, servers, moves(m), device), {}) for m in models
               for b in fattree_gbps]
    for m, p in best.items():
        d, b = p["degree"], p["gbps"]
        follow.append((_design, (m, d, b, 0, servers, moves(m), device), {"pipeline": False}))
        follow.append((_design, (m, d, b, 0, servers, moves(m), device), {"overlap": False}))
        for part in price_parts:
            for f in price_factors:
                follow.append((_priced, (m, part, f, d, b, p["iteration_s"]["median"],
                                         servers, moves(m), device), {}))
    split_at = None
    if "dlrm" in models:
        split_at = (max(degrees), 100 if 100 in gbps else max(gbps))
        follow += [(_design, ("dlrm", split_at[0], split_at[1], 0, servers, moves("dlrm"),
                              device), {"split": sp}) for sp in SPLITS]
    done = _run(follow, jobs, progress)
    nc = len(models) * len(fattree_gbps)
    curves = done[:nc]
    rest = done[nc:]
    ablation, prices = [], []
    k = 0
    for m in best:
        for variant in ("no pipeline", "no overlap"):
            r = rest[k]
            k += 1
            ablation.append({"model": m, "variant": variant, "degree": r["degree"],
                             "gbps": r["gbps"], "iteration_s": r["iteration_s"],
                             "fattree_iteration_s": r["fattree_iteration_s"],
                             "speedup": r["fattree_speedup"], "strategy": r["strategy"],
                             "fattree_strategy": r["fattree_strategy"]})
        for _ in range(len(price_parts) * len(price_factors)):
            prices.append(rest[k])
            k += 1
    splits = []
    for sp, r in zip(SPLITS, rest[k:], strict=False):
        splits.append({"split": sp, "degree": r["degree"], "gbps": r["gbps"],
                       **{x: r[x] for x in ("iteration_s", "compute_s", "mp_s", "allreduce_s",
                                            "exposed_allreduce_s", "bubble_s", "diameter",
                                            "degree_allreduce", "degree_mp", "strategy")}})
    return {"setup": {"servers": servers, "gpus_per_server": 4, "device": device,
                      "rounds": ROUNDS, "seeds": list(seeds),
                      "moves": {m: moves(m) for m in models},
                      "batch_per_gpu": {m: TOPOOPT_BATCH[m] for m in models}},
            "runs": designs, "topoopt": points, "fattree": curves, "split": splits,
            "ablation": ablation, "prices": prices,
            "max_speedup": {m: {"speedup": p["speedup"], "degree": p["degree"],
                                "gbps": p["gbps"]} for m, p in best.items()}}


def write_topoopt_study(directory: str | Path, res: dict) -> list[Path]:
    """``topoopt-results.json``, ``topoopt-tables.md`` (the tables of the study page) and
    ``topoopt-cost.png`` (time against cost per model, seeds' range as bars) in
    ``directory``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    pj = d / "topoopt-results.json"
    pj.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    pt = d / "topoopt-tables.md"
    pt.write_text(render_tables(res))
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
            x = [p["cost_usd"] / 1e6 for p in pts]
            y = np.array([p["iteration_s"]["median"] * 1e3 for p in pts])
            lo = y - np.array([p["iteration_s"]["min"] * 1e3 for p in pts])
            hi = np.array([p["iteration_s"]["max"] * 1e3 for p in pts]) - y
            ax.errorbar(x, y, yerr=[lo, hi], fmt=mark + "-", ms=4, capsize=2,
                        label=f"TopoOpt d={deg}")
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
    return [pj, pt, save_figure(fig, d / "topoopt-cost.png", dpi=100)]


def _ms(x: float) -> str:
    return f"{x * 1e3:.4g}"


def _counts(c: dict) -> str:
    keys = [k for k in c if k not in ("pipeline", "micro_batches", "table_servers",
                                      "embedding")]
    s = " ".join(f"{k}:{c[k]}" for k in sorted(keys))
    if c.get("pipeline", 1) > 1:
        s += f" pp{c['pipeline']}x{c['micro_batches']}"
    return s


def render_tables(res: dict) -> str:
    """The study's tables as Markdown (``topoopt-tables.md``)."""
    out = ["<!-- written by `topocoll study topoopt`; do not edit -->", ""]
    seeds = len(res["setup"]["seeds"])
    out += [f"### Speedup at equal cost ({seeds} seeds: median [min, max])", "",
            "TopoOpt's iteration / the non-blocking fat-tree's at the same cost (ms, "
            "medians), the speedup, and the 2:1 fat-tree's speedup.", "",
            "| model | d | Gb/s | cost | fat-tree Gb/s | TopoOpt ms | fat-tree ms | speedup "
            "| vs 2:1 | pipelined / MP ports / fat-tree pipelined (seeds) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for p in res["topoopt"]:
        s, s2 = p["speedup"], p["speedup_2to1"]
        out.append(f"| {p['model']} | {p['degree']} | {p['gbps']:g} | "
                   f"${p['cost_usd'] / 1e3:.0f}k | {p['fattree_gbps']:.0f} | "
                   f"{_ms(p['iteration_s']['median'])} | "
                   f"{_ms(p['fattree_iteration_s']['median'])} | "
                   f"**{s['median']:.2f}x** [{s['min']:.2f}, {s['max']:.2f}] | "
                   f"{s2['median']:.2f}x | {p['pipelined_seeds']} / {p['mp_port_seeds']} / "
                   f"{p['fattree_pipelined_seeds']} |")
    out += ["", "### Largest speedup per model", "", "| model | median | [min, max] | where |",
            "|---|---|---|---|"]
    for m, v in res["max_speedup"].items():
        s = v["speedup"]
        out.append(f"| {m} | {s['median']:.2f}x | [{s['min']:.2f}, {s['max']:.2f}] | "
                   f"d={v['degree']}, {v['gbps']:g} Gb/s |")
    out += ["", "### Strategies chosen (seed 0)", "",
            "| model | d | Gb/s | TopoOpt | fat-tree |", "|---|---|---|---|---|"]
    for r in res["runs"]:
        if r["seed"] != res["setup"]["seeds"][0]:
            continue
        out.append(f"| {r['model']} | {r['degree']} | {r['gbps']:g} | "
                   f"{_counts(r['strategy'])} | {_counts(r['fattree_strategy'])} |")
    out += ["", "### Ablations at each model's headline point (seed 0)", "",
            "| model | variant | TopoOpt ms | fat-tree ms | speedup | TopoOpt strategy |",
            "|---|---|---|---|---|---|"]
    for a in res["ablation"]:
        out.append(f"| {a['model']} | {a['variant']} | {_ms(a['iteration_s'])} | "
                   f"{_ms(a['fattree_iteration_s'])} | {a['speedup']:.2f}x | "
                   f"{_counts(a['strategy'])} |")
    out += ["", "### Price sensitivity at each model's headline point", "",
            "One part's price scaled; the TopoOpt design (and its time, the seeds' median) "
            "stays, the equal-cost fat-tree is rebuilt and searched again.", "",
            "| model | part | factor | TopoOpt cost | fat-tree Gb/s | speedup |",
            "|---|---|---|---|---|---|"]
    for p in res["prices"]:
        out.append(f"| {p['model']} | {p['part']} | {p['factor']:g} | "
                   f"${p['cost_usd'] / 1e3:.0f}k | {p['fattree_gbps']:.0f} | "
                   f"{p['speedup']:.2f}x |")
    if res["split"]:
        out += ["", "### The port split (DLRM, seed 0)", "",
                "| split | rings / matchings | diameter | iteration ms | all-reduce ms "
                "(exposed) | model-parallel ms | strategy |", "|---|---|---|---|---|---|---|"]
        for s in res["split"]:
            out.append(f"| {s['split']} | {s['degree_allreduce']} / {s['degree_mp']} | "
                       f"{s['diameter']} | {_ms(s['iteration_s'])} | "
                       f"{_ms(s['allreduce_s'])} ({_ms(s['exposed_allreduce_s'])}) | "
                       f"{_ms(s['mp_s'])} | {_counts(s['strategy'])} |")
    return "\n".join(out) + "\n"
