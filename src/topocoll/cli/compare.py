"""``topocoll compare``: every applicable algorithm, verified and costed, per size."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ..units import parse_size
from .app import (
    BackendOpt,
    JsonOpt,
    NoCacheOpt,
    TopoOpt,
    app,
    handle_errors,
    load_topo,
    out,
    parse_ranks,
    print_json,
    schedule_cache,
)

__all__ = ["compare", "print_rows"]


@app.command()
@handle_errors
def compare(topology: TopoOpt,
            collective: Annotated[str, typer.Option("--collective", "-c")] = "allreduce",
            size: Annotated[list[str] | None,
                            typer.Option("--size", "-s", help="Message size; repeatable.")] = None,
            algorithm: Annotated[list[str] | None, typer.Option("--algorithm", "-a")] = None,
            ranks: Annotated[str | None, typer.Option(help="Subgroup, e.g. 0,1,2,3.")] = None,
            root: Annotated[int | None, typer.Option(help="Root of broadcast/reduce.")] = None,
            backend: BackendOpt = "analytical",
            no_cache: NoCacheOpt = False,
            as_json: JsonOpt = False) -> None:
    """Every applicable algorithm, verified and costed, fastest first, per size."""
    from ..selection import compare_algorithms
    from ..sim.backends import cost_model

    t = load_topo(topology)
    sizes = [parse_size(s) for s in (size or ["64MiB"])]
    skipped: list[tuple[str, str]] = []
    rows = compare_algorithms(t, collective, sizes, algorithms=algorithm, ranks=parse_ranks(ranks),
                              root=root, model=cost_model(backend), skipped=skipped,
                              cache=schedule_cache(no_cache))
    if as_json:
        print_json([r.to_dict() for r in rows])
        return
    print_rows(f"{collective} on {t.name}", rows)
    for name, why in skipped:
        out.print(f"not shown: {name} ({why})", style="dim", highlight=False)


def print_rows(title: str, rows) -> None:
    from ..report import compare_table

    cells = compare_table(rows)
    table = Table(title=title)
    for h in cells[0]:
        table.add_column(h, justify="left" if h in ("algorithm", "params") else "right")
    last = None
    for r, c in zip(rows, cells[1:], strict=True):
        if last is not None and r.size_bytes != last:
            table.add_section()
        last = r.size_bytes
        table.add_row(*c, style=None if r.verified else "red")
    out.print(table)
