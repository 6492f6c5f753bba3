"""``topocoll export msccl|chakra``: schedules for other runtimes and simulators."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError, ScheduleError
from .app import JsonOpt, app, choice_opt, err, handle_errors, out, print_json, size_opt

__all__ = ["export_app", "export_chakra", "export_msccl", "export_workload", "export_astra"]


export_app = typer.Typer(no_args_is_help=True,
                         help="Write schedules and workloads for other tools.")
app.add_typer(export_app, name="export")


NoVerifyOpt = Annotated[bool, typer.Option(
    "--no-verify", help="Write the schedule even if it is not correct (a warning is printed).")]


def _load(schedule: Path, no_verify: bool):
    from ..schedule import load_schedule

    s = load_schedule(schedule)
    if no_verify:
        err.print(f"warning: {schedule} is exported without verification (--no-verify)",
                  markup=False, highlight=False)
    return s


def _refuse(schedule: Path, e: ScheduleError):
    return InputError(f"{schedule}: {e}", item=str(schedule))


@export_app.command("msccl")
@handle_errors
def export_msccl(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
                 output: Annotated[Path, typer.Option("--output", "-o", help="XML file.")],
                 dialect: Annotated[str, typer.Option(help="msccl or msccl-executor.")] = "msccl",
                 no_verify: NoVerifyOpt = False,
                 as_json: JsonOpt = False) -> None:
    """Write MSCCL XML (allreduce, allgather, reduce_scatter); refuses a wrong schedule."""
    from ..export.msccl import DIALECTS, to_msccl_xml
    from .schedules import output_path

    choice_opt(dialect, DIALECTS, "--dialect")
    output_path(output, (".xml",))
    s = _load(schedule, no_verify)
    try:
        xml = to_msccl_xml(s, dialect=dialect, verify=not no_verify)
    except ScheduleError as e:
        raise _refuse(schedule, e) from None
    output.write_text(xml)
    if as_json:
        print_json({"output": str(output), "dialect": dialect})
    else:
        out.print(f"wrote {output}", highlight=False)


@export_app.command("chakra")
@handle_errors
def export_chakra(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
                  output: Annotated[Path, typer.Option("--output", "-o", help="Directory.")],
                  size: Annotated[str, typer.Option(
                      "--size", "-s", help="Message size with units (64MiB).")] = "64MiB",
                  no_verify: NoVerifyOpt = False,
                  as_json: JsonOpt = False) -> None:
    """Write Chakra send/recv traces (<dir>/topocoll.<rank>.et) and an ASTRA-sim system.json;
    refuses a wrong schedule."""
    from ..export.chakra import write_chakra
    from .schedules import output_path

    M = size_opt(size)
    output_path(output, directory=True)
    s = _load(schedule, no_verify)
    try:
        paths = write_chakra(s, M, output, verify=not no_verify)
    except ScheduleError as e:
        raise _refuse(schedule, e) from None
    if as_json:
        print_json({"files": [str(p) for p in paths]})
    else:
        out.print(f"wrote {len(paths)} traces to {output}", highlight=False)


@export_app.command("workload")
@handle_errors
def export_workload(
    output: Annotated[Path, typer.Option("--output", "-o", help="Text workload to write.")],
    model: Annotated[str, typer.Option("--model", "-m", help="A model (topocoll list "
                                                             "models).")] = "gpt3-175b",
    parallel: Annotated[str, typer.Option("--parallel", "-p", help="tp=T,dp=D[,mb=..].")]
        = "tp=8,dp=8",
    dialect: Annotated[str, typer.Option(help="astra (ASTRA-sim 1.0), libra or aicb.")]
        = "astra",
    device: Annotated[str, typer.Option(help="Device preset for compute times.")]
        = "a100-80g",
    as_json: JsonOpt = False,
) -> None:
    """Write a model and parallelism as an ASTRA-sim 1.0, LIBRA or AICB text workload."""
    from ..workload import (
        DIALECTS,
        find_device,
        format_text_workload,
        model_layers,
        parse_model,
        parse_parallel,
    )

    if dialect not in DIALECTS:
        raise InputError(f"--dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}",
                         item="--dialect")
    if output.is_dir() or not output.parent.exists():
        raise InputError(f"{output}: cannot write there (a directory, or no such parent)",
                         item=str(output))
    m, par, dev = parse_model(model), parse_parallel(parallel), find_device(device)
    if par.pp > 1 or par.ep > 1:
        raise InputError("text workloads carry tensor and data parallelism (pp=1, ep=1)",
                         item="--parallel")
    kind = ("HYBRID_DATA_MODEL" if par.tp > 1 and par.dp > 1 else
            "MODEL" if par.tp > 1 else "DATA")
    text = format_text_workload(
        model_layers(m, par, dev), dialect, parallelism=kind,
        header={"model_parallel_NPU_group": par.tp, "all_gpus": par.world,
                "vpp": m.layers})
    output.write_text(text)
    if as_json:
        print_json({"written": [str(output)], "model": m.name, "parallel": par.label(),
                    "layers": m.layers, "dialect": dialect})
        return
    out.print(f"{m.layers} layers of {m.name} ({par.label()}) written to {output} "
              f"({dialect})", highlight=False)


@export_app.command("astra")
@handle_errors
def export_astra(
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory to write.")],
    model: Annotated[str, typer.Option("--model", "-m", help="A model (topocoll list "
                                                             "models).")] = "gpt3-175b",
    parallel: Annotated[str, typer.Option("--parallel", "-p",
                                          help="tp=T,pp=P,dp=D[,mb=..,gb=..].")]
        = "tp=8,pp=8,dp=1,gb=64,sp=1,recompute=selective",
    topology: Annotated[str, typer.Option(
        "--topology", "-t", help="A fabric ASTRA-sim's analytical network can describe "
                                 "(hier: dims, torus, ...) for network.yml.")]
        = "hier:switch(64)",
    device: Annotated[str, typer.Option(help="Device preset for compute times.")]
        = "a100-80g",
    as_json: JsonOpt = False,
) -> None:
    """Write a model and parallelism for ASTRA-sim: per-rank Chakra traces, communicator
    groups, network.yml and system.json."""
    import json

    from ..topology.io import write_astra_network
    from ..topology.spec import parse_spec
    from ..workload import find_device, parse_model, parse_parallel
    from ..workload.chakra_et import write_chakra
    from ..workload.rankgraph import iteration_graph

    if output.exists() and not output.is_dir():
        raise InputError(f"{output} exists and is not a directory", item=str(output))
    m, par, dev = parse_model(model), parse_parallel(parallel), find_device(device)
    top = parse_spec(topology)
    if par.world != top.num_ranks:
        raise InputError(f"--parallel uses {par.world} ranks, {top.name} has "
                         f"{top.num_ranks}", item="--parallel")
    network = write_astra_network(top)          # refuses what ASTRA-sim cannot describe
    g = iteration_graph(m, par, dev)
    paths = write_chakra(g, output, prefix="workload")
    (output / "network.yml").write_text(network)
    system = {"scheduling-policy": "FIFO", "endpoint-delay": 10,
              "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4,
              "all-reduce-implementation": ["ring"] * len(top.dims),
              "all-gather-implementation": ["ring"] * len(top.dims),
              "reduce-scatter-implementation": ["ring"] * len(top.dims),
              "all-to-all-implementation": ["direct"] * len(top.dims),
              "collective-optimization": "baseline", "local-mem-bw": 1600}
    (output / "system.json").write_text(json.dumps(system, indent=1) + "\n")
    written = [*map(str, paths), str(output / "network.yml"), str(output / "system.json")]
    if as_json:
        print_json({"written": written, "ranks": g.ranks, "tasks": len(g.nodes)})
        return
    out.print(f"{m.name} ({par.label()}): {len(g.nodes)} tasks on {g.ranks} ranks written "
              f"to {output} (workload.<rank>.et, network.yml, system.json)", highlight=False)
