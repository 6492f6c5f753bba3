"""Synthesizers: functions ``<algorithm>_<collective>(topology, *, ranks=None, ...)``
that return a :class:`~topocoll.schedule.Schedule`.

:data:`SYNTHESIZERS` lists every synthesizer with its stable name, its collective kind,
an applicability test and its tunable options; the common test and the CLI iterate it.
"""

from .registry import SYNTHESIZERS, Synthesizer, find_synthesizer, synthesizers_for
from .ring import (
    bidirectional_ring_allgather,
    bidirectional_ring_allreduce,
    bidirectional_ring_reduce_scatter,
    ring_allgather,
    ring_allreduce,
    ring_reduce_scatter,
)

__all__ = [
    "SYNTHESIZERS", "Synthesizer", "find_synthesizer", "synthesizers_for",
    "ring_allgather", "ring_reduce_scatter", "ring_allreduce",
    "bidirectional_ring_allgather", "bidirectional_ring_reduce_scatter",
    "bidirectional_ring_allreduce",
]
