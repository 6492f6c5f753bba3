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

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass

from .. import __version__
from ..errors import InputError, NotSupportedError
from ..procs import process_pool
from .spec import Point, SweepSpec
from .store import SweepStore

__all__ = ["SweepSummary", "run_sweep", "spec_hash", "FLUSH_POINTS", "SWEEP_BACKENDS"]

SWEEP_BACKENDS = ("local", "ray")

#: Finished points written to the database in one transaction. A kill loses at most these
#: (they are run again on resume); a count, not a time, so runs stay reproducible.
FLUSH_POINTS = 32


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
              backend: str = "local", address: str | None = None,
              flush_every: int = FLUSH_POINTS,
              progress: Callable[[int, int, int, int], None] | None = None) -> SweepSummary:
    """Run every point of ``spec`` not yet in ``store`` and record each as it finishes.

    ``backend``: ``"local"`` (a process pool of ``workers``) or ``"ray"`` (tasks on the
    Ray cluster at ``address``, or on a local one of ``workers`` CPUs started and stopped
    here). Either way only this process writes ``store``, ``flush_every`` points per
    transaction. ``progress(done, total, failed, recorded)`` is called after every point
    (``recorded``: points safely in the database).
    """
    if backend not in SWEEP_BACKENDS:
        raise InputError(f"backend must be one of {', '.join(SWEEP_BACKENDS)}, got {backend!r}",
                         item="backend")
    if isinstance(flush_every, bool) or not isinstance(flush_every, int) or flush_every < 1:
        raise InputError(f"flush_every must be a positive integer, got {flush_every!r}",
                         item="flush_every")
    points = spec.points()
    done = store.done()
    todo = [p for p in points if p.point_id not in done]
    sh = spec_hash(spec)
    failed = ran = 0
    if progress is not None:
        progress(len(points) - len(todo), len(points), 0, len(points) - len(todo))

    buffer: list[tuple] = []
    recorded = len(points) - len(todo)

    def flush() -> None:
        nonlocal recorded
        store.record_many(buffer)
        recorded += len(buffer)
        buffer.clear()

    def record(p: Point, res) -> None:
        nonlocal failed, ran
        status, metrics, error, dt = res
        buffer.append((p.point_id, sh, p.command, p.options, status, error, metrics, dt,
                       __version__))
        if len(buffer) >= flush_every:
            flush()
        ran += 1
        failed += status != "ok"
        if progress is not None:
            progress(len(points) - len(todo) + ran, len(points), failed, recorded)

    try:
        if backend == "ray":
            _dispatch_ray(todo, execute, workers, record, address)
        else:
            _dispatch(todo, execute, workers, record)
    finally:
        flush()
    store.refresh_view()
    return SweepSummary(len(points), len(points) - len(todo), ran, failed)


def _dispatch(todo: list[Point], execute: Callable, workers: int, record: Callable) -> None:
    if workers <= 1:
        for p in todo:
            record(p, _run_point(execute, p.argv()))
    elif todo:
        with process_pool(workers) as pool:
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


LOCAL_RAY_ATTEMPTS = 3


def _start_local_ray(ray, workers: int, kw: dict, *, spare: int | None = None,
                     attempts: int = LOCAL_RAY_ATTEMPTS) -> None:
    """Start a local Ray cluster, trying again when it does not come up.

    Ray waits a fixed 30 s for its raylet to register with the GCS and then raises a bare
    ``Exception``; on a loaded two-core machine that can happen once and not the next time.
    A failed attempt leaves its GCS and raylet running (the half-built node is never
    handed back), so the processes it started under this one are killed before the next
    try; ``spare`` (the reaper) is kept. The last failure is raised as ``RuntimeError``.
    """
    from .reaper import kill_processes, process_tree

    me = os.getpid()
    for _ in range(attempts):
        before = process_tree(me)
        try:
            ray.init(address="local", num_cpus=max(1, workers), include_dashboard=False,
                     **kw)
            return
        except Exception as e:  # noqa: BLE001 - Ray raises a bare Exception on a timeout
            err = e
        with contextlib.suppress(Exception):     # a half start may leave nothing to stop
            ray.shutdown()
        kill_processes({pid: t0 for pid, t0 in process_tree(me).items()
                        if pid != spare and before.get(pid) != t0})
    raise RuntimeError(f"{attempts} attempts, the last: {err}")


def _dispatch_ray(todo: list[Point], execute: Callable, workers: int, record: Callable,
                  address: str | None) -> None:
    """Run the points as Ray tasks (one CPU each, no retries: a failure is a result),
    ``2 x workers`` in flight, results recorded by the caller as they finish."""
    if not todo:
        return
    try:
        import ray
    except ImportError:
        raise NotSupportedError("the Ray backend needs Ray: pip install 'topocoll[ray]'") \
            from None
    import logging

    started = not ray.is_initialized()
    reaper = None
    if started:
        kw = dict(log_to_driver=False, logging_level=logging.ERROR, configure_logging=False)
        try:
            if address:
                ray.init(address=address, **kw)
            else:
                from .reaper import start_reaper

                reaper = start_reaper()          # the local cluster dies with this process
                _start_local_ray(ray, workers, kw, spare=reaper.pid)
        except (ConnectionError, RuntimeError, ValueError) as e:
            if reaper is not None:
                reaper.terminate()
                reaper.wait()
            if address:
                raise InputError(f"cannot reach the Ray cluster at {address!r}: {e}",
                                 item="address") from None
            raise InputError(f"the local Ray cluster did not start: {e}",
                             item="backend") from None
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(_run_point)
        slots = 2 * max(1, workers if not address else
                        int(ray.cluster_resources().get("CPU", workers)))
        pending: dict = {}
        it = iter(todo)
        for p in it:
            pending[task.remote(execute, p.argv())] = p
            if len(pending) >= slots:
                break
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                p = pending.pop(ref)
                record(p, ray.get(ref))
                nxt = next(it, None)
                if nxt is not None:
                    pending[task.remote(execute, nxt.argv())] = nxt
    finally:
        if started:
            ray.shutdown()
        if reaper is not None:
            reaper.terminate()
            reaper.wait()
