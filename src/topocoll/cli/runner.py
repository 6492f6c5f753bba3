"""Run a ``topocoll`` command in this process and capture what it prints (the sweep
runner's executor: a worker runs many points without starting an interpreter each).

The click command tree is built from the typer app once per process: building it costs
about 0.13 s (typer evaluates every command's annotations), four fifths of a small
``compare`` point before this cache."""

from __future__ import annotations

import contextlib
import io

__all__ = ["run_argv"]

_COMMAND = None


def _command():
    global _COMMAND
    if _COMMAND is None:
        import typer

        from .app import app

        _COMMAND = typer.main.get_command(app)
    return _COMMAND


def run_argv(argv: list[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``topocoll *argv``."""
    cmd = _command()
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cmd.main(args=list(argv), prog_name="topocoll")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code, out.getvalue(), err.getvalue()
