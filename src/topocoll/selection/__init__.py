"""Selection: which schedule is fastest here, and how far from optimal.

Above the synthesizers: it asks them for candidates, verifies and costs them with a
:class:`~topocoll.cost.CostModel`, and keeps the best. :func:`choose` answers for one
size (schedule, result, ranked alternatives, proven bound); :func:`compare_algorithms`
tabulates every algorithm over several sizes (``topocoll compare``);
:mod:`~.portfolio` is the ``optimal`` algorithm (the fastest of several synthesizers);
:data:`ALGORITHMS` is every name a user can ask for (plus the NCCL model's names of
:mod:`~.nccl`); :class:`ScheduleCache` keeps
schedules on disk between runs. No synthesizer imports this layer.
"""

from .cache import ScheduleCache, default_cache_dir
from .catalog import ALGORITHMS, KINDS, algorithms_for, find_algorithm, synthesize
from .choose import Candidate, Choice, choose
from .compare import (
    MAX_ROUTE_ENTRIES,
    CompareRow,
    Evaluated,
    compare_algorithms,
    evaluate_candidates,
    route_entries,
)
from .nccl import NCCL_NAME, is_nccl_name, nccl_evaluate, nccl_names
from .portfolio import portfolio_allgather, portfolio_allreduce, portfolio_reduce_scatter

__all__ = ["choose", "Choice", "Candidate", "compare_algorithms", "evaluate_candidates",
           "Evaluated", "CompareRow", "route_entries", "MAX_ROUTE_ENTRIES", "ALGORITHMS",
           "KINDS", "algorithms_for", "find_algorithm", "synthesize", "ScheduleCache",
           "default_cache_dir", "portfolio_allgather", "portfolio_reduce_scatter",
           "portfolio_allreduce", "NCCL_NAME", "nccl_names", "is_nccl_name", "nccl_evaluate"]
