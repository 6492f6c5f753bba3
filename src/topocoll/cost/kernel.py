"""The alpha-beta step kernel: how per-step loads become time, in one place.

Every estimate of a schedule's time in the package charges steps the same way: a step
that moves data costs ``alpha`` (per-step overhead) plus its latency term plus its busiest
link's bytes over that link's bandwidth; steps are barriers, so the total is the sum.
:class:`~topocoll.cost.AlphaBeta` charges each step its slowest *transfer* (latency of
its route plus the load of its busiest link) through :func:`step_charges`; synthesizers
choose among their own candidates (pipeline depths, horizons, portfolios) with
:func:`barrier_time` on loads they know, or :func:`model_time` on a built schedule,
which charges every step its longest route latency plus its busiest link (an upper
bound on :class:`~topocoll.cost.AlphaBeta`, equal to it where the busiest link lies on
the slowest route).

References
----------
.. [1] Hockney, "The communication challenge for MPP: Intel Paragon and Meiko CS-2",
   Parallel Computing 20(3), 1994 (the alpha-beta model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..schedule import Schedule
    from ..topology import Topology

__all__ = ["step_charges", "barrier_time", "step_loads", "model_time"]


def step_charges(busy: np.ndarray, latency: float | np.ndarray = 0.0, alpha: float = 0.0,
                 used: np.ndarray | None = None) -> np.ndarray:
    """Per-step time ``alpha + latency + busy`` of the steps that move data, 0 for the
    others.

    Parameters
    ----------
    busy : array
        Per step, the serialization time of its busiest link in seconds: shape
        ``(steps,)``, or ``(steps, links)`` seconds per link (the maximum is taken).
    latency : float or array
        Per-step latency term (seconds): a scalar for every step, or one per step.
    alpha : float
        Per-step overhead (seconds).
    used : bool array, optional
        Steps that move data (default: every step).

    Returns
    -------
    numpy.ndarray
        Shape ``(steps,)``.

    Examples
    --------
    >>> step_charges(np.array([2.0, 0.0, 1.0]), 0.5, 1.0,
    ...              used=np.array([True, False, True])).tolist()
    [3.5, 0.0, 2.5]
    """
    busy = np.asarray(busy, dtype=float)
    if busy.ndim == 2:
        busy = busy.max(axis=1) if busy.shape[1] else np.zeros(len(busy))
    t = alpha + latency + busy
    if used is None:
        return np.asarray(t, dtype=float)
    return np.where(used, t, 0.0)


def barrier_time(busy: np.ndarray, latency: float | np.ndarray = 0.0, alpha: float = 0.0, *,
                 used: np.ndarray | None = None, repeat: np.ndarray | None = None) -> float:
    """Total time of barrier steps: the sum of :func:`step_charges` over the steps that
    move data, step ``s`` counted ``repeat[s]`` times.

    Parameters
    ----------
    busy, latency, alpha, used
        As for :func:`step_charges`.
    repeat : int array, optional
        How many identical steps each entry stands for (a pipeline's steady state is one
        entry repeated).

    Returns
    -------
    float
        Seconds.

    Examples
    --------
    Three steps of one busy link (1 s each), 0.1 s latency, 0.01 s overhead:

    >>> round(barrier_time(np.array([1.0, 1.0, 1.0]), 0.1, 0.01), 12)
    3.33
    >>> round(barrier_time(np.array([1.0]), 0.1, 0.01, repeat=np.array([3])), 12)
    3.33
    """
    busy = np.asarray(busy, dtype=float)
    if busy.ndim == 2:
        busy = busy.max(axis=1) if busy.shape[1] else np.zeros(len(busy))
    t = alpha + latency + busy
    t = np.broadcast_to(t, busy.shape)
    if repeat is not None:
        t = t * np.asarray(repeat)
    if used is not None:
        t = t[used]
    return float(np.sum(t))


def step_loads(schedule: Schedule, topology: Topology, message_bytes: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per step and link the bytes ``schedule`` puts on each link when it moves ``message_bytes``
    bytes (shape ``(steps, links)``, links in ``topology.links`` order), and per step the
    longest route latency.

    Transfers with an explicit path follow it; the others are routed by the topology's
    policy (:func:`~topocoll.topology.routing.routes`).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> from topocoll.synth.ring import ring_allgather
    >>> load, lat = step_loads(ring_allgather(ring(4)), ring(4), 4.0)
    >>> load.shape, load[0].tolist()
    ((3, 8), [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    """
    from ..topology.routing import path_routes, routes

    S = schedule.num_steps
    step = np.repeat(np.arange(S), np.diff(schedule.step_ptr))
    nbytes = schedule.chunk_counts() * schedule.collective.chunk_bytes(message_bytes)
    explicit = np.zeros(len(step), dtype=bool)
    if schedule.has_paths:
        explicit = np.diff(schedule.path_ptr) > 0
    load = np.zeros((S, len(topology.link_bandwidth)))
    lat = np.zeros(S)
    for sel, r in ((np.flatnonzero(explicit), None), (np.flatnonzero(~explicit), "pairs")):
        if not len(sel):
            continue
        if r is None:
            rt = path_routes(topology, schedule.path_ptr, schedule.path_nodes, sel)
        else:
            rt = routes(topology, np.stack([schedule.src[sel], schedule.dst[sel]], axis=1))
        owner = np.repeat(sel, np.diff(rt.ptr))
        np.add.at(load, (step[owner], rt.link), nbytes[owner] * rt.frac)
        np.maximum.at(lat, step[sel], rt.latency)
    return load, lat


def model_time(schedule: Schedule, topology: Topology, message_bytes: float, alpha: float) -> float:
    """Alpha-beta time of ``schedule`` moving ``message_bytes`` bytes, as an upper bound: per step
    ``alpha`` + the longest route latency + the most loaded link's bytes / bandwidth
    (:func:`barrier_time` of :func:`step_loads`).

    It equals :class:`~topocoll.cost.AlphaBeta` where, in every step, the most loaded
    link lies on the slowest route (one-step direct schedules, butterflies).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> from topocoll.synth.ring import ring_allgather
    >>> round(model_time(ring_allgather(ring(4)), ring(4), 4e9, 0.0), 6)   # 3 x (1 + 20000) us
    0.060003
    """
    if schedule.num_steps == 0:
        return 0.0
    load, lat = step_loads(schedule, topology, message_bytes)
    return barrier_time(load / topology.link_bandwidth, lat, alpha,
                        used=np.diff(schedule.step_ptr) > 0)
