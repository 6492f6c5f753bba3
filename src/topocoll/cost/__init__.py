"""Cost models: turn (schedule, topology, size) into a :class:`SimResult` cheaply.

:class:`AlphaBeta` is the analytical model; :mod:`~topocoll.cost.kernel` is the one
alpha-beta step kernel that every estimate in the package (synthesizers' internal
choices included) is computed with. Lower bounds live in :mod:`topocoll.optimum`.
"""

import warnings

from ._lines import distinct_pairs
from .alphabeta import AlphaBeta
from .base import CostModel, CostModelBase, SimResult, Simulator
from .kernel import barrier_time, model_time, step_loads
from .pairs import routed_pairs

__all__ = ["CostModel", "CostModelBase", "Simulator", "SimResult", "AlphaBeta", "barrier_time",
           "model_time", "step_loads", "distinct_pairs", "routed_pairs"]

#: Names that moved to :mod:`topocoll.optimum` (issue 16); still reachable here, with a
#: DeprecationWarning, until the next minor release.
_MOVED = frozenset({"Bound", "CutBound", "lower_bound", "latency_bound", "injection_bound",
                    "cut_bound", "candidate_cuts"})


def __getattr__(name: str):
    if name in _MOVED:
        from .. import optimum

        warnings.warn(f"topocoll.cost.{name} moved to topocoll.optimum.{name}",
                      DeprecationWarning, stacklevel=2)
        return getattr(optimum, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
