"""``topocoll synth|verify|cost``: make a schedule file, check it, cost it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..errors import InputError
from ..kv import kv_pairs
from ..units import format_rate, format_size, format_time
from .app import (
    AlphaOpt,
    BackendOpt,
    CollectiveOpt,
    JsonOpt,
    NoCacheOpt,
    RanksOpt,
    RootOpt,
    TopoOpt,
    app,
    collective_opt,
    err,
    handle_errors,
    load_topo,
    model_opt,
    out,
    print_json,
    schedule_cache,
    size_opt,
)

__all__ = ["synth", "verify", "cost", "output_path", "verified_schedule", "idle_note"]

NoVerifyOpt = Annotated[bool, typer.Option(
    "--no-verify", help="Skip the check that the schedule is correct (a warning is printed).")]


def output_path(path: Path, suffixes: tuple[str, ...] = (".json", ".npz"), *,
                directory: bool = False) -> Path:
    """Check where a command will write before it does any work: the suffix, that the
    parent directory exists, and (for ``directory``) that the path is not a file."""
    if directory:
        if path.exists() and not path.is_dir():
            raise InputError(f"{path}: exists and is not a directory", item=str(path))
    else:
        if path.is_dir():
            raise InputError(f"{path}: is a directory", item=str(path))
        if suffixes and path.suffix not in suffixes:
            raise InputError(f"{path}: the output must end in {' or '.join(suffixes)}",
                             item=str(path))
    if not path.resolve().parent.is_dir():
        raise InputError(f"{path}: the directory {str(path.parent)!r} does not exist",
                         item=str(path))
    return path


def verified_schedule(path: Path, topology, no_verify: bool):
    """Load a schedule file and refuse it, naming its first violation, unless it verifies
    on ``topology`` (``--no-verify``: warn and go on)."""
    from ..schedule import load_schedule
    from ..verification import verify as _verify

    s = load_schedule(path)
    outside = [r for r in s.collective.ranks if r >= topology.num_ranks]
    if outside:
        raise InputError(f"{path}: rank {outside[0]} of the schedule is not in topology "
                         f"{topology.name} ({topology.num_ranks} ranks)",
                         item=f"rank {outside[0]}")
    if no_verify:
        err.print(f"warning: {path} was not verified (--no-verify)", markup=False,
                  highlight=False)
        return s
    rep = _verify(s, topology, collect=True, max_violations=1)
    if not rep.ok:
        v = rep.violations[0]
        raise InputError(f"{path} is not a correct schedule ({v.kind}: {v.message}); "
                         f"`topocoll verify {path}` lists every violation, --no-verify "
                         f"skips the check", item=str(path))
    return s


def idle_note(schedule, topology, as_json: bool) -> list[int]:
    """Ranks of ``topology`` the schedule's collective leaves idle (said on stderr)."""
    idle = sorted(set(range(topology.num_ranks)) - set(schedule.collective.ranks))
    if idle and not as_json:
        err.print(f"note: the schedule's collective covers {len(schedule.collective.ranks)} "
                  f"of the {topology.num_ranks} ranks of {topology.name}; idle ranks: "
                  f"{_short(idle)}", markup=False, highlight=False)
    return idle


def _options(pairs: list[str] | None) -> dict[str, str]:
    return kv_pairs(pairs or [], what="--option", lower=False,
                    item=lambda k: f"option '{k}'")


@app.command()
@handle_errors
def synth(topology: TopoOpt,
          collective: CollectiveOpt = "allreduce",
          algorithm: Annotated[str, typer.Option(
              "--algorithm", "-a", help="See `topocoll list algorithms`.")] = "ring",
          output: Annotated[Path, typer.Option("--output", "-o", help="Schedule file to "
                                               "write: .json or .npz")] = Path("schedule.json"),
          ranks: RanksOpt = None,
          root: RootOpt = None,
          option: Annotated[list[str] | None, typer.Option(
              "--option", help="Algorithm option key=value (sizes and times take units: "
                               "message_bytes=1GiB, alpha=2us); repeatable.")] = None,
          no_cache: NoCacheOpt = False,
          as_json: JsonOpt = False) -> None:
    """Synthesize a schedule and write it to a file."""
    from ..schedule import save_schedule
    from ..selection import find_algorithm, synthesize

    output_path(output)
    t = load_topo(topology)
    syn = find_algorithm(algorithm, collective)
    coll = collective_opt(collective, t, ranks, root)
    kwargs: dict[str, Any] = syn.coerce(_options(option))
    for key in ("ranks", "root"):
        if key in kwargs:
            raise InputError(f"--option {key}: use --{key}", item=f"option '{key}'")
    if ranks:
        kwargs["ranks"] = coll.ranks
    if root is not None:
        kwargs["root"] = root
    s = synthesize(syn, t, kwargs, cache=schedule_cache(no_cache))
    save_schedule(s, output)
    info = {"output": str(output), "algorithm": algorithm, "collective": collective,
            "topology": t.name, "steps": s.num_steps, "transfers": s.num_transfers,
            "chunks": s.collective.num_chunks}
    if as_json:
        print_json(info)
    else:
        out.print(f"wrote {output}: {algorithm} {collective} on {t.name}, {s.num_steps} steps, "
                  f"{s.num_transfers} transfers", highlight=False)


def _short(xs: list[int], limit: int = 8) -> str:
    """``xs`` as a comma list, cut after ``limit`` items."""
    head = ", ".join(str(x) for x in xs[:limit])
    return head + (f", ... ({len(xs)} in all)" if len(xs) > limit else "")


@app.command()
@handle_errors
def verify(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
           topology: Annotated[str | None, typer.Option(
               "--topology", "-t", help="Also check every transfer's route on this fabric.")]
           = None,
           max_violations: Annotated[int, typer.Option(
               min=1, help="Most violations listed.")] = 50,
           as_json: JsonOpt = False) -> None:
    """Verify a schedule file; exit 1 and list violations if it is wrong."""
    from ..schedule import load_schedule
    from ..verification import verify as _verify

    s = load_schedule(schedule)
    t = load_topo(topology) if topology else None
    rep = _verify(s, t, collect=True, max_violations=max_violations)
    idle = idle_note(s, t, as_json) if t else []
    if as_json:
        print_json({"ok": rep.ok, "method": rep.method, "error_probability": rep.error_probability,
                    "total_violations": rep.total_violations, "idle_ranks": idle,
                    "topology": t.name if t else None,
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
         size: Annotated[list[str] | None, typer.Option(
             "--size", "-s", help="Message size with units (64MiB); repeatable.")] = None,
         backend: BackendOpt = "analytical",
         alpha: AlphaOpt = "0s",
         no_verify: NoVerifyOpt = False,
         as_json: JsonOpt = False) -> None:
    """Cost a schedule file with the analytical (alpha-beta, congestion) model or a
    simulator (``--backend``); "% of bound" is against the strongest proven lower bound."""
    sizes = [size_opt(n) for n in (size or ["64MiB"])]
    model = model_opt(backend, alpha)
    t = load_topo(topology)
    s = verified_schedule(schedule, t, no_verify)
    idle = idle_note(s, t, as_json)
    results = [model.evaluate(s, t, n) for n in sizes]
    if as_json:
        print_json([{"topology": t.name, "schedule": s.name, "size_bytes": r.message_bytes,
                     "time_s": r.time, "algbw_Bps": r.algbw, "busbw_Bps": r.busbw,
                     "bound_s": r.bound, "bound_fraction": r.bound_fraction,
                     "idle_ranks": idle} for r in results])
        return
    table = Table(title=f"{s.name or 'schedule'} on {t.name}")
    for h in ("size", "time", "algbw", "busbw", "% of bound"):
        table.add_column(h, justify="right")
    for r in results:
        table.add_row(format_size(r.message_bytes), format_time(r.time), format_rate(r.algbw),
                      format_rate(r.busbw), f"{100 * r.bound_fraction:.1f}%")
    out.print(table)
