"""Pick a cost model by name: the ``--backend`` option of the CLI.

Examples
--------
>>> cost_model("flow").name, cost_model("analytical", alpha=1e-6).alpha
('flow', 1e-06)
>>> cost_model("packet", mtu=1500).mtu
1500
>>> cost_model("magic")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
topocoll.errors.NotSupportedError: unknown backend 'magic'; choose one of ...
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..cost import AlphaBeta, CostModel
from ..errors import NotSupportedError
from .flow import FlowSim
from .packet import PacketSim

__all__ = ["BACKENDS", "cost_model"]

#: Backend names accepted by :func:`cost_model`, fastest first.
BACKENDS = ("analytical", "flow", "packet", "ns3")


def cost_model(backend: str, *, alpha: float = 0.0, routing: str | None = None,
               **options: Any) -> CostModel:
    """Return the cost model called ``backend`` with the given options.

    Parameters
    ----------
    backend : {'analytical', 'flow', 'packet', 'ns3'}
        ``analytical``: :class:`~topocoll.cost.AlphaBeta` (steps as barriers);
        ``flow``: :class:`~topocoll.sim.FlowSim` (max-min fair flows, relaxed steps);
        ``packet``: :class:`~topocoll.sim.PacketSim`; ``ns3``:
        :class:`~topocoll.sim.ns3.Ns3Sim` (needs the ``[ns3]`` extra).
    alpha : float
        Per-transfer overhead in seconds (both models).
    routing : str, optional
        Routing policy override (both models).
    **options
        Model-specific options: ``reduce_bandwidth`` for ``flow``; any
        :class:`~topocoll.sim.PacketSim` or :class:`~topocoll.sim.ns3.Ns3Sim` field.

    Returns
    -------
    CostModel

    Raises
    ------
    NotSupportedError
        If ``backend`` is unknown, or an option does not apply to it.
    """
    if backend == "analytical":
        if options:
            raise NotSupportedError(f"backend 'analytical' takes no option "
                                    f"{', '.join(sorted(options))}")
        return AlphaBeta(alpha=alpha, routing=routing)
    if backend == "flow":
        unknown = set(options) - {"reduce_bandwidth"}
        if unknown:
            raise NotSupportedError(f"backend 'flow' takes no option "
                                    f"{', '.join(sorted(unknown))}")
        return FlowSim(alpha=alpha, routing=routing, **options)
    if backend in ("packet", "ns3"):
        if backend == "packet":
            cls: Any = PacketSim
        else:
            from .ns3 import Ns3Sim as cls
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(options) - names
        if unknown:
            raise NotSupportedError(f"backend {backend!r} takes no option "
                                    f"{', '.join(sorted(unknown))}")
        return cls(alpha=alpha, routing=routing, **options)
    raise NotSupportedError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
