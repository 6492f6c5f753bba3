"""Fabric design: LIBRA (bandwidth per dimension under cost), TopoOpt's TopologyFinder."""

from .libra import (
    COST_CLASSES,
    OBJECTIVES,
    PRICES,
    LibraCollective,
    LibraDim,
    LibraNetwork,
    LibraResult,
    Workload,
    collective_time,
    cost,
    dimension_traffic,
    equal_split,
    iteration_time,
    pareto,
    parse_constraint,
    parse_network,
    solve,
)
from .libra_io import (
    LIBRA_TYPES,
    communicators,
    read_communicator,
    read_libra_workload,
    workload_from_model,
)
from .topoopt import FinderResult, split_degree, topology_finder

__all__ = ["COST_CLASSES", "OBJECTIVES", "PRICES", "LibraCollective", "LibraDim",
           "LibraNetwork", "LibraResult", "Workload", "collective_time", "cost",
           "dimension_traffic", "equal_split", "iteration_time", "parse_constraint",
           "parse_network", "pareto", "solve", "LIBRA_TYPES", "communicators",
           "read_communicator", "read_libra_workload", "workload_from_model", "FinderResult",
           "split_degree", "topology_finder"]
