"""``topocoll train``: one training iteration of a model with a parallelism on a fabric."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ..errors import InputError
from .app import (
    JsonOpt,
    NoCacheOpt,
    app,
    busy,
    choice_opt,
    handle_errors,
    load_topo,
    model_opt,
    out,
    print_json,
    schedule_cache,
)
from .schedules import output_path

__all__ = ["train"]


def _pct(x: float, total: float) -> str:
    return f"{100 * x / total:.1f}%" if total else "-"


@app.command()
@handle_errors
def train(
    model: Annotated[str, typer.Option(
        "--model", "-m", help="A model name (topocoll list models), transformer:hidden=...,"
                              " or a YAML file.")] = "gpt3-175b",
    parallel: Annotated[str, typer.Option(
        "--parallel", "-p", help="tp=8,pp=8,dp=16[,ep=E] (dp defaults to fill --gpus).")]
        = "tp=8,pp=8",
    topology: Annotated[str, typer.Option(
        "--topology", "-t", help="Generator spec or file.")] = "dgx-a100:8",
    gpus: Annotated[int | None, typer.Option(
        help="GPUs to use (default: every rank of the topology).")] = None,
    device: Annotated[str, typer.Option(help="Device preset (topocoll list devices).")]
        = "a100-80g",
    global_batch: Annotated[int | None, typer.Option(
        help="Sequences per iteration (default: one micro-batch per replica).")] = None,
    micro_batch: Annotated[int, typer.Option(help="Sequences per micro-batch.")] = 1,
    seq: Annotated[int | None, typer.Option(help="Sequence length (default: the model's).")]
        = None,
    interleave: Annotated[int, typer.Option(help="Model chunks per stage (1: plain 1F1B).")]
        = 1,
    recompute: Annotated[str, typer.Option(help="none, selective or full.")] = "none",
    sequence_parallel: Annotated[bool, typer.Option(
        "--sequence-parallel", help="Megatron sequence parallelism.")] = False,
    zero: Annotated[int, typer.Option(help="ZeRO stage 0-3 over the data-parallel group.")]
        = 0,
    backend: Annotated[str, typer.Option(
        "--backend", "-b", help="How collectives are timed: analytical, flow, or packet "
                                "(small cases).")]
        = "analytical",
    algorithms: Annotated[str | None, typer.Option(
        "--algorithms", "-a", help="Comma-separated candidate algorithms for every "
                                   "collective (default: every one that applies).")] = None,
    no_bounds: Annotated[bool, typer.Option(
        "--no-bounds", help="Do not prove each collective's lower bound (faster on large "
                            "fabrics; the %% of bound is then not shown).")] = False,
    contention: Annotated[bool, typer.Option(
        "--contention", help="Cost every group of a kind running at once (shared links "
                             "charged) instead of one group alone.")] = False,
    whole_fabric: Annotated[bool, typer.Option(
        "--whole-fabric", help="Cost every group on the whole fabric, not on the links its "
                               "routes reach (slower; one group may then borrow links that "
                               "the other groups of its kind are using).")] = False,
    no_overlap: Annotated[bool, typer.Option(
        "--no-overlap", help="Do not overlap the data-parallel reduction with backward.")]
        = False,
    task_graph: Annotated[bool, typer.Option(
        "--task-graph", help="Also replay the per-rank task graph of the iteration (every "
                             "rank's compute, collectives and sends; with --contention, "
                             "concurrent collectives of any kind share links).")] = False,
    dear: Annotated[bool, typer.Option(
        "--dear", help="DeAR: reduce-scatter overlapped with backward, all-gather with the "
                       "next forward.")] = False,
    search: Annotated[bool, typer.Option(
        "--search", help="Rank every TP x PP x DP factorization of --gpus with recompute "
                         "none/selective/full and ZeRO 0/1 (--parallel ignored).")] = False,
    top: Annotated[int, typer.Option(help="--search: configurations shown.")] = 10,
    exhaustive: Annotated[bool, typer.Option(
        "--exhaustive", help="--search: cost every configuration that fits (default: skip "
                             "those whose iteration with free collectives is already "
                             "slower than the best costed one).")] = False,
    trace: Annotated[str | None, typer.Option(
        help="Write the pipeline timeline as a Perfetto trace JSON.")] = None,
    no_cache: NoCacheOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Time one training iteration: compute, exposed communication, bubble, MFU, memory."""
    from dataclasses import replace
    from pathlib import Path

    from ..sim.backends import backend_names
    from ..workload import (
        LAYERED,
        find_device,
        load_model,
        parse_model,
        parse_parallel,
        simulate_iteration,
        write_timeline,
    )

    # everything is checked before anything runs
    choice_opt(backend, backend_names(workload=True), "--backend")
    cm = model_opt(backend, "0")
    dev = find_device(device)
    if exhaustive and not search:
        raise InputError("--exhaustive is for --search", item="--exhaustive")
    if model.strip().lower() in LAYERED:
        # data parallel on every GPU: what only a transformer has is refused, not ignored
        for flag, given in (("--search", search), ("--task-graph", task_graph),
                            ("--dear", dear), ("--seq", seq is not None),
                            ("--zero", zero != 0), ("--sequence-parallel", sequence_parallel),
                            ("--interleave", interleave != 1),
                            ("--recompute", recompute != "none"),
                            ("--trace", trace is not None), ("--contention", contention)):
            if given:
                raise InputError(f"{flag} is for transformer models; {model.strip()} trains "
                                 "data parallel on every GPU", item=flag)
        _layered(model.strip().lower(), topology, gpus, dev, micro_batch, global_batch, cm,
                 algorithms, no_cache, as_json)
        return
    mdl = load_model(model) if Path(model).suffix in (".yaml", ".yml", ".json") else \
        parse_model(model)
    if seq is not None:
        if seq < 1:
            raise InputError(f"--seq must be at least 1, got {seq}", item="--seq")
        renamed = replace(mdl, seq=seq)
        name = (renamed.spec() if mdl.name.startswith("transformer:") else
                mdl.name + ("," if ":" in mdl.name else ":") + f"seq={seq}")
        mdl = replace(renamed, name=name)
    trace_path = output_path(Path(trace), (".json",)) if trace else None
    if top < 1:
        raise InputError(f"--top must be at least 1, got {top}", item="--top")
    t = load_topo(topology)
    world = t.num_ranks if gpus is None else gpus
    if not 1 <= world <= t.num_ranks:
        raise InputError(f"--gpus must be 1..{t.num_ranks} on {t.name}, got {world}",
                         item="--gpus")
    cands = [a.strip() for a in algorithms.split(",") if a.strip()] if algorithms else None
    if search:
        _search(mdl, world, t, dev, cm, cands, global_batch, micro_batch, top,
                schedule_cache(no_cache), as_json, exhaustive)
        return
    base = parse_parallel(parallel, world=world, micro_batch=micro_batch,
                          recompute=recompute, zero=zero,
                          sequence_parallel=sequence_parallel, interleave=interleave)
    if base.world != world:
        raise InputError(f"--parallel uses tp x pp x dp = {base.world} GPUs, --gpus is "
                         f"{world}", item="--parallel")
    if global_batch is not None:
        try:
            base = base.with_(global_batch=global_batch)
        except InputError as e:
            raise InputError(f"--global-batch: {e}", item="--global-batch") from None
    from ..workload import CollectiveCoster

    coster = CollectiveCoster(t, model=None if backend == "analytical" and no_bounds else cm,
                              algorithms=cands, cache=schedule_cache(no_cache),
                              bounds=not no_bounds, contention=contention,
                              subfabric=not whole_fabric)
    if dear and no_overlap:
        raise InputError("--dear overlaps the reduction; it cannot go with --no-overlap",
                         item="--dear")
    with busy(f"{mdl.name} on {t.name}: costing collectives", as_json):
        r = simulate_iteration(mdl, base, t, dev, overlap_dp=not no_overlap, dear=dear,
                               timeline=trace_path is not None, coster=coster)
    graph_rec = None
    if task_graph:
        from ..workload.rankgraph import iteration_graph
        from ..workload.taskgraph import replay

        rp = replay(iteration_graph(mdl, base, dev), coster, contention=contention,
                    timeline=trace_path is not None)
        graph_rec = {**rp.to_dict(), "contention": contention}
        if trace_path is not None:      # the per-rank timeline replaces the per-stage one
            r = replace(r, tasks=rp.tasks)
    if trace_path is not None:
        write_timeline(r.tasks, trace_path)
    if as_json:
        print_json({**r.to_dict(), **({"task_graph": graph_rec} if graph_rec else {})})
        return
    it = r.iteration_s
    bd = r.breakdown
    tab = Table(title=f"{mdl.name} on {t.name} ({world} x {dev.name}, {r.parallel})")
    tab.add_column("part")
    tab.add_column("seconds", justify="right")
    tab.add_column("share", justify="right")
    for label, key in (("compute", "compute_s"), ("tensor parallel (exposed)", "tp_s"),
                       ("expert all-to-all (exposed)", "ep_s"),
                       ("pipeline sends", "pp_s"), ("data parallel (exposed)", "dp_exposed_s"),
                       ("pipeline bubble", "bubble_s")):
        if bd[key] or key in ("compute_s", "bubble_s"):
            tab.add_row(label, f"{bd[key]:.4g}", _pct(bd[key], it))
    tab.add_row("iteration", f"{it:.4g}", "100%")
    out.print(tab)
    out.print(f"MFU {100 * r.mfu:.1f}%  {r.tflops_per_gpu:.1f} TFLOP/s per GPU  peak memory "
              f"{r.memory_gib:.1f} GiB per GPU (stage {r.memory.peak_stage.stage})",
              highlight=False)
    if graph_rec:
        out.print(f"task-graph replay ({'links shared' if contention else 'each alone'}, no "
                  f"gradient overlap): {graph_rec['iteration_s']:.4g} s",
                  highlight=False)
    for label, c in r.collectives.items():
        frac = (f" ({100 * c['bound_fraction']:.1f}% of bound)"
                if c["bound_fraction"] is not None else "")
        if (c["bound_fraction"] or 0) > 1 + 1e-9:   # alone, faster than the groups can be
            frac += (f"; {c['concurrent_groups']} groups at once cannot beat "
                     f"{c['bound_s'] * 1e3:.4g} ms: --contention costs them together")
        out.print(f"  {label}: {c['algorithm']} on {c['ranks']} ranks, "
                  f"{c['time_s'] * 1e3:.4g} ms{frac}", highlight=False)
    if trace_path is not None:
        out.print(f"timeline written to {trace_path}", highlight=False)


def _search(mdl, world, t, dev, cm, cands, global_batch, micro_batch, top, cache,
            as_json, exhaustive) -> None:
    from rich.progress import Progress

    from ..workload import search_parallelism
    from .app import err

    gb = global_batch or world
    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("parallelism search", total=None)
        res = search_parallelism(mdl, world, t, dev, global_batch=gb,
                                 micro_batches=(micro_batch,), cost_model=cm,
                                 algorithms=cands, cache=cache, exhaustive=exhaustive,
                                 progress=lambda i, n: bar.update(task, completed=i, total=n))
    if as_json:
        print_json({"model": mdl.name, "topology": t.name, "gpus": world,
                    "enumerated": res.enumerated, "pruned_memory": res.pruned_memory,
                    "evaluated": res.evaluated,
                    "ranked": [p.result.to_dict() for p in res.ranked[:top]],
                    "skipped": [{"parallel": p.parallel.label(),
                                 "lower_bound_s": p.lower_bound_s} for p in res.skipped]})
        return
    best = res.best
    fit = res.evaluated + len(res.skipped)
    tab = Table(title=f"{mdl.name} on {t.name}: {world} x {dev.name}, global batch {gb} "
                      f"({fit} of {res.enumerated} configurations fit, {res.evaluated} "
                      f"costed)")
    for c in ("parallelism", "iteration", "MFU", "exposed comm", "bubble", "memory"):
        tab.add_column(c, justify="left" if c == "parallelism" else "right")
    for p in res.ranked[:top]:
        r = p.result
        tab.add_row(r.parallel, f"{r.iteration_s:.4g}s", f"{100 * r.mfu:.1f}%",
                    f"{r.exposed_comm_s:.3g}s", f"{r.bubble_s:.3g}s",
                    f"{r.memory_gib:.1f} GiB")
    out.print(tab)
    if res.skipped:
        low = res.skipped[0].lower_bound_s
        out.print(f"{len(res.skipped)} more fit but cannot beat the best: with every "
                  f"collective free they already take at least {low:.4g}s (--exhaustive "
                  f"costs them)", highlight=False)
    out.print(f"best: {best.result.parallel}", highlight=False)


def _layered(name, topology, gpus, dev, micro_batch, global_batch, cm, algorithms, no_cache,
             as_json):
    """CNNs and DLRM: data parallel on every GPU (embedding tables model-parallel)."""
    from ..workload import LAYERED, simulate_dp_iteration

    t = load_topo(topology)
    world = t.num_ranks if gpus is None else gpus
    if not 1 <= world <= t.num_ranks:
        raise InputError(f"--gpus must be 1..{t.num_ranks} on {t.name}, got {world}",
                         item="--gpus")
    if micro_batch < 1:
        raise InputError(f"--micro-batch must be at least 1, got {micro_batch}",
                         item="--micro-batch")
    if global_batch is not None:      # samples per iteration over every replica
        if global_batch < 1 or global_batch % world:
            raise InputError(f"--global-batch {global_batch} must be a positive multiple of "
                             f"the {world} data-parallel GPUs", item="--global-batch")
        if micro_batch != 1 and micro_batch * world != global_batch:
            raise InputError(f"--micro-batch {micro_batch} x {world} GPUs is not "
                             f"--global-batch {global_batch}", item="--global-batch")
        micro_batch = global_batch // world
    cands = [a.strip() for a in algorithms.split(",") if a.strip()] if algorithms else None
    r = simulate_dp_iteration(LAYERED[name], t, dev, batch_per_rank=micro_batch,
                              ranks=gpus, cost_model=cm, algorithms=cands,
                              cache=schedule_cache(no_cache))
    if as_json:
        print_json(r.to_dict())
        return
    b = micro_batch
    out.print(f"{name} on {t.name} ({r.parallel}, {dev.name}): iteration "
              f"{r.iteration_s * 1e3:.4g} ms, {b / r.iteration_s:,.0f} samples/s per GPU, "
              f"compute {r.compute_s * 1e3:.4g} ms, exposed communication "
              f"{r.exposed_comm_s * 1e3:.4g} ms, MFU {100 * r.mfu:.1f}%", highlight=False)
    for label, c in r.collectives.items():
        out.print(f"  {label}: {c['algorithm']} on {c['ranks']} ranks, "
                  f"{c['time_s'] * 1e3:.4g} ms", highlight=False)
