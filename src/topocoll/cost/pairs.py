"""The distinct ``(src, dst)`` pairs of a schedule, found once per schedule object.

Both the cost model (:mod:`.alphabeta`, which routes each pair once) and
:func:`~topocoll.selection.compare.route_entries` (which sizes those routes before costing)
need them; on a 64x64 torus's Hamiltonian-ring allreduce that is one pass over 134 million
transfers each. They are remembered beside the schedule (a weak reference: they go when it
goes), keyed by the node count.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from ._lines import distinct_pairs

if TYPE_CHECKING:
    from ..schedule import Schedule

__all__ = ["routed_pairs"]

_SEEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def routed_pairs(schedule: Schedule, n: int) -> np.ndarray:
    """Sorted distinct keys ``src * n + dst`` of every transfer of ``schedule``
    (read-only int64), computed once per schedule object and ``n``.

    >>> from topocoll.synth import ring_allgather
    >>> from topocoll.topology import ring
    >>> routed_pairs(ring_allgather(ring(4)), 4).tolist()   # 0->1, 1->2, 2->3, 3->0
    [1, 6, 11, 12]
    """
    memo = _SEEN.setdefault(schedule, {})
    keys = memo.get(n)
    if keys is None:
        keys = distinct_pairs(schedule.src, schedule.dst, n, np.zeros(0, dtype=bool))
        keys.flags.writeable = False
        memo[n] = keys
    return keys
