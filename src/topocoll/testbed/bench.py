"""Measured against predicted: time collectives on the emulated cluster.

:func:`bench` runs :mod:`topocoll.testbed.worker` on every rank of a testbed once per
algorithm and sets the slowest rank's median time beside the analytical prediction of
:class:`~topocoll.cost.AlphaBeta` for the same schedule on the same topology.

``--algorithm torch`` (torch's own gloo collective) has no schedule of ours; it is
predicted as the ring schedule, since gloo's CPU allreduce is ring-based. A ``+duplex``
suffix runs a schedule over two process groups, one per direction
(:func:`topocoll.runtime.duplex_groups`); the prediction is the schedule's.

Each row also carries the flow-level prediction of :class:`~topocoll.sim.FlowSim` (max-min
fair sharing, steps relaxed to per-rank dependencies), which sees what the barrier model
cannot: flows of one step that finish at different times.

What the prediction leaves out (see ``docs/studies/testbed.md``): TCP/IP/Ethernet header
overhead (a 1448-byte payload per 1514-byte frame, so about 4.4 % less goodput than the
shaped rate), the CPU cost of reductions and copies, Python and gloo per-message overheads,
and TCP's round trips (the models charge one one-way latency per step). Link latency itself
is applied by netem or, without it, by the userspace delay line (``Testbed.delay_mode``),
which adds about 0.2 ms per relay crossing.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

from ..cost import AlphaBeta, CostModel
from ..selection import find_algorithm
from ..sim import FlowSim
from ..topology import Topology
from .launch import run_workers
from .netns import Testbed, TestbedError

__all__ = ["bench", "predict"]


def predict(topology: Topology, algorithm: str, collective: str, size_bytes: float,
            model: CostModel | None = None) -> float:
    """Predicted time of ``algorithm`` on ``topology`` under ``model`` (default: the
    analytical alpha-beta model with congestion).

    Examples
    --------
    >>> from topocoll.topology.spec import parse_spec
    >>> t = parse_spec("ring:4,bw=100Mbps,lat=0s")
    >>> round(predict(t, "ring", "allreduce", 2**23), 4)   # 2 (p-1)/p n / B
    1.0066
    >>> round(predict(t, "ring", "allreduce", 2**23, FlowSim(bound=False)), 4)
    1.0066
    """
    name = algorithm.partition("+")[0]
    name = "ring" if name == "torch" else name
    sched = find_algorithm(name, collective)(topology)
    return (model or AlphaBeta(bound=False)).evaluate(sched, topology, size_bytes).time


def bench(tb: Testbed, topology: Topology, algorithms: list[str], size_bytes: int, *,
          collective: str = "allreduce", iters: int = 3, timeout: float = 1800.0,
          progress: Callable[[str], None] | None = None) -> list[dict]:
    """Time every algorithm on testbed ``tb`` (built from ``topology``).

    Returns
    -------
    list of dict
        One per algorithm: ``algorithm``, ``collective``, ``size_bytes``, ``measured_s``
        (median over ``iters`` of the slowest rank), ``times_s``, ``predicted_s``,
        ``error`` (measured / predicted - 1), ``predicted_flow_s`` (flow level),
        ``delay_emulated``, ``delay_mode``, and the CPU picture of the timed runs:
        ``wall_s``, ``workers_cpu_s`` (CPU time of all ranks, every thread),
        ``workers_cpu_share`` (that over ``wall_s`` times the number of cores) and
        ``machine_busy`` (fraction of all cores busy with anything meanwhile, other users'
        jobs included, from ``/proc/stat``).

    Raises
    ------
    NotSupportedError
        For an unknown algorithm (checked before anything runs).
    TestbedError
        If a worker fails.
    """
    predicted = {a: predict(topology, a, collective, size_bytes) for a in algorithms}
    flow = {a: predict(topology, a, collective, size_bytes, FlowSim(bound=False))
            for a in algorithms}
    rows = []
    for a in algorithms:
        if progress:
            progress(a)
        res = run_workers(tb, [sys.executable, "-m", "topocoll.testbed.worker", "--topology",
                               tb.spec, "--algorithm", a, "--collective", collective,
                               "--size", str(size_bytes), "--iters", str(iters)],
                          timeout=timeout)
        bad = [r for r in res if r.returncode != 0]
        if bad:
            raise TestbedError(f"{a}: rank {bad[0].rank} exited with {bad[0].returncode}: "
                               f"{bad[0].output.strip().splitlines()[-1:]}")
        line = [x for x in res[0].output.splitlines() if x.startswith("{")][-1]
        m = json.loads(line)
        rows.append({"algorithm": a, "collective": collective, "size_bytes": size_bytes,
                     "measured_s": m["measured_s"], "times_s": m["times_s"],
                     "predicted_s": predicted[a],
                     "error": m["measured_s"] / predicted[a] - 1.0,
                     "predicted_flow_s": flow[a], "delay_emulated": tb.delay_emulated,
                     "delay_mode": tb.delay_mode, "wall_s": m["wall_s"],
                     "workers_cpu_s": m["cpu_s"],
                     "workers_cpu_share": m["cpu_s"] / m["wall_s"] / (os.cpu_count() or 1),
                     "machine_busy": m["machine_busy"]})
    return rows
