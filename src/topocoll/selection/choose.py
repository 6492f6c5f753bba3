"""choose(): the best schedule for one collective on one fabric at one size, with proof.

The question every later layer asks (a training step's collectives, a fabric design's
score, a sweep's points): which schedule, what it costs, and how far from the best
possible. :func:`choose` answers it with the selection engine
(:func:`~topocoll.selection.compare.evaluate_candidates`), the lower bound of
:func:`topocoll.optimum.lower_bound`, and the schedule cache.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..collective import Collective, make_collective
from ..cost import AlphaBeta, CostModel, SimResult
from ..errors import InputError, InputTypeError, NotSupportedError
from ..optimum import Bound, lower_bound
from ..schedule import Schedule
from ..topology import Topology
from ..units import UnitError, parse_size
from .cache import ScheduleCache
from .compare import MAX_ROUTE_ENTRIES, evaluate_candidates

__all__ = ["Choice", "Candidate", "choose", "STOP_SLACK"]


@dataclass(frozen=True, eq=False)
class Candidate:
    """One algorithm with its best option set at the size chosen for.

    Attributes
    ----------
    algorithm : str
    options : dict
        Options to re-create the schedule: ``find_algorithm(algorithm, kind)(topology,
        ranks=..., **options)``.
    result : SimResult
        Its cost at the size.
    verified : bool
    schedule : Schedule or None
        The schedule itself; None beyond the ``keep`` best (memory: at thousands of
        ranks one schedule holds millions of transfers).
    """

    algorithm: str
    options: dict
    result: SimResult
    verified: bool
    schedule: Schedule | None

    @property
    def time(self) -> float:
        """Seconds at the size chosen for."""
        return self.result.time


@dataclass(frozen=True, eq=False)
class Choice:
    """The answer of :func:`choose`.

    Attributes
    ----------
    collective : Collective
    size : float
        Bytes (nccl-tests ``size``).
    ranked : tuple of Candidate
        Every algorithm that applied, verified ones first, fastest first (one entry per
        algorithm, with its best option set).
    bound : Bound or None
        The strongest proven lower bound on any schedule's time
        (:func:`topocoll.optimum.lower_bound`); None when :func:`choose` was asked not to
        prove it (``bound=False``).
    skipped : tuple of (str, str)
        Algorithms not evaluated and why.
    """

    collective: Collective
    size: float
    ranked: tuple[Candidate, ...]
    bound: Bound | None
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def best(self) -> Candidate:
        """The chosen candidate (fastest verified)."""
        return self.ranked[0]

    @property
    def schedule(self) -> Schedule:
        """The chosen schedule."""
        return self.best.schedule

    @property
    def result(self) -> SimResult:
        """The chosen schedule's cost."""
        return self.best.result

    @property
    def time(self) -> float:
        """The chosen schedule's time in seconds."""
        return self.best.result.time

    @property
    def bound_fraction(self) -> float | None:
        """``bound / time``: 1.0 means provably optimal under the cost model (None without
        a bound)."""
        if self.bound is None:
            return None
        return self.bound.time / self.time if self.time > 0 else 1.0

    @property
    def alternatives(self) -> tuple[Candidate, ...]:
        """The other candidates, fastest first."""
        return self.ranked[1:]


#: How close to the proved bound a schedule must be for ``choose(stop_at_bound=True)`` to
#: stop there: the bound and a one-step schedule differ by the step's latency (on a
#: 128-GPU rail, 1.5e-5 of the time), and no later candidate can beat the bound.
STOP_SLACK = 1e-4


def choose(collective: Collective | str, topology: Topology, message_bytes: float, *,
           model: CostModel | None = None, candidates: Sequence[str] | None = None,
           cache: ScheduleCache | None = None, keep: int = 3,
           max_route_entries: float = MAX_ROUTE_ENTRIES, bound: bool = True,
           stop_at_bound: bool = False) -> Choice:
    """The fastest verified schedule of ``collective`` on ``topology`` for a message of
    ``message_bytes`` bytes.

    Parameters
    ----------
    collective : Collective or str
        What must happen (a kind name means every rank of the topology).
    topology : Topology
    message_bytes : float
        Message size in bytes.
    model : CostModel, optional
        How schedules are timed (default :class:`~topocoll.cost.AlphaBeta`; any simulator
        of :mod:`topocoll.sim` works).
    candidates : sequence of str, optional
        Algorithm names to consider (default: every one that applies).
    cache : ScheduleCache, optional
        Reuse and keep schedules there.
    keep : int
        How many of the best candidates keep their schedule (the others keep their
        result and options).
    max_route_entries : float
        See :func:`~topocoll.selection.compare.evaluate_candidates`.
    bound : bool
        Prove the lower bound too (the exact cut is the costly part on large fabrics;
        callers that only need the fastest schedule, such as a parallelism search, pass
        False).
    stop_at_bound : bool
        Prove a bound first (the full one with ``bound``, else the candidate cuts' bound,
        which needs no max-flow) and stop at the first verified schedule within
        :data:`STOP_SLACK` of it (under the alpha-beta model the bound holds for, no later
        candidate can be faster by more than that), so ``alternatives`` lists only the
        candidates tried. Only with the default model, without alpha.

    Returns
    -------
    Choice

    Raises
    ------
    NotSupportedError
        If no algorithm applies, or none of those that do verifies.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> c = choose("allreduce", ring(8), 2**20, candidates=["ring", "recursive_doubling"])
    >>> c.best.algorithm, [a.algorithm for a in c.alternatives], c.bound_fraction <= 1
    ('ring', ['recursive_doubling'], True)
    """
    if not isinstance(topology, Topology):
        raise InputTypeError(f"topology must be a Topology, got {type(topology).__name__}",
                             item="topology")
    if model is not None and not callable(getattr(model, "evaluate", None)):
        raise InputTypeError(f"model must be a cost model (with evaluate()), got "
                             f"{type(model).__name__}", item="model")
    if isinstance(collective, str):
        collective = make_collective(collective, tuple(range(topology.num_ranks)))
    if len(collective.ranks) < 2:
        raise InputError(f"choose needs a collective of at least two ranks, got "
                         f"{list(collective.ranks)}", item="ranks")
    if isinstance(message_bytes, str):
        try:
            message_bytes = parse_size(message_bytes)
        except UnitError as e:
            raise InputError(f"message_bytes: {e}", item="message_bytes") from None
    if isinstance(message_bytes, bool) or not isinstance(message_bytes, int | float) or not (
            math.isfinite(message_bytes) and message_bytes > 0):
        raise InputError(f"message_bytes must be a number of bytes > 0, got {message_bytes!r}",
                         item="message_bytes")
    message_bytes = float(message_bytes)
    skipped: list[tuple[str, str]] = []
    best: dict[str, tuple] = {}
    coll = make_collective(collective.kind, collective.ranks, 1, collective.root)
    proved = lower_bound(coll, topology, message_bytes) if bound else None
    stop = None
    if stop_at_bound and (model is None or (type(model) is AlphaBeta and not model.alpha)):
        # without a proof to report, the candidate cuts' bound (no max-flow) is enough to
        # stop at: a schedule that reaches a weaker bound reaches the best one too
        cheap = proved if proved is not None else lower_bound(coll, topology, message_bytes,
                                                              method="candidates")
        stop = cheap.time * (1 + STOP_SLACK)
    for ev in evaluate_candidates(topology, collective, [message_bytes], algorithms=candidates,
                                  model=model, cache=cache, skipped=skipped,
                                  max_route_entries=max_route_entries):
        r = ev.results[0]
        rank = (not ev.verified, r.time)
        if ev.algorithm not in best or rank < best[ev.algorithm][0]:
            best[ev.algorithm] = (rank, ev)
        if stop is not None and ev.verified and r.time <= stop:
            break
    if not best:
        raise NotSupportedError(f"no algorithm applies to {collective.kind} on "
                                f"{topology.name}: "
                                + "; ".join(f"{a}: {why}" for a, why in skipped))
    order = sorted(best.values(), key=lambda x: x[0])
    if not order[0][1].verified:
        raise NotSupportedError(f"no schedule for {collective.kind} on {topology.name} "
                                f"verifies (tried {', '.join(best)})")
    ranked = tuple(Candidate(ev.algorithm, ev.options, ev.results[0], ev.verified,
                             ev.schedule if i < keep else None)
                   for i, (_, ev) in enumerate(order))
    return Choice(collective, message_bytes, ranked, proved, tuple(skipped))
