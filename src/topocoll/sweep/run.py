"""Running a sweep: the points not yet recorded, on a local process pool, results written
by the driver as they arrive.

The sweep layer does not import the command line: the caller passes ``execute``, a
picklable module-level function ``execute(argv) -> (exit_code, stdout, stderr)`` that runs
one ``topocoll`` command (the CLI passes its in-process runner). Workers are processes
started once; each runs many points, so a point costs what its command costs, not an
interpreter start. Workers ask the kernel to end them when the driver dies
(``PR_SET_PDEATHSIG``), so a killed sweep leaves no orphans.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import signal
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context

from .. import __version__
from .spec import Point, SweepSpec
from .store import SweepStore

__all__ = ["SweepSummary", "run_sweep", "spec_hash"]


@dataclass(frozen=True)
class SweepSummary:
    """What a run did: points in the spec, already recorded, run now, failed now."""

    total: int
    skipped: int
    ran: int
    failed: int


def spec_hash(spec: SweepSpec) -> str:
    blob = json.dumps([spec.command, spec.grid, spec.fixed, spec.sample, spec.repeat],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _die_with_parent() -> None:
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except OSError:   # pragma: no cover - not Linux
        pass


def _run_point(execute: Callable, argv: list[str]) -> tuple[str, object, str | None, float]:
    t0 = time.perf_counter()
    try:
        code, out, err = execute(argv)
    except Exception as e:   # noqa: BLE001 - a failing point is recorded, the sweep goes on
        return "error", None, f"{type(e).__name__}: {e}", time.perf_counter() - t0
    dt = time.perf_counter() - t0
    if code != 0:
        msg = (err or out or "").strip().splitlines()
        return "error", None, (msg[-1] if msg else f"exit status {code}"), dt
    try:
        return "ok", json.loads(out), None, dt
    except json.JSONDecodeError:
        return "error", None, "the command did not print JSON", dt


def run_sweep(spec: SweepSpec, store: SweepStore, execute: Callable, *, workers: int = 2,
              progress: Callable[[int, int, int], None] | None = None) -> SweepSummary:
    """Run every point of ``spec`` not yet in ``store`` and record each as it finishes.

    ``progress(done, total, failed)`` is called after every point.
    """
    points = spec.points()
    done = store.done()
    todo = [p for p in points if p.point_id not in done]
    sh = spec_hash(spec)
    failed = ran = 0
    if progress is not None:
        progress(len(points) - len(todo), len(points), 0)

    def record(p: Point, res) -> None:
        nonlocal failed, ran
        status, metrics, error, dt = res
        store.record(p.point_id, sh, p.command, p.options, status, error, metrics, dt,
                     __version__)
        ran += 1
        failed += status != "ok"
        if progress is not None:
            progress(len(points) - len(todo) + ran, len(points), failed)

    if workers <= 1:
        for p in todo:
            record(p, _run_point(execute, p.argv()))
    elif todo:
        ctx = get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                 initializer=_die_with_parent) as pool:
            pending = {}
            it = iter(todo)
            for p in it:                     # keep two points in flight per worker
                pending[pool.submit(_run_point, execute, p.argv())] = p
                if len(pending) >= 2 * workers:
                    break
            while pending:
                fin, _ = wait(pending, return_when=FIRST_COMPLETED)
                for f in fin:
                    p = pending.pop(f)
                    record(p, f.result())
                    nxt = next(it, None)
                    if nxt is not None:
                        pending[pool.submit(_run_point, execute, nxt.argv())] = nxt
    store.refresh_view()
    return SweepSummary(len(points), len(points) - len(todo), ran, failed)
