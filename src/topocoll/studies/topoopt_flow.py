"""TopoOpt's headline designs re-checked at flow level (``docs/studies/topoopt.md``,
"At flow level").

The TopoOpt study scores every strategy with the fluid model: an exchange takes its
busiest link's load over capacity, as if every flow could be split over all shortest paths
in the proportions that balance the links. Here each model's headline design (the point at
which the study's median speedup peaks; seed 0, the study's budget) and its equal-cost
fat-trees are taken as found, and every exchange of the chosen strategy is moved at flow
level (:func:`~topocoll.fabric.flow_check`): one flow per pair, max-min fair sharing
recomputed whenever a flow ends, each flow hashed onto one shortest path (three hash
seeds) or split as the fluid model splits it. The iteration is then recomputed with each
phase's bandwidth term scaled by its flow-level ratio, and the speedup with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..fabric import (
    FabricEval,
    equivalent_fattree_bandwidth,
    fattree_fabric,
    flow_check,
    optimize,
    search_fixed,
    topoopt_cost,
)
from ._common import write_tables
from .topoopt import ROUNDS, budget, study_job

__all__ = ["FLOW_POINTS", "HASH_SEEDS", "FATTREES", "flow_point", "run_flow_study", "render_flow",
           "write_flow"]

#: (model, degree, Gb/s): where the TopoOpt study's median speedup over the non-blocking
#: fat-tree peaks for each model (docs/studies/topoopt.md)
FLOW_POINTS = (("dlrm", 8, 100), ("bert-topoopt", 8, 200), ("candle-uno", 8, 100),
               ("vgg16", 4, 100), ("resnet50", 4, 25), ("ncf", 8, 100))
HASH_SEEDS = (0, 1, 2)
#: (oversubscription, key, fill) of the equal-cost fat-trees: the study's two, and the 2:1
#: one with its servers spread evenly over the same leaves (no small remainder leaf)
FATTREES = ((1.0, "fattree", "plan"), (2.0, "fattree_2to1", "plan"),
            (2.0, "fattree_2to1_even", "even"))
_G = 1e9 / 8


def _checks(fe: FabricEval, strategy: tuple[int, ...], hash_seeds: Sequence[int]) -> dict:
    """Fluid iteration, the split flow level's, and the hashed flow level's per seed."""
    split = flow_check(fe, strategy, hashed=False)
    hashed = [flow_check(fe, strategy, hashed=True, seed=s) for s in hash_seeds]
    return {"fluid_s": split["fluid"].iteration_s,
            "split_s": split["flow"].iteration_s,
            "hashed_s": [h["flow"].iteration_s for h in hashed],
            "phases": {k: {"fluid_s": v["fluid_s"], "split_ratio": v["ratio"],
                           "hashed_ratio": [h["phases"][k]["ratio"] for h in hashed]}
                       for k, v in split["phases"].items()}}


def flow_point(model: str, degree: int, gbps: float, *, servers: int = 128, seed: int = 0,
               device: str = "a100-80g", steps: int | None = None,
               hash_seeds: Sequence[int] = HASH_SEEDS) -> dict:
    """One headline point: the TopoOpt design and the fat-trees of its cost
    (:data:`FATTREES`, each with its own strategy search, as the study runs them), each
    re-checked."""
    job = study_job(model, servers, device)
    steps = budget(model) if steps is None else steps
    r = optimize(job, degree=degree, port_bandwidth=gbps * _G, rounds=ROUNDS,
                 steps=steps // ROUNDS, seed=seed)
    cost = topoopt_cost(servers, degree, gbps * _G)
    fabrics = {"topoopt": (FabricEval(job, r.finder.topology, rings=r.finder.jumps),
                           r.strategy)}
    for o, key, fill in FATTREES:
        fe = FabricEval(job, fattree_fabric(servers, equivalent_fattree_bandwidth(
            servers, cost, oversubscription=o), oversubscription=o, fill=fill))
        s, _ = search_fixed(fe, steps=steps, rng=np.random.default_rng(seed))
        fabrics[key] = (fe, s)
    rec = {"model": model, "degree": degree, "gbps": gbps, "seed": seed}
    for key, (fe, s) in fabrics.items():
        rec[key] = {**_checks(fe, s, hash_seeds), "strategy": job.describe(s)["counts"]}
    t = rec["topoopt"]
    for _, key, _ in FATTREES:
        f = rec[key]
        rec[f"{key}_speedup"] = {
            "fluid": f["fluid_s"] / t["fluid_s"], "split": f["split_s"] / t["split_s"],
            "hashed": [a / b for a, b in zip(f["hashed_s"], t["hashed_s"], strict=True)]}
    return rec


def run_flow_study(points: Sequence[tuple[str, int, float]] = FLOW_POINTS, *,
                   jobs: int = 1, progress: Callable[[str], None] | None = None,
                   **kw) -> dict:
    """:func:`flow_point` at every point (``jobs`` worker processes; the records do not
    depend on it)."""
    tasks = [(m, d, g) for m, d, g in points]
    out: dict[tuple, dict] = {}
    if jobs > 1 and len(tasks) > 1:
        from concurrent.futures import as_completed

        from ..procs import process_pool

        with process_pool(min(jobs, len(tasks))) as pool:
            futs = {pool.submit(flow_point, *t, **kw): t for t in tasks}
            for f in as_completed(futs):
                out[futs[f]] = f.result()
                if progress is not None:
                    progress(f"{futs[f][0]} done")
    else:
        for t in tasks:
            if progress is not None:
                progress(f"{t[0]}, d={t[1]}, {t[2]:g} Gb/s")
            out[t] = flow_point(*t, **kw)
    return {"setup": {"points": [list(t) for t in tasks],
                      "hash_seeds": list(kw.get("hash_seeds", HASH_SEEDS))},
            "points": [out[t] for t in tasks]}


def _fmt_range(xs: Sequence[float], fmt: str = "{:.3f}") -> str:
    lo, hi = min(xs), max(xs)
    return fmt.format(lo) if np.isclose(lo, hi, rtol=1e-9) else \
        f"{fmt.format(lo)}-{fmt.format(hi)}"


def render_flow(res: dict) -> str:
    """The re-check as Markdown (``topoopt-flow.md``)."""
    out = ["<!-- written by `topocoll study topoopt-flow`; do not edit -->", "",
           "Iteration (ms) under the fluid model and at flow level (flows split as the "
           "fluid model splits them, or hashed onto one path: the range over the hash "
           "seeds), and TopoOpt's speedup over the equal-cost fat-trees under each.", "",
           "| model | d | Gb/s | fabric | fluid ms | flow, split ms | flow, hashed ms | "
           "speedup fluid | speedup split | speedup hashed |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for p in res["points"]:
        for key in ("topoopt", *(k for _, k, _ in FATTREES)):
            f = p[key]
            sp = p.get(f"{key}_speedup")
            cells = ["-", "-", "-"] if sp is None else [
                f"{sp['fluid']:.3f}", f"{sp['split']:.3f}", _fmt_range(sp["hashed"])]
            out.append(f"| {p['model']} | {p['degree']} | {p['gbps']:g} | {key} | "
                       f"{f['fluid_s'] * 1e3:.3f} | {f['split_s'] * 1e3:.3f} | "
                       f"{_fmt_range([x * 1e3 for x in f['hashed_s']])} | "
                       + " | ".join(cells) + " |")
    out += ["", "Flow-level time over fluid time per exchange (hashed: the range over the "
            "seeds):", "", "| model | fabric | exchange | fluid ms | split | hashed |",
            "|---|---|---|---|---|---|"]
    for p in res["points"]:
        for key in ("topoopt", *(k for _, k, _ in FATTREES)):
            for name, v in sorted(p[key]["phases"].items()):
                out.append(f"| {p['model']} | {key} | {name} | {v['fluid_s'] * 1e3:.3f} | "
                           f"{v['split_ratio']:.3f} | {_fmt_range(v['hashed_ratio'])} |")
    return "\n".join(out) + "\n"


def write_flow(directory: str | Path, res: dict) -> list[Path]:
    """``topoopt-flow.json`` and ``topoopt-flow.md`` in ``directory``."""
    return write_tables(directory, "topoopt-flow", res, render_flow(res))
