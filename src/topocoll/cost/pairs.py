"""The distinct ``(src, dst)`` pairs of a schedule, found once per schedule object.

Both the cost model (:mod:`.alphabeta`, which routes each pair once) and
:func:`~topocoll.selection.compare.route_entries` (which sizes those routes before costing)
need them; on a 64x64 torus's Hamiltonian-ring allreduce that is one pass over 134 million
transfers each. They are remembered beside the schedule (a weak reference: they go when it
goes), keyed by the node count, with the steps that repeat the step before them
(:func:`step_repeats`), which add no pair and are costed once.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from ._lines import distinct_pairs, repeated_steps

if TYPE_CHECKING:
    from ..schedule import Schedule

__all__ = ["routed_pairs", "step_repeats"]

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
        src, dst = _unrepeated(schedule)
        keys = distinct_pairs(src, dst, n, np.zeros(0, dtype=bool))
        keys.flags.writeable = False
        memo[n] = keys
    return keys


def step_repeats(schedule: Schedule) -> np.ndarray:
    """:func:`~._lines.repeated_steps` of ``schedule`` (read-only), computed once per
    schedule object (the pairs and the one-link costing both use it).

    >>> from topocoll.synth import ring_allgather
    >>> from topocoll.topology import ring
    >>> step_repeats(ring_allgather(ring(4))).tolist()
    [False, True, True]
    """
    memo = _SEEN.setdefault(schedule, {})
    rep = memo.get("repeats")
    if rep is None:
        rep = repeated_steps(schedule.step_ptr, schedule.src, schedule.dst)
        rep.flags.writeable = False
        memo["repeats"] = rep
    return rep


def _unrepeated(schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """``schedule``'s sources and destinations without the steps that repeat the step
    before them (:func:`~._lines.repeated_steps`: they add no pair), when those are at
    least half of the transfers (a ring's 134 million transfers are one step's pairs);
    else the columns themselves (no copy)."""
    sp = schedule.step_ptr
    rep = step_repeats(schedule)
    sizes = np.diff(sp)
    if not rep.any() or 2 * int(sizes[rep].sum()) < schedule.num_transfers:
        return schedule.src, schedule.dst
    kept = np.flatnonzero(~rep & (sizes > 0))
    lo, hi = sp[kept].tolist(), sp[kept + 1].tolist()
    return (np.concatenate([schedule.src[a:b] for a, b in zip(lo, hi, strict=True)]),
            np.concatenate([schedule.dst[a:b] for a, b in zip(lo, hi, strict=True)]))
