"""The simulators' dependency rule, which relaxes the step barrier of the schedule IR.

Rule. Transfer ``t`` in step ``k`` with source node ``u`` is *ready* once every transfer
of every step ``k' < k`` that has ``u`` as its source or its destination has finished.
Transfers of the same step never wait for one another, and a transfer whose source
appears in no earlier step is ready at time 0.

Representation. The incidences ``(transfer, node, step)`` for ``node`` in
``{src, dst}`` are grouped by ``(node, step)``; groups are numbered node by node in step
order, so the groups of node ``u`` are ``node_first[u]:node_end[u]``. A node keeps a
pointer to its first group that still has unfinished transfers; when the pointer of
``u`` reaches group ``g``, the transfers of ``g`` whose *source* is ``u`` are released
(``release_ptr``/``release``). Each group is reached once, so bookkeeping is
``O(transfers)`` over a whole run.

Examples
--------
Ring allgather on 3 ranks: rank 0's second send waits for both its own first send and the
transfer it received in step 0.

>>> from topocoll.topology import ring
>>> from topocoll.synth.ring import ring_allgather
>>> d = dependency_groups(ring_allgather(ring(3)), 3)
>>> d.count.tolist()                 # transfers in each (node, step) group
[2, 2, 2, 2, 2, 2]
>>> d.group_of_src.tolist(), d.group_of_dst.tolist()
([0, 2, 4, 1, 3, 5], [2, 4, 0, 3, 5, 1])
>>> d.release[d.release_ptr[0]:d.release_ptr[1]].tolist()   # released when group 0 opens
[0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..schedule import Schedule

__all__ = ["DependencyGroups", "dependency_groups"]


@dataclass(frozen=True, eq=False)
class DependencyGroups:
    """The ``(node, step)`` groups of a schedule, in the form the simulators consume.

    Attributes
    ----------
    count : ndarray of int64, shape (G,)
        Transfers in each group (a transfer is in its source's and its destination's
        group; a transfer from a node to itself counts once).
    group_of_src, group_of_dst : ndarray of int64, shape (T,)
        Group of each transfer at its source and at its destination.
    node_first, node_end : ndarray of int64, shape (num_nodes,)
        The groups of node ``u`` are ``node_first[u]:node_end[u]`` (empty if ``u`` sends
        and receives nothing).
    release_ptr : ndarray of int64, shape (G + 1,)
    release : ndarray of int64
        ``release[release_ptr[g]:release_ptr[g+1]]`` are the transfers whose source group
        is ``g``, in schedule order.
    """

    count: np.ndarray
    group_of_src: np.ndarray
    group_of_dst: np.ndarray
    node_first: np.ndarray
    node_end: np.ndarray
    release_ptr: np.ndarray
    release: np.ndarray


def dependency_groups(schedule: Schedule, num_nodes: int) -> DependencyGroups:
    """Group the transfers of ``schedule`` by (node, step) for the dependency rule.

    Parameters
    ----------
    schedule : Schedule
    num_nodes : int
        Number of nodes of the topology (every ``src``/``dst`` is below it).

    Returns
    -------
    DependencyGroups

    Notes
    -----
    ``O(T log T)`` numpy work (one stable sort of ``2T`` incidence keys).
    """
    T = schedule.num_transfers
    step = schedule.transfer_steps().astype(np.int64)
    src = schedule.src.astype(np.int64)
    dst = schedule.dst.astype(np.int64)
    S = max(1, schedule.num_steps)
    other = src != dst
    node = np.concatenate([src, dst[other]])
    key = node * S + np.concatenate([step, step[other]])
    ukey, inv, count = np.unique(key, return_inverse=True, return_counts=True)
    group_of_src = inv[:T].astype(np.int64)
    group_of_dst = group_of_src.copy()
    group_of_dst[other] = inv[T:]
    gnode = ukey // S
    node_first = np.searchsorted(gnode, np.arange(num_nodes), side="left").astype(np.int64)
    node_end = np.searchsorted(gnode, np.arange(num_nodes), side="right").astype(np.int64)
    release = np.argsort(group_of_src, kind="stable").astype(np.int64)
    release_ptr = np.zeros(len(ukey) + 1, dtype=np.int64)
    np.cumsum(np.bincount(group_of_src, minlength=len(ukey)), out=release_ptr[1:])
    return DependencyGroups(count.astype(np.int64), group_of_src, group_of_dst, node_first,
                            node_end, release_ptr, release)
