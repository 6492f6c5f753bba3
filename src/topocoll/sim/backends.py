"""Pick a cost model by name: the ``--backend`` option of the CLI.

Examples
--------
>>> cost_model("flow").name, cost_model("analytical", alpha=1e-6).alpha
('flow', 1e-06)
>>> cost_model("magic")
Traceback (most recent call last):
...
topocoll.errors.NotSupportedError: unknown backend 'magic'; choose one of analytical, flow
"""

from __future__ import annotations

from typing import Any

from ..cost import AlphaBeta, CostModel
from ..errors import NotSupportedError
from .flow import FlowSim

__all__ = ["BACKENDS", "cost_model"]

#: Backend names accepted by :func:`cost_model`, fastest first.
BACKENDS = ("analytical", "flow")


def cost_model(backend: str, *, alpha: float = 0.0, routing: str | None = None,
               **options: Any) -> CostModel:
    """Return the cost model called ``backend`` with the given options.

    Parameters
    ----------
    backend : {'analytical', 'flow'}
        ``analytical``: :class:`~topocoll.cost.AlphaBeta` (steps as barriers);
        ``flow``: :class:`~topocoll.sim.FlowSim` (max-min fair flows, relaxed steps).
    alpha : float
        Per-transfer overhead in seconds (both models).
    routing : str, optional
        Routing policy override (both models).
    **options
        Model-specific options (``reduce_bandwidth`` for ``flow``).

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
    raise NotSupportedError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
