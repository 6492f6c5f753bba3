"""LIBRA (Won et al., ISPASS 2024): bandwidth per dimension of a multi-dimensional
fabric under a cost budget, for a mix of training workloads.

``model`` (networks, workloads, dimension traffic, cost), ``timing`` (the iteration-time
model the optimizer minimizes), ``solver`` (the optimization and its Pareto curve),
``conic`` (the exact conic form solved with Clarabel), ``check`` (re-costing an allocation
with real schedules), ``io`` (LIBRA's own input formats and ours).
"""

from ...lazy import lazy_exports

_WHERE = {
    "COST_CLASSES": "model",
    "OBJECTIVES": "model",
    "PRICES": "model",
    "LibraCollective": "model",
    "LibraDim": "model",
    "LibraLayer": "model",
    "LibraNetwork": "model",
    "LibraWorkload": "model",
    "LibraWorkloadMix": "model",
    "workload_parts": "model",
    "check_workload": "model",
    "cost": "model",
    "dimension_traffic": "model",
    "equal_split": "model",
    "parse_constraint": "model",
    "parse_network": "model",
    "check_allocation": "check",
    "LibraResult": "solver",
    "pareto": "solver",
    "solve": "solver",
    "slowdown_mix": "solver",
    "LIBRA_ALGORITHMS": "timing",
    "LIBRA_MODEL": "timing",
    "LOOPS": "timing",
    "PHASES": "timing",
    "TimeModel": "timing",
    "collective_time": "timing",
    "dim_profile": "timing",
    "iteration_time": "timing",
    "LIBRA_TYPES": "io",
    "communicators": "io",
    "read_communicator": "io",
    "read_libra_workload": "io",
    "read_cost_model": "io",
    "workload_from_layered": "io",
    "workload_from_model": "io",
    "write_libra_workload": "io",
    "write_libra_inputs": "io",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
__all__ = sorted(_WHERE)
