"""Helpers shared by synthesizers: group and order resolution, preconditions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import NotSupportedError, TopologyError
from ..schedule import Schedule
from ..topology import Topology

__all__ = ["resolve_group", "resolve_order", "block_index", "require", "gather_parts",
           "step_loads", "model_time"]


def resolve_group(topology: Topology, ranks: Sequence[int] | None) -> tuple[int, ...]:
    """The participating ranks: ``ranks`` (validated) or every rank of the topology."""
    if ranks is None:
        return tuple(range(topology.num_ranks))
    group = tuple(int(r) for r in ranks)
    if not group:
        raise TopologyError("ranks must not be empty", item="ranks")
    for r in group:
        if not 0 <= r < topology.num_ranks:
            raise TopologyError(f"rank {r} is not a rank of topology {topology.name!r} "
                                f"(0..{topology.num_ranks - 1})", item=f"rank {r}")
    if len(set(group)) != len(group):
        dup = next(r for r in group if group.count(r) > 1)
        raise TopologyError(f"rank {dup} appears twice in ranks", item=f"rank {dup}")
    return group


def resolve_order(topology: Topology, group: tuple[int, ...],
                  order: Sequence[int] | None) -> np.ndarray:
    """A ring order over ``group``: ``order`` if given (must be a permutation of the
    group), else the topology's ``ring_order`` hint restricted to the group, else the
    group order."""
    if order is None:
        hint = topology.meta.get("ring_order") if topology.meta else None
        if hint is not None and len(group) == topology.num_ranks:
            order = hint
        else:
            order = group
    o = np.asarray([int(x) for x in order], dtype=np.int64)
    if sorted(o.tolist()) != sorted(group):
        raise TopologyError(f"order {list(o)} is not a permutation of the ranks {list(group)}",
                            item="order")
    return o


def block_index(group: tuple[int, ...], order: np.ndarray) -> np.ndarray:
    """For each position in ``order``, the index of that rank in ``group`` (its block)."""
    pos = {r: i for i, r in enumerate(group)}
    return np.array([pos[int(r)] for r in order], dtype=np.int64)


def require(condition: bool, message: str) -> None:
    """Raise :class:`NotSupportedError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise NotSupportedError(message)


def gather_parts(kind: str) -> tuple[bool, ...]:
    """The allgather-shaped parts of ``kind``, in run order: True for a reduce-scatter
    (an allgather of the reversed graph run backwards), False for an allgather.

    >>> gather_parts("allreduce")
    (True, False)
    """
    return {"allgather": (False,), "reduce_scatter": (True,),
            "allreduce": (True, False)}[kind]


def step_loads(schedule: Schedule, topology: Topology, size: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per step and link the bytes ``schedule`` puts on each link when it moves ``size``
    bytes (shape ``(steps, links)``, links in ``topology.links`` order), and per step the
    longest route latency.

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
    nbytes = np.diff(schedule.chunk_ptr) * schedule.collective.chunk_bytes(size)
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


def model_time(schedule: Schedule, topology: Topology, size: float, alpha: float) -> float:
    """Alpha-beta time of ``schedule`` moving ``size`` bytes, as an upper bound: per step
    ``alpha`` + the longest route latency + the most loaded link's bytes / bandwidth.

    Synthesizers use it to choose among their own candidates (the cost layer is above
    them); it equals :class:`~topocoll.cost.AlphaBeta` where, in every step, the most
    loaded link lies on the slowest route (one-step direct schedules, butterflies).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> from topocoll.synth.ring import ring_allgather
    >>> round(model_time(ring_allgather(ring(4)), ring(4), 4e9, 0.0), 6)   # 3 x (1 + 20000) us
    0.060003
    """
    S = schedule.num_steps
    if S == 0:
        return 0.0
    load, lat = step_loads(schedule, topology, size)
    busy = (load / topology.link_bandwidth).max(axis=1)
    used = np.diff(schedule.step_ptr) > 0
    return float(np.sum((alpha + lat + busy)[used]))
