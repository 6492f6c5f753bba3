"""``topocoll topoopt``: a direct-connect optical topology co-optimized with the
parallelization strategy (TopoOpt), and the fabrics it is compared with."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..errors import InputError
from .app import JsonOpt, app, choice_opt, err, handle_errors, out, print_json

__all__ = ["topoopt"]


@app.command()
@handle_errors
def topoopt(
    model: Annotated[str, typer.Option(
        "--model", "-m", help="dlrm, bert-topoopt, candle-uno, ncf, resnet50, vgg16.")]
        = "dlrm",
    servers: Annotated[int, typer.Option(help="Servers (each one big GPU).")] = 128,
    degree: Annotated[int, typer.Option(help="Optical ports per server (d).")] = 4,
    port_bw: Annotated[str, typer.Option(help="Bandwidth per port, e.g. 100Gbps.")]
        = "100Gbps",
    rounds: Annotated[int, typer.Option(help="Alternating rounds (strategy, topology).")] = 3,
    steps: Annotated[int, typer.Option(help="MCMC moves per strategy search.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of every random draw.")] = 0,
    device: Annotated[str, typer.Option(help="Device preset.")] = "a100-80g",
    gpus_per_server: Annotated[int, typer.Option(help="GPUs per server.")] = 4,
    batch: Annotated[int | None, typer.Option(
        help="Samples per GPU (default: TopoOpt's per model).")] = None,
    split: Annotated[str, typer.Option(
        help="best (every even split tried, fastest kept), proportional (the paper: by "
             "volume) or all-reduce (the released code: every port to rings).")] = "best",
    routing: Annotated[str, typer.Option(help="ecmp or shortest.")] = "ecmp",
    latency: Annotated[str, typer.Option(help="Per-hop latency.")] = "1us",
    prices: Annotated[Path | None, typer.Option(
        help="Price table (YAML/JSON; see topocoll.fabric.prices).")] = None,
    reconfig_delay: Annotated[str, typer.Option(help="OCS reconfiguration delay.")] = "1ms",
    no_baselines: Annotated[bool, typer.Option(
        "--no-baselines", help="Skip the fat-tree, switch, expander and OCS baselines.")]
        = False,
    as_json: JsonOpt = False,
) -> None:
    """TopoOpt: the optical topology and parallelization strategy for a job, its cost,
    and the cost-equivalent fat-tree."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from ..fabric import (
        LINKLOAD_ROUTINGS,
        SPLITS,
        TOPOOPT_BATCH,
        Job,
        baselines,
        describe_strategy,
        optimize,
        read_price_table,
        topoopt_cost,
    )
    from ..units import parse_rate, parse_time
    from ..workload import LAYERED, find_device

    name = choice_opt(model.strip().lower(), sorted(LAYERED), "--model")
    choice_opt(split, SPLITS, "--split")
    choice_opt(routing, LINKLOAD_ROUTINGS, "--routing")
    if not 3 <= servers <= 4096:
        raise InputError(f"--servers must be 3..4096, got {servers}", item="--servers")
    if not 2 <= degree <= 64:
        raise InputError(f"--degree must be 2..64, got {degree}", item="--degree")
    if degree >= servers:
        raise InputError(f"--degree {degree} must be below --servers {servers}",
                         item="--degree")
    if steps > 10_000_000:
        raise InputError(f"--steps must be at most 10,000,000, got {steps}", item="--steps")
    if rounds > 1000:
        raise InputError(f"--rounds must be at most 1000, got {rounds}", item="--rounds")
    if batch is not None and batch < 1:
        raise InputError(f"--batch must be a positive integer, got {batch}", item="--batch")
    bw = parse_rate(port_bw)
    lat = parse_time(latency)
    delay = parse_time(reconfig_delay)
    table = read_price_table(str(prices)) if prices is not None else None
    job = Job(LAYERED[name], servers=servers, device=find_device(device),
              batch_per_gpu=batch if batch is not None else TOPOOPT_BATCH.get(name, 32),
              gpus_per_server=gpus_per_server)
    with Progress(TextColumn("{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total}"), TimeRemainingColumn(),
                  console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("TopoOpt search", total=rounds * steps)
        r = optimize(job, degree=degree, port_bandwidth=bw, rounds=rounds, steps=steps,
                     seed=seed, latency=lat, split=split, routing=routing,
                     progress=lambda k, n: bar.update(task, completed=k)
                     if k % 100 == 0 or k == n else None)
        base = {} if no_baselines else baselines(r, prices=table, steps=steps, seed=seed,
                                                 latency=lat, reconfig_delay=delay,
                                                 routing=routing)
    st = describe_strategy(job, r.strategy)
    rec = {
        "model": name, "servers": servers, "degree": degree, "port_bandwidth": bw,
        "jumps": {str(g): js for g, js in sorted(r.finder.jumps.items())},
        "matchings": [[list(p) for p in m] for m in r.finder.matchings],
        "degree_allreduce": r.finder.degree_allreduce, "degree_mp": r.finder.degree_mp,
        "diameter": r.diameter, "strategy": st,
        **r.timing.to_dict(),
        "cost_usd": topoopt_cost(servers, degree, bw, table),
        "history": list(r.history), "seed": seed, "rounds": rounds, "steps": steps,
    }
    if base:
        ft = base["fattree"]
        rec["fattree_iteration_s"] = ft["iteration_s"]
        rec["fattree_bandwidth"] = ft["bandwidth"]
        rec["speedup_vs_fattree"] = ft["iteration_s"] / r.timing.iteration_s
        rec["baselines"] = base
    if as_json:
        print_json(rec)
        return
    tab = Table(title=f"TopoOpt: {name} on {servers} servers x {degree} ports of "
                      f"{bw * 8 / 1e9:g} Gb/s")
    for col in ("fabric", "iteration (ms)", "compute", "model-parallel", "all-reduce",
                "exposed", "bubble"):
        tab.add_column(col, justify="left" if col == "fabric" else "right")
    rows = [("TopoOpt", rec)] + [(k, v) for k, v in base.items()]
    for label, v in rows:
        if label.startswith("fattree"):
            o = v.get("oversubscription", 1.0)
            label = (f"fat-tree{f' {o:g}:1' if o != 1 else ''} at "
                     f"{v['bandwidth'] * 8 / 1e9:.4g} Gb/s (same cost)")
        tab.add_row(label, *(f"{v.get(k, 0.0) * 1e3:.4g}" for k in (
            "iteration_s", "compute_s", "mp_s", "allreduce_s", "exposed_allreduce_s",
            "bubble_s")))
    out.print(tab)
    out.print(f"ports: {r.finder.degree_allreduce} to rings (jumps "
              f"{rec['jumps']}), {r.finder.degree_mp} to matchings; diameter {r.diameter}; "
              f"cost ${rec['cost_usd']:,.0f}; strategy {st['counts']}", highlight=False)
