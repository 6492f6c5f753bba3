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

import numba
import numpy as np

from .events import heap_push

if TYPE_CHECKING:
    from ..schedule import Schedule

__all__ = ["DependencyGroups", "dependency_groups", "transfer_groups", "release_group",
           "finish_transfer"]


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

    def group_node(self) -> np.ndarray:
        """Node of every group, shape (G,)."""
        return np.repeat(np.arange(len(self.node_first), dtype=np.int64),
                         self.node_end - self.node_first)


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
    ``O(T + num_nodes)``: a counting sort of the incidences by node (transfers are
    already in step order), then runs of equal step form the groups.
    """
    return transfer_groups(schedule.src, schedule.dst, schedule.transfer_steps(), num_nodes)


def transfer_groups(src: np.ndarray, dst: np.ndarray, step: np.ndarray,
                    num_nodes: int) -> DependencyGroups:
    """:func:`dependency_groups` of transfers given as arrays (source, destination and
    step of each, in step order); every transfer in step 0: all start at once."""
    out = _groups(np.asarray(src, np.int64), np.asarray(dst, np.int64),
                  np.asarray(step, np.int64), int(num_nodes))
    return DependencyGroups(*out)


@numba.njit(cache=True)
def _groups(src, dst, step, num_nodes):
    T = len(src)
    deg = np.zeros(num_nodes + 1, np.int64)
    for t in range(T):
        deg[src[t] + 1] += 1
        if dst[t] != src[t]:
            deg[dst[t] + 1] += 1
    for u in range(num_nodes):
        deg[u + 1] += deg[u]
    fill = deg[:-1].copy()
    inc_t = np.empty(deg[-1], np.int64)      # incidences by node, in transfer order
    inc_src = np.empty(deg[-1], np.bool_)
    for t in range(T):
        inc_t[fill[src[t]]] = t
        inc_src[fill[src[t]]] = True
        fill[src[t]] += 1
        if dst[t] != src[t]:
            inc_t[fill[dst[t]]] = t
            inc_src[fill[dst[t]]] = False
            fill[dst[t]] += 1
    gsrc = np.empty(T, np.int64)
    gdst = np.empty(T, np.int64)
    first = np.empty(num_nodes, np.int64)
    end = np.empty(num_nodes, np.int64)
    count = np.empty(deg[-1], np.int64)
    rcount = np.zeros(deg[-1] + 1, np.int64)
    g = -1
    for u in range(num_nodes):
        first[u] = g + 1
        last = -1
        for i in range(deg[u], deg[u + 1]):
            t = inc_t[i]
            if step[t] != last:
                g += 1
                count[g] = 0
                last = step[t]
            count[g] += 1
            if inc_src[i]:
                gsrc[t] = g
                rcount[g + 1] += 1
                if dst[t] == src[t]:
                    gdst[t] = g
            else:
                gdst[t] = g
        end[u] = g + 1
    G = g + 1
    rptr = rcount[:G + 1].copy()
    for i in range(G):
        rptr[i + 1] += rptr[i]
    rel = np.empty(T, np.int64)
    pos = rptr[:G].copy()
    for t in range(T):
        rel[pos[gsrc[t]]] = t
        pos[gsrc[t]] += 1
    return count[:G].copy(), gsrc, gdst, first, end, rptr, rel


@numba.njit(cache=True)
def release_group(g, tau, delay, rptr, rel, start, ht, hs, hk, hsize, seq, shift, kind,
                  fifo, ftail):
    """Release the transfers of group ``g`` at time ``tau``: record ``start`` and push
    event ``(t << shift) | kind`` at ``tau + delay`` for each. If ``delay`` is 0 and
    ``fifo`` is not empty, the transfer ids go to ``fifo[ftail:]`` instead of the heap
    (the caller handles them at ``tau``, in order). Returns ``(hsize, seq, ftail)``."""
    for j in range(rptr[g], rptr[g + 1]):
        t = rel[j]
        start[t] = tau
        if delay == 0.0 and len(fifo) > 0:
            fifo[ftail] = t
            ftail += 1
        else:
            hsize = heap_push(ht, hs, hk, hsize, tau + delay, seq, (t << shift) | kind)
            seq += 1
    return hsize, seq, ftail


@numba.njit(cache=True)
def finish_transfer(t, tau, delay, gsrc, gdst, gnode, cnt, nxt, nend, rptr, rel, start,
                    finish, ht, hs, hk, hsize, seq, shift, kind, fifo, ftail):
    """Record that transfer ``t`` finished at ``tau`` and release every group whose node
    pointer it moves (see the module notes). Returns ``(hsize, seq, ftail)``."""
    finish[t] = tau
    for side in range(2):
        g = gsrc[t] if side == 0 else gdst[t]
        if side == 1 and g == gsrc[t]:
            break
        cnt[g] -= 1
        u = gnode[g]
        moved = False
        while nxt[u] < nend[u] and cnt[nxt[u]] == 0:
            nxt[u] += 1
            moved = True
        if moved and nxt[u] < nend[u]:
            hsize, seq, ftail = release_group(nxt[u], tau, delay, rptr, rel, start, ht, hs,
                                              hk, hsize, seq, shift, kind, fifo, ftail)
    return hsize, seq, ftail
