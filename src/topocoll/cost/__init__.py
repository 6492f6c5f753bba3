"""Cost models: turn (schedule, topology, size) into a :class:`SimResult` cheaply, and
lower bounds that every schedule's cost must respect."""

from .alphabeta import AlphaBeta
from .base import CostModel, SimResult
from .bounds import (
    Bound,
    CutBound,
    candidate_cuts,
    cut_bound,
    injection_bound,
    latency_bound,
    lower_bound,
)

__all__ = ["CostModel", "SimResult", "AlphaBeta", "Bound", "CutBound", "lower_bound",
           "latency_bound", "injection_bound", "cut_bound", "candidate_cuts"]
