"""Synthesizers: functions ``<algorithm>_<collective>(topology, *, ranks=None, ...)``
that return a :class:`~topocoll.schedule.Schedule`.

:data:`SYNTHESIZERS` lists every synthesizer with its stable name, its collective kind,
an applicability test and its tunable options; the common test and the CLI iterate it.
"""

from ._common import DEFAULT_SIZE, gather_parts, resolve_group, resolve_order
from .direct import (
    direct_allgather,
    direct_allreduce,
    direct_alltoall,
    direct_reduce_scatter,
    pairwise_alltoall,
    parameter_server_allreduce,
)
from .hierarchical import (
    hierarchical_allgather,
    hierarchical_allreduce,
    hierarchical_reduce_scatter,
)
from .rail_rings import rail_rings_allgather, rail_rings_allreduce, rail_rings_reduce_scatter
from .recursive import (
    bruck_allgather,
    rabenseifner_allreduce,
    recursive_doubling_allgather,
    recursive_doubling_allreduce,
    recursive_halving_reduce_scatter,
)
from .registry import (
    SYNTHESIZERS,
    Synthesizer,
    find_synthesizer,
    register_synthesizer,
    synthesizers_for,
    unregister_synthesizer,
)
from .ring import (
    bidirectional_ring_allgather,
    bidirectional_ring_allreduce,
    bidirectional_ring_reduce_scatter,
    ring_allgather,
    ring_allreduce,
    ring_reduce_scatter,
)
from .ring_cover import ring_cover_allgather, ring_cover_allreduce, ring_cover_reduce_scatter
from .swing import (
    swing_allgather,
    swing_allreduce,
    swing_broadcast,
    swing_latency_allreduce,
    swing_reduce,
    swing_reduce_scatter,
)
from .torus import (
    bucket_allgather,
    bucket_allreduce,
    bucket_reduce_scatter,
    hamiltonian_rings_allgather,
    hamiltonian_rings_allreduce,
    hamiltonian_rings_reduce_scatter,
    mirrored_recursive_doubling_allgather,
    mirrored_recursive_doubling_allreduce,
    mirrored_recursive_doubling_reduce_scatter,
)
from .trees import (
    binary_tree_parents,
    binomial_tree_allreduce,
    binomial_tree_broadcast,
    binomial_tree_reduce,
    double_binary_tree_allreduce,
    double_binary_tree_parents,
)
from .two_level import two_level_allgather, two_level_allreduce, two_level_reduce_scatter

__all__ = [
    "SYNTHESIZERS", "Synthesizer", "find_synthesizer", "synthesizers_for",
    "register_synthesizer", "unregister_synthesizer",
    "DEFAULT_SIZE", "resolve_group", "resolve_order", "gather_parts",
    "ring_allgather", "ring_reduce_scatter", "ring_allreduce",
    "bidirectional_ring_allgather", "bidirectional_ring_reduce_scatter",
    "bidirectional_ring_allreduce",
    "recursive_doubling_allgather", "recursive_doubling_allreduce",
    "recursive_halving_reduce_scatter", "rabenseifner_allreduce", "bruck_allgather",
    "binomial_tree_broadcast", "binomial_tree_reduce", "binomial_tree_allreduce",
    "double_binary_tree_allreduce", "binary_tree_parents", "double_binary_tree_parents",
    "direct_allgather", "direct_reduce_scatter", "direct_allreduce", "direct_alltoall",
    "pairwise_alltoall", "parameter_server_allreduce",
    "hierarchical_allgather", "hierarchical_reduce_scatter", "hierarchical_allreduce",
    "swing_allreduce", "swing_latency_allreduce", "swing_reduce_scatter", "swing_allgather",
    "swing_broadcast", "swing_reduce",
    "mirrored_recursive_doubling_allreduce", "mirrored_recursive_doubling_reduce_scatter",
    "mirrored_recursive_doubling_allgather", "bucket_allreduce", "bucket_reduce_scatter",
    "bucket_allgather", "hamiltonian_rings_allreduce", "hamiltonian_rings_reduce_scatter",
    "hamiltonian_rings_allgather",
    "two_level_allgather", "two_level_reduce_scatter", "two_level_allreduce",
    "ring_cover_allgather", "ring_cover_reduce_scatter", "ring_cover_allreduce",
    "rail_rings_allreduce", "rail_rings_reduce_scatter", "rail_rings_allgather",
]
