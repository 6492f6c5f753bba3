"""Run a ``topocoll`` command in this process and capture what it prints (the sweep
runner's executor: a worker runs many points without starting an interpreter each)."""

from __future__ import annotations

import contextlib
import io

__all__ = ["run_argv"]


def run_argv(argv: list[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``topocoll *argv``."""
    from .app import app

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            app(args=list(argv), prog_name="topocoll")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code, out.getvalue(), err.getvalue()
