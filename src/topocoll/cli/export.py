"""``topocoll export msccl|chakra``: schedules for other runtimes and simulators."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..units import parse_size
from .app import JsonOpt, app, handle_errors, out, print_json

__all__ = ["export_app", "export_chakra", "export_msccl"]


export_app = typer.Typer(no_args_is_help=True, help="Write schedules for other runtimes.")
app.add_typer(export_app, name="export")


@export_app.command("msccl")
@handle_errors
def export_msccl(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
                 output: Annotated[Path, typer.Option("--output", "-o")],
                 dialect: Annotated[str, typer.Option(help="msccl or msccl-executor.")] = "msccl",
                 as_json: JsonOpt = False) -> None:
    """Write MSCCL XML (allreduce, allgather, reduce_scatter)."""
    from ..export.msccl import to_msccl_xml
    from ..schedule import load_schedule

    output.write_text(to_msccl_xml(load_schedule(schedule), dialect=dialect))
    if as_json:
        print_json({"output": str(output), "dialect": dialect})
    else:
        out.print(f"wrote {output}", highlight=False)


@export_app.command("chakra")
@handle_errors
def export_chakra(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
                  output: Annotated[Path, typer.Option("--output", "-o", help="Directory.")],
                  size: Annotated[str, typer.Option("--size", "-s")] = "64MiB",
                  as_json: JsonOpt = False) -> None:
    """Write Chakra send/recv traces (<dir>/topocoll.<rank>.et) and an ASTRA-sim system.json."""
    from ..export.chakra import write_chakra
    from ..schedule import load_schedule

    paths = write_chakra(load_schedule(schedule), parse_size(size), output)
    if as_json:
        print_json({"files": [str(p) for p in paths]})
    else:
        out.print(f"wrote {len(paths)} traces to {output}", highlight=False)
