"""The Typer application, its consoles and what every command group shares.

The ``cli`` package is the only code that parses arguments, prints or exits. Library
errors (:class:`~topocoll.errors.TopocollError`) and file errors are printed as one line
on stderr with exit status 2 (:func:`handle_errors`).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from ..errors import TopocollError

__all__ = ["app", "out", "err", "handle_errors", "load_topo", "print_json", "parse_ranks",
           "JsonOpt", "TopoOpt", "BackendOpt", "NoCacheOpt", "schedule_cache"]

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="topocoll: topologies, collective schedules, verification and cost.")

# Piped output (CI logs, `make demo | tee`) would otherwise be cut to rich's default 80
# columns, truncating every table cell; a terminal or an explicit COLUMNS still wins.
_PIPE_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
out = Console(soft_wrap=True, width=_PIPE_WIDTH)
err = Console(stderr=True, soft_wrap=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
TopoOpt = Annotated[str, typer.Option("--topology", "-t",
                                      help="Generator spec (e.g. torus:8x8,bw=400Gbps) or a file.")]
BackendOpt = Annotated[str, typer.Option(
    "--backend", "-b",
    help="Cost model: analytical (alpha-beta), flow, packet (simulators) or ns3 (needs ns-3).")]
NoCacheOpt = Annotated[bool, typer.Option(
    "--no-cache", help="Do not read or keep schedules in the schedule cache "
                       "($TOPOCOLL_CACHE, else ~/.cache/topocoll).")]


def handle_errors(fn):
    """Turn library and file errors into one line on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (TopocollError, FileNotFoundError, IsADirectoryError, PermissionError) as e:
            msg = str(e) if isinstance(e, TopocollError) else f"{e.strerror}: {e.filename}"
            err.print(f"error: {msg}", markup=False, highlight=False)
            raise typer.Exit(2) from None

    return wrapper


def load_topo(spec: str):
    """The topology of a spec string or file."""
    from ..topology.spec import load_topology

    return load_topology(spec)


def print_json(obj: Any) -> None:
    """``obj`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")


def parse_ranks(text: str | None) -> tuple[int, ...] | None:
    """``--ranks 0,1,2`` as a tuple (None when not given)."""
    if not text:
        return None
    try:
        return tuple(int(x) for x in text.replace(" ", "").split(",") if x)
    except ValueError:
        raise typer.BadParameter(f"ranks must be comma-separated integers, got {text!r}") from None


def schedule_cache(no_cache: bool):
    """The user's schedule cache, or None with ``--no-cache``."""
    if no_cache:
        return None
    from ..selection import ScheduleCache

    return ScheduleCache()
