"""Direct (one-shot) algorithms: every rank talks to every other rank at once.

Direct allgather, reduce-scatter, allreduce (the "sharded parameter server": direct
reduce-scatter then direct allgather) and alltoall; the pairwise-exchange alltoall that
spreads the same traffic over ``p - 1`` steps; and the single parameter-server allreduce.
These are latency-optimal on fully connected and switched fabrics, and the baselines
against which topology-aware schedules are measured.

References
----------
.. [1] Thakur, Rabenseifner and Gropp, "Optimization of collective communication
   operations in MPICH", IJHPCA 19(1), 2005.
.. [2] Li et al., "Scaling distributed machine learning with the parameter server",
   OSDI 2014.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..collective import Collective
from ..schedule import Op, Schedule, ScheduleBuilder
from ..topology import Topology
from ._common import require, resolve_group

__all__ = ["direct_allgather", "direct_reduce_scatter", "direct_allreduce", "direct_alltoall",
           "pairwise_alltoall", "parameter_server_allreduce", "spread_period", "spread_split",
           "spread_transfers"]


def _pairs(p: int) -> tuple[np.ndarray, np.ndarray]:
    """All ordered pairs ``(i, j)`` of distinct positions, ``i`` major."""
    i, j = np.divmod(np.arange(p * p), p)
    keep = i != j
    return i[keep], j[keep]


def _one_shot(b: ScheduleBuilder, g: np.ndarray, reduce: bool) -> None:
    """One step: position ``i`` sends block ``i`` to every ``j`` (allgather), or reduces
    block ``j`` into every ``j`` (reduce-scatter)."""
    i, j = _pairs(len(g))
    if len(i):
        b.new_step().add_many(g[i], g[j], j if reduce else i, Op.REDUCE if reduce else Op.COPY)


#: Paths of a direct schedule: the topology's routing, or every block cut into pieces
#: sprayed over the equal-cost shortest paths (:func:`spread_split`).
PATHS = ("route", "spread")
#: Most (pair, piece) entries the default ``split`` of ``paths="spread"`` may produce.
SPREAD_BUDGET = 1_000_000
#: Largest default ``split`` of ``paths="spread"``.
SPREAD_MAX_SPLIT = 64


def spread_split(topology: Topology, group: Sequence[int]) -> int:
    """Default pieces per block for ``paths="spread"``: the least common multiple of the
    members' equal-cost path counts (:func:`~topocoll.topology.routing.spread_paths`), so
    that every pair's pieces cover its paths evenly; capped at :data:`SPREAD_MAX_SPLIT`
    (then the largest count, capped) and by :data:`SPREAD_BUDGET`.

    Examples
    --------
    >>> from topocoll.topology import fat_tree
    >>> spread_split(fat_tree(4), range(16))     # 2 x 2 paths between pods
    4
    """
    g = np.asarray(tuple(group), dtype=np.int64)
    p = len(g)
    if p < 2:
        return 1
    i, j = _pairs(p)
    q = spread_period(topology, g[i], g[j], SPREAD_MAX_SPLIT)
    return max(1, min(q, SPREAD_BUDGET // (p * (p - 1))))


def spread_period(topology: Topology, src: np.ndarray, dst: np.ndarray, cap: int) -> int:
    """Pieces that cover every pair's equal-cost shortest paths evenly: the least common
    multiple of the pairs' path counts; if that exceeds ``cap``, the largest count,
    capped.

    Examples
    --------
    >>> from topocoll.topology import fat_tree
    >>> spread_period(fat_tree(4), np.array([0, 0]), np.array([1, 15]), 64)   # 1 and 4
    4
    """
    from ..topology.routing import spread_paths

    _, _, span = spread_paths(topology, np.stack([src, dst], axis=1),
                              np.zeros(len(src), dtype=np.int64), spans=True)
    q = 1
    for c in np.unique(span).tolist():
        q = math.lcm(q, int(c))
        if q > cap:
            return min(int(span.max()), cap)
    return q


def spread_transfers(topology: Topology, src: np.ndarray, dst: np.ndarray, k: np.ndarray,
                     m: np.ndarray, chunks: np.ndarray, period: int,
                     choice: np.ndarray | None = None):
    """Transfers that send, for every entry ``e``, chunk ``chunks[e]`` from ``src[k[e]]``
    to ``dst[k[e]]`` along :func:`~topocoll.topology.routing.spread_paths` choice
    ``k[e] period + m[e]`` (``0 <= m < period``), or ``choice[e]`` if given; entries of
    one pair that share a path travel as one transfer.

    Returns ``(src, dst, (chunk_ptr, chunk_ids), paths)`` for
    :meth:`~topocoll.schedule.ScheduleBuilder.add_many`.

    Examples
    --------
    >>> from topocoll.topology import fat_tree
    >>> one = np.zeros(4, dtype=np.int64)
    >>> s, d, (ptr, ids), paths = spread_transfers(fat_tree(4), np.array([0]), np.array([15]),
    ...                                            one, np.arange(4), np.arange(4), 4)
    >>> len(paths), ptr.tolist()       # four pieces, four distinct paths
    (4, [0, 1, 2, 3, 4])
    """
    from ..topology.routing import spread_paths

    k = np.asarray(k, dtype=np.int64)
    if choice is None:
        choice = k * period + np.asarray(m, dtype=np.int64)
    choice = np.asarray(choice, dtype=np.int64)
    width = int(choice.max()) + 1 if len(choice) else 1
    ukm, inv_e = np.unique(k * width + choice, return_inverse=True)
    uk = ukm // width
    ptr, nodes = spread_paths(topology, np.stack([src[uk], dst[uk]], axis=1), ukm % width)
    lens = np.diff(ptr)
    mat = np.full((len(ukm), int(lens.max()) + 1), -1, dtype=np.int64)
    mat[:, 0] = uk
    row = np.repeat(np.arange(len(ukm)), lens)
    mat[row, 1 + np.arange(len(nodes)) - np.repeat(ptr[:-1], lens)] = nodes
    uniq, first, inv = np.unique(mat, axis=0, return_index=True, return_inverse=True)
    t = inv.reshape(-1)[inv_e.reshape(-1)]
    order = np.argsort(t, kind="stable")
    chunk_ptr = np.zeros(len(uniq) + 1, dtype=np.int64)
    np.cumsum(np.bincount(t, minlength=len(uniq)), out=chunk_ptr[1:])
    paths = [nodes[ptr[w]:ptr[w + 1]] for w in first.tolist()]
    pair = uniq[:, 0]
    return src[pair], dst[pair], (chunk_ptr, np.asarray(chunks)[order]), paths


def _spread_shot(b: ScheduleBuilder, topology: Topology, g: np.ndarray, reduce: bool,
                 q: int) -> None:
    """One step like :func:`_one_shot` with every block cut into ``q`` pieces: piece
    ``m`` of pair ``k`` takes :func:`~topocoll.topology.routing.spread_paths` choice
    ``k q + m``; pieces of a pair that share a path travel as one transfer."""
    i, j = _pairs(len(g))
    if not len(i):
        return
    k = np.repeat(np.arange(len(i), dtype=np.int64), q)
    m = np.tile(np.arange(q, dtype=np.int64), len(i))
    s, d, chunks, paths = spread_transfers(topology, g[i], g[j], k, m,
                                           (j if reduce else i)[k] * q + m, q)
    b.new_step().add_many(s, d, chunks, Op.REDUCE if reduce else Op.COPY, paths)


def _direct(topology, ranks, kind: str, phases: Sequence[bool], split_p: bool,
            paths: str = "route", split: int | None = None) -> Schedule:
    group = resolve_group(topology, ranks)
    require(paths in PATHS, f"paths must be one of {PATHS}, got {paths!r}")
    g = np.asarray(group, dtype=np.int64)
    if paths == "route":
        require(split is None, "split applies to paths='spread' only")
        b = ScheduleBuilder(Collective(kind, group, len(group) if split_p else 1))
        for reduce in phases:
            _one_shot(b, g, reduce)
        return b.build(name="direct")
    q = spread_split(topology, group) if split is None else split
    require(isinstance(q, int) and q >= 1, f"split must be an integer >= 1, got {q!r}")
    b = ScheduleBuilder(Collective(kind, group, len(group) * q if split_p else q))
    for reduce in phases:
        _spread_shot(b, topology, g, reduce, q)
    return b.build(name="direct", meta={"paths": "spread", "split": str(q)})


def direct_allgather(topology: Topology, *, ranks: Sequence[int] | None = None,
                     paths: str = "route", split: int | None = None) -> Schedule:
    """Return the direct allgather: one step in which every rank sends its block to
    every other rank.

    Parameters
    ----------
    topology : Topology
        Any topology (fully connected or switched fabrics suit it best).
    ranks : sequence of int, optional
        The participating ranks; ``ranks[i]`` owns block ``i``. Default: all ranks.
    paths : {'route', 'spread'}
        'route' (default): one transfer per pair, routed by the topology's policy.
        'spread': every block cut into ``split`` pieces, piece ``m`` of pair ``k``
        sent along explicit shortest path number ``k split + m`` of
        :func:`~topocoll.topology.routing.spread_paths` (per-packet ECMP made explicit).
        On a full-bisection switched fabric (fat-tree, leaf-spine without
        oversubscription) this puts an equal share on every up- and down-link, so the
        one step moves data at the exact bandwidth optimum.
    split : int, optional
        Pieces per block for 'spread'; default :func:`spread_split`.

    Returns
    -------
    Schedule
        One step (none if ``p = 1``) of ``p(p - 1)`` single-chunk copies ('route'), or
        one transfer per pair and distinct path ('spread').

    Raises
    ------
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one.

    Notes
    -----
    Each rank sends ``(p - 1)/p * message_bytes`` to ``p - 1`` peers at once. Works for
    every ``p >= 1``.

    Examples
    --------
    >>> from topocoll.topology import fully_connected
    >>> s = direct_allgather(fully_connected(4))
    >>> s.num_steps, s.num_transfers
    (1, 12)
    >>> from topocoll.topology import fat_tree
    >>> s = direct_allgather(fat_tree(4), paths="spread")
    >>> s.collective.split, s.num_transfers    # 4 pieces; 2 or 4 paths between pods
    (4, 848)
    """
    return _direct(topology, ranks, "allgather", (False,), False, paths, split)


def direct_reduce_scatter(topology: Topology, *, ranks: Sequence[int] | None = None,
                          paths: str = "route", split: int | None = None) -> Schedule:
    """Return the direct reduce-scatter: one step in which every rank reduces block ``j``
    into ``ranks[j]`` for every ``j`` but its own.

    Notes
    -----
    One step of ``p(p - 1)`` reduces; ``ranks[j]`` combines ``p - 1`` incoming copies of
    block ``j`` with its own. Each rank sends ``(p - 1)/p * message_bytes``. Parameters as
    :func:`direct_allgather` (with ``paths="spread"`` every reduce of a pair is split over
    its paths).

    Examples
    --------
    >>> from topocoll.topology import fully_connected
    >>> direct_reduce_scatter(fully_connected(3)).step(0)[0]
    Transfer(src=0, dst=1, chunks=(1,), op=<Op.REDUCE: 1>, path=None)
    """
    return _direct(topology, ranks, "reduce_scatter", (True,), False, paths, split)


def direct_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                     paths: str = "route", split: int | None = None) -> Schedule:
    """Return the direct allreduce: direct reduce-scatter then direct allgather on ``p``
    shards (the "sharded parameter server").

    Notes
    -----
    Two steps, ``p`` chunks; each rank sends ``2(p - 1)/p * message_bytes`` (the
    bandwidth optimum) over ``p - 1`` peers per step. Parameters as
    :func:`direct_allgather`; with ``paths="spread"`` shard ``j`` is chunks ``j split ..
    (j + 1) split - 1``.

    Examples
    --------
    >>> from topocoll.topology import star
    >>> s = direct_allreduce(star(4))
    >>> s.num_steps, s.collective.num_chunks, float(s.bytes_sent(4.0)[0])
    (2, 4, 6.0)
    """
    return _direct(topology, ranks, "allreduce", (True, False), True, paths, split)


def direct_alltoall(topology: Topology, *, ranks: Sequence[int] | None = None) -> Schedule:
    """Return the direct alltoall: one step in which ``ranks[i]`` sends chunk
    ``i*p + j`` to ``ranks[j]`` for every ``j != i``.

    Notes
    -----
    One step of ``p(p - 1)`` single-chunk copies; each rank sends
    ``(p - 1)/p * message_bytes``. Parameters as :func:`direct_allgather`.

    Examples
    --------
    >>> from topocoll.topology import fully_connected
    >>> direct_alltoall(fully_connected(3)).step(0)[2]
    Transfer(src=1, dst=0, chunks=(3,), op=<Op.COPY: 0>, path=None)
    """
    group = resolve_group(topology, ranks)
    p = len(group)
    g = np.asarray(group, dtype=np.int64)
    b = ScheduleBuilder(Collective("alltoall", group, 1))
    i, j = _pairs(p)
    if len(i):
        b.new_step().add_many(g[i], g[j], i * p + j, Op.COPY)
    return b.build(name="direct")


def pairwise_alltoall(topology: Topology, *, ranks: Sequence[int] | None = None) -> Schedule:
    """Return the pairwise-exchange alltoall: in step ``s`` (``1 <= s < p``) position ``r``
    sends its chunk for ``(r + s) mod p``.

    Notes
    -----
    ``p - 1`` steps of ``p`` single-chunk copies; every rank sends and receives exactly
    one chunk per step; each rank sends ``(p - 1)/p * message_bytes``. Works for every
    ``p >= 1``. Parameters as :func:`direct_allgather`.

    References
    ----------
    .. [1] Thakur, Rabenseifner and Gropp, IJHPCA 2005.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = pairwise_alltoall(ring(4))
    >>> s.num_steps, s.step(1)[3]
    (3, Transfer(src=3, dst=1, chunks=(13,), op=<Op.COPY: 0>, path=None))
    """
    group = resolve_group(topology, ranks)
    p = len(group)
    g = np.asarray(group, dtype=np.int64)
    b = ScheduleBuilder(Collective("alltoall", group, 1))
    r = np.arange(p)
    for s in range(1, p):
        j = (r + s) % p
        b.new_step().add_many(g[r], g[j], r * p + j, Op.COPY)
    return b.build(name="pairwise")


def parameter_server_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                               server: int | None = None) -> Schedule:
    """Return the parameter-server allreduce: everyone reduces into one server, which
    then sends the result to everyone.

    Parameters
    ----------
    topology : Topology
        Any topology.
    ranks : sequence of int, optional
        The participating ranks. Default: all ranks.
    server : int, optional
        The server, a member of ``ranks``. Default: the first rank.

    Returns
    -------
    Schedule
        Two steps (none if ``p = 1``), one chunk.

    Raises
    ------
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one.
    NotSupportedError
        If ``server`` is not one of the ranks.

    Notes
    -----
    Step 0: every other rank reduces its whole vector into the server (``p - 1``
    concurrent reduces); step 1: the server copies the result to each of them. The server
    sends and receives ``(p - 1) * message_bytes``, every other rank ``message_bytes``.
    Works for every ``p >= 1``.

    References
    ----------
    .. [1] Li et al., OSDI 2014.

    Examples
    --------
    >>> from topocoll.topology import star
    >>> s = parameter_server_allreduce(star(4), server=2)
    >>> s.num_steps, s.bytes_sent(1.0).tolist()
    (2, [1.0, 1.0, 3.0, 1.0])
    """
    group = resolve_group(topology, ranks)
    srv = group[0] if server is None else int(server)
    require(srv in group, f"server {server} is not one of the ranks {list(group)}")
    workers = np.asarray([r for r in group if r != srv], dtype=np.int64)
    b = ScheduleBuilder(Collective("allreduce", group, 1))
    zeros = np.zeros(len(workers), dtype=np.int64)
    if len(workers):
        b.new_step().add_many(workers, srv, zeros, Op.REDUCE)
        b.new_step().add_many(srv, workers, zeros, Op.COPY)
    return b.build(name="parameter_server", meta={"server": str(srv)})
