"""``topocoll topology show|validate``: describe and check a fabric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..units import format_rate, format_time
from .app import JsonOpt, app, handle_errors, load_topo, out, print_json

__all__ = ["topology_app", "topology_show", "topology_validate"]

topology_app = typer.Typer(no_args_is_help=True, help="Describe and validate topologies.")
app.add_typer(topology_app, name="topology")


@topology_app.command("show")
@handle_errors
def topology_show(spec: Annotated[str, typer.Argument(help="Generator spec or file.")],
                  as_json: JsonOpt = False) -> None:
    """Summarize a topology: ranks, switches, links, bandwidths, diameter, dimensions."""
    t = load_topo(spec)
    d = t.describe()
    if as_json:
        print_json(d)
        return
    table = Table(title=f"topology {t.name}", show_header=False)
    for k, v in d.items():
        if k.endswith("_Bps"):
            v = format_rate(v)
        elif k.endswith("_s"):
            v = format_time(v)
        table.add_row(k, ", ".join(v) if isinstance(v, list) else str(v))
    out.print(table)


@topology_app.command("validate")
@handle_errors
def topology_validate(path: Annotated[Path, typer.Argument(help="YAML/JSON topology file.")],
                      as_json: JsonOpt = False) -> None:
    """Check a topology file; print a summary, or the offending item and exit 2."""
    t = load_topo(str(path))
    if as_json:
        print_json({"valid": True, **t.describe()})
    else:
        out.print(f"valid: {t.name}: {t.num_ranks} ranks, {t.num_switches} switches, "
                  f"{len(t.links)} links", highlight=False)
