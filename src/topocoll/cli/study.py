"""``topocoll study``: regenerate a paper reproduction."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import JsonOpt, app, busy, err, handle_errors, out, print_json

__all__ = ["study"]


@app.command()
@handle_errors
def study(name: Annotated[str, typer.Argument(
              help="Study to run: swing, swing-even, swing-odd, swing-packet, adaptive, "
                   "validation, libra, topoopt, topoopt-prototype (root: an emulated cluster), "
                   "topoopt-flow, dlcp, "
                   "dlcp-regime, dlcp-loop or design.")],
          output: Annotated[Path | None, typer.Option(
              "--output", "-o", help="Directory for the results page, JSON and figures "
                                     "(default: docs/studies of a topocoll checkout, when "
                                     "run from its root).")] = None,
          topology: Annotated[list[str] | None, typer.Option(
              "--topology", "-t", help="Restrict to torus:AxB..., hyperx:AxB or hx2mesh:AxB "
              "(HammingMesh, boards of 2x2; hx4mesh: 4x4); repeatable.")]
          = None,
          routing: Annotated[str, typer.Option(help="spray (even split over minimal paths) "
                                               "or shortest (dimension order).")] = "spray",
          max_size: Annotated[str | None, typer.Option(
              help="swing-packet: sizes up to this one only (e.g. 1MiB; default all, to "
                   "512 MiB).")] = None,
          rows: Annotated[str | None, typer.Option(
              help="validation: rows of SC'21 Table 1 to run, 1-based and comma-separated "
                   "(default: all ten).")] = None,
          as_json: JsonOpt = False) -> None:
    """Regenerate a paper reproduction (tables, JSON and figures)."""
    from rich.progress import Progress

    from ..errors import NotSupportedError

    if name not in STUDIES:
        raise NotSupportedError(f"unknown study {name!r} (available: {', '.join(STUDIES)})")
    output = _output_dir(output)
    if name == "validation":
        _validation(output, rows, as_json)
        return
    if name == "libra":
        _libra(output, as_json)
        return
    if name == "topoopt":
        _topoopt(output, as_json)
        return
    if name == "topoopt-prototype":
        _topoopt_prototype(output, as_json)
        return
    if name == "dlcp-regime":
        _dlcp_regime(output, as_json)
        return
    if name == "dlcp-loop":
        _dlcp_loop(output, as_json)
        return
    if name == "topoopt-flow":
        _topoopt_flow(output, as_json)
        return
    if name == "dlcp":
        _dlcp(output, as_json)
        return
    if name == "design":
        _design(output, as_json)
        return
    if name == "swing-packet":
        _swing_packet(output, topology, max_size, as_json)
        return
    if name in ("swing-even", "swing-odd"):
        _swing_sizes(name, output, as_json)
        return
    if name == "adaptive":
        _adaptive(output, as_json)
        return

    from ..studies.swing import (
        TOPOLOGIES,
        StudySetup,
        parse_study_topology,
        study_topology,
        write_study,
    )

    if routing not in ("spray", "shortest", "ecmp"):
        raise NotSupportedError(f"routing must be spray, shortest or ecmp, got {routing!r}")
    setup = StudySetup(routing=routing)
    tops = [parse_study_topology(x) for x in topology] if topology else list(TOPOLOGIES)
    results = []
    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("swing study", total=len(tops))
        for st in tops:
            results.append(study_topology(
                st, setup, progress=lambda m: bar.update(task, description=m)))
            bar.advance(task)
    sweep = []
    if not topology:                          # the whole study: the paper's bandwidth sweep
        from ..studies.swing import SWEEP_GBPS, bandwidth_sweep

        with Progress(console=err, transient=True, disable=as_json) as bar:
            task = bar.add_task("bandwidth sweep", total=len(SWEEP_GBPS))
            sweep = bandwidth_sweep(setup, progress=lambda m: (
                bar.update(task, description=m), bar.advance(task)))
    paths = write_study(output, results, setup, sweep)
    if as_json:
        print_json({"written": [str(p) for p in paths], "results": [r.to_dict() for r in results]})
        return
    for r in results:
        names, other = r.best_other()
        sw = r.times["swing"]
        sp = other / sw
        out.print(f"{r.topology.label}: swing speedup over the best other algorithm "
                  f"{sp.min():.2f}x..{sp.max():.2f}x (at 32 B: {sp[0]:.2f}x over {names[0]})",
                  highlight=False)
    out.print(f"written: {', '.join(str(p) for p in paths)}", highlight=False)


def _swing_packet(output: Path, topology: list[str] | None, max_size: str | None,
                  as_json: bool) -> None:
    """Swing's packet-level rows (``studies/swing_packet.py``): each torus's rows are
    merged into ``swing-packet.json`` as each size finishes, and the tables of every torus
    in the file are written to ``swing-packet.md``."""
    import dataclasses
    import json

    from rich.progress import Progress

    from ..errors import InputError
    from ..studies.swing import StudySetup, parse_study_topology
    from ..studies.swing_packet import (
        PACKET_TOPOLOGIES,
        packet_study,
        write_packet_markdown,
        write_packet_rows,
    )
    from ..units import parse_size

    setup = StudySetup()
    if max_size is not None:
        top = parse_size(max_size)
        sizes = tuple(n for n in setup.sizes if n <= top)
        if not sizes:
            raise InputError(f"--max-size {max_size} is below the smallest size, 32 B",
                             item="--max-size")
        setup = dataclasses.replace(setup, sizes=sizes)
    tops = [parse_study_topology(x) for x in topology] if topology else list(PACKET_TOPOLOGIES)
    if any(st.kind not in ("torus", "hammingmesh") for st in tops):
        raise InputError("the packet-level rows run on tori (torus:AxB...) and HammingMesh "
                         "(hx2mesh:AxB...)", item="--topology")
    js = output / "swing-packet.json"
    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("Swing at packet level", total=len(tops) * len(setup.sizes))
        for st in tops:
            done: list = []

            def row_done(r, st=st, done=done) -> None:
                done.append(r)
                write_packet_rows(js, st.label, done)
                bar.advance(task)

            packet_study(st, setup, progress=lambda m: bar.update(task, description=m),
                         row_done=row_done)
    md = write_packet_markdown(js, output / "swing-packet.md")
    doc = json.loads(js.read_text())
    if as_json:
        print_json({"written": [str(js), str(md)]})
        return
    for label, rows in sorted(doc.items()):
        sp = [r["speedup_packet"] for r in rows]
        out.print(f"{label}: Swing over the best paper baseline at packet level "
                  f"{min(sp):.2f}x..{max(sp):.2f}x", highlight=False)
    out.print(f"written: {js}, {md}", highlight=False)


def _adaptive(output: Path, as_json: bool) -> None:
    from rich.progress import Progress

    from ..studies.adaptive import (
        ADAPTIVE_SCENARIOS,
        run_adaptive_study,
        write_adaptive_study,
    )

    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("topology-adaptive study", total=len(ADAPTIVE_SCENARIOS))

        def step(label: str) -> None:
            bar.update(task, advance=1, description=label)

        cases = run_adaptive_study(step=step)
    paths = write_adaptive_study(output, cases)
    if as_json:
        print_json({"written": [str(p) for p in paths]})
        return
    for c in cases:
        for what, times in [*c.collective_s.items(), *c.iteration_s.items()]:
            sp = c.speedups(times)
            best = min(sp, key=lambda b: (sp[b], b))
            out.print(f"{c.scenario}, {what}: topology-adaptive {sp[best]:.2f}x faster than "
                      f"the best baseline ({best}), {sp['ring']:.2f}x than the ring",
                      highlight=False)
    out.print(f"written: {', '.join(str(p) for p in paths)}", highlight=False)


#: The studies ``topocoll study`` regenerates.
STUDIES = ("swing", "swing-even", "swing-odd", "validation", "libra", "topoopt",
           "topoopt-prototype", "topoopt-flow", "dlcp", "dlcp-regime", "dlcp-loop", "design",
           "swing-packet", "adaptive")


def _output_dir(output: Path | None) -> Path:
    """The study's output directory, checked before any work: given, or the checkout's
    ``docs/studies`` when run from its root (never a ``docs/studies`` made anywhere)."""
    import tempfile

    from ..errors import InputError

    if output is None:
        output = Path("docs/studies")
        if not output.is_dir():
            raise InputError("no docs/studies here (run from a topocoll checkout's root, or "
                             "name a directory with --output)", item="--output")
    if output.exists() and not output.is_dir():
        raise InputError(f"--output {output}: exists and is not a directory", item="--output")
    try:
        output.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=output):
            pass
    except OSError as e:
        raise InputError(f"--output {output}: cannot write there ({e.strerror or e})",
                         item="--output") from None
    return output


def _validation(output: Path, rows: str | None, as_json: bool) -> None:
    from ..errors import InputError
    from ..studies.llama3 import run_llama3, write_llama3
    from ..studies.nccl_tests import run_nccl_validation, write_nccl_validation
    from ..studies.validation import (
        SC21_TABLE1,
        SCHEDULE_ALGORITHMS,
        calibrate_gemm,
        mean_abs_error,
        run_validation,
        write_validation,
    )
    from ..workload import find_device

    picked = None
    if rows:
        try:
            picked = [int(x) - 1 for x in rows.split(",") if x.strip()]
        except ValueError:
            raise InputError(f"--rows must be row numbers like 1,2,5, got {rows!r}",
                             item="--rows") from None
        bad = [i + 1 for i in picked if not 0 <= i < len(SC21_TABLE1)]
        if bad or not picked:
            raise InputError(f"--rows: Table 1 has rows 1..{len(SC21_TABLE1)}, got {rows!r}",
                             item="--rows")
    dev = find_device("a100-80g")
    with busy("validation: Megatron SC'21 Table 1", as_json):
        plain = run_validation(picked, device=dev)
        cal_row = picked[0] if picked else 0
        cdev = calibrate_gemm(cal_row, device=dev)
        cal = run_validation(picked, device=cdev)
        ideal = run_validation(picked, device=dev, algorithms=SCHEDULE_ALGORITHMS)
    paths = write_validation(output, plain, cal, dev, cdev,
                             calibration_row=(picked or list(range(len(SC21_TABLE1))))
                             .index(cal_row), schedules=ideal)
    nccl = run_nccl_validation()
    paths += write_nccl_validation(output, nccl)
    with busy("validation: Llama 3 405B (Meta, Table 4)", as_json):
        llama = run_llama3()
    paths += write_llama3(output, llama)
    if as_json:
        print_json({"written": [str(p) for p in paths]})
        return
    from rich.table import Table

    tab = Table(title="Megatron SC'21 Table 1: achieved TFLOP/s per GPU, paper vs ours")
    for col in ("parameters", "parallelism", "paper TFLOP/s", "ours TFLOP/s", "error",
                "calibrated TFLOP/s", "error "):
        tab.add_column(col, justify="left" if col == "parallelism" else "right")
    for a, b in zip(plain, cal, strict=True):
        tab.add_row(f"{a.params_b:.1f} B", a.parallel, f"{a.paper_tflops:.0f}",
                    f"{a.tflops:.1f}", f"{100 * a.error:+.1f}%", f"{b.tflops:.1f}",
                    f"{100 * b.error:+.1f}%")
    out.print(tab)
    others = [b for b in cal if b is not cal[(picked or [0]).index(cal_row)]]
    out.print(f"mean |error|: {100 * mean_abs_error(plain):.1f}% with data-sheet constants; "
              f"{100 * mean_abs_error(others):.1f}% on the other rows with gemm_max "
              f"{cdev.gemm_max:.3f} fitted on row {cal_row + 1}" if others else "",
              highlight=False)
    out.print(f"ablation (collectives as schedules on ideal links): mean |error| "
              f"{100 * mean_abs_error(ideal):.1f}% with data-sheet constants", highlight=False)
    tab = Table(title="nccl-tests: measured vs topocoll's NCCL model")
    for col in ("case", "measured", "predicted", "error", "NCCL ran", "note"):
        tab.add_column(col, justify="left" if col in ("case", "NCCL ran", "note") else "right")
    for r in nccl:
        tab.add_row(r.case.label, f"{r.case.measured / 1e9:.1f} GB/s",
                    f"{r.predicted / 1e9:.1f} GB/s", f"{100 * r.error:+.1f}%", r.ran, r.note)
    out.print(tab)
    out.print(f"nccl-tests: mean |error| {100 * sum(abs(r.error) for r in nccl) / len(nccl):.1f}% "
              f"over {len(nccl)} cases, worst {100 * max(abs(r.error) for r in nccl):.1f}%",
              highlight=False)
    tab = Table(title="Llama 3 405B (Meta, Table 4): model TFLOP/s per GPU, paper vs ours "
                      "by pipeline chunks per stage")
    for col in ("GPUs", "parallelism", "chunks", "paper", "ours", "error", "bubble",
                "memory", "note"):
        tab.add_column(col, justify="left" if col in ("parallelism", "note") else "right")
    for r in llama:
        if r.model_tflops is None:
            tab.add_row(str(r.gpus), r.parallel, "", f"{r.paper_tflops:.0f}", "", "", "", "",
                        r.note)
            continue
        tab.add_row(str(r.gpus), r.parallel.split(",mb=")[0], str(r.interleave),
                    f"{r.paper_tflops:.0f}", f"{r.model_tflops:.1f}", f"{100 * r.error:+.1f}%",
                    f"{100 * r.bubble_share:.1f}%", f"{r.memory_gib:.1f} GiB",
                    "" if r.fits else "over 80 GB in our memory model")
    out.print(tab)
    out.print(f"written: {', '.join(str(p) for p in paths)}", highlight=False)


def _libra(output: Path, as_json: bool) -> None:
    from rich.progress import Progress

    from ..studies.libra import (
        LIBRA_NETWORKS,
        LIBRA_WORKLOADS,
        run_libra_mix,
        run_libra_study,
        write_libra_study,
    )

    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("LIBRA study",
                            total=len(LIBRA_NETWORKS) * (len(LIBRA_WORKLOADS) + 4))

        def step(label: str) -> None:
            bar.update(task, advance=1, description=label)

        inputs = output / "libra-inputs"      # LIBRA's rows run from LIBRA's own formats
        cases = run_libra_study(step=step, inputs=inputs)
        mixes = run_libra_mix(step=step, inputs=inputs)
    paths = write_libra_study(output, cases, mixes)
    if as_json:
        print_json({"written": [str(p) for p in paths]})
        return
    for c in cases:
        flow = f", flow {c.flow_time_s:.4g} s" if c.flow_time_s is not None else ""
        out.print(f"{c.network} {c.workload:34s} {c.model:5s} {c.objective:14s} "
                  f"B = {' / '.join(f'{x:.1f}' for x in c.bandwidth_GBps)} GB/s  "
                  f"{c.time_s:.4g} s{flow} (equal split {c.equal_time_s:.4g} s, speedup "
                  f"{c.speedup:.3f}), ${c.cost_usd / 1e6:.2f}M", highlight=False)
    for m in mixes:
        out.print(f"{m.network} all workloads at once, {m.model} model, weighed by "
                  f"{m.weights}: B = {' / '.join(f'{x:.1f}' for x in m.bandwidth_GBps)} GB/s, "
                  f"mean slowdown against each job's own optimum {m.mean_slowdown:.3f} "
                  f"(equal split {m.equal_mean_slowdown:.3f})", highlight=False)
    out.print(f"written: {', '.join(str(p) for p in paths)}", highlight=False)


def _topoopt(output: Path, as_json: bool) -> None:
    from rich.progress import Progress

    from ..procs import available_cores
    from ..studies.topoopt import (
        FATTREE_GBPS,
        PRICE_FACTORS,
        PRICE_PARTS,
        SPLITS,
        STUDY_MODELS,
        run_topoopt_study,
        study_tasks,
        write_topoopt_study,
    )

    total = study_tasks() + len(STUDY_MODELS) * (len(FATTREE_GBPS) + 2 + len(PRICE_PARTS)
                                                 * len(PRICE_FACTORS)) + len(SPLITS)
    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("TopoOpt study", total=total)

        def step(label: str) -> None:
            bar.update(task, advance=1, description=label)

        res = run_topoopt_study(jobs=available_cores(), progress=step)
    paths = write_topoopt_study(output, res)
    if as_json:
        print_json({"written": [str(p) for p in paths], "max_speedup": res["max_speedup"]})
        return
    for m, v in res["max_speedup"].items():
        s = v["speedup"]
        out.print(f"{m:14s} largest median speedup over the cost-equivalent fat-tree "
                  f"{s['median']:.2f}x [{s['min']:.2f}, {s['max']:.2f}] (d={v['degree']}, "
                  f"{v['gbps']:g} Gb/s)", highlight=False)
    out.print(f"written: {', '.join(str(p) for p in paths)}", highlight=False)


def _topoopt_prototype(output: Path, as_json: bool) -> None:
    from ..studies.topoopt_prototype import run_prototype, write_prototype
    from ..testbed.netns import require_tools

    require_tools()
    with busy("TopoOpt prototype on the emulated cluster", as_json):
        res = run_prototype()
    path = write_prototype(output, res)
    if as_json:
        print_json({"written": [str(path)], "error": res["error"]})
        return
    for p in res["phases"]:
        out.print(f"{p['phase']:10s} predicted {p['predicted_s']:.3f} s, measured "
                  f"{p['median_s']:.3f} s (median of {res['repeats']}), ratio "
                  f"{p['ratio']:.3f}", highlight=False)
    out.print(f"total: predicted {res['predicted_total_s']:.3f} s, measured "
              f"{res['measured_total_s']:.3f} s ({res['error']:+.1%})", highlight=False)
    out.print(f"written: {path}", highlight=False)


def _counted(label: str, total: int, as_json: bool, run):
    """``run(progress)`` under a progress bar of ``total`` ticks (none with ``--json``);
    each ``progress(message)`` shows the message and advances one tick."""
    from rich.progress import Progress

    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task(label, total=total)
        return run(lambda m: (bar.update(task, description=m), bar.advance(task)))


def _dlcp_regime(output: Path, as_json: bool) -> None:
    from ..procs import available_cores
    from ..studies.dlcp_regime import (
        REGIME_BUFFERS,
        REGIME_CLASSES,
        REGIME_LOADS,
        REGIME_PATTERNS,
        run_regime,
        write_regime,
    )

    total = len(REGIME_BUFFERS) * len(REGIME_CLASSES) * len(REGIME_LOADS) * len(
        REGIME_PATTERNS)
    res = _counted("DLCP regime map", total, as_json,
                   lambda progress: run_regime(jobs=available_cores(), progress=progress))
    paths = write_regime(output, res)
    if as_json:
        print_json({"written": [str(p) for p in paths]})
        return
    best = max(res["cells"], key=lambda c: c["best_vs_baselines"])
    out.print(f"largest saving over the best baseline: {best['best_vs_baselines']:+.1%} "
              f"({best['pattern']}, background class {best['background_class']}, "
              f"{best['buffer'] >> 10} KiB, load {best['load']:g})", highlight=False)
    out.print(f"written: {', '.join(str(p) for p in paths)}", highlight=False)


def _swing_sizes(name: str, output: Path, as_json: bool) -> None:
    from ..studies.swing import EVEN_SHAPES, ODD_SHAPES, even_sizes_study, write_even

    odd = name == "swing-odd"
    with busy(f"Swing on {'odd' if odd else 'even'} tori", as_json) as bar:
        rows = even_sizes_study(shapes=ODD_SHAPES if odd else EVEN_SHAPES,
                                progress=lambda s: bar.update(bar.task_ids[0],
                                                              description=s))
    paths = write_even(output, rows, name)
    if as_json:
        print_json({"written": [str(p) for p in paths]})
        return
    import numpy as np

    for r in rows:
        sp = np.asarray(r["best_other_s"]) / np.asarray(r["times_s"]["swing"])
        out.print(f"torus {'x'.join(map(str, r['shape'])):8s} Swing over the best other: "
                  f"{sp.min():.2f}x to {sp.max():.2f}x", highlight=False)
    out.print(f"written: {', '.join(str(p) for p in paths)}", highlight=False)


def _dlcp_loop(output: Path, as_json: bool) -> None:
    from ..studies.dlcp_loop import LOOP_CASES, run_loop, write_loop

    seeds = (0, 1, 2)
    epochs = 20
    res = _counted("DLCP in the training loop", len(LOOP_CASES) * len(seeds) * epochs,
                   as_json, lambda progress: run_loop(seeds=seeds, epochs=epochs,
                                                      progress=progress))
    paths = write_loop(output, res)
    if as_json:
        print_json({"written": [str(p) for p in paths], "summary": res["summary"]})
        return
    for c in res["summary"]:
        tta = "never" if c["time_to_target_s"] is None else f"{c['time_to_target_s']:.3f} s"
        out.print(f"{c['case']:36s} p50 {c['p50_iteration_s'] * 1e3:6.2f} ms, lost "
                  f"{c['zero_fraction']:.4%}, to target {tta}", highlight=False)
    out.print(f"written: {', '.join(str(p) for p in paths)}", highlight=False)


def _topoopt_flow(output: Path, as_json: bool) -> None:
    from ..procs import available_cores
    from ..studies.topoopt_flow import FLOW_POINTS, run_flow_study, write_flow

    res = _counted("TopoOpt at flow level", len(FLOW_POINTS), as_json,
                   lambda progress: run_flow_study(jobs=available_cores(),
                                                   progress=progress))
    paths = write_flow(output, res)
    if as_json:
        print_json({"written": [str(p) for p in paths]})
        return
    for p in res["points"]:
        sp = p["fattree_speedup"]
        out.print(f"{p['model']:13s} d={p['degree']} {p['gbps']:g} Gb/s: speedup fluid "
                  f"{sp['fluid']:.3f}, flow split {sp['split']:.3f}, flow hashed "
                  f"{min(sp['hashed']):.3f}-{max(sp['hashed']):.3f}", highlight=False)
    out.print(f"written: {', '.join(str(p) for p in paths)}", highlight=False)


def _design(output: Path, as_json: bool) -> None:
    from ..studies.design import run_design_study, write_design_study

    with busy("design study", as_json) as bar:
        res = run_design_study(progress=lambda s: bar.update(bar.task_ids[0],
                                                             description=s))
    paths = write_design_study(output, res)
    if as_json:
        print_json({"written": [str(p) for p in paths]})
        return
    for rec in res["jobs"]:
        eq = rec["equal_cost"]
        out.print(f"{rec['job']} on {rec['gpus']}: best at equal cost "
                  f"{eq['winner']['family']}", highlight=False)
    out.print(f"written: {', '.join(str(p) for p in paths)}", highlight=False)


def _dlcp(output: Path, as_json: bool) -> None:
    from rich.progress import Progress

    from ..procs import available_cores
    from ..studies.dlcp import run_dlcp_study, write_dlcp_study

    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("DLCP study", total=None)
        res = run_dlcp_study(jobs=available_cores(),
                             progress=lambda s: bar.update(task, description=s))
    paths = write_dlcp_study(output, res)
    if as_json:
        print_json({"written": [str(p) for p in paths], "wall_s": res["wall_s"],
                    "time_to_accuracy": res["time_to_accuracy"]})
        return
    for r in res["time_to_accuracy"]:
        out.print(f"{r['scheme']:16s} p50 {r['p50_s'] * 1e3:8.1f} ms  loss "
                  f"{r['loss_fraction']:.3%}  steps to {res['setup']['target']:.0%} "
                  f"{r['steps']:.0f}  time {r['time_to_accuracy_s']:.1f} s", highlight=False)
    out.print(f"simulation {res['wall_s']['simulation']} s, training "
              f"{res['wall_s']['training']} s; written: {', '.join(str(p) for p in paths)}",
              highlight=False)
