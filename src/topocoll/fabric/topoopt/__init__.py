"""TopoOpt (Wang et al., NSDI 2023): a direct-connect optical topology co-optimized with
the parallelization strategy.

``finder`` (TopologyFinder: the degree split between the all-reduce rings and the
model-parallel traffic's matchings), ``job`` (a training job's traffic and its iteration
on a fabric), ``search`` (the alternating search over strategies and topologies, and the
baselines' own searches).
"""

from ...lazy import lazy_exports

_WHERE = {
    "FinderResult": "finder",
    "mp_matchings": "finder",
    "split_degree": "finder",
    "topology_finder": "finder",
    "TOPOOPT_BATCH": "job",
    "FabricEval": "job",
    "Job": "job",
    "Timing": "job",
    "Traffic": "job",
    "SPLITS": "search",
    "TopoOptResult": "search",
    "baselines": "search",
    "describe_strategy": "search",
    "expander_fabric": "search",
    "mcmc": "search",
    "optimize": "search",
    "switch_fabric": "search",
    "fattree_fabric": "search",
    "search_fixed": "search",
    "FATTREE_OVERSUBSCRIPTIONS": "search",
    "span_1f1b": "job",
    "phase_matrices": "job",
    "phase_flow_time": "job",
    "flow_check": "job",
    "PIPELINE_DEGREES": "job",
    "MICRO_BATCHES": "job",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
__all__ = sorted(_WHERE)
