"""``topocoll sweep run``, ``topocoll query`` and ``topocoll report``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from .app import JsonOpt, app, choice_opt, err, handle_errors, out, print_json

__all__ = ["sweep_app", "sweep_run", "query", "report"]

sweep_app = typer.Typer(no_args_is_help=True, help="Design-space sweeps.")
app.add_typer(sweep_app, name="sweep")

DbOpt = Annotated[Path, typer.Option("--db", help="DuckDB file of results.")]


@sweep_app.command("run")
@handle_errors
def sweep_run(spec: Annotated[Path, typer.Argument(help="Sweep spec (YAML or JSON).")],
              db: DbOpt = Path("sweep.duckdb"),
              workers: Annotated[int, typer.Option(help="Worker processes (1: in this "
                                                        "process).")] = 2,
              backend: Annotated[str, typer.Option(
                  help="local (process pool) or ray (--address, or a local Ray cluster "
                       "started and stopped here).")] = "local",
              address: Annotated[str | None, typer.Option(
                  help="Ray cluster address (ray://host:10001 or host:6379).")] = None,
              flush_every: Annotated[int, typer.Option(
                  help="Points written per transaction (a kill re-runs at most these).")]
              = 32,
              as_json: JsonOpt = False) -> None:
    """Run every point of SPEC not yet in the database (resumable; failures recorded).

    With --json: one JSON line per finished point ({"done", "total", "failed",
    "recorded"}), then the summary line."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from ..sweep import SWEEP_BACKENDS, SweepStore, load_sweep, run_sweep
    from ..sweep.store import is_duckdb
    from .runner import run_argv

    if workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}", item="--workers")
    choice_opt(backend, SWEEP_BACKENDS, "--backend")
    if address is not None and backend != "ray":
        raise InputError("--address is for --backend ray", item="--address")
    if flush_every < 1:
        raise InputError(f"--flush-every must be at least 1, got {flush_every}",
                         item="--flush-every")
    known = ({c.name for c in app.registered_commands if c.name}
             | {g.name for g in app.registered_groups if g.name}
             | {c.callback.__name__ for c in app.registered_commands if not c.name})
    s = load_sweep(spec, known, _options_of)
    if db.is_dir() or not db.parent.exists():
        raise InputError(f"{db}: cannot write a database there", item=str(db))
    if db.is_file() and db.stat().st_size and not is_duckdb(db):
        raise InputError(f"{db} exists and is not a DuckDB database (refusing to touch it)",
                         item=str(db))
    store = SweepStore(db)
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(),
                      TextColumn("{task.completed}/{task.total}"), TimeRemainingColumn(),
                      console=err, transient=True, disable=as_json) as bar:
            task = bar.add_task("sweep", total=None)

            def progress(done, total, failed, recorded):
                bar.update(task, completed=done, total=total,
                           description=f"sweep ({failed} failed)")
                if as_json:   # one compact line per point: JSON lines for machines
                    sys.stdout.write(json.dumps({"done": done, "total": total,
                                                 "failed": failed,
                                                 "recorded": recorded}) + "\n")
                    sys.stdout.flush()

            summary = run_sweep(s, store, run_argv, workers=workers, backend=backend,
                                address=address, flush_every=flush_every,
                                progress=progress)
        first_error = None
        if summary.ran and summary.failed == summary.ran:
            rows = store.query("SELECT error FROM points WHERE status = 'error' "
                               "ORDER BY finished LIMIT 1")[1]
            first_error = rows[0][0] if rows else "?"
    finally:
        store.close()
    if first_error is not None:    # recorded, but a sweep of nothing but errors is an error
        raise InputError(f"every point that ran failed ({summary.failed} of "
                         f"{summary.total}, recorded in {db}); the first: "
                         f"{str(first_error).removeprefix('error: ')}",
                         item=str(spec))
    rec = {"db": str(db), "total": summary.total, "skipped": summary.skipped,
           "ran": summary.ran, "failed": summary.failed}
    if as_json:
        sys.stdout.write(json.dumps(rec) + "\n")
        return
    out.print(f"{summary.total} points: {summary.skipped} already in {db}, {summary.ran} run, "
              f"{summary.failed} failed", highlight=False)


def _options_of(command: str) -> set[str]:
    """The option names (long options without dashes, ``-`` as ``_``) that ``command``
    (``"compare"``, ``"testbed bench"``) takes."""
    import typer.main

    cmd = typer.main.get_command(app)      # typer's own click: duck-typed below
    for word in command.split():
        sub = getattr(cmd, "commands", {})
        if word not in sub:
            raise InputError(f"unknown command {command!r}", item="field 'command'")
        cmd = sub[word]
    if getattr(cmd, "commands", None):
        raise InputError(f"{command!r} is a group of commands; name one of "
                         f"{', '.join(sorted(cmd.commands))}", item="field 'command'")
    return {o[2:].replace("-", "_") for p in cmd.params if p.param_type_name == "option"
            for o in (*p.opts, *p.secondary_opts) if o.startswith("--")}


@app.command()
@handle_errors
def query(db: Annotated[Path, typer.Argument(help="DuckDB file of a sweep.")],
          sql: Annotated[str, typer.Argument(help="SQL over the points table and the "
                                                  "results view.")],
          as_json: JsonOpt = False) -> None:
    """Query a sweep's results with SQL."""
    from rich.table import Table

    from ..sweep import SweepStore

    store = SweepStore(db, read_only=True)
    try:
        cols, rows = store.query(sql)
    finally:
        store.close()
    if as_json:
        print_json([dict(zip(cols, r, strict=True)) for r in rows])
        return
    t = Table()
    for c in cols:
        t.add_column(c)
    for r in rows:
        t.add_row(*("" if v is None else str(v) for v in r))
    out.print(t)


@app.command()
@handle_errors
def report(db: Annotated[Path, typer.Argument(help="DuckDB file of a sweep.")],
           output: Annotated[Path, typer.Option("--output", "-o", help="HTML file to write.")]
           = Path("report.html"),
           title: Annotated[str, typer.Option(help="Page title.")] = "topocoll sweep",
           as_json: JsonOpt = False) -> None:
    """Write a self-contained HTML report (figures and sortable tables) of a sweep."""
    from ..sweep import SweepStore, write_report

    if output.suffix != ".html" or not output.parent.exists():
        raise InputError(f"{output}: the report is an .html file in an existing directory",
                         item=str(output))
    store = SweepStore(db, read_only=True)
    try:
        p = write_report(store, output, title)
    finally:
        store.close()
    if as_json:
        print_json({"written": [str(p)], "db": str(db)})
        return
    out.print(f"report written to {p}", highlight=False)
