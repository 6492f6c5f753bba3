"""``topocoll synth|verify|cost``: make a schedule file, check it, cost it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..units import format_rate, format_size, format_time, parse_size
from .app import (
    BackendOpt,
    JsonOpt,
    NoCacheOpt,
    TopoOpt,
    app,
    err,
    handle_errors,
    load_topo,
    out,
    parse_ranks,
    print_json,
    schedule_cache,
)

__all__ = ["synth", "verify", "cost"]


@app.command()
@handle_errors
def synth(topology: TopoOpt,
          collective: Annotated[str, typer.Option("--collective", "-c")] = "allreduce",
          algorithm: Annotated[str, typer.Option("--algorithm", "-a")] = "ring",
          output: Annotated[Path, typer.Option("--output", "-o",
                                               help=".json or .npz")] = Path("schedule.json"),
          ranks: Annotated[str | None, typer.Option()] = None,
          root: Annotated[int | None, typer.Option()] = None,
          option: Annotated[list[str] | None, typer.Option("--option", help="key=value")] = None,
          no_cache: NoCacheOpt = False,
          as_json: JsonOpt = False) -> None:
    """Synthesize a schedule and write it to a file."""
    from ..schedule import save_schedule
    from ..selection import find_algorithm, synthesize

    t = load_topo(topology)
    syn = find_algorithm(algorithm, collective)
    kwargs: dict[str, Any] = {}
    for o in option or []:
        k, _, v = o.partition("=")
        if not _ or not k:
            raise typer.BadParameter(f"--option must be key=value, got {o!r}")
        kwargs[k] = int(v) if v.lstrip("-").isdigit() else v
    if ranks:
        kwargs["ranks"] = parse_ranks(ranks)
    if root is not None:
        kwargs["root"] = root
    s = synthesize(syn, t, kwargs, cache=schedule_cache(no_cache))
    save_schedule(s, output)
    info = {"output": str(output), "algorithm": algorithm, "collective": collective,
            "steps": s.num_steps, "transfers": s.num_transfers,
            "chunks": s.collective.num_chunks}
    if as_json:
        print_json(info)
    else:
        out.print(f"wrote {output}: {algorithm} {collective}, {s.num_steps} steps, "
                  f"{s.num_transfers} transfers", highlight=False)


def _short(xs: list[int], limit: int = 8) -> str:
    """``xs`` as a comma list, cut after ``limit`` items."""
    head = ", ".join(str(x) for x in xs[:limit])
    return head + (f", ... ({len(xs)} in all)" if len(xs) > limit else "")


@app.command()
@handle_errors
def verify(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
           topology: Annotated[str | None, typer.Option("--topology", "-t")] = None,
           max_violations: int = 50, as_json: JsonOpt = False) -> None:
    """Verify a schedule file; exit 1 and list violations if it is wrong."""
    from ..schedule import load_schedule
    from ..verification import verify as _verify

    s = load_schedule(schedule)
    t = load_topo(topology) if topology else None
    rep = _verify(s, t, collect=True, max_violations=max_violations)
    idle = sorted(set(range(t.num_ranks)) - set(s.collective.ranks)) if t else []
    if idle and not as_json:
        err.print(f"note: the schedule's collective covers {len(s.collective.ranks)} of the "
                  f"{t.num_ranks} ranks of {t.name}; idle ranks: {_short(idle)}",
                  markup=False, highlight=False)
    if as_json:
        print_json({"ok": rep.ok, "method": rep.method, "error_probability": rep.error_probability,
                     "total_violations": rep.total_violations, "idle_ranks": idle,
                     "violations": [dataclasses.asdict(v) for v in rep.violations]})
    elif rep.ok:
        out.print(f"ok: {s.collective.describe()} in {s.num_steps} steps verified "
                  f"({rep.method}, error probability <= {rep.error_probability:.1e})",
                  highlight=False)
    else:
        for v in rep.violations:
            err.print(f"{v.kind}: {v.message}", markup=False, highlight=False)
        err.print(f"{rep.total_violations} violation(s)", highlight=False)
    if not rep.ok:
        raise typer.Exit(1)


@app.command()
@handle_errors
def cost(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
         topology: TopoOpt,
         size: Annotated[list[str] | None, typer.Option("--size", "-s")] = None,
         backend: BackendOpt = "analytical",
         as_json: JsonOpt = False) -> None:
    """Cost a schedule file with the analytical (alpha-beta, congestion) model or a
    simulator (``--backend``)."""
    from ..schedule import load_schedule
    from ..sim.backends import cost_model

    s = load_schedule(schedule)
    t = load_topo(topology)
    model = cost_model(backend)
    results = [model.evaluate(s, t, parse_size(n)) for n in (size or ["64MiB"])]
    if as_json:
        print_json([{"size_bytes": r.message_bytes, "time_s": r.time, "algbw_Bps": r.algbw,
                      "busbw_Bps": r.busbw, "bound_s": r.bound,
                      "bound_fraction": r.bound_fraction} for r in results])
        return
    table = Table(title=f"{s.name or 'schedule'} on {t.name}")
    for h in ("size", "time", "algbw", "busbw", "% of bound"):
        table.add_column(h, justify="right")
    for r in results:
        table.add_row(format_size(r.message_bytes), format_time(r.time), format_rate(r.algbw),
                      format_rate(r.busbw), f"{100 * r.bound_fraction:.1f}%")
    out.print(table)
