"""Flow-level simulation: max-min fair sharing of links by concurrent transfers.

References
----------
.. [1] Bertsekas and Gallager, "Data Networks", 2nd ed., Prentice Hall 1992, section 6.5
   (max-min fairness and the progressive filling algorithm).
.. [2] Casanova, Giersch, Legrand, Quinson, Suter, "Versatile, scalable, and accurate
   simulation of distributed applications and platforms", JPDC 74(10), 2014 (SimGrid's
   flow-level network model, the model family used here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..cost.alphabeta import transfer_routes
from ..cost.base import CostModelBase, SimResult, check_inputs, check_model_options
from ..errors import InputError
from ..optimum.bounds import lower_bound
from ..schedule.ir import Op
from ._flowcore import simulate
from .depends import dependency_groups, transfer_groups

if TYPE_CHECKING:
    from ..schedule import Schedule
    from ..topology import Topology

__all__ = ["FlowSim", "FlowRun", "transfer_routes", "finish_step_times", "simulate_transfers"]


@dataclass(frozen=True, eq=False)
class FlowRun:
    """Everything a flow-level run produced (what the outputs in :mod:`topocoll.sim.outputs`
    are computed from).

    Attributes
    ----------
    result : SimResult
        The summary, with ``transfer_start`` and ``transfer_finish`` set.
    schedule, topology, message_bytes
        The inputs.
    transfer_bytes : ndarray, shape (T,)
        Bytes of each transfer.
    route_ptr, route_link, route_frac : ndarray
        Route of each transfer in CSR form (``route_ptr[t]:route_ptr[t+1]``).
    log_time, log_flow, log_rate : ndarray
        Every rate change: at ``log_time[i]`` transfer ``log_flow[i]`` starts sending at
        ``log_rate[i]`` bytes/s (0 when it has drained). Rates are piecewise constant.
    stats : dict
        ``instants`` (distinct event times handled), ``full_recomputes`` and
        ``local_updates`` (rate updates resolved by the incremental rule).
    """

    result: SimResult
    schedule: Schedule
    topology: Topology
    message_bytes: float
    transfer_bytes: np.ndarray
    route_ptr: np.ndarray
    route_link: np.ndarray
    route_frac: np.ndarray
    log_time: np.ndarray
    log_flow: np.ndarray
    log_rate: np.ndarray
    stats: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class FlowSim(CostModelBase):
    """Flow-level simulator: transfers share links max-min fairly; steps are relaxed.

    Parameters
    ----------
    alpha : float
        Per-transfer software overhead in seconds (>= 0), as in ``AlphaBeta``: a ready
        transfer starts sending ``alpha`` later.
    routing : {'shortest', 'ecmp', 'spray'}, optional
        Routing of transfers without an explicit path; defaults to the topology's.
    reduce_bandwidth : float, optional
        Bytes/s at which a rank reduces incoming ``REDUCE`` data. None (default): free.
    bound : bool
        Attach :func:`topocoll.optimum.bounds.lower_bound` to the result.

    Notes
    -----
    How a schedule becomes time (full statement in ``docs/design-sim.md``):

    - Dependency rule: transfer ``t`` of step ``k`` with source ``u`` is ready when every
      transfer of a step ``< k`` into or out of ``u`` has finished
      (:mod:`topocoll.sim.depends`); it starts sending ``alpha`` later.
    - Each transfer is one flow with its route's fixed split (single path, bundle, ECMP
      or spray fractions from :mod:`topocoll.topology.routing`); rates are max-min fair
      under ``sum frac * rate <= bandwidth`` per directed link, by progressive filling,
      recomputed at every instant where flows arrive or leave (incremental rule: when
      every link of an arriving or leaving flow carries at most one flow, a new one,
      only the new flows are rated).
    - Cut-through latency: the last byte arrives ``latency`` (route latency, with
      per-hop forwarding latency) after the flow drains.
    - With ``reduce_bandwidth``, each rank reduces arrived ``REDUCE`` transfers one at a
      time (first come, first served) before they count as finished.
    - ``step_times[k]`` is the growth of the running maximum of finish times at step
      ``k``; they add up to ``time``.

    Equal to ``AlphaBeta`` (to rounding) when no two transfers share a link at the same
    time and all transfers of a step finish together. Not modelled: packets, queues,
    transport protocols, slow start, per-flow ECMP hashing (the split is fluid).

    Examples
    --------
    Ring allreduce on a ring has no contention, so it costs what AlphaBeta says:

    >>> from topocoll.topology import ring
    >>> from topocoll.synth.ring import ring_allreduce
    >>> from topocoll.cost import AlphaBeta
    >>> t = ring(4)
    >>> s = ring_allreduce(t)
    >>> f, a = FlowSim().evaluate(s, t, 4e9), AlphaBeta().evaluate(s, t, 4e9)
    >>> math.isclose(f.time, a.time, rel_tol=1e-12), round(f.time, 6)
    (True, 0.120006)
    >>> f.transfer_finish.shape
    (24,)
    """

    alpha: float = 0.0
    routing: str | None = None
    reduce_bandwidth: float | None = None
    bound: bool = True
    name: ClassVar[str] = "flow"

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", check_model_options(self.alpha, self.routing))
        rb = self.reduce_bandwidth
        if rb is not None and not (isinstance(rb, (int, float)) and rb > 0
                                   and math.isfinite(rb)):
            raise InputError(f"reduce_bandwidth must be a finite number of bytes/s > 0, got "
                             f"{rb!r}", item="reduce_bandwidth")

    def evaluate(self, schedule: Schedule, topology: Topology,
                 message_bytes: float) -> SimResult:
        """Simulate ``schedule`` on ``topology``; see :meth:`run` (this returns its
        ``result``)."""
        return self.run(schedule, topology, message_bytes, record=False).result

    def run(self, schedule: Schedule, topology: Topology, message_bytes: float, *,
            record: bool = True) -> FlowRun:
        """Simulate and keep the rate log for utilization, traces and heat maps.

        Parameters
        ----------
        schedule : Schedule
        topology : Topology
        message_bytes : float
            The nccl-tests size ``S`` (>= 0).
        record : bool
            Keep the rate log (needed by :mod:`topocoll.sim.outputs`); without it the
            log arrays are empty.

        Returns
        -------
        FlowRun

        Raises
        ------
        ValueError
            If ``message_bytes`` is negative or not finite.
        ScheduleError
            If a transfer names a node outside ``topology`` or has a malformed path.
        TopologyError
            If a pair has no path.
        """
        message_bytes = check_inputs(schedule, topology, message_bytes)
        ptr, link, frac, lat, nbytes = transfer_routes(
            schedule, topology, self.routing or topology.routing,
            schedule.collective.chunk_bytes(message_bytes))
        dep = dependency_groups(schedule, topology.num_nodes)
        gnode = dep.group_node()
        start, finish, lt, lf, lr, stats = simulate(
            ptr, link, frac, lat, nbytes, schedule.op == Op.REDUCE,
            schedule.dst.astype(np.int64), topology.link_bandwidth.astype(np.float64),
            float(self.alpha), float(self.reduce_bandwidth or 0.0), dep.group_of_src,
            dep.group_of_dst, gnode, dep.count, dep.node_first, dep.node_end,
            dep.release_ptr, dep.release, topology.num_nodes, bool(record))
        load = np.bincount(link, weights=np.repeat(nbytes, np.diff(ptr)) * frac,
                           minlength=len(topology.links))
        bound = (lower_bound(schedule.collective, topology, message_bytes,
                             alpha=self.alpha).time if self.bound else None)
        result = SimResult(float(finish.max()) if len(finish) else 0.0,
                           finish_step_times(schedule, finish), load, self.name,
                           float(message_bytes), schedule.collective.kind,
                           schedule.collective.num_ranks, bound,
                           transfer_start=start, transfer_finish=finish)
        info: dict[str, Any] = {"instants": int(stats[0]), "full_recomputes": int(stats[1]),
                                "local_updates": int(stats[2])}
        return FlowRun(result, schedule, topology, float(message_bytes), nbytes, ptr, link,
                       frac, lt, lf, lr, info)


def finish_step_times(schedule: Schedule, finish: np.ndarray) -> np.ndarray:
    """Per step, how much it moved the running maximum of the transfers' finish times
    (steps are relaxed, so a step's "time" is what it added to the end).

    >>> from topocoll.synth import ring_allgather
    >>> from topocoll.topology import ring
    >>> finish_step_times(ring_allgather(ring(3)), np.array([1., 1, 1, 3, 2, 2])).tolist()
    [1.0, 2.0]
    """
    S = schedule.num_steps
    per_step = np.zeros(S)
    sp = schedule.step_ptr
    nz = np.flatnonzero(sp[1:] > sp[:-1])
    if len(nz):
        per_step[nz] = np.maximum.reduceat(finish, sp[nz])
    done = np.maximum.accumulate(per_step) if S else per_step
    return np.diff(done, prepend=0.0)


def simulate_transfers(capacity: np.ndarray, ptr: np.ndarray, link: np.ndarray,
                       frac: np.ndarray, nbytes: np.ndarray, src: np.ndarray,
                       dst: np.ndarray, num_nodes: int,
                       latency: np.ndarray | None = None) -> np.ndarray:
    """Finish times of transfers that all start at time 0 and share links max-min fairly
    (the same compiled core as :class:`FlowSim`, without a schedule's dependencies): a
    demand matrix moved at once. Transfer ``t`` puts ``frac`` of its rate on each link
    ``link[ptr[t]:ptr[t + 1]]`` of ``capacity`` (bytes/s), moves ``nbytes[t]`` bytes
    from node ``src[t]`` to ``dst[t]`` and arrives ``latency[t]`` seconds after it has
    drained (default 0).

    >>> import numpy as np    # two flows on one link, then one alone on the second
    >>> simulate_transfers(np.array([1.0, 1.0]), np.array([0, 1, 3]), np.array([0, 0, 1]),
    ...                    np.ones(3), np.array([1.0, 2.0]), np.array([0, 0]),
    ...                    np.array([1, 2]), 3).tolist()
    [2.0, 3.0]
    """
    n = len(nbytes)
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    if n == 0:
        return np.zeros(0)
    if len(ptr) != n + 1 or len(src) != n or len(dst) != n:
        raise InputError(f"{n} transfers need {n + 1} route pointers and {n} ends",
                         item="ptr")
    dep = transfer_groups(src, dst, np.zeros(n, np.int64), num_nodes)
    lat = np.zeros(n) if latency is None else np.asarray(latency, np.float64)
    _, finish, *_ = simulate(np.asarray(ptr, np.int64), np.asarray(link, np.int64),
                             np.asarray(frac, np.float64), lat,
                             np.asarray(nbytes, np.float64), np.zeros(n, np.bool_), dst,
                             np.asarray(capacity, np.float64), 0.0, 0.0, dep.group_of_src,
                             dep.group_of_dst, dep.group_node(), dep.count, dep.node_first,
                             dep.node_end, dep.release_ptr, dep.release, int(num_nodes),
                             False)
    return finish
