"""The floor for barrier-step schedules: the stronger of the two certificates.

:func:`~topocoll.optimum.stockbound.stock_lower_bound` (relay stock) and
:func:`~topocoll.optimum.groupbound.group_lower_bound` (group drain) each bound every
allgather (reduce-scatter: on the reversed graph) whose steps are barriers, over every
step count. :func:`barrier_floor` takes the stronger per part and adds the parts of an
allreduce run as reduce-scatter then allgather. ``topocoll bound --barrier`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import NotSupportedError
from .groupbound import group_lower_bound
from .stockbound import stock_lower_bound

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["BarrierFloor", "barrier_floor", "BARRIER_KINDS"]

#: Collectives the barrier certificates cover.
BARRIER_KINDS = ("allgather", "reduce_scatter", "allreduce")


@dataclass(frozen=True)
class BarrierFloor:
    """Certified lower bound on every barrier-step schedule of a collective.

    Attributes
    ----------
    time : float
        Seconds: no schedule whose steps are barriers (:class:`~topocoll.cost.AlphaBeta`)
        is faster, whatever its number of steps.
    steps : int
        The step count (summed over the parts) at which the certificate is lowest.
    certificate : str
        Which certificate gave each part (``relay-stock``, ``group-drain (group of k)``),
        joined by `` + `` for an allreduce.
    scope : str
        What it bounds: the collective, or "reduce-scatter followed by allgather".
    """

    time: float
    steps: int
    certificate: str
    scope: str


def barrier_floor(topology: Topology, kind: str, message_bytes: float, *,
                  alpha: float = 0.0) -> BarrierFloor:
    """The stronger of the relay-stock and group-drain certificates for ``kind`` on every
    rank of ``topology`` moving ``message_bytes`` bytes.

    Parameters
    ----------
    topology : Topology
    kind : {'allgather', 'reduce_scatter', 'allreduce'}
        An allreduce is bounded as reduce-scatter followed by allgather (the sum).
    message_bytes : float
        Message size in bytes (nccl-tests ``message_bytes``).
    alpha : float
        Per-step overhead of the cost model.

    Returns
    -------
    BarrierFloor

    Raises
    ------
    NotSupportedError
        For a collective the certificates do not cover.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> f = barrier_floor(ring(4, latency=1e-6), "allgather", 2**20)
    >>> f.certificate, f.time > 3 * 2**18 / 50e9 / 2
    ('relay-stock', True)
    """
    if kind not in BARRIER_KINDS:
        raise NotSupportedError(f"the barrier certificates cover {', '.join(BARRIER_KINDS)}, "
                                f"not {kind}")
    kinds = ("reduce_scatter", "allgather") if kind == "allreduce" else (kind,)
    time, steps, names = 0.0, 0, []
    for k in kinds:
        rev = k == "reduce_scatter"
        st = stock_lower_bound(topology, message_bytes, alpha=alpha, reverse=rev)
        gr = group_lower_bound(topology, message_bytes, alpha=alpha, reverse=rev)
        best = gr if gr.time > st.time else st
        time += best.time
        steps += best.steps
        names.append(f"group-drain (group of {len(gr.group)})" if best is gr else "relay-stock")
    scope = "reduce-scatter followed by allgather" if kind == "allreduce" else kind
    return BarrierFloor(time, steps, " + ".join(names), scope)
