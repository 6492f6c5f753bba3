"""Tree algorithms: binomial broadcast, reduce and allreduce from any root, and NCCL's
pipelined double binary tree allreduce.

References
----------
.. [1] Thakur, Rabenseifner and Gropp, "Optimization of collective communication
   operations in MPICH", IJHPCA 19(1), 2005.
.. [2] Sanders, Speck and Traeff, "Two-tree algorithms for full bandwidth broadcast,
   reduction and scan", Parallel Computing 35(12), 2009.
.. [3] Jeaugey, "Massively scale your deep learning training with NCCL 2.4", NVIDIA
   developer blog, 2019 (the double binary tree; ``ncclGetBtree``/``ncclGetDtree``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..collective import Collective
from ..schedule import Op, Schedule, ScheduleBuilder, concat, reverse
from ..topology import Topology
from ._common import require, resolve_group

__all__ = ["binomial_tree_broadcast", "binomial_tree_reduce", "binomial_tree_allreduce",
           "double_binary_tree_allreduce", "binary_tree_parents", "double_binary_tree_parents"]


def _root_index(group: tuple[int, ...], root: int | None) -> int:
    if root is None:
        return 0
    require(int(root) in group, f"root {root} is not one of the ranks {list(group)}")
    return group.index(int(root))


def binomial_tree_broadcast(topology: Topology, *, ranks: Sequence[int] | None = None,
                            root: int | None = None) -> Schedule:
    """Return the binomial-tree broadcast of the whole vector from ``root``.

    Parameters
    ----------
    topology : Topology
        Any topology.
    ranks : sequence of int, optional
        The participating ranks. Default: all ranks.
    root : int, optional
        The broadcasting rank, a member of ``ranks``. Default: the first rank.

    Returns
    -------
    Schedule
        A broadcast of one chunk.

    Raises
    ------
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one.
    NotSupportedError
        If ``root`` is not one of the ranks.

    Notes
    -----
    ``ceil(log2 p)`` steps. With ``v`` the position relative to the root, in step ``k``
    every ``v < 2**k`` sends the vector to ``v + 2**k`` (if ``< p``). A rank sends
    ``message_bytes`` per child (the root ``ceil(log2 p)`` times); ``p - 1`` vectors in
    all. Works for every ``p >= 1``.

    References
    ----------
    .. [1] Thakur, Rabenseifner and Gropp, IJHPCA 2005.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = binomial_tree_broadcast(ring(5), root=2)
    >>> s.num_steps, [(t.src, t.dst) for t in s.step(1)]
    (3, [(2, 4), (3, 0)])
    """
    group = resolve_group(topology, ranks)
    p, ri = len(group), _root_index(group, root)
    g = np.asarray(group, dtype=np.int64)
    b = ScheduleBuilder(Collective("broadcast", group, 1, group[ri]))
    d = 1
    while d < p:
        v = np.arange(min(d, p - d))
        b.new_step().add_many(g[(v + ri) % p], g[(v + d + ri) % p], np.zeros(len(v), np.int64))
        d <<= 1
    return b.build(name="binomial_tree")


def binomial_tree_reduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                         root: int | None = None) -> Schedule:
    """Return the binomial-tree reduce to ``root``: the time reverse of
    :func:`binomial_tree_broadcast` (same parameters, steps and bytes).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = binomial_tree_reduce(ring(4), root=1)
    >>> s.num_steps, s.step(1)[0]
    (2, Transfer(src=2, dst=1, chunks=(0,), op=<Op.REDUCE: 1>, path=None))
    """
    bc = binomial_tree_broadcast(topology, ranks=ranks, root=root)
    c = bc.collective
    return reverse(bc, Collective("reduce", c.ranks, 1, c.root), name="binomial_tree")


def binomial_tree_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                            root: int | None = None) -> Schedule:
    """Return the binomial-tree allreduce: reduce to ``root``, then broadcast from it.

    Notes
    -----
    ``2 ceil(log2 p)`` steps, one chunk; ``2(p - 1)`` vectors sent in all; cost
    ``2 log2(p) (a + M b)``. Parameters as :func:`binomial_tree_broadcast`.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> binomial_tree_allreduce(ring(6)).num_steps
    6
    """
    bc = binomial_tree_broadcast(topology, ranks=ranks, root=root)
    c = bc.collective
    red = reverse(bc, Collective("reduce", c.ranks, 1, c.root))
    return concat([red, bc], Collective("allreduce", c.ranks, 1), name="binomial_tree")


def binary_tree_parents(num_ranks: int) -> np.ndarray:
    """Parent of each position in NCCL's in-order binary tree over ``0..p-1`` (root: -1).

    Position ``r > 0`` with lowest set bit ``2**j`` has children ``r - 2**(j-1)`` and
    ``r + o``, where ``o`` starts at ``2**(j-1)`` and halves while ``r + o >= p``
    (none if it reaches 0); odd positions are leaves. The root 0 has a single child,
    the largest power of two below ``p``.

    Examples
    --------
    >>> binary_tree_parents(6).tolist()
    [-1, 2, 4, 2, 0, 4]
    """
    p = int(num_ranks)
    parent = np.full(p, -1, dtype=np.int64)
    if p > 1:
        parent[1 << ((p - 1).bit_length() - 1)] = 0
    for r in range(2, p, 2):
        off = (r & -r) >> 1
        parent[r - off] = r
        o = off
        while o and r + o >= p:
            o >>= 1
        if o:
            parent[r + o] = r
    return parent


def double_binary_tree_parents(num_ranks: int) -> tuple[np.ndarray, np.ndarray]:
    """The two trees of the double binary tree as parent arrays over positions.

    Tree 1 is :func:`binary_tree_parents`. Tree 2 is its image under the mirror
    ``r -> p-1-r`` if ``p`` is even, else under the shift ``r -> (r+1) mod p``. Odd
    positions are the leaves of tree 1, so with ``p`` even every rank is interior in at most
    one tree; with ``p`` odd (``>= 3``) position 0 is interior in both.

    Examples
    --------
    >>> [t.tolist() for t in double_binary_tree_parents(4)]
    [[-1, 2, 0, 2], [1, 3, 1, -1]]
    """
    p = int(num_ranks)
    t1 = binary_tree_parents(p)
    x = np.arange(p)
    m = p - 1 - x if p % 2 == 0 else (x + 1) % p
    t2 = np.full(p, -1, dtype=np.int64)
    t2[m] = np.where(t1 >= 0, m[t1], -1)
    return t1, t2


def _depth_height(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth and height of every node of the tree given by ``parent``."""
    p = len(parent)
    depth = np.full(p, -1, dtype=np.int64)
    depth[parent < 0] = 0
    while (depth < 0).any():  # one pass per level: O(p log p)
        todo = np.flatnonzero((depth < 0) & (depth[np.maximum(parent, 0)] >= 0))
        depth[todo] = depth[parent[todo]] + 1
    height = np.zeros(p, dtype=np.int64)
    for x in np.argsort(-depth, kind="stable"):  # deepest first
        if parent[x] >= 0:
            height[parent[x]] = max(height[parent[x]], height[x] + 1)
    return depth, height


def double_binary_tree_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                                 pipeline: int = 1) -> Schedule:
    """Return NCCL's double binary tree allreduce, pipelined.

    Parameters
    ----------
    topology : Topology
        Any topology.
    ranks : sequence of int, optional
        The participating ranks; positions index them. Default: all ranks.
    pipeline : int
        Pieces per half of the vector (``>= 1``).

    Returns
    -------
    Schedule
        An allreduce of ``2 * pipeline`` chunks: chunk ``t * pipeline + j`` is piece ``j``
        of the half handled by tree ``t``.

    Raises
    ------
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one.
    NotSupportedError
        If ``pipeline < 1``.

    Notes
    -----
    The trees are those of :func:`double_binary_tree_parents`. In each tree piece ``j``
    is reduced up (a node of height ``h`` reduces it into its parent at step ``j + h``;
    leaves have height 0) and broadcast down (the root sends it at step ``j + H``, a node
    of depth ``d`` forwards it at step ``j + H + d``); both trees and both directions run
    in the same steps. With ``H`` the tree height (``ceil(log2 p)``) that is
    ``pipeline + 2H - 1`` steps. Rank bytes: ``message_bytes / 2`` per tree edge it
    touches as a child or parent, i.e. ``M/2 * sum over trees of (children + [not root])``;
    ``2(p - 1) * message_bytes`` in all. Works for every ``p >= 1``.

    References
    ----------
    .. [1] Sanders, Speck and Traeff, Parallel Computing 2009.
    .. [2] NVIDIA NCCL 2.4 release (``src/graph/trees.cc``).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = double_binary_tree_allreduce(ring(8), pipeline=4)
    >>> s.num_steps, s.collective.num_chunks, float(s.bytes_sent(1.0).sum())
    (9, 8, 14.0)
    """
    require(isinstance(pipeline, (int, np.integer)) and pipeline >= 1,
            f"pipeline must be an integer >= 1, got {pipeline!r}")
    group = resolve_group(topology, ranks)
    p, P = len(group), int(pipeline)
    g = np.asarray(group, dtype=np.int64)
    b = ScheduleBuilder(Collective("allreduce", group, 2 * P))
    rows = []
    for t, parent in enumerate(double_binary_tree_parents(p)):
        depth, height = _depth_height(parent)
        H = int(height[parent < 0][0])
        kid = np.flatnonzero(parent >= 0)
        j = np.arange(P)
        up = (j[None, :] + height[kid][:, None]).ravel()
        down = (j[None, :] + H + depth[parent[kid]][:, None]).ravel()
        chunk = np.tile(t * P + j, len(kid))
        src, dst = np.repeat(kid, P), np.repeat(parent[kid], P)
        rows.append((up, src, dst, chunk, Op.REDUCE))
        rows.append((down, dst, src, chunk, Op.COPY))
    step, src, dst, chunk = (np.concatenate([r[i] for r in rows]) for i in range(4))
    op = np.concatenate([np.full(len(r[0]), r[4], dtype=np.int8) for r in rows])
    order = np.argsort(step, kind="stable")
    bounds = np.searchsorted(step[order], np.arange(int(step.max(initial=-1)) + 2))
    for s in range(len(bounds) - 1):
        sel = order[bounds[s]: bounds[s + 1]]
        b.new_step().add_many(g[src[sel]], g[dst[sel]], chunk[sel], op[sel])
    return b.build(name="double_binary_tree", meta={"pipeline": str(P)})
