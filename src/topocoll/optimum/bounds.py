"""Lower bounds on the time of *any* schedule of a collective on a topology.

Each bound holds for every schedule evaluated by :class:`~topocoll.cost.alphabeta.AlphaBeta`
(with the same ``alpha``), whatever its routing, so ``lower_bound(...).time <= cost`` is a
test oracle and ``bound / time`` is the "fraction of optimum" reported next to algbw and
busbw.

Three families, each derived from the collective's pre- and postconditions only, each in
its own module (their shared view of the sets in :mod:`~topocoll.optimum.bound_sets`):

- :func:`~topocoll.optimum.latency.latency_bound`: data must travel from every
  contributor to every receiver.
- :func:`~topocoll.optimum.injection.injection_bound`: every rank must send or receive
  some bytes through its own links, and the ranks together must make a minimum number of
  transmissions.
- :func:`~topocoll.optimum.cuts.cut_bound`: bytes that must cross a cut divided by the
  cut's capacity.

Why each is valid for AlphaBeta. A step costs at least ``alpha`` plus the latency of each
of its transfers, and at least ``load_l / bandwidth_l`` for every link it loads; a sum of
per-step maxima is at least the sum of per-step weighted averages over any link set, so
``time >= (bytes over the set) / (capacity of the set)`` for the links leaving a rank, the
links leaving all ranks, or the links crossing a cut. The latency and bandwidth parts are
*not* added: a step's latency and serialization overlap in the model, so
:func:`lower_bound` takes their maximum.

References
----------
.. [1] Hedetniemi, Hedetniemi and Liestman, "A survey of gossiping and broadcasting in
   communication networks", Networks 18(4), 1988 (the ``2n - 2`` one-way gossip bound).
.. [2] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461 (cut bounds on graphs with switches).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import InputError, NotSupportedError
from .cuts import CUT_METHODS, EXACT_KINDS, cut_bound
from .injection import injection_bound
from .latency import latency_bound

if TYPE_CHECKING:
    from ..collective import Collective
    from ..topology import Topology

__all__ = ["Bound", "lower_bound", "EXACT_WORK"]

#: Largest ``nodes x links`` for which :func:`lower_bound` adds the exact cut over every
#: cut (max-flows; about 4 s for allreduce on a 64x64 torus, 33 M) to the candidate cuts.
EXACT_WORK = 64_000_000


@dataclass(frozen=True)
class Bound:
    """The strongest proven lower bound on the time of any schedule, with its parts.

    Attributes
    ----------
    time : float
        ``max(latency, injection, cut)`` in seconds: no schedule is faster.
    latency, injection, cut : float
        The three bounds (see the module docstring).
    binding : {'cut', 'injection', 'latency', 'none'}
        Which part gives ``time`` (ties go to the first in that order; 'none' if all are 0).
    cut_ranks : tuple of int
        The ranks inside the binding cut, or () unless ``binding == 'cut'``.
    certificate : str
        What proves ``time``, in words: ``"cut (max-flow over every cut)"``, ``"cut
        (candidate cuts)"``, ``"injection (ranks' own links)"``, ``"latency (farthest
        required pair)"`` or ``"none"``.
    """

    time: float
    latency: float
    injection: float
    cut: float
    binding: str
    cut_ranks: tuple[int, ...] = ()
    certificate: str = "none"

    @property
    def time_s(self) -> float:
        """``time``, in the name the reports use."""
        return self.time

    @property
    def kind(self) -> str:
        """``binding``: which family of bound gives ``time``."""
        return self.binding


def lower_bound(collective: Collective, topology: Topology, message_bytes: float,
                alpha: float = 0.0, *, cuts: Iterable[Sequence[int]] | None = None,
                method: str = "best") -> Bound:
    """The strongest proven lower bound: the best of the latency, injection and cut bounds.

    The one bound every report uses (``topocoll compare``, ``cost``, ``simulate``,
    ``bound``, the demo, :func:`~topocoll.selection.choose`): "% of bound" is always this
    time over the schedule's.

    Parameters
    ----------
    collective, topology, message_bytes
        As for the individual bounds; ``message_bytes`` is a finite number >= 0.
    alpha : float
        Per-transfer overhead of the cost model (used by the latency bound).
    cuts : iterable of rank sets, optional
        Candidate cuts to try (default :func:`candidate_cuts`).
    method : {'best', 'candidates', 'exact'}
        'best' (default): the candidate cuts, and the maximum over every cut by max-flow
        where it is available (allgather, reduce-scatter, allreduce, broadcast, reduce) and
        the fabric is within :data:`EXACT_WORK`; the larger counts. 'candidates' or
        'exact': only that cut family.

    Returns
    -------
    Bound
        ``time = max(latency, alpha + injection, alpha + cut)`` (the bandwidth parts
        without ``alpha`` in the ``injection`` and ``cut`` fields) and the
        ``certificate`` that gives it.

    Raises
    ------
    TopologyError
        If a rank of the collective is not a rank of the topology.
    TypeError
        If ``topology`` is not a Topology.
    ValueError
        If ``message_bytes`` is negative or not finite.

    Notes
    -----
    Valid for :class:`~topocoll.cost.alphabeta.AlphaBeta` with the same ``alpha`` under
    any routing, and for the simulators of :mod:`topocoll.sim` (they never move a link
    faster than its bandwidth, nor a transfer faster than its route's latency). Latency
    and bandwidth parts are combined by ``max``, not ``+``: the model overlaps a
    transfer's latency with its serialization, and a schedule can have its
    latency-critical and bandwidth-critical steps in different places, so adding them is
    not valid in general. ``alpha`` is added to the bandwidth parts: every step (every
    transfer, in the simulators) pays it before it moves a byte, so the bytes across the
    critical cut cannot all have crossed before ``alpha`` plus their serialization.

    Examples
    --------
    >>> from topocoll.collective import allreduce
    >>> from topocoll.topology import ring
    >>> b = lower_bound(allreduce(4), ring(4, bandwidth=1e9), 8e9)
    >>> b.time, b.binding, b.certificate
    (6.0, 'injection', "injection (ranks' own links)")
    >>> lower_bound(allreduce(4), ring(4, bandwidth=1e9), 8e9, alpha=0.5).time
    6.5
    """
    from ..topology import Topology as _Topology

    if not isinstance(topology, _Topology):
        raise TypeError(f"topology must be a Topology, got {type(topology).__name__}")
    if isinstance(message_bytes, bool) or not isinstance(message_bytes, int | float) or \
            not math.isfinite(message_bytes) or message_bytes < 0:
        raise InputError(f"size (message_bytes) must be a finite number of bytes >= 0, got "
                         f"{message_bytes!r}", item="message_bytes")
    if method not in (*CUT_METHODS, "best"):
        raise NotSupportedError(f"method must be one of best, {', '.join(CUT_METHODS)}, got "
                                f"{method!r}")
    lat = latency_bound(collective, topology, alpha)
    inj = injection_bound(collective, topology, message_bytes)
    exact = method == "exact" or (
        method == "best" and cuts is None and collective.kind in EXACT_KINDS
        and topology.num_nodes * max(1, len(topology.links)) <= EXACT_WORK)
    cut = cut_bound(collective, topology, message_bytes, cuts, method="exact") \
        if method == "exact" else cut_bound(collective, topology, message_bytes, cuts)
    how = "cut (max-flow over every cut)" if method == "exact" else "cut (candidate cuts)"
    if exact and method == "best":
        ex = cut_bound(collective, topology, message_bytes, method="exact")
        if ex.time >= cut.time:
            cut, how = ex, "cut (max-flow over every cut)"
    # nothing moves before the first step's (or transfer's) overhead alpha is paid, and
    # every later step pays it again: the bandwidth parts start after one alpha
    a = float(alpha)
    parts = (("cut", cut.time + a if cut.time > 0 else 0.0),
             ("injection", inj + a if inj > 0 else 0.0), ("latency", lat))
    name, best = max(parts, key=lambda kv: kv[1])  # max keeps the first of equal values
    if best <= 0:
        name = "none"
    certificate = {"cut": how, "injection": "injection (ranks' own links)",
                   "latency": "latency (farthest required pair)", "none": "none"}[name]
    return Bound(float(max(best, 0.0)), lat, inj, cut.time, name,
                 cut.ranks if name == "cut" else (), certificate)
