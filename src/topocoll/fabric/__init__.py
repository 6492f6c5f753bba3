"""Fabric design: LIBRA (bandwidth per dimension under cost), TopoOpt (a direct-connect
optical topology co-optimized with the parallelization strategy) and DLCP's scenario
(packet priorities, selective dropping and bounded loss under background load)."""

from .dlcp import PATTERNS, SCHEMES, background_flows, dlcp_messages, run_dlcp
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
from .linkload import ROUTINGS, LinkLoads
from .prices import (
    PriceTable,
    equivalent_fattree_bandwidth,
    fattree_cost,
    fattree_tiers,
    read_price_table,
    topoopt_cost,
)
from .topoopt import FinderResult, mp_matchings, split_degree, topology_finder
from .topoopt_job import TOPOOPT_BATCH, FabricEval, Job, Timing, Traffic
from .topoopt_search import (
    SPLITS,
    TopoOptResult,
    baselines,
    describe_strategy,
    expander_fabric,
    mcmc,
    optimize,
    switch_fabric,
)

__all__ = ["COST_CLASSES", "OBJECTIVES", "PRICES", "LibraCollective", "LibraDim",
           "LibraNetwork", "LibraResult", "Workload", "collective_time", "cost",
           "dimension_traffic", "equal_split", "iteration_time", "parse_constraint",
           "parse_network", "pareto", "solve", "LIBRA_TYPES", "communicators",
           "read_communicator", "read_libra_workload", "workload_from_model", "FinderResult",
           "split_degree", "topology_finder", "ROUTINGS", "LinkLoads", "PriceTable",
           "equivalent_fattree_bandwidth", "fattree_cost", "fattree_tiers", "read_price_table",
           "topoopt_cost", "TOPOOPT_BATCH", "FabricEval", "Job", "Timing", "Traffic",
           "TopoOptResult", "baselines", "describe_strategy", "expander_fabric", "mcmc",
           "optimize", "switch_fabric", "SPLITS", "mp_matchings", "SCHEMES", "PATTERNS",
           "background_flows", "dlcp_messages", "run_dlcp"]
