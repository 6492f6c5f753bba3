"""Worker processes: one way to start them, shared by every part that fans work out.

``process_pool(jobs)`` is a :class:`~concurrent.futures.ProcessPoolExecutor` whose
workers are started with ``spawn`` (a fork would copy a parent's threads' locks, and the
command line runs a progress bar thread) and die with their parent (Linux
``PR_SET_PDEATHSIG``), so an interrupted command leaves no orphans. ``available_cores``
is what ``--jobs 0`` means: the cores this process may run on.

Work never depends on how it was split: callers give each task its own seed and put
results back in task order, so one job and many give the same bytes.

Examples
--------
>>> available_cores() >= 1
True
>>> with process_pool(1) as pool:
...     pool.submit(pow, 2, 10).result()
1024
"""

from __future__ import annotations

import ctypes
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

__all__ = ["process_pool", "available_cores", "die_with_parent"]


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:   # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def die_with_parent() -> None:
    """Ask the kernel to kill this process when its parent dies (a pool initializer)."""
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except OSError:   # pragma: no cover - not Linux
        pass


def process_pool(jobs: int) -> ProcessPoolExecutor:
    """A pool of ``jobs`` spawned worker processes that die with this one."""
    return ProcessPoolExecutor(max_workers=max(1, int(jobs)), mp_context=get_context("spawn"),
                               initializer=die_with_parent)
