"""The algorithms a user can name: the synthesizers, with ``optimal`` as the portfolio.

:data:`topocoll.synth.SYNTHESIZERS` lists what each synthesizer produces;
:data:`ALGORITHMS` is the same table as users see it (``topocoll synth -a``, ``compare``,
:func:`~topocoll.selection.choose`): for allgather, reduce-scatter and allreduce the name
``optimal`` runs the portfolio of :mod:`~topocoll.selection.portfolio` (the fastest of
several synthesizers at the size asked for), which only this layer may assemble.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import NotSupportedError
from ..schedule import Schedule
from ..synth import SYNTHESIZERS, Synthesizer
from ..synth.registry import max_schedule_bytes, on_register
from ..topology import Topology
from . import portfolio
from .cache import ScheduleCache

__all__ = ["ALGORITHMS", "find_algorithm", "algorithms_for", "synthesize", "KINDS"]

_PORTFOLIO = {"allgather": portfolio.portfolio_allgather,
              "reduce_scatter": portfolio.portfolio_reduce_scatter,
              "allreduce": portfolio.portfolio_allreduce}


def _as_user_sees(s: Synthesizer) -> Synthesizer:
    if s.name == "optimal" and s.kind in _PORTFOLIO:
        # the default (the portfolio, planned for the largest size) besides the grid of
        # batch counts of the plain tree pipeline
        return replace(s, func=_PORTFOLIO[s.kind], extra=({"pipeline": "auto"},))
    return s


#: Every algorithm by name and collective kind (see the module docstring); kept in step
#: with :func:`topocoll.synth.register_synthesizer`.
ALGORITHMS: list[Synthesizer] = [_as_user_sees(s) for s in SYNTHESIZERS]


def _follow(s: Synthesizer, added: bool) -> None:
    if added:
        ALGORITHMS.append(_as_user_sees(s))
    else:
        ALGORITHMS[:] = [a for a in ALGORITHMS if (a.name, a.kind) != (s.name, s.kind)]


on_register(_follow)
#: Collective kinds with at least one algorithm, in a stable order.
KINDS: tuple[str, ...] = tuple(dict.fromkeys(s.kind for s in ALGORITHMS))


def algorithms_for(kind: str) -> tuple[Synthesizer, ...]:
    """Every algorithm for collective ``kind``.

    >>> [a.name for a in algorithms_for("broadcast")][:2]
    ['binomial_tree', 'optimal']
    """
    return tuple(s for s in ALGORITHMS if s.kind == kind)


def find_algorithm(name: str, kind: str) -> Synthesizer:
    """The algorithm called ``name`` for ``kind``.

    Raises
    ------
    NotSupportedError
        If there is none; the message lists the available names (or kinds).

    Examples
    --------
    >>> find_algorithm("optimal", "allgather").func.__module__
    'topocoll.selection.portfolio'
    """
    for s in ALGORITHMS:
        if s.name == name and s.kind == kind:
            return s
    if kind not in KINDS:
        raise NotSupportedError(f"unknown collective {kind!r}; choose one of "
                                f"{', '.join(KINDS)}")
    from .nccl import is_nccl_name

    if is_nccl_name(name):
        raise NotSupportedError(f"{name!r} is the NCCL model: it predicts NCCL's time and has "
                                "no schedule to build; name it in compare or train")
    names = sorted({s.name for s in ALGORITHMS if s.kind == kind})
    raise NotSupportedError(f"no algorithm {name!r} for {kind}; available: {', '.join(names)}")


def synthesize(algorithm: Synthesizer, topology: Topology, options: dict[str, Any], *,
               cache: ScheduleCache | None = None) -> Schedule:
    """``algorithm``'s schedule on ``topology`` with ``options`` (``ranks``, ``root``,
    tunables), checked for applicability, from ``cache`` when it holds it (and kept there
    when it did not).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> synthesize(find_algorithm("ring", "allgather"), ring(4), {}).num_steps
    3
    """
    if cache is None:
        return algorithm(topology, **options)
    max_schedule_bytes()   # a bad $TOPOCOLL_MAX_SCHEDULE_BYTES is named on a hit as on a miss
    key = cache.key(algorithm.name, algorithm.kind, options, topology)
    hit = cache.get(key)
    if hit is not None:
        return hit
    sched = algorithm(topology, **options)
    cache.put(key, sched)
    return sched
