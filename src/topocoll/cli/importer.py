"""``topocoll import chakra``: a Chakra execution trace replayed on a fabric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..errors import InputError
from .app import JsonOpt, app, busy, choice_opt, handle_errors, model_opt, out, print_json

__all__ = ["import_app", "import_chakra"]

import_app = typer.Typer(no_args_is_help=True,
                         help="Read workloads of other tools and time them on a fabric.")
app.add_typer(import_app, name="import")


@import_app.command("chakra")
@handle_errors
def import_chakra(
    trace: Annotated[Path, typer.Argument(
        help="Directory of <prefix>.<rank>.et files (or the prefix).")],
    topology: Annotated[str, typer.Option(
        "--topology", "-t", help="Fabric to replay on (generator spec or file); default: a "
                                 "switch of the trace's ranks at 100 GB/s.")] = "",
    kineto: Annotated[Path | None, typer.Option(
        help="Directory of PyTorch profiler traces (*.<rank>.json) giving CPU ops their "
             "durations.")] = None,
    groups: Annotated[Path | None, typer.Option(
        help="Communicator groups JSON (pg_name -> ranks), as ASTRA-sim takes it.")] = None,
    algorithms: Annotated[str | None, typer.Option(
        "--algorithms", "-a", help="Comma-separated candidate algorithms (default: all "
                                   "that apply).")] = None,
    backend: Annotated[str, typer.Option(
        "--backend", "-b", help="How collectives are timed: analytical, flow, or packet "
                                "(small cases).")]
        = "analytical",
    astra_network: Annotated[Path | None, typer.Option(
        help="ASTRA-sim compatibility mode: its network.yml (with --astra-system); "
             "collectives timed by ASTRA-sim's analytical semantics.")] = None,
    astra_system: Annotated[Path | None, typer.Option(
        help="ASTRA-sim compatibility mode: its system.json.")] = None,
    contention: Annotated[bool, typer.Option(
        "--contention", help="Concurrent collectives and transfers share links (max-min "
                             "fair); default: each timed alone.")] = False,
    trace_out: Annotated[Path | None, typer.Option(
        "--trace", help="Write the replay's timeline (Perfetto JSON).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay a Chakra execution trace: compute, collectives and transfers per rank."""
    import json

    from ..sim.backends import backend_names
    from ..topology.spec import parse_spec
    from ..workload import CollectiveCoster, write_timeline
    from ..workload.chakra_et import read_chakra
    from ..workload.taskgraph import replay

    choice_opt(backend, backend_names(workload=True), "--backend")
    cm = model_opt(backend, "0")
    pg = None
    if groups is not None:
        try:
            pg = json.loads(groups.read_text())
        except (OSError, ValueError) as e:
            raise InputError(f"cannot read {groups}: {e}", item=str(groups)) from None
        if not isinstance(pg, dict) or not all(
                isinstance(v, list) and all(isinstance(x, int) for x in v)
                for v in pg.values()):
            raise InputError(f"{groups}: groups map names to lists of ranks",
                             item=str(groups))
    if (astra_network is None) != (astra_system is None):
        raise InputError("--astra-network and --astra-system go together",
                         item="--astra-system")
    with busy(f"reading {trace}", as_json):
        g = read_chakra(trace, groups=pg, kineto=kineto)
    if astra_network is not None:
        from ..topology.io import read_astra_network
        from ..workload.astra_compat import AstraCoster, read_astra_system

        top = read_astra_network(astra_network)
        coster = AstraCoster(top, read_astra_system(str(astra_system)))
    else:
        top = parse_spec(topology or f"star:{max(g.ranks, 2)},bw=100GB/s")
        cands = [a.strip() for a in algorithms.split(",") if a.strip()] if algorithms \
            else None
        coster = CollectiveCoster(top, model=cm, algorithms=cands, bounds=False)
    if contention and astra_network is not None:
        raise InputError("--contention uses our schedules; ASTRA-sim's compatibility mode "
                         "has its own rules", item="--contention")
    with busy(f"replaying {g.ranks} ranks", as_json):
        r = replay(g, coster, timeline=trace_out is not None, contention=contention)
    if trace_out is not None:
        write_timeline(r.tasks, trace_out)
    kinds: dict[str, int] = {}
    for n in g.nodes:
        kinds[n.kind] = kinds.get(n.kind, 0) + 1
    rec = {"trace": str(trace), "ranks": g.ranks, "topology": top.name, "nodes": kinds,
           "mode": "astra-compat" if astra_network is not None else backend,
           **r.to_dict(), "iteration_cycles": r.makespan_s * 1e9, "chosen": coster.chosen}
    if as_json:
        print_json(rec)
        return
    tab = Table(title=f"Chakra trace {trace} ({g.ranks} ranks) on {top.name}")
    for col in ("tasks", "count"):
        tab.add_column(col)
    for k, v in sorted(kinds.items()):
        tab.add_row(k, str(v))
    out.print(tab)
    out.print(f"iteration {r.makespan_s:.6g} s: compute {max(r.compute_s):.6g} s (busiest "
              f"rank), exposed communication {r.exposed_comm_s:.6g} s; "
              f"{r.collectives} collectives, {r.transfers} transfers", highlight=False)
