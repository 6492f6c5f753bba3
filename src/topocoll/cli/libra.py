"""``topocoll libra``: bandwidth per dimension of a multi-dimensional network (LIBRA)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..errors import InputError
from ..kv import kv_pairs
from .app import JsonOpt, app, busy, choice_opt, handle_errors, out, print_json, time_opt

__all__ = ["libra"]


@app.command()
@handle_errors
def libra(
    network: Annotated[str, typer.Option(
        help="hier: spec (hier:ring(4)x fc(8)x ring(4)x switch(32)) or a LIBRA network YAML.")]
        = "hier:ring(4)x fc(8)x ring(4)x switch(32)",
    cost_classes: Annotated[str | None, typer.Option(
        help="Cost class per dimension, comma-separated (InterChiplet, InterPackage, "
             "InterNode, InterPod); default: the last D of these.")] = None,
    cost_model: Annotated[Path | None, typer.Option(
        help="LIBRA cost-model YAML: $ per GB/s (Link, Switch, Nic) per cost class "
             "(default: LIBRA's shipped prices).")] = None,
    workload: Annotated[str | None, typer.Option(
        help="LIBRA text workload (with --communicator).")] = None,
    communicator: Annotated[str | None, typer.Option(
        help="LIBRA communicator YAML (Forward, InputGrad, WeightGrad).")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="A model (topocoll list models) when no --workload "
                              "[default: gpt3-175b].")] = None,
    job: Annotated[list[str] | None, typer.Option(
        "--job", "-j", help="A workload of a multi-workload design, repeatable: "
                            "MODEL[:k=v,...] with parallelism keys and weight "
                            "(gpt3-175b:tp=16,weight=2) or WORKLOAD.txt+COMMUNICATOR.yml"
                            "[:weight=W] (LIBRA's files); the time is the weighted mean "
                            "iteration (weights default 1).")]
        = None,
    parallel: Annotated[str, typer.Option(
        "--parallel", "-p", help="tp=T,dp=D (TP on the innermost dimensions).")]
        = "tp=16,dp=256",
    mix_weights: Annotated[str, typer.Option(
        help="With --job: time (the weights multiply iteration times) or slowdown (they "
             "multiply each job's time over its own optimum's, so short jobs count as "
             "much as long ones).")] = "time",
    device: Annotated[str, typer.Option(help="Device preset for compute times.")]
        = "a100-80g",
    global_batch: Annotated[int | None, typer.Option(help="Sequences per iteration.")] = None,
    objective: Annotated[str, typer.Option(
        help="perf (min time), perf-per-cost (min time x cost), min-cost (min cost under "
             "--time-target).")] = "perf",
    constraint: Annotated[list[str] | None, typer.Option(
        "--constraint", "-c", help="Linear constraint over B0..B{D-1} (GB/s per NPU) and "
                                   "cost ($), e.g. 'B0 + B1 + B2 + B3 == 500'; repeatable.")]
        = None,
    budget: Annotated[float | None, typer.Option(help="Cost at most this many dollars.")]
        = None,
    time_target: Annotated[float | None, typer.Option(
        help="min-cost: iteration time at most this many seconds.")] = None,
    pareto_png: Annotated[Path | None, typer.Option(
        "--pareto", help="Write the time-against-cost Pareto curve (PNG).")] = None,
    points: Annotated[int, typer.Option(help="Points on the Pareto curve.")] = 50,
    batch_per_npu: Annotated[int, typer.Option(
        help="Samples per NPU for layered models (resnet50, vgg16, dlrm, ...).")] = 32,
    algorithm: Annotated[str, typer.Option(
        help="Algorithm per dimension, one name or comma-separated: libra (LIBRA's ideal "
             "traffic), choose, ring, bidirectional_ring, direct, swing, recursive_halving, "
             "bruck, pairwise.")] = "libra",
    latency: Annotated[str | None, typer.Option(
        help="Link latency per dimension, one value or comma-separated (e.g. 500ns).")]
        = None,
    phases: Annotated[str, typer.Option(
        help="pipelined (LIBRA: the slowest dimension) or sequential (one after another).")]
        = "pipelined",
    loop: Annotated[str, typer.Option(
        help="no_overlap (LIBRA) or overlap (weight-gradient collectives overlap the "
             "backward pass).")] = "no_overlap",
    check: Annotated[bool, typer.Option(
        "--check", help="Simulate the optimum's fabric at flow level and report both "
                        "times.")] = False,
    compare: Annotated[str | None, typer.Option(
        help="Your allocation, GB/s per NPU comma-separated: its time, cost and the "
             "optimum's speedup over it.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Optimal bandwidth per dimension for a training workload (LIBRA, solved exactly)."""
    from ..fabric import (
        LOOPS,
        OBJECTIVES,
        PHASES,
        LibraWorkloadMix,
        cost,
        equal_split,
        iteration_time,
        parse_constraint,
        parse_network,
        read_communicator,
        read_cost_model,
        read_libra_workload,
        slowdown_mix,
        solve,
    )
    from ..fabric import pareto as pareto_curve

    if objective not in OBJECTIVES:
        raise InputError(f"--objective must be one of {', '.join(OBJECTIVES)}, got "
                         f"{objective!r}", item="--objective")
    if budget is not None and not budget > 0:
        raise InputError(f"--budget must be positive, got {budget}", item="--budget")
    if time_target is not None and not time_target > 0:
        raise InputError(f"--time-target must be positive, got {time_target}",
                         item="--time-target")
    if points < 2:
        raise InputError(f"--points must be at least 2, got {points}", item="--points")
    if pareto_png is not None and (pareto_png.suffix != ".png" or not
                                   pareto_png.parent.exists()):
        raise InputError(f"{pareto_png}: --pareto writes a .png in an existing directory",
                         item=str(pareto_png))
    choice_opt(phases, PHASES, "--phases")
    loop = loop.replace("-", "_")
    choice_opt(loop, LOOPS, "--loop")
    classes = [c.strip() for c in cost_classes.split(",")] if cost_classes else None
    net = parse_network(network, classes)
    if cost_model is not None:
        net = dataclasses.replace(net, prices=read_cost_model(cost_model, net))
    D = len(net.dims)
    tm = _time_model(algorithm, latency, phases, loop, D)
    mine = _allocation(compare, D) if compare is not None else None
    cons = list(constraint or [])
    for c in cons:       # every constraint read before anything is solved
        parse_constraint(c, len(net.dims))
    if (workload is None) != (communicator is None):
        raise InputError("--workload and --communicator go together", item="--communicator")
    if job and (workload is not None or model is not None):
        raise InputError("--job names every workload of a mix; leave out --model and "
                         "--workload", item="--job")
    choice_opt(mix_weights, ("time", "slowdown"), "--mix-weights")
    if mix_weights != "time" and not job:
        raise InputError("--mix-weights weighs the workloads of a mix: give them with --job",
                         item="--mix-weights")
    if job:
        w = LibraWorkloadMix(tuple(_job(x, net, parallel, device, batch_per_npu, global_batch)
                              for x in job))
    elif workload is not None:
        w = read_libra_workload(workload, read_communicator(communicator, len(net.dims)))
    else:
        w = _model_workload(net, model or "gpt3-175b", parallel, device, batch_per_npu,
                            global_batch)
    user = [x for _, x in w.parts] if job else []
    if job and mix_weights == "slowdown":
        w = slowdown_mix(net, w, objective=objective, constraints=cons, budget=budget,
                         time_target=time_target, model=tm)
    r = solve(net, w, objective=objective, constraints=cons, budget=budget,
              time_target=time_target, model=tm)
    rec = r.to_dict()
    if r.workloads and all(x["own_optimum_time_s"] for x in r.workloads):
        # against each job's own optimum, weighted as the user weighted the jobs
        rec["mean_slowdown"] = sum(u * x["time_s"] / x["own_optimum_time_s"]
                                   for u, x in zip(user, r.workloads, strict=True))
        rec["mix_weights"] = mix_weights
    chosen = dict(r.algorithms)
    if mine is not None:
        t_mine = iteration_time(net, w, mine, tm, chosen)
        rec["compare"] = {"bandwidth_GBps": mine, "time_s": t_mine,
                          "cost_usd": cost(net, mine), "speedup": t_mine / r.time_s}
    if check:
        with busy("flow-level check", as_json):
            rec["check"] = _checked(net, w, r, tm, chosen, mine)
    rec["network"] = [{"block": d.block, "size": d.size, "cost_class": d.cost_class}
                      for d in net.dims]
    rec["workload"] = w.name
    if pareto_png is not None:
        curve = pareto_curve(net, w, points=points, constraints=cons, model=tm)
        _plot(curve, r, pareto_png)
        rec["pareto"] = [{"cost_usd": c, "time_s": t, "bandwidth_GBps": list(b)}
                         for c, t, b in curve]
    if as_json:
        print_json(rec)
        return
    flag = rec.get("check", {}).get("disagrees")
    tab = Table(title=f"LIBRA {objective}: {w.name} on {net.spec()} ({net.npus} NPUs)",
                caption=(f"flow-level check: {rec['check']['ratio']:.3f}x the model's time "
                         "(disagrees; see below)") if flag else None)
    for col in ("dimension", "block", "size", "cost class", "GB/s per NPU", "equal split"):
        tab.add_column(col, justify="right" if col in ("size", "GB/s per NPU",
                                                       "equal split") else "left")
    eq = equal_split(net, sum(r.bandwidth_GBps))
    for i, (d, b) in enumerate(zip(net.dims, r.bandwidth_GBps, strict=True)):
        tab.add_row(str(i), d.block, str(d.size), d.cost_class, f"{b:.4g}", f"{eq[i]:.4g}")
    out.print(tab)
    if r.workloads:
        jt = Table(title="each workload at this allocation, at the equal split and at its "
                         "own optimum")
        for col in ("workload", "weight", "time (s)", "equal split (s)", "own optimum (s)",
                    "x own optimum"):
            jt.add_column(col, justify="left" if col == "workload" else "right")
        for x in r.workloads:
            own = x["own_optimum_time_s"]
            jt.add_row(x["name"], f"{x['weight']:.3g}", f"{x['time_s']:.6g}",
                       f"{x['equal_split_time_s']:.6g}", "-" if own is None else f"{own:.6g}",
                       "-" if own is None else f"{x['time_s'] / own:.3f}")
        out.print(jt)
    if "mean_slowdown" in rec:
        out.print(f"mean slowdown against each job's own optimum: {rec['mean_slowdown']:.4f}x"
                  f" (your weights; the solve weighs {mix_weights})", highlight=False)
    mean = "weighted mean iteration" if r.workloads else "iteration"
    out.print(f"{mean} {r.time_s:.6g} s, cost ${r.cost_usd:,.0f}; equal split "
              f"{r.equal_split_time_s:.6g} s (speedup {r.equal_split_time_s / r.time_s:.3f}x)"
              f"; solver status {r.status}, duality gap {r.gap:.1e}", highlight=False)
    if mine is not None:
        c = rec["compare"]
        out.print(f"your allocation: {c['time_s']:.6g} s, cost ${c['cost_usd']:,.0f} "
                  f"(the optimum is {c['speedup']:.3f}x faster)", highlight=False)
    if check:
        c = rec["check"]
        out.print(f"flow-level check of the optimum's fabric: {c['flow_iteration_s']:.6g} s "
                  f"against the model's {c['iteration_s']:.6g} s ({c['ratio']:.3f}x)"
                  + ("" if c["complete"] else "; not simulated: " + "; ".join(
                      x["skipped"] for x in c["collectives"] if x.get("skipped"))),
                  highlight=False)
        if c["disagrees"]:
            ranked = sorted(c["checked_s"].items(), key=lambda kv: (kv[1], kv[0]))
            out.print(f"[bold red]warning:[/] the flow-level check differs from the model by "
                      f"more than {100 * CHECK_TOLERANCE:.0f}%, so the model's optimum may not "
                      f"be the best fabric; at flow level: "
                      + ", ".join(f"{n} {s:.6g} s" for n, s in ranked)
                      + f" (best: {c['best_checked']})")
    if pareto_png is not None:
        out.print(f"Pareto curve written to {pareto_png}", highlight=False)


#: A flow-level check further than this (relative) from the model is reported as a
#: disagreement, with the candidate allocations ranked at flow level.
CHECK_TOLERANCE = 0.10


def _checked(net, w, r, tm, chosen, mine) -> dict:
    """The optimum's flow-level check; when it disagrees with the model by more than
    :data:`CHECK_TOLERANCE`, also the equal split's and the user's allocation's, and
    which of them is fastest at flow level (the model's ranking no longer holds)."""
    from ..fabric import check_allocation, equal_split

    c = check_allocation(net, w, r.bandwidth_GBps, tm, chosen)
    c["disagrees"] = bool(abs(c["ratio"] - 1.0) > CHECK_TOLERANCE)
    c["tolerance"] = CHECK_TOLERANCE
    if c["disagrees"]:
        cands = {"optimum": list(r.bandwidth_GBps),
                 "equal split": list(equal_split(net, sum(r.bandwidth_GBps)))}
        if mine is not None:
            cands["compare"] = list(mine)
        checked = {"optimum": c["flow_iteration_s"]}
        for name, b in cands.items():
            if name not in checked:
                checked[name] = check_allocation(net, w, b, tm, chosen)["flow_iteration_s"]
        c["checked_s"] = checked
        c["checked_bandwidth_GBps"] = cands
        c["best_checked"] = min(checked, key=lambda n: (checked[n], n))
    return c


def _model_workload(net, model: str, parallel: str, device: str, batch_per_npu: int,
                    global_batch: int | None):
    """A model's workload on ``net``: a layered model data-parallel on every NPU, a
    transformer with ``parallel`` (dp, when missing, fills the network)."""
    from ..fabric import workload_from_layered, workload_from_model
    from ..workload import LAYERED, find_device, parse_model, parse_parallel

    if model in LAYERED:
        return workload_from_layered(net, LAYERED[model], find_device(device),
                                     batch_per_npu=batch_per_npu)
    par = parse_parallel(parallel)
    if "dp=" not in parallel.replace(" ", ""):
        if net.npus % (par.tp * par.pp):
            raise InputError(f"--parallel: {net.npus} NPUs are not a multiple of tp x pp",
                             item="--parallel")
        par = par.with_(dp=net.npus // (par.tp * par.pp), global_batch=None)
    if global_batch is not None:
        par = par.with_(global_batch=global_batch)
    return workload_from_model(net, parse_model(model), par, find_device(device))


def _job(spec: str, net, parallel: str, device: str, batch_per_npu: int,
         global_batch: int | None):
    """``(workload, weight)`` of one ``--job``: ``SOURCE[:k=v,...]`` where ``SOURCE`` is
    a model name or LIBRA's ``WORKLOAD.txt+COMMUNICATOR.yml``; the fields are ``weight``,
    parallelism keys (``tp=16,dp=256``; without them, ``--parallel``) and model fields
    (``seq=4096``), told apart by name."""
    from ..fabric import read_communicator, read_libra_workload
    from ..workload import PARALLEL_KEYS

    item = f"--job '{spec}'"
    source, _, rest = spec.strip().partition(":")
    source = source.strip()
    if not source:
        raise InputError(f"--job {spec!r} names no workload", item=item)
    weight, par, fields = 1.0, [], []
    for k, v in kv_pairs(rest, what="--job field", item=lambda k: item).items():
        if k == "weight":
            try:
                weight = float(v)
            except ValueError:
                weight = float("nan")
            if not (math.isfinite(weight) and weight > 0):
                raise InputError(f"--job {spec!r}: weight must be a positive number, got "
                                 f"{v!r}", item=item)
        elif k in PARALLEL_KEYS:
            par.append(f"{k}={v}")
        else:
            fields.append(f"{k}={v}")
    if "+" in source:
        if par or fields:
            raise InputError(f"--job {spec!r}: a LIBRA workload file takes only weight= (its "
                             f"communicator file sets the parallelism)", item=item)
        wfile, _, cfile = source.partition("+")
        return read_libra_workload(wfile.strip(), read_communicator(
            cfile.strip(), len(net.dims))), weight
    model = source + (":" + ",".join(fields) if fields else "")
    return _model_workload(net, model, ",".join(par) if par else parallel, device,
                           batch_per_npu, global_batch), weight


def _per_dim(text: str, D: int, option: str) -> list[str]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1:
        parts = parts * D
    if len(parts) != D or not all(parts):
        raise InputError(f"{option} needs one value or {D} comma-separated values, got "
                         f"{text!r}", item=option)
    return parts


def _time_model(algorithm: str, latency: str | None, phases: str, loop: str, D: int):
    from ..fabric import LIBRA_ALGORITHMS, TimeModel

    algs = _per_dim(algorithm, D, "--algorithm")
    for a in algs:
        choice_opt(a, LIBRA_ALGORITHMS, "--algorithm")
    lats = tuple(time_opt(x, "--latency") for x in _per_dim(latency, D, "--latency")) \
        if latency is not None else None
    return TimeModel(None if set(algs) == {"libra"} else tuple(algs), lats, phases, loop)


def _allocation(text: str, D: int) -> list[float]:
    try:
        vals = [float(x) for x in _per_dim(text, D, "--compare")]
    except ValueError:
        raise InputError(f"--compare takes GB/s per NPU as numbers, got {text!r}",
                         item="--compare") from None
    if not all(v > 0 for v in vals):
        raise InputError(f"--compare: every bandwidth must be positive, got {text!r}",
                         item="--compare")
    return vals


def _plot(curve, r, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot([c / 1e6 for c, _, _ in curve], [t for _, t, _ in curve], "o-", ms=3,
            label="optimal allocation at each cost")
    ax.plot([r.cost_usd / 1e6], [r.time_s], "r*", ms=12, label=f"{r.objective} optimum")
    ax.set_xlabel("network cost (million $)")
    ax.set_ylabel("iteration time (s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
