"""``topocoll study``: regenerate a paper reproduction."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import JsonOpt, app, err, handle_errors, out, print_json

__all__ = ["study"]


@app.command()
@handle_errors
def study(name: Annotated[str, typer.Argument(help="Study to run: swing.")],
          output: Annotated[Path, typer.Option("--output", "-o", help="Directory for the "
                                               "results page, JSON and figures.")]
          = Path("docs/studies"),
          topology: Annotated[list[str] | None, typer.Option(
              "--topology", "-t", help="Restrict to torus:AxB... or hyperx:AxB; repeatable.")]
          = None,
          routing: Annotated[str, typer.Option(help="spray (even split over minimal paths) "
                                               "or shortest (dimension order).")] = "spray",
          as_json: JsonOpt = False) -> None:
    """Regenerate a paper reproduction (tables, JSON and figures)."""
    from rich.progress import Progress

    from ..errors import NotSupportedError
    from ..studies.swing import (
        TOPOLOGIES,
        StudySetup,
        parse_study_topology,
        study_topology,
        write_study,
    )

    if name != "swing":
        raise NotSupportedError(f"unknown study {name!r} (available: swing)")
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
    paths = write_study(output, results, setup)
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
