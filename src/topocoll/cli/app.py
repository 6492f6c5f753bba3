"""The Typer application, its consoles and what every command group shares.

The ``cli`` package is the only code that parses arguments, prints or exits. Whatever goes
wrong, the user gets one line on standard error and no traceback (:class:`OneLineGroup`):

- bad input (a library error, :class:`~topocoll.errors.TopocollError`; a file that cannot
  be read or written; a usage error: unknown command or option, a value that does not
  parse) is ``error: <what, naming the item>`` with exit status 2;
- ``verify`` exits 1 for a wrong schedule (its violations are the report);
- anything else is a bug: ``error: internal error in topocoll <version> ...`` with the
  place to report it and exit status 3 (``TOPOCOLL_DEBUG=1`` re-raises it instead).

The library names its own parameters (``InputError("budget must be ...",
item="budget")``); only here do they become flags (:func:`as_flags`): the parameters the
error's ``item`` lists that are options of the command that ran are written as those
options (``--budget must be ...``).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperGroup

from .. import __version__
from ..errors import InputError, TopocollError
from ..units import UnitError, parse_rate, parse_size, parse_time

__all__ = ["app", "out", "err", "handle_errors", "load_topo", "print_json", "parse_ranks",
           "JsonOpt", "TopoOpt", "BackendOpt", "NoCacheOpt", "schedule_cache", "OneLineGroup",
           "fail", "REPORT_URL", "size_opt", "time_opt", "rate_opt", "choice_opt",
           "collective_opt", "model_opt", "AlphaOpt", "CollectiveOpt", "RanksOpt",
           "RootOpt", "busy", "MAX_MESSAGE_BYTES", "as_flags"]

#: Where internal errors should be reported.
REPORT_URL = "https://github.com/topocoll/topocoll/issues"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``error: message`` as one line on stderr; the exit to raise."""
    err.print(f"error: {_one_line(message)}", markup=False, highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _leaf_command(group: Any, args: list[str]) -> Any:
    """The command ``args`` runs (None for a group or an unknown name)."""
    cmd = group
    for a in args:
        if not hasattr(cmd, "get_command"):          # a command, not a group
            break
        if a.startswith("-"):
            continue
        cmd = cmd.get_command(cmd.context_class(cmd), a)
        if cmd is None:
            return None
    return None if hasattr(cmd, "get_command") else cmd


def _running_command() -> Any:
    """The command being run (its click context), or None outside one."""
    try:   # typer vendors click from 0.2x on; the plain package before
        from typer._click.globals import get_current_context
    except ImportError:                                  # pragma: no cover
        from click import get_current_context
    ctx = get_current_context(silent=True)
    return None if ctx is None else ctx.command


#: Library parameters that the commands spell otherwise: the message size is
#: ``message_bytes`` in the library and ``-s/--size`` on the command line.
PARAMETER_OPTIONS = {"message_bytes": ("size", "sizes")}


def as_flags(error: TopocollError, command: Any) -> str:
    """``error``'s message with every library parameter that its ``item`` names (one, or
    several separated by ``", "``) and that is an option of ``command`` (under its own
    name or the one :data:`PARAMETER_OPTIONS` gives) written as that option's long flag
    (``time_target`` -> ``--time-target``, ``message_bytes`` -> ``--size``); other text
    unchanged."""
    msg = str(error)
    item = getattr(error, "item", None)
    if not item or command is None:
        return msg
    flags = {p.name: max(p.opts, key=len) for p in command.params
             if p.param_type_name == "option" and any(o.startswith("--") for o in p.opts)}
    for name in item.split(", "):
        option = next((o for o in (name, *PARAMETER_OPTIONS.get(name, ())) if o in flags),
                      None)
        if option is not None:
            # the first mention: later ones may be the plain word ("line rate")
            msg = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", flags[option], msg,
                         count=1)
    return msg


class OneLineGroup(TyperGroup):
    """The command group whose every error is one line (see the module docstring)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        try:
            code = super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                standalone_mode=False, **extra)
        except typer.Exit as e:
            code = e.exit_code
        except typer.Abort:
            fail("aborted", 1)
            code = 1
        except KeyboardInterrupt:
            fail("interrupted", 130)
            code = 130
        except TopocollError as e:
            fail(as_flags(e, _leaf_command(self, list(sys.argv[1:] if args is None
                                                      else args))))
            code = 2
        except OSError as e:
            fail(f"{e.strerror or e}: {e.filename}" if e.filename else str(e))
            code = 2
        except typer.TyperException as e:     # usage errors: unknown option, bad value
            msg = e.format_message() if hasattr(e, "format_message") else str(e)
            ctx = getattr(e, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            fail(f"{msg}{hint}", getattr(e, "exit_code", 2))
            code = getattr(e, "exit_code", 2)
        except Exception as e:                  # a bug: say where to report it
            if os.environ.get("TOPOCOLL_DEBUG"):
                raise
            fail(f"internal error in topocoll {__version__}: {type(e).__name__}: {e} "
                 f"(please report it at {REPORT_URL} with the command that caused it)", 3)
            code = 3
        sys.exit(code if isinstance(code, int) else 0)


def _version(value: bool) -> None:
    if value:
        out.print(f"topocoll {__version__}", highlight=False)
        raise typer.Exit(0)


app = typer.Typer(cls=OneLineGroup, add_completion=False, no_args_is_help=True,
                  pretty_exceptions_enable=False,
                  help="topocoll: topologies, collective schedules, verification and cost.")


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True,
        help="Print the version and exit.")] = False) -> None:
    """topocoll: topologies, collective schedules, verification and cost."""

# Piped output (CI logs, `make demo | tee`) would otherwise be cut to rich's default 80
# columns, truncating every table cell; a terminal or an explicit COLUMNS still wins.
_PIPE_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
out = Console(soft_wrap=True, width=_PIPE_WIDTH)
err = Console(stderr=True, soft_wrap=True)


def busy(what: str, as_json: bool = False):
    """A spinner with the elapsed time on stderr for work that may take seconds: shown only
    when stderr is a terminal, never with ``--json``, gone when the work ends. Returns the
    rich Progress; ``bar.update(bar.task_ids[0], description=...)`` says what runs now.
    """
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                   console=err, transient=True, disable=as_json or not err.is_terminal)
    bar.add_task(what, total=None)
    return bar


JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
TopoOpt = Annotated[str, typer.Option("--topology", "-t",
                                      help="Generator spec (e.g. torus:8x8,bw=400Gbps) or a file.")]
BackendOpt = Annotated[str, typer.Option(
    "--backend", "-b",
    help="Cost model (topocoll list backends): analytical (alpha-beta), flow, packet "
         "(simulators), ns3 (needs ns-3).")]
AlphaOpt = Annotated[str, typer.Option(
    "--alpha", help="Per-transfer overhead (time with units: 2us, 500ns; a bare number is "
                    "seconds).")]
CollectiveOpt = Annotated[str, typer.Option(
    "--collective", "-c", help="allreduce, allgather, reduce_scatter, broadcast, reduce or "
                               "alltoall.")]
RanksOpt = Annotated[str | None, typer.Option(
    help="Subgroup of at least two ranks, comma-separated: 0,1,2,3 (default: every rank).")]
RootOpt = Annotated[int | None, typer.Option(help="Root rank of broadcast / reduce.")]
NoCacheOpt = Annotated[bool, typer.Option(
    "--no-cache", help="Do not read or keep schedules in the schedule cache "
                       "($TOPOCOLL_CACHE, else ~/.cache/topocoll).")]


def handle_errors(fn):
    """Turn library and file errors into one line on stderr and exit status 2 (also done
    by :class:`OneLineGroup` for the whole app; kept per command so that a command works
    the same when invoked on its own)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TopocollError as e:
            raise fail(as_flags(e, _running_command())) from None
        except OSError as e:
            raise fail(f"{e.strerror or e}: {e.filename}" if e.filename else str(e)) from None

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
    if text is None:
        return None
    parts = [x for x in text.replace(" ", "").split(",") if x]
    try:
        ranks = tuple(int(x) for x in parts)
    except ValueError:
        raise InputError(f"--ranks must be comma-separated integers, got {text!r}",
                         item="--ranks") from None
    if not ranks:
        raise InputError(f"--ranks names no rank (got {text!r})", item="--ranks")
    return ranks


def size_opt(text: str, option: str = "--size") -> float:
    """A message size for a command that asks for a time: a whole number of bytes > 0."""
    try:
        n = parse_size(text)
    except UnitError as e:
        raise InputError(f"{option}: {e}", item=option) from None
    if n <= 0:
        raise InputError(f"{option}: size must be > 0 bytes (a time is asked for), got "
                         f"{text!r}", item=option)
    if n > MAX_MESSAGE_BYTES:
        raise InputError(f"{option}: {text!r} is more than 1 PiB per collective (no "
                         "accelerator holds it)", item=option)
    return n


#: Largest message size a command accepts (1 PiB): beyond it a time is nonsense.
MAX_MESSAGE_BYTES = 2**50


def time_opt(text: str, option: str) -> float:
    """A duration option (``2us``, or a bare number of seconds)."""
    try:
        return parse_time(text)
    except UnitError as e:
        raise InputError(f"{option}: {e}", item=option) from None


def rate_opt(text: str, option: str) -> float:
    """A rate option (``200GB/s``, or a bare number of bytes/s)."""
    try:
        return parse_rate(float(text) if _is_number(text) else text)
    except UnitError as e:
        raise InputError(f"{option}: {e}", item=option) from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def choice_opt(value: str, choices, option: str) -> str:
    """``value`` if it is one of ``choices`` (checked whether or not it is used)."""
    if value not in choices:
        raise InputError(f"{option} must be one of {', '.join(choices)}, got {value!r}",
                         item=option)
    return value


def model_opt(backend: str, alpha: str, **options):
    """The cost model of ``--backend`` with ``--alpha`` (validated before anything runs)."""
    from ..sim.backends import backend_names, cost_model

    choice_opt(backend, backend_names(), "--backend")
    return cost_model(backend, alpha=time_opt(alpha, "--alpha"), **options)


def collective_opt(kind: str, topology, ranks: str | None, root: int | None):
    """The collective of ``-c``, ``--ranks`` and ``--root`` on ``topology``: a known kind,
    at least two ranks of the topology, a root only where the kind has one."""
    from ..collective import COLLECTIVE_KINDS, make_collective

    if kind not in COLLECTIVE_KINDS:
        raise InputError(f"--collective: unknown collective {kind!r}; choose one of "
                         f"{', '.join(COLLECTIVE_KINDS)}", item="--collective")
    group = parse_ranks(ranks) or tuple(range(topology.num_ranks))
    for r in group:
        if not 0 <= r < topology.num_ranks:
            raise InputError(f"--ranks: rank {r} is not a rank of {topology.name} "
                             f"(0..{topology.num_ranks - 1})", item=f"rank {r}")
    if len(group) < 2:
        raise InputError(f"--ranks: {kind} needs at least two ranks, got {list(group)}",
                         item="--ranks")
    if root is not None and kind not in ("broadcast", "reduce"):
        raise InputError(f"--root: {kind} has no root (only broadcast and reduce do)",
                         item="--root")
    if root is not None and root not in group:
        raise InputError(f"--root: rank {root} is not one of the ranks", item="--root")
    return make_collective(kind, group, 1, root)


def schedule_cache(no_cache: bool):
    """The user's schedule cache, or None with ``--no-cache``."""
    if no_cache:
        return None
    from ..selection import ScheduleCache

    return ScheduleCache()
