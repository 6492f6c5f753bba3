"""The cost-model contract: :class:`CostModel` and its result, :class:`SimResult`.

A cost model turns ``(schedule, topology, message_bytes)`` into a :class:`SimResult`.
Analytic models (:class:`~topocoll.cost.alphabeta.AlphaBeta`) and simulators share this
one call shape, so callers can swap fidelities without other changes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ..collective import busbw_factor

if TYPE_CHECKING:
    from ..schedule import Schedule
    from ..topology import Topology

__all__ = ["SimResult", "CostModel", "Simulator", "CostModelBase", "check_model_options",
           "check_inputs"]


def check_model_options(alpha: float | str, routing: str | None) -> float:
    """Validate the options every cost model shares: ``alpha`` (seconds, or a time string
    such as ``"2us"``) and ``routing``; returns ``alpha`` in seconds.

    Raises
    ------
    InputError
        If ``alpha`` is not a finite number of seconds >= 0 (a ValueError).
    TopologyError
        ``item="routing"`` if ``routing`` is not None and not a known routing.

    Examples
    --------
    >>> check_model_options(1e-6, "ecmp")
    1e-06
    >>> check_model_options("2us", None)
    2e-06
    >>> check_model_options(-1.0, None)
    Traceback (most recent call last):
    ...
    topocoll.errors.InputError: alpha must be a finite number of seconds >= 0, got -1.0
    """
    from ..errors import InputError, TopologyError
    from ..topology.routing import ROUTINGS
    from ..units import UnitError, parse_time

    if isinstance(alpha, str):
        try:
            alpha = parse_time(alpha)
        except UnitError as e:
            raise InputError(f"alpha: {e}", item="alpha") from None
    if isinstance(alpha, bool) or not (isinstance(alpha, int | float) and math.isfinite(alpha)
                                       and alpha >= 0):
        raise InputError(f"alpha must be a finite number of seconds >= 0, got {alpha!r}",
                         item="alpha")
    if routing is not None and routing not in ROUTINGS:
        raise TopologyError(f"routing must be one of {ROUTINGS}, got {routing!r}",
                            item="routing")
    return float(alpha)


def check_inputs(schedule, topology, message_bytes) -> float:
    """The arguments of every ``evaluate``: a Schedule, a Topology and a size (bytes, or a
    string such as ``"64MiB"``); returns the size in bytes.

    Raises
    ------
    InputTypeError
        If ``schedule`` or ``topology`` is of another type (a TypeError naming it).
    InputError
        If the size is not a finite number of bytes >= 0 (a ValueError naming it).
    """
    from ..errors import InputError, InputTypeError
    from ..schedule import Schedule
    from ..topology import Topology
    from ..units import UnitError, parse_size

    if not isinstance(schedule, Schedule):
        raise InputTypeError(f"schedule must be a Schedule, got {type(schedule).__name__}",
                             item="schedule")
    if not isinstance(topology, Topology):
        raise InputTypeError(f"topology must be a Topology, got {type(topology).__name__}",
                             item="topology")
    if isinstance(message_bytes, str):
        try:
            message_bytes = parse_size(message_bytes)
        except UnitError as e:
            raise InputError(f"message_bytes: {e}", item="message_bytes") from None
    if isinstance(message_bytes, bool) or not isinstance(message_bytes, int | float) or \
            not math.isfinite(message_bytes) or message_bytes < 0:
        raise InputError(f"message_bytes must be a finite number of bytes >= 0, got "
                         f"{message_bytes!r}", item="message_bytes")
    return float(message_bytes)


@dataclass(frozen=True, eq=False)
class SimResult:
    """The time a schedule takes under some cost model, with per-step and per-link detail.

    Parameters
    ----------
    time : float
        Completion time in seconds.
    step_times : ndarray of float
        Seconds charged to each step (for barrier models they add up to ``time``).
    link_load : ndarray of float
        Bytes carried by each link (indexed like ``topology.links``) over the whole
        schedule.
    model : str
        Name of the cost model that produced the result.
    message_bytes : float
        The nccl-tests size ``S`` (see :mod:`topocoll.collective`).
    collective_kind : str
        Kind of the collective, for the busbw factor.
    num_ranks : int
        Ranks in the collective, for the busbw factor.
    bound : float or None
        A lower bound on ``time`` (e.g. :func:`topocoll.optimum.bounds.lower_bound`), if
        computed.
    transfer_start, transfer_finish : ndarray of float or None
        Per-transfer times in seconds (indexed like the schedule's transfers), set by
        the simulators in :mod:`topocoll.sim`; None for models that do not time
        individual transfers.

    Examples
    --------
    >>> import numpy as np
    >>> r = SimResult(2.0, np.array([1.0, 1.0]), np.zeros(3), "alphabeta", 8e9, "allreduce", 4,
    ...               bound=1.5)
    >>> r.algbw, r.busbw, r.bound_fraction
    (4000000000.0, 6000000000.0, 0.75)
    """

    time: float
    step_times: np.ndarray
    link_load: np.ndarray
    model: str
    message_bytes: float
    collective_kind: str
    num_ranks: int
    bound: float | None = None
    transfer_start: np.ndarray | None = None
    transfer_finish: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "time", float(self.time))
        if self.bound is not None:
            object.__setattr__(self, "bound", float(self.bound))
        for name in ("step_times", "link_load"):
            a = np.array(getattr(self, name), dtype=np.float64)
            a.flags.writeable = False
            object.__setattr__(self, name, a)
        for name in ("transfer_start", "transfer_finish"):
            if getattr(self, name) is not None:
                a = np.array(getattr(self, name), dtype=np.float64)
                a.flags.writeable = False
                object.__setattr__(self, name, a)

    @property
    def algbw(self) -> float:
        """nccl-tests algorithm bandwidth ``S / time`` in bytes/s (``inf`` if time is 0)."""
        return self.message_bytes / self.time if self.time > 0 else math.inf

    @property
    def busbw(self) -> float:
        """nccl-tests bus bandwidth: ``algbw`` times the collective's factor.

        The factor (``2(n-1)/n`` for allreduce, ``(n-1)/n`` for allgather, reduce_scatter
        and alltoall, 1 otherwise) normalizes to a flat point-to-point fabric; it is not a
        physical bandwidth.
        """
        return self.algbw * busbw_factor(self.collective_kind, self.num_ranks)

    @property
    def bound_fraction(self) -> float | None:
        """``bound / time``: the fraction of the optimum reached, in (0, 1]; None without a
        bound, 1 when both are 0."""
        if self.bound is None:
            return None
        return float(self.bound / self.time) if self.time > 0 else 1.0

    def link_load_map(self, topology: Topology) -> dict[tuple[int, int, int], float]:
        """Bytes per link keyed by ``(src, dst, link_index)``, for every link of
        ``topology``."""
        src, dst = topology.link_src, topology.link_dst
        return {(int(src[i]), int(dst[i]), i): float(b) for i, b in enumerate(self.link_load)}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable summary including the derived bandwidths."""
        return {
            "model": self.model,
            "time_s": self.time,
            "message_bytes": self.message_bytes,
            "collective_kind": self.collective_kind,
            "num_ranks": self.num_ranks,
            "algbw_Bps": self.algbw,
            "busbw_Bps": self.busbw,
            "bound_s": self.bound,
            "bound_fraction": self.bound_fraction,
            "step_times_s": self.step_times.tolist(),
            "link_load_bytes": self.link_load.tolist(),
        }


@runtime_checkable
class CostModel(Protocol):
    """Anything that turns (schedule, topology, size) into a :class:`SimResult`.

    Implementations store their parameters in the constructor and state in their Notes
    how steps become time and what is and is not modelled. :class:`CostModelBase` gives
    ``evaluate_sizes`` from ``evaluate``; a model with a faster way (one routing pass for
    every size, as :class:`~topocoll.cost.AlphaBeta`) overrides it.
    """

    name: str

    def evaluate(self, schedule: Schedule, topology: Topology,
                 message_bytes: float) -> SimResult:
        """Return the cost of running ``schedule`` on ``topology`` for ``message_bytes``."""
        ...

    def evaluate_sizes(self, schedule: Schedule, topology: Topology,
                       sizes: Sequence[float]) -> list[SimResult]:
        """:meth:`evaluate` at every size of ``sizes``, in order."""
        ...


@runtime_checkable
class Simulator(CostModel, Protocol):
    """A cost model that also runs a schedule in full: ``run`` returns a record with the
    :class:`SimResult` (``.result``) and the timelines and counters behind it
    (``topocoll simulate``; the backend table's ``run`` capability)."""

    def run(self, schedule: Schedule, topology: Topology, message_bytes: float,
            *args: Any, **kwargs: Any) -> Any:
        """Run ``schedule``; the record's ``.result`` is what :meth:`evaluate` returns."""
        ...


class CostModelBase:
    """What every cost model has once it has ``evaluate``: ``evaluate_sizes`` by one
    ``evaluate`` per size (override it with a faster equivalent)."""

    def evaluate_sizes(self, schedule: Schedule, topology: Topology,
                       sizes: Sequence[float]) -> list[SimResult]:
        """:meth:`evaluate` at every size of ``sizes``, in order."""
        return [self.evaluate(schedule, topology, n) for n in sizes]
