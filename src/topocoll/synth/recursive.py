"""Recursive doubling and halving: allgather, reduce-scatter and allreduce in logarithmic
steps, plus the Bruck (dissemination) allgather.

Power-of-two groups exchange with ``rank ^ 2**k``. Other sizes use the *fold* of
Rabenseifner and Thakur et al.: with ``q`` the largest power of two ``<= p``, each of the
``p - q`` extra positions ``e >= q`` first hands its data to its partner ``e - q``; the ``q``
core positions run the power-of-two algorithm, core position ``i`` standing for the
blocks ``{i, i + q}`` (the second one only if ``i + q < p``); finally each partner hands
the result back to its extra. Positions index ``ranks``; position ``i`` owns block ``i``.

References
----------
.. [1] Thakur, Rabenseifner and Gropp, "Optimization of collective communication
   operations in MPICH", IJHPCA 19(1), 2005.
.. [2] Rabenseifner, "Optimization of collective reduction operations", ICCS 2004.
.. [3] Bruck, Ho, Kipnis, Upfal and Weathersby, "Efficient algorithms for all-to-all
   communications in multiport message-passing systems", IEEE TPDS 8(11), 1997.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..collective import Collective
from ..schedule import Op, Schedule, ScheduleBuilder
from ..topology import Topology
from ._common import resolve_group

__all__ = ["recursive_doubling_allgather", "recursive_doubling_allreduce",
           "recursive_halving_reduce_scatter", "rabenseifner_allreduce", "bruck_allgather"]


def _core_size(p: int) -> int:
    """``q``: the largest power of two ``<= p``."""
    return 1 << (p.bit_length() - 1)


def _virtual(vblocks: np.ndarray, q: int, num_chunks: int):
    """Chunk lists: row ``t`` holds chunks ``v`` and ``v + q`` (if ``< num_chunks``) for
    every virtual block ``v`` in ``vblocks[t]``; a 2-D array when no ``v + q`` exists
    (the fast path), else a CSR pair."""
    if num_chunks <= q:
        return vblocks
    cand = np.concatenate([vblocks, vblocks + q], axis=1)
    valid = cand < num_chunks
    ptr = np.zeros(len(cand) + 1, dtype=np.int64)
    np.cumsum(valid.sum(axis=1), out=ptr[1:])
    return ptr, cand[valid]


def _doubling(b: ScheduleBuilder, g: np.ndarray, q: int, num_chunks: int) -> None:
    """Recursive-doubling allgather over core positions ``0..q-1``: in step ``k`` position
    ``r`` sends the aligned ``2**k`` virtual blocks it holds to ``r ^ 2**k``."""
    r = np.arange(q, dtype=np.int32)
    for k in range(q.bit_length() - 1):
        d = 1 << k
        vb = ((r >> k) << k)[:, None] + np.arange(d, dtype=np.int32)[None, :]
        b.new_step().add_many(g[r], g[r ^ d], _virtual(vb, q, num_chunks), Op.COPY)


def _halving(b: ScheduleBuilder, g: np.ndarray, q: int, num_chunks: int) -> None:
    """Recursive-halving reduce-scatter over core positions ``0..q-1``: at distance
    ``d = q/2, q/4, ..., 1`` position ``r`` reduces into ``r ^ d`` the ``d`` virtual blocks
    that partner keeps (those ``v`` with ``v // d == (r ^ d) // d``)."""
    r = np.arange(q, dtype=np.int32)
    d = q >> 1
    while d:
        keep = ((r ^ d) // d * d)[:, None] + np.arange(d, dtype=np.int32)[None, :]
        b.new_step().add_many(g[r], g[r ^ d], _virtual(keep, q, num_chunks), Op.REDUCE)
        d >>= 1


def _fold(b: ScheduleBuilder, g: np.ndarray, q: int, chunks, op: Op, inward: bool) -> None:
    """One step between each extra position ``e >= q`` and its partner ``e - q``; ``chunks``
    is an ``(p - q, w)`` array or CSR pair of chunk lists, one row per extra."""
    e = np.arange(q, len(g))
    if len(e):
        src, dst = (g[e], g[e - q]) if inward else (g[e - q], g[e])
        b.new_step().add_many(src, dst, chunks, op)


def _setup(topology, ranks, kind, split_of):
    group = resolve_group(topology, ranks)
    p = len(group)
    q = _core_size(p)
    coll = Collective(kind, group, split_of(p, q))
    return np.asarray(group, dtype=np.int64), p, q, ScheduleBuilder(coll)


def recursive_doubling_allgather(topology: Topology, *,
                                 ranks: Sequence[int] | None = None) -> Schedule:
    """Return the recursive-doubling allgather (folded for non-powers of two).

    Parameters
    ----------
    topology : Topology
        Any topology; pairs are routed by the topology.
    ranks : sequence of int, optional
        The participating ranks; ``ranks[i]`` owns block ``i``. Default: all ranks.

    Returns
    -------
    Schedule
        An allgather with one chunk per block.

    Raises
    ------
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one.

    Notes
    -----
    With ``p = 2**m``: ``m`` steps; in step ``k`` every rank sends the ``2**k`` blocks it
    holds to ``rank ^ 2**k``; each rank sends ``(p - 1)/p * message_bytes``.

    Otherwise (``q`` the largest power of two below ``p``): ``log2(q) + 2`` steps. Step 0:
    extra ``e`` copies its block to ``e - q``; then recursive doubling over ``q`` core
    ranks, core rank ``i`` carrying blocks ``i`` and ``i + q``; last step: each partner
    sends the other ``p - 1`` blocks to its extra. All ranks together send
    ``(p - 1) * message_bytes``, as in the power-of-two case, but unevenly.
    Works for every ``p >= 1``.

    References
    ----------
    .. [1] Thakur, Rabenseifner and Gropp, IJHPCA 2005.

    Examples
    --------
    >>> from topocoll.topology import hypercube
    >>> s = recursive_doubling_allgather(hypercube(3))
    >>> s.num_steps, s.bytes_sent(8.0).tolist()
    (3, [7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0])
    """
    g, p, q, b = _setup(topology, ranks, "allgather", lambda p, q: 1)
    e = np.arange(q, p)
    _fold(b, g, q, e[:, None], Op.COPY, inward=True)
    _doubling(b, g, q, p)
    others = np.arange(p)[None, :].repeat(len(e), axis=0)
    _fold(b, g, q, (np.arange(len(e) + 1) * (p - 1), others[others != e[:, None]]),
          Op.COPY, inward=False)
    return b.build(name="recursive_doubling")


def recursive_doubling_allreduce(topology: Topology, *,
                                 ranks: Sequence[int] | None = None) -> Schedule:
    """Return the latency-optimal recursive-doubling allreduce (whole vector each step).

    Parameters
    ----------
    topology : Topology
        Any topology.
    ranks : sequence of int, optional
        The participating ranks. Default: all ranks.

    Returns
    -------
    Schedule
        An allreduce of a single chunk.

    Raises
    ------
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one.

    Notes
    -----
    With ``p = 2**m``: ``m`` steps; in step ``k`` every rank reduces its whole vector into
    ``rank ^ 2**k``; each rank sends ``m * message_bytes``. Cost ``log2(p) (a + M b)``.

    Otherwise: ``log2(q) + 2`` steps: extras reduce into their partners, the ``q`` core
    ranks run recursive doubling, partners copy the result back. Core ranks send
    ``log2(q)`` vectors, partners one more, extras one. Works for every ``p >= 1``.

    References
    ----------
    .. [1] Thakur, Rabenseifner and Gropp, IJHPCA 2005.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> [recursive_doubling_allreduce(ring(p)).num_steps for p in (8, 6)]
    [3, 4]
    """
    g, p, q, b = _setup(topology, ranks, "allreduce", lambda p, q: 1)
    zeros = np.zeros((p - q, 1), dtype=np.int64)
    _fold(b, g, q, zeros, Op.REDUCE, inward=True)
    r = np.arange(q)
    for k in range(q.bit_length() - 1):
        b.new_step().add_many(g[r], g[r ^ (1 << k)], np.zeros(q, dtype=np.int64), Op.REDUCE)
    _fold(b, g, q, zeros, Op.COPY, inward=False)
    return b.build(name="recursive_doubling")


def recursive_halving_reduce_scatter(topology: Topology, *,
                                     ranks: Sequence[int] | None = None) -> Schedule:
    """Return the recursive-halving reduce-scatter (folded for non-powers of two).

    Parameters
    ----------
    topology : Topology
        Any topology.
    ranks : sequence of int, optional
        The participating ranks; block ``i`` ends at ``ranks[i]``. Default: all ranks.

    Returns
    -------
    Schedule
        A reduce-scatter with one chunk per block.

    Raises
    ------
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one.

    Notes
    -----
    With ``p = 2**m``: ``m`` steps at distances ``p/2, p/4, ..., 1``; at distance ``d``
    every rank reduces into ``rank ^ d`` the ``d`` blocks that partner keeps; each rank
    sends ``(p - 1)/p * message_bytes``.

    Otherwise: ``log2(q) + 2`` steps. Step 0: each extra reduces all ``p`` blocks into its
    partner; recursive halving over the ``q`` core ranks, core rank ``i`` standing for
    blocks ``i`` and ``i + q``; last step: each partner copies block ``i + q`` to its
    extra. All ranks together send ``(p - 1 + (p - q)/p) * message_bytes``.
    Works for every ``p >= 1``.

    References
    ----------
    .. [1] Thakur, Rabenseifner and Gropp, IJHPCA 2005.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = recursive_halving_reduce_scatter(ring(4))
    >>> s.num_steps, s.step(0)[0]
    (2, Transfer(src=0, dst=2, chunks=(2, 3), op=<Op.REDUCE: 1>, path=None))
    """
    g, p, q, b = _setup(topology, ranks, "reduce_scatter", lambda p, q: 1)
    e = np.arange(q, p)
    _fold(b, g, q, np.arange(p)[None, :].repeat(len(e), axis=0), Op.REDUCE, inward=True)
    _halving(b, g, q, p)
    _fold(b, g, q, e[:, None], Op.COPY, inward=False)
    return b.build(name="recursive_halving")


def rabenseifner_allreduce(topology: Topology, *,
                           ranks: Sequence[int] | None = None) -> Schedule:
    """Return Rabenseifner's allreduce: recursive-halving reduce-scatter, then
    recursive-doubling allgather, folded for non-powers of two.

    Parameters
    ----------
    topology : Topology
        Any topology.
    ranks : sequence of int, optional
        The participating ranks. Default: all ranks.

    Returns
    -------
    Schedule
        An allreduce of ``q`` chunks (``q`` the largest power of two ``<= p``); chunk ``i``
        is reduced at core rank ``i``.

    Raises
    ------
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one.

    Notes
    -----
    With ``p = 2**m``: ``2m`` steps; each rank sends ``2(p - 1)/p * message_bytes``.
    Cost ``2 log2(p) a + 2 (p - 1)/p M b``.

    Otherwise: ``2 log2(q) + 2`` steps: extras reduce their whole vector into their
    partners, the ``q`` core ranks run the power-of-two algorithm, partners copy the
    whole result back. Core ranks send ``2(q - 1)/q`` vectors, partners one more, extras
    one. Works for every ``p >= 1``.

    References
    ----------
    .. [1] Rabenseifner, ICCS 2004.
    .. [2] Thakur, Rabenseifner and Gropp, IJHPCA 2005.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = rabenseifner_allreduce(ring(8))
    >>> s.num_steps, s.collective.num_chunks, float(s.bytes_sent(8.0)[0])
    (6, 8, 14.0)
    """
    g, p, q, b = _setup(topology, ranks, "allreduce", lambda p, q: q)
    whole = np.arange(q)[None, :].repeat(p - q, axis=0)
    _fold(b, g, q, whole, Op.REDUCE, inward=True)
    _halving(b, g, q, q)
    _doubling(b, g, q, q)
    _fold(b, g, q, whole, Op.COPY, inward=False)
    return b.build(name="rabenseifner")


def bruck_allgather(topology: Topology, *, ranks: Sequence[int] | None = None) -> Schedule:
    """Return the Bruck (dissemination) allgather for any number of ranks.

    Parameters
    ----------
    topology : Topology
        Any topology.
    ranks : sequence of int, optional
        The participating ranks; ``ranks[i]`` owns block ``i``. Default: all ranks.

    Returns
    -------
    Schedule
        An allgather with one chunk per block.

    Raises
    ------
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one.

    Notes
    -----
    ``ceil(log2 p)`` steps. Before step ``k`` position ``r`` holds blocks
    ``r, r+1, ..., r + 2**k - 1`` (mod ``p``); in step ``k`` it sends the first
    ``min(2**k, p - 2**k)`` of them to ``r - 2**k`` (the last step is partial). Each rank
    sends ``(p - 1)/p * message_bytes``. No final rotation is needed because chunks are
    named, not positioned. Works for every ``p >= 1``.

    References
    ----------
    .. [1] Bruck et al., IEEE TPDS 1997.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = bruck_allgather(ring(5))
    >>> s.num_steps, s.bytes_sent(5.0).tolist()
    (3, [4.0, 4.0, 4.0, 4.0, 4.0])
    """
    group = resolve_group(topology, ranks)
    p = len(group)
    g = np.asarray(group, dtype=np.int64)
    b = ScheduleBuilder(Collective("allgather", group, 1))
    r = np.arange(p)
    d = 1
    while d < p:
        held = (r[:, None] + np.arange(min(d, p - d))[None, :]) % p
        b.new_step().add_many(g[r], g[(r - d) % p], held, Op.COPY)
        d <<= 1
    return b.build(name="bruck")
