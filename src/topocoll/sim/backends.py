"""The one table of cost-model backends: the ``--backend`` option of every command.

Each :class:`Backend` says how to build its cost model, which model-specific options it
takes, what it is for and what it can do (``run``: a full run with timelines and counters,
as ``topocoll simulate`` shows; ``workload``: fast enough to cost the collectives of a
training iteration, as ``train`` and ``import chakra`` do). The CLI, ``topocoll list`` and
the workload layer read this table; a new backend is one :func:`register_backend` call.

Examples
--------
>>> cost_model("flow").name, cost_model("analytical", alpha=1e-6).alpha
('flow', 1e-06)
>>> cost_model("packet", mtu=1500).mtu
1500
>>> backend_names(run=True)
('flow', 'packet')
>>> cost_model("magic")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
topocoll.errors.NotSupportedError: unknown backend 'magic'; choose one of ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..cost import AlphaBeta, CostModel
from ..errors import NotSupportedError
from .flow import FlowSim
from .packet import PacketSim

__all__ = ["Backend", "BACKEND_TABLE", "register_backend", "backend_names", "cost_model"]


@dataclass(frozen=True)
class Backend:
    """One row of :data:`BACKEND_TABLE`.

    Parameters
    ----------
    name : str
        What ``--backend`` takes.
    description : str
        One line for ``topocoll list backends``.
    make : callable
        ``make(alpha=..., routing=..., **options) -> CostModel``.
    options : frozenset of str, or a callable returning one
        Model-specific options ``make`` takes besides ``alpha`` and ``routing`` (a callable
        when knowing them needs an import that is slow, as ns-3's).
    run : bool
        Its model has ``run(schedule, topology, message_bytes)`` with timelines and
        counters (``topocoll simulate``).
    workload : bool
        Fast enough to cost every collective of a training iteration (``train``,
        ``import chakra``).
    """

    name: str
    description: str
    make: Callable[..., CostModel]
    options: frozenset[str] | Callable[[], frozenset[str]] = frozenset()
    run: bool = False
    workload: bool = True

    def option_names(self) -> frozenset[str]:
        """:attr:`options`, evaluated."""
        return self.options() if callable(self.options) else self.options


#: Backend name -> :class:`Backend`, fastest first.
BACKEND_TABLE: dict[str, Backend] = {}


def register_backend(backend: Backend) -> Backend:
    """Add ``backend`` to :data:`BACKEND_TABLE` (a name is registered once)."""
    if backend.name in BACKEND_TABLE:
        raise NotSupportedError(f"backend {backend.name!r} is registered already")
    BACKEND_TABLE[backend.name] = backend
    return backend


def backend_names(*, run: bool | None = None, workload: bool | None = None
                  ) -> tuple[str, ...]:
    """Names in the table, fastest first, keeping those with the given capabilities."""
    return tuple(b.name for b in BACKEND_TABLE.values()
                 if (run is None or b.run == run) and (workload is None or b.workload == workload))


def _fields(cls) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls)) - {"alpha", "routing"}


def _ns3(**kw):
    from .ns3 import Ns3Sim

    return Ns3Sim(**kw)


def _ns3_fields() -> frozenset[str]:
    from .ns3 import Ns3Sim

    return _fields(Ns3Sim)


register_backend(Backend("analytical", "alpha-beta with link congestion, steps as barriers",
                         AlphaBeta))
register_backend(Backend("flow", "flow-level simulator, max-min fair sharing, relaxed steps",
                         FlowSim, frozenset({"reduce_bandwidth"}), run=True))
register_backend(Backend("packet", "packet-level simulator: queues, priorities, ECN, transport",
                         PacketSim, _fields(PacketSim), run=True))
# ns-3's fields are read when the backend is used (importing it costs 20-30 s)
register_backend(Backend("ns3", "ns-3 (the ns3 extra)", _ns3, _ns3_fields, workload=False))


def cost_model(backend: str, *, alpha: float = 0.0, routing: str | None = None,
               **options: Any) -> CostModel:
    """Return the cost model called ``backend`` (a row of :data:`BACKEND_TABLE`).

    Parameters
    ----------
    backend : str
        ``analytical``: :class:`~topocoll.cost.AlphaBeta` (steps as barriers);
        ``flow``: :class:`~topocoll.sim.FlowSim` (max-min fair flows, relaxed steps);
        ``packet``: :class:`~topocoll.sim.PacketSim`; ``ns3``:
        :class:`~topocoll.sim.ns3.Ns3Sim` (needs the ``[ns3]`` extra); or any registered.
    alpha : float
        Per-transfer overhead in seconds.
    routing : str, optional
        Routing policy override.
    **options
        Model-specific options (:attr:`Backend.options`).

    Returns
    -------
    CostModel

    Raises
    ------
    NotSupportedError
        If ``backend`` is unknown, or an option does not apply to it.
    """
    b = BACKEND_TABLE.get(backend)
    if b is None:
        raise NotSupportedError(f"unknown backend {backend!r}; choose one of "
                                f"{', '.join(BACKEND_TABLE)}")
    allowed = b.option_names()
    unknown = set(options) - allowed
    if unknown:
        if not allowed:
            raise NotSupportedError(f"backend {backend!r} takes no option "
                                    f"{', '.join(sorted(options))}")
        raise NotSupportedError(f"backend {backend!r} takes no option "
                                f"{', '.join(sorted(unknown))}")
    return b.make(alpha=alpha, routing=routing, **options)
