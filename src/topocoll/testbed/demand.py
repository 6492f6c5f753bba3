"""Run traffic matrices for real on an emulated cluster, and the fluid time they predict.

A *phase* is an ``n x n`` matrix of bytes (``D[s, t]`` from rank ``s`` to rank ``t``), all
of it in flight at once, as a training iteration's exchanges are (TopoOpt's model,
:mod:`topocoll.fabric.topoopt.job`). :func:`run_phases` starts one peer per rank in its
namespace (:mod:`topocoll.testbed.demand_peer`): every peer opens one TCP connection to
each rank it will ever send to, then, phase after phase, on the coordinator's word sends
its row of the phase on those connections and reports the moment it has received its
column. A phase takes from the word to the last report (one clock: the namespaces share
``CLOCK_MONOTONIC``); the next phase starts only after it.

:func:`predict_phase` is the fluid prediction on the same paths: every pair's bytes along
:meth:`Topology.path` (the routes the testbed installs), the busiest link's wire bytes
over its rate. Wire bytes are payload times :data:`WIRE_OVERHEAD`: a full TCP segment
carries 1,448 payload bytes (MSS with timestamps) in a 1,514-byte frame, which is what
HTB counts at the testbed's 1,500-byte MTU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

import numpy as np

from ..topology import Topology
from .netns import Testbed, TestbedError

__all__ = ["WIRE_OVERHEAD", "predict_phase", "maxmin_phase", "path_loads", "run_phases"]

#: Frame bytes per payload byte of a full-sized TCP segment (1,514 / 1,448).
WIRE_OVERHEAD = 1514 / 1448


def path_loads(topology: Topology, demand: np.ndarray) -> dict[tuple[int, int], float]:
    """Bytes on every directed link when each pair's ``demand`` follows
    :meth:`Topology.path`."""
    D = np.asarray(demand, float)
    loads: dict[tuple[int, int], float] = {}
    for s, t in zip(*np.nonzero(D), strict=True):
        p = topology.path(int(s), int(t))
        for a, b in zip(p, p[1:], strict=False):
            loads[(a, b)] = loads.get((a, b), 0.0) + float(D[s, t])
    return loads


def predict_phase(topology: Topology, demand: np.ndarray, *,
                  overhead: float = WIRE_OVERHEAD) -> float:
    """Seconds for ``demand`` (bytes, all in flight at once) on ``topology``: the busiest
    link's wire bytes over its rate (parallel links add up), on the testbed's paths."""
    cap: dict[tuple[int, int], float] = {}
    for lk in topology.links:
        cap[(lk.src, lk.dst)] = cap.get((lk.src, lk.dst), 0.0) + lk.bandwidth
    loads = path_loads(topology, demand)
    return max((x * overhead / cap[k] for k, x in loads.items()), default=0.0)


def maxmin_phase(topology: Topology, demand: np.ndarray, *,
                 overhead: float = WIRE_OVERHEAD) -> float:
    """Seconds for ``demand`` when every pair is one flow on its :meth:`Topology.path` and
    the flows share links max-min fairly (progressive filling, recomputed whenever a flow
    ends), as long-lived TCP flows of equal round-trip time approach. Never below
    :func:`predict_phase`: the busiest link may idle before the end while its last flows
    are held back elsewhere."""
    D = np.asarray(demand, float)
    cap: dict[tuple[int, int], float] = {}
    for lk in topology.links:
        cap[(lk.src, lk.dst)] = cap.get((lk.src, lk.dst), 0.0) + lk.bandwidth
    keys = sorted(cap)
    index = {k: i for i, k in enumerate(keys)}
    c = np.array([cap[k] for k in keys])
    pairs = list(zip(*np.nonzero(D), strict=True))
    if not pairs:
        return 0.0
    use = np.zeros((len(pairs), len(keys)), bool)
    for f, (s, t) in enumerate(pairs):
        p = topology.path(int(s), int(t))
        for a, b in zip(p, p[1:], strict=False):
            use[f, index[(a, b)]] = True
    left = np.array([D[s, t] * overhead for s, t in pairs])
    live = left > 0
    now = 0.0
    while live.any():
        rate = np.zeros(len(pairs))
        frozen = ~live
        room = c.copy()
        while not frozen.all():
            n_on = use[~frozen].sum(axis=0)
            share = np.where(n_on > 0, room / np.maximum(n_on, 1), np.inf)
            lk = int(np.argmin(share))
            x = float(share[lk])
            grow = ~frozen
            rate[grow] += x
            room -= x * use[grow].sum(axis=0)
            hit = grow & use[:, lk]
            frozen |= hit
            room[lk] = 0.0
            # flows on any other saturated link stop too
            sat = room <= 1e-9 * c
            frozen |= use[:, sat].any(axis=1)
        dt = float(np.min(np.where(live, left / np.where(rate > 0, rate, np.inf), np.inf)))
        now += dt
        left = np.where(live, left - rate * dt, 0.0)
        live &= left > 1e-9 * np.maximum(D.max(), 1.0)
    return now


def run_phases(tb: Testbed, phases: Sequence[np.ndarray], *, port: int = 29711,
               timeout: float = 600.0, detail: bool = False) -> list:
    """Measured seconds of each phase (see the module docstring) on testbed ``tb``; with
    ``detail``, per phase a dict: ``s`` (that time), ``first_byte_s`` (when the first
    receiver got its first byte) and ``ends_s`` (when each rank had its column), both
    from the word.

    Raises
    ------
    TestbedError
        If a peer fails, or the phases do not finish within ``timeout`` seconds.
    """
    n = tb.num_ranks
    mats = [np.asarray(p, dtype=np.int64) for p in phases]
    for k, M in enumerate(mats):
        if M.shape != (n, n) or (M < 0).any():
            raise TestbedError(f"phase {k}: a traffic phase is a non-negative {n} x {n} "
                               f"matrix of bytes")
    plan = {"addrs": list(tb.rank_addr), "port": port,
            "phases": [M.tolist() for M in mats]}
    fd, path = tempfile.mkstemp(prefix="topocoll-demand-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(plan, f)
    procs = []
    deadline = time.monotonic() + timeout
    try:
        for r in range(n):
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", tb.ns(r), sys.executable, "-m",
                 "topocoll.testbed.demand_peer", path, str(r)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, bufsize=1))
        for want in ("listening", "connected"):   # every peer listens before any connects
            for r, p in enumerate(procs):
                _expect(p, r, want, deadline)
            for p in procs:
                p.stdin.write("next\n")
        for r, p in enumerate(procs):
            _expect(p, r, "accepted", deadline)
        out = []
        for k in range(len(mats)):
            t0 = time.monotonic()
            for p in procs:
                p.stdin.write(f"go {k}\n")
            lines = [_expect(p, r, f"done {k}", deadline).split() for r, p in
                     enumerate(procs)]
            ends = [float(x[2]) - t0 for x in lines]
            firsts = [float(x[3]) - t0 for x in lines if x[3] != x[2]]
            out.append({"s": max(ends), "first_byte_s": min(firsts, default=max(ends)),
                        "ends_s": ends} if detail else max(ends))
        for p in procs:
            p.stdin.write("quit\n")
            p.stdin.close()
        for r, p in enumerate(procs):
            if p.wait(timeout=max(1.0, deadline - time.monotonic())):
                raise TestbedError(f"demand peer of rank {r} failed: "
                                   f"{p.stderr.read()[-300:]}")
        return out
    except subprocess.TimeoutExpired as e:
        raise TestbedError(f"testbed {tb.name}: the traffic phases took more than "
                           f"{timeout:g} s") from e
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        os.unlink(path)


def _expect(p: subprocess.Popen, rank: int, want: str, deadline: float) -> str:
    """The next line of peer ``rank`` if it starts with ``want``."""
    import select

    left = deadline - time.monotonic()
    if left <= 0 or not select.select([p.stdout], [], [], left)[0]:
        raise TestbedError(f"demand peer of rank {rank}: no {want!r} in time")
    line = p.stdout.readline().strip()
    if not line.startswith(want):
        err = p.stderr.read()[-300:] if p.poll() is not None else ""
        raise TestbedError(f"demand peer of rank {rank}: expected {want!r}, got "
                           f"{line!r} {err}")
    return line
