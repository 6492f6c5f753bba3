"""``topocoll design``: which fabric to build for a training job, at equal cost."""

from __future__ import annotations

import re
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
    model_opt,
    out,
    print_json,
    rate_opt,
    schedule_cache,
    time_opt,
)

__all__ = ["design", "parse_dollars", "design_question", "print_design"]

_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9}


def parse_dollars(text: str, option: str = "--budget") -> float:
    """Dollars from ``8000000``, ``8e6``, ``$8M`` or ``750k``.

    >>> parse_dollars("$8.5M"), parse_dollars("750k"), parse_dollars("1e6")
    (8500000.0, 750000.0, 1000000.0)
    """
    m = re.fullmatch(r"\s*\$?\s*([0-9.eE+-]+)\s*([kKmMbB]?)\s*(USD|usd)?\s*", text)
    try:
        value = float(m.group(1)) * _SCALE[m.group(2).lower()] if m else None
    except ValueError:
        value = None
    if value is None or not value > 0 or value == float("inf"):
        raise InputError(f"{option}: {text!r} is not a positive amount of dollars (8e6, "
                         f"$8M, 750k)", item=option)
    return value


def _floats(text: str, option: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{option}: {text!r} is not a comma-separated list of numbers",
                         item=option) from None


@app.command()
@handle_errors
def design(
    model: Annotated[str, typer.Option(
        "--model", "-m", help="A model name (topocoll list models), transformer:...,"
                              " or a YAML file.")] = "llama3-70b",
    gpus: Annotated[int, typer.Option(help="GPUs of the job.")] = 1024,
    box: Annotated[str, typer.Option(
        help="Scale-up boxes to try, comma-separated (dgx-a100, dgx-h100, hgx-h200, "
             "dgx-b200, gb200-nvl72, mi300x); the first one's NICs on a rail-optimized "
             "Clos are the reference design.")] = "dgx-h100",
    device: Annotated[str | None, typer.Option(
        help="Device preset (default: the first box's GPU).")] = None,
    global_batch: Annotated[int | None, typer.Option(
        help="Sequences per iteration (default: one per GPU; 32 samples per GPU for "
             "resnet50, vgg16, dlrm).")] = None,
    seq: Annotated[int | None, typer.Option(help="Sequence length (default: the model's).")]
        = None,
    families: Annotated[str | None, typer.Option(
        help="Fabric families, comma-separated (default: every registered one: fat-tree, "
             "rail, rail-only, torus, topoopt, libra).")] = None,
    budget: Annotated[str | None, typer.Option(
        help="Network budget in dollars (8e6, $8M): each family's fastest design at this "
             "cost.")] = None,
    time_target: Annotated[str | None, typer.Option(
        "--time-target", help="Iteration time to meet (12s): each family's cheapest design "
                              "at product line rates.")] = None,
    rate: Annotated[str | None, typer.Option(
        help="Every family at this line rate per port (400Gbps): what each costs and "
             "gives with the same NICs.")] = None,
    oversubscription: Annotated[str, typer.Option(
        help="Leaf oversubscriptions to try for the Clos families, comma-separated.")]
        = "1",
    radix: Annotated[int, typer.Option(help="Ports per switch.")] = 64,
    prices: Annotated[str | None, typer.Option(
        help="Price and power table (YAML/JSON, the shape of the packaged prices.yaml; "
             "omitted parts keep the defaults).")] = None,
    backend: Annotated[str, typer.Option(
        "--backend", "-b", help="How collectives are timed: analytical or flow.")]
        = "analytical",
    algorithms: Annotated[str | None, typer.Option(
        "--algorithms", "-a", help="Candidate collective algorithms (default: ring, "
                                   "double_binary_tree, hierarchical).")] = None,
    no_bounds: Annotated[bool, typer.Option(
        "--no-bounds", help="Do not prove the winning parallelism's collective bounds.")]
        = False,
    no_recheck: Annotated[bool, typer.Option(
        "--no-recheck", help="Do not re-simulate the winner at flow level.")] = False,
    packet: Annotated[bool, typer.Option(
        "--packet", help="Also re-check the winner at packet level (jobs of up to 64 GPUs; "
                         "minutes).")] = False,
    sensitivity: Annotated[bool, typer.Option(
        "--sensitivity", help="At a budget: each price the winner and the runner-up buy, "
                              "halved and doubled, both designs solved and evaluated "
                              "again; which changes flip the answer (a time target's "
                              "answer always lists them).")] = False,
    report: Annotated[str | None, typer.Option(
        help="Also write an HTML report: iteration time against cost per family at 1/4, "
             "1/2, 1, 2 and 4 times the budget (five more designs per family), the Pareto "
             "front marked.")] = None,
    no_cache: NoCacheOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Which fabric to build for a training job: every family's design at equal cost (or a
    --budget, or the cheapest to meet --time-target), with its best parallelism."""
    from dataclasses import replace
    from pathlib import Path

    from ..fabric.design import (
        DESIGN_ALGORITHMS,
        DesignJob,
        design_fabrics,
        family_names,
        find_family,
    )
    from ..fabric.prices import PriceTable, read_price_table
    from ..sim.backends import backend_names
    from ..topology.boxes import find_box
    from ..workload import LAYERED, find_device, load_model, parse_model

    choice_opt(backend, backend_names(workload=True), "--backend")
    # analytical: the engine's own alpha-beta model, which attaches no bound to every
    # candidate (the winner's bounds are proved once, unless --no-bounds)
    cm = None if backend == "analytical" else model_opt(backend, "0")
    boxes = [b.strip() for b in box.split(",") if b.strip()]
    if not boxes:
        raise InputError("--box names no box", item="--box")
    bxs = [find_box(b) for b in boxes]
    dev = find_device(device or bxs[0].gpu)
    fams = [f.strip() for f in families.split(",") if f.strip()] if families else \
        list(family_names())
    for f in fams:
        find_family(f)
    if packet and gpus > 64:
        raise InputError(f"--packet re-checks jobs of up to 64 GPUs, --gpus is {gpus}",
                         item="--packet")
    if gpus < 2:
        raise InputError(f"--gpus must be at least 2, got {gpus}", item="--gpus")
    layered = model.strip().lower() in LAYERED
    if layered:
        mdl = LAYERED[model.strip().lower()]
        if seq is not None:
            raise InputError(f"--seq is for transformer models; {mdl.name} has none",
                             item="--seq")
    else:
        mdl = load_model(model) if Path(model).suffix in (".yaml", ".yml", ".json") else \
            parse_model(model)
    if seq is not None:
        if seq < 1:
            raise InputError(f"--seq must be at least 1, got {seq}", item="--seq")
        mdl = replace(mdl, seq=seq)
    # a layered model trains data parallel on every GPU: 32 samples each by default
    gb = (32 * gpus if layered else gpus) if global_batch is None else global_batch
    if gb < 1:
        raise InputError(f"--global-batch must be at least 1, got {gb}", item="--global-batch")
    report_path = None
    if report is not None:
        from .schedules import output_path

        report_path = output_path(Path(report), (".html",))
    table = read_price_table(prices) if prices is not None else PriceTable()
    cands = [a.strip() for a in algorithms.split(",") if a.strip()] if algorithms else \
        list(DESIGN_ALGORITHMS)
    job = DesignJob(mdl, gpus, dev, gb)
    with busy(f"{mdl.name} on {gpus} GPUs", as_json) as bar:
        res = design_fabrics(
            job, boxes=bxs, families=fams,
            oversubscriptions=_floats(oversubscription, "--oversubscription"),
            budget=None if budget is None else parse_dollars(budget),
            time_target=None if time_target is None else time_opt(time_target,
                                                                  "--time-target"),
            rate=None if rate is None else rate_opt(rate, "--rate"),
            prices=table, radix=radix, algorithms=cands, cost_model=cm,
            cache=schedule_cache(no_cache), bounds=not no_bounds,
            recheck=not no_recheck and backend != "flow", packet_recheck=packet,
            progress=lambda s: bar.update(bar.task_ids[0], description=f"designing: {s}"))
    if res.mode == "budget" and not any(d.feasible for d in res.designs) and all(
            d.iteration_s is None for d in res.designs):
        least = min(res.designs, key=lambda d: d.bill.cost_usd)
        raise InputError(f"--budget ${res.budget_usd:,.0f} buys no design: the cheapest "
                         f"({least.family}) costs ${least.bill.cost_usd:,.0f} before any "
                         f"line rate", item="--budget")
    sens = None
    if sensitivity and res.mode != "time-target":
        from ..fabric.design import budget_sensitivity

        with busy("price sensitivity", as_json):
            sens = budget_sensitivity(res, job, prices=table, radix=radix, algorithms=cands,
                                      cost_model=cm, cache=schedule_cache(no_cache))
    rec = {"model": mdl.name, "gpus": gpus, "device": dev.name, "global_batch": gb,
           "backend": backend, "algorithms": cands, "radix": radix,
           "prices": prices or "packaged prices.yaml", **res.to_dict()}
    if sens is not None:
        rec["sensitivity"] = sens
    if report_path is not None:
        from ..fabric.design import design_curve
        from ..sweep import write_design_report

        center = res.budget_usd if res.budget_usd is not None else min(
            d.bill.cost_usd for d in res.designs)
        with busy("report: the cost curve", as_json) as bar:
            curve = design_curve(
                job, center, boxes=bxs, families=fams,
                oversubscriptions=_floats(oversubscription, "--oversubscription"),
                prices=table, radix=radix, algorithms=cands, cost_model=cm,
                cache=schedule_cache(no_cache),
                progress=lambda s: bar.update(bar.task_ids[0], description=f"report: {s}"))
        write_design_report(rec, [c.to_dict() for c in curve], report_path,
                            title=f"topocoll design: {mdl.name} on {gpus} GPUs")
        rec["report"] = str(report_path)
    if as_json:
        print_json(rec)
        return
    print_design(res, f"{mdl.name} on {gpus} x {dev.name}, global batch {gb}")
    if sens:
        flips = [x for x in sens if x["flips"]]
        out.print(f"price sensitivity ({sens[0]['winner']} against {sens[0]['runner_up']}, "
                  f"each part x0.5 and x2): " + ("; ".join(
                      f"{x['part']} x{x['factor']:g} -> {x['runner_up']}" for x in flips)
                      if flips else "no single change flips the answer"), highlight=False)
    if report_path is not None:
        out.print(f"report written to {report_path}", highlight=False)


def design_question(res) -> str:
    """What ``res`` answers, in words."""
    if res.mode == "budget":
        return f"at a budget of ${res.budget_usd:,.0f}"
    if res.mode == "rate":
        d = next((x for x in res.designs if x.rate_Bps), None)
        return "at the same line rate" + (f" ({d.rate_Bps * 8 / 1e9:g} Gb/s per port)"
                                          if d else "")
    if res.mode == "time-target":
        return f"cheapest to meet {res.time_target_s:g} s per iteration"
    ref = res.reference
    return (f"at equal cost to {ref['box']} on a rail-optimized Clos at "
            f"{ref['rate_gbps']:g} Gb/s (${res.budget_usd:,.0f})")


def print_design(res, title: str) -> None:
    """The designs as a table, then the winner, its flow-level re-check and its ties."""
    tab = Table(title=f"{title}: {design_question(res)}")
    for col, just in (("family", "left"), ("box", "left"), ("oversub", "right"),
                      ("Gb/s per port", "right"), ("cost", "right"), ("power", "right"),
                      ("iteration", "right"), ("MFU", "right"), ("exposed comm", "right"),
                      ("parallelism", "left"), ("worst collective / bound", "right")):
        tab.add_column(col, justify=just)
    win = res.winner
    for d in res.designs:
        mark = " *" if d is win else ""
        if d.iteration_s is None:
            tab.add_row(d.family + mark, d.box, f"{d.oversubscription:g}", "-",
                        f"${d.bill.cost_usd:,.0f}", f"{d.bill.power_w / 1e3:,.1f} kW", "-",
                        "-", "-", d.reason, "-")
            continue
        bnd = (f"{100 * d.bound['fraction_of_bound']:.0f}% ({d.bound['worst_collective']})"
               if d.bound else "-")
        tab.add_row(d.family + mark, d.box, f"{d.oversubscription:g}",
                    f"{d.rate_Bps * 8 / 1e9:,.0f}", f"${d.bill.cost_usd:,.0f}",
                    f"{d.bill.power_w / 1e3:,.1f} kW",
                    f"{d.iteration_s:.4g} s" + ("" if d.feasible else " (misses)"),
                    f"{100 * d.mfu:.1f}%", f"{d.exposed_comm_s:.3g} s", d.parallel, bnd)
    out.print(tab)
    if win is None:
        out.print("no design is feasible", highlight=False)
    else:
        out.print(f"best: {win.family} ({win.box}) at {win.rate_Bps * 8 / 1e9:,.0f} Gb/s per "
                  f"port, ${win.bill.cost_usd:,.0f}, {win.iteration_s:.4g} s per iteration, "
                  f"{win.parallel}", highlight=False)
        if win.recheck and "skipped" in win.recheck:
            out.print(f"not re-checked at flow level: {win.recheck['skipped']}",
                      highlight=False)
        elif win.recheck:
            rc = win.recheck
            out.print(f"re-checked at flow level: {rc['iteration_s']:.4g} s per iteration "
                      f"({100 * rc['difference']:+.2f}%)" + (
                          f"; at packet level {rc['packet']['iteration_s']:.4g} s "
                          f"({100 * rc['packet']['difference']:+.2f}%)"
                          if "packet" in rc else ""), highlight=False)
        others = [f"{d.family} ({d.box}" + ("" if d.oversubscription == 1 else
                                             f", oversub {d.oversubscription:g}") + ")"
                  for d in res.ties if d is not win]
        if others:
            out.print(f"within {100 * res.TIE:g}% of it: {', '.join(others)}",
                      highlight=False)
        flips = res.sensitivity()[:5]
        if flips:
            out.print("price changes that flip it: " + "; ".join(
                f"{f['part']} x{f['factor']:.2f} -> {f['flips_to']}" for f in flips),
                highlight=False)
