"""Ends the processes a sweep's driver started when the driver dies, even by ``kill -9``.

A local Ray cluster is a tree of processes (GCS, raylet, agents, workers) under the
driver. Ray stops most of it when the driver dies, but not all (its dashboard and
runtime-environment agents outlive it). The reaper, started by the driver, watches the
driver's process id and the tree under it (from ``/proc``, every 0.2 s); when the driver
is gone it sends ``SIGKILL`` to every process it last saw in that tree (matched by start
time, so a reused process id is never hit). Linux only, like ``PR_SET_PDEATHSIG``.

Run as ``python -m topocoll.sweep.reaper DRIVER_PID``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

__all__ = ["kill_processes", "process_tree", "reap_after", "start_reaper"]


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of ``pid``, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    return int(rest[1]), int(rest[19])


def process_tree(root: int) -> dict[int, int]:
    """Every descendant of ``root`` (pid -> start time)."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                children.setdefault(st[0], []).append(int(entry))
                starts[int(entry)] = st[1]
    out, todo = {}, [root]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out[c] = starts[c]
                todo.append(c)
    return out


def reap_after(driver: int, interval: float = 0.2, ready=None) -> int:
    """Watch ``driver``; when it is gone, kill what was last seen under it. Returns the
    number of processes killed. ``ready`` is called once the first look is taken."""
    me = os.getpid()
    seen: dict[int, int] = {}
    start = _stat(driver)
    while start is not None and _stat(driver) == start:
        tree = process_tree(driver)
        tree.pop(me, None)
        seen.update(tree)
        if ready is not None:
            ready()
            ready = None
        time.sleep(interval)
    return kill_processes(seen)


def kill_processes(procs: dict[int, int]) -> int:
    """``SIGKILL`` every process of ``procs`` (pid -> start time, as from
    :func:`process_tree`) that still runs with that start time (a reused pid is never
    hit). Returns the number killed."""
    killed = 0
    for pid, t0 in procs.items():
        st = _stat(pid)
        if st is not None and st[1] == t0:
            with contextlib.suppress(OSError):        # gone since the look
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed


def start_reaper():
    """Start a reaper for this process (a ``subprocess.Popen``; terminate it on a normal
    shutdown) and return once it is watching (a loaded machine may take seconds to start
    an interpreter; what the driver starts before then would otherwise go unseen)."""
    import subprocess

    p = subprocess.Popen([sys.executable, "-m", "topocoll.sweep.reaper", str(os.getpid())],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    p.stdout.readline()              # "ready", or "" if the reaper could not start
    p.stdout.close()
    return p


if __name__ == "__main__":          # pragma: no cover - exercised through start_reaper
    def _ready() -> None:
        print("ready", flush=True)
        sys.stdout.close()

    reap_after(int(sys.argv[1]), ready=_ready)
