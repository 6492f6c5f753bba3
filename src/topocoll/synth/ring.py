"""Ring algorithms: unidirectional and bidirectional ring allgather, reduce-scatter and
allreduce.

References
----------
.. [1] Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
   workstations", JPDC 69(2), 2009.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..collective import Collective
from ..errors import NotSupportedError
from ..schedule import Op, Schedule, ScheduleBuilder, Symmetry
from ..topology import Topology
from ._common import block_index, gather_parts, resolve_group, resolve_order

__all__ = ["ring_allgather", "ring_reduce_scatter", "ring_allreduce",
           "bidirectional_ring_allgather", "bidirectional_ring_reduce_scatter",
           "bidirectional_ring_allreduce", "ring_passes"]


def ring_passes(b: ScheduleBuilder, rings: Sequence[tuple[np.ndarray, np.ndarray, int]], *,
                phases: Sequence[bool], directions: Sequence[int], scale: int
                ) -> list[Symmetry]:
    """Append ring passes (one per entry of ``phases``: True = reduce-scatter) of ``p - 1``
    steps each, for several rings over the same ``p`` ranks at once.

    ``rings`` holds ``(order, blk, offset)`` per ring: the ring order, each position's
    block (:func:`~topocoll.synth._common.block_index`) and the ring's first chunk id.
    For direction ``+1`` position ``i`` sends to ``i+1``; in step ``s`` of an allgather it
    forwards block ``blk[i - s]`` (the one it received in step ``s-1``); in step ``s`` of a
    reduce-scatter it sends its partial sum of block ``blk[i - s - 1]``, so that block ``j``
    completes at position ``j``. Direction ``-1`` mirrors this. Direction ``h`` (its index
    in ``directions``) of a block of a ring uses chunk ``blk * scale + offset + h``. Every
    step holds every ring's transfers, ring by ring and direction by direction. All
    passes are written into one set of arrays (no copies: at 4096 ranks an allreduce has
    33.5 million transfers, the four Hamiltonian rings of a 64x64 torus 134 million).

    Returns each ring's rotation as a :class:`~topocoll.schedule.Symmetry` (position
    ``i`` to ``i + 1``, and with it the chunks of block ``blk[i]`` to those of
    ``blk[i + 1]``): a schedule made of these passes alone may claim them.
    """
    p = len(rings[0][0]) if rings else 0
    if p < 2:
        return []
    nd, S = len(directions), p - 1
    width = nd * p
    pos = np.arange(p)
    rows = S * len(phases)
    src = np.empty((rows, len(rings) * width), dtype=np.int32)
    dst = np.empty((rows, len(rings) * width), dtype=np.int32)
    chunks = np.empty((rows, len(rings) * width), dtype=np.int32)
    op = np.empty((rows, 1), dtype=np.int8)
    for k, reduce in enumerate(phases):
        op[k * S:(k + 1) * S] = Op.REDUCE if reduce else Op.COPY
    for j, (order, blk, offset) in enumerate(rings):
        order32, blk32 = order.astype(np.int32), blk.astype(np.int32)
        cols = slice(j * width, (j + 1) * width)
        src[:, cols] = np.tile(order32, nd)
        dst[:, cols] = np.concatenate([order32[(pos + d) % p] for d in directions])
        for k, reduce in enumerate(phases):
            shift = 1 if reduce else 0
            for h, d in enumerate(directions):
                val = blk32 * scale + offset + h
                lo = j * width + h * p
                for s in range(S):  # position i gets val[(i - d*(s+shift)) % p]: a rotation
                    r = (d * (s + shift)) % p
                    row = chunks[k * S + s, lo:lo + p]
                    row[r:], row[:r] = val[: p - r], val[p - r:]
    b.add_steps(src, dst, chunks, op)
    out = []
    for order, blk, offset in rings:
        ids = np.asarray(blk, dtype=np.int64) * scale + offset
        out.append(Symmetry(order, np.roll(order, -1),
                            np.concatenate([ids + h for h in range(nd)]),
                            np.concatenate([np.roll(ids, -1) + h for h in range(nd)])))
    return out


def _ring(topology, ranks, order, kind, directions, name) -> Schedule:
    group = resolve_group(topology, ranks)
    o = resolve_order(topology, group, order)
    blk = block_index(group, o)
    split = len(directions)
    meta = {"order": ",".join(map(str, o.tolist()))}
    phases = gather_parts(kind)
    coll = Collective(kind, group, len(group) * split if kind == "allreduce" else split)
    b = ScheduleBuilder(coll)
    sym = ring_passes(b, [(o, blk, 0)], phases=phases, directions=directions, scale=split)
    return b.build(name=name, meta=meta, symmetries=sym)


def ring_allgather(topology: Topology, *, ranks: Sequence[int] | None = None,
                   order: Sequence[int] | None = None) -> Schedule:
    """Return the unidirectional ring allgather schedule.

    Parameters
    ----------
    topology : Topology
        Any topology; consecutive ranks of the ring are routed by the topology.
    ranks : sequence of int, optional
        The participating ranks (defines block ownership). Default: all ranks.
    order : sequence of int, optional
        Ring order, a permutation of ``ranks``. Default: the topology's ``ring_order``
        hint, else ``ranks``.

    Returns
    -------
    Schedule
        ``p - 1`` steps; in step ``s`` every rank forwards the block it received in step
        ``s - 1``.

    Notes
    -----
    Bytes sent per rank: ``(p - 1)/p * message_bytes``; latency terms: ``p - 1``.
    Works for every ``p >= 1``.

    References
    ----------
    .. [1] Patarasuk and Yuan, JPDC 2009.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = ring_allgather(ring(4))
    >>> s.num_steps, s.num_transfers
    (3, 12)
    """
    return _ring(topology, ranks, order, "allgather", (1,), "ring")


def ring_reduce_scatter(topology: Topology, *, ranks: Sequence[int] | None = None,
                        order: Sequence[int] | None = None) -> Schedule:
    """Return the unidirectional ring reduce-scatter schedule (``p - 1`` steps).

    Block ``j`` starts at position ``j + 1`` and travels once around the ring, reduced at
    every hop, ending complete at position ``j``. Parameters as :func:`ring_allgather`.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> ring_reduce_scatter(ring(4)).step(0)[0]
    Transfer(src=0, dst=1, chunks=(3,), op=<Op.REDUCE: 1>, path=None)
    """
    return _ring(topology, ranks, order, "reduce_scatter", (1,), "ring")


def ring_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                   order: Sequence[int] | None = None) -> Schedule:
    """Return the ring allreduce: ring reduce-scatter then ring allgather.

    Notes
    -----
    ``2(p - 1)`` steps, ``p`` chunks; on a ring of links with latency ``a`` and bandwidth
    ``B`` it takes ``2(p - 1)(a + n/(p B))``. Bandwidth-optimal on a ring.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> ring_allreduce(ring(8)).num_steps
    14
    """
    return _ring(topology, ranks, order, "allreduce", (1,), "ring")


#: Variants of the bidirectional ring (``variant=`` option).
VARIANTS = ("halves", "halfway")


def _halfway(topology, ranks, order, kind: str) -> Schedule:
    """The ``variant="halfway"`` bidirectional ring (see
    :func:`bidirectional_ring_allgather`), its columns written at once: allgather step
    ``s`` (``1..S``, ``S = floor(p/2)``) has position ``i`` send, in direction ``d = +1``
    then ``-1``, both halves of the block it got ``s - 1`` hops away (``blk[i - d(s -
    1)]``) to ``i + d``; with ``p`` even the last step sends one half each way. The
    reduce-scatter is its time-reverse (steps backwards, endpoints swapped, REDUCE), the
    allreduce the two one after the other (what :func:`~topocoll.schedule.reverse` and
    :func:`~topocoll.schedule.concat` make of the allgather, without the copies: 67
    million entries on a 64x64 torus)."""
    from ..collective import allgather, allreduce, reduce_scatter

    group = resolve_group(topology, ranks)
    o = resolve_order(topology, group, order).astype(np.int32)
    blk = block_index(group, o).astype(np.int64)
    p = len(o)
    meta = {"order": ",".join(map(str, o.tolist())), "variant": "halfway"}
    S = p // 2                          # distances 1..S each way; p even: S shared
    pos = np.arange(p)
    # allgather step k = s - 1: 2p transfers (direction +1, then -1), two chunks each
    # (one on the last step when p is even)
    src_step = np.concatenate([o, o])
    dst_step = np.concatenate([o[(pos + 1) % p], o[(pos - 1) % p]])
    d = np.array([1, -1])
    k = np.arange(S)
    origin = blk[(pos[None, None, :] - d[None, :, None] * k[:, None, None]) % p]  # (S, 2, p)
    last_half = p % 2 == 0 and S > 0
    full = S - 1 if last_half else S
    parts = [np.stack([2 * origin[:full], 2 * origin[:full] + 1], axis=-1).reshape(full, 4 * p)]
    if last_half:
        parts.append((2 * origin[S - 1] + np.arange(2)[:, None]).reshape(1, 2 * p))
    per_step = [2] * full + [1] * (S - full)          # chunks per transfer, by step
    ag_chunks = [r.astype(np.int32) for part in parts for r in part]   # one row per step

    def columns(steps, reduce):
        """The columns of allgather steps ``steps`` (in that order), reversed when
        ``reduce`` (endpoints swapped, REDUCE)."""
        n = len(steps)
        a, b = (dst_step, src_step) if reduce else (src_step, dst_step)
        cnt = np.repeat(np.array([per_step[j] for j in steps], dtype=np.int64), 2 * p)
        return (np.tile(a, n), np.tile(b, n),
                np.full(n * 2 * p, Op.REDUCE if reduce else Op.COPY, dtype=np.int8), cnt,
                [ag_chunks[j] for j in steps])

    fwd, back = list(range(S)), list(range(S - 1, -1, -1))
    pieces = {"allgather": [(fwd, False)], "reduce_scatter": [(back, True)],
              "allreduce": [(back, True), (fwd, False)]}[kind]
    cols = [columns(steps, reduce) for steps, reduce in pieces]
    nsteps = sum(len(steps) for steps, _ in pieces)
    chunk_ptr = np.zeros(nsteps * 2 * p + 1, dtype=np.int64)
    np.cumsum(np.concatenate([c[3] for c in cols]), out=chunk_ptr[1:])
    coll = {"allgather": allgather(group, split=2),
            "reduce_scatter": reduce_scatter(group, split=2),
            "allreduce": allreduce(group, split=2 * p)}[kind]
    # every position does the same thing: the ring's rotation, a block's halves with it
    ids = 2 * blk
    sym = (Symmetry(o, np.roll(o, -1), np.concatenate([ids, ids + 1]),
                    np.concatenate([np.roll(ids, -1), np.roll(ids, -1) + 1])),)
    return Schedule(coll, np.arange(nsteps + 1, dtype=np.int64) * (2 * p),
                    np.concatenate([c[0] for c in cols]), np.concatenate([c[1] for c in cols]),
                    np.concatenate([c[2] for c in cols]),
                    None if chunk_ptr[-1] == nsteps * 2 * p else chunk_ptr,
                    np.concatenate([r for c in cols for r in c[4]]) if nsteps else
                    np.zeros(0, np.int32),
                    name="bidirectional_ring", meta=meta, symmetries=sym)


def _bidirectional(topology, ranks, order, kind: str, variant: str) -> Schedule:
    if variant not in VARIANTS:
        raise NotSupportedError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if variant == "halfway":
        return _halfway(topology, ranks, order, kind)
    return _ring(topology, ranks, order, kind, (1, -1), "bidirectional_ring")


def bidirectional_ring_allgather(topology: Topology, *, ranks: Sequence[int] | None = None,
                                 order: Sequence[int] | None = None,
                                 variant: str = "halves") -> Schedule:
    """Two rings at once, one in each direction.

    Parameters
    ----------
    topology, ranks, order
        As :func:`ring_allgather`.
    variant : {'halves', 'halfway'}
        'halves' (default): each direction carries half of every block all the way
        round (``p - 1`` steps). 'halfway': each direction carries every whole block
        half way round, to the ``floor((p - 1)/2)`` nearest ranks on its side; with
        ``p`` even the opposite rank gets one half from each side. The same bytes per
        link in ``floor(p/2)`` steps: half the latency terms.

    Notes
    -----
    'halves': ``p - 1`` steps with ``2p`` transfers each; chunk ``2j + h`` is half ``h``
    of block ``j`` (``h = 0`` clockwise, ``h = 1`` counter-clockwise). Halves the
    bandwidth term on topologies with full-duplex links in both ring directions.
    'halfway': ``floor(p/2)`` steps of ``2p`` transfers; every link carries
    ``(p - 1)/(2p)`` of the message in all, like 'halves'. On a ring of 128 ranks with
    1 us links, at 1 GiB: 1.006 of the cut bound against 1.012.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> bidirectional_ring_allgather(ring(4)).num_transfers
    24
    >>> s = bidirectional_ring_allgather(ring(6), variant="halfway")
    >>> s.num_steps, float(s.bytes_sent(12.0)[0])   # 2.5 blocks of 2 bytes each way
    (3, 10.0)
    """
    return _bidirectional(topology, ranks, order, "allgather", variant)


def bidirectional_ring_reduce_scatter(topology: Topology, *, ranks: Sequence[int] | None = None,
                                      order: Sequence[int] | None = None,
                                      variant: str = "halves") -> Schedule:
    """Bidirectional ring reduce-scatter; see :func:`bidirectional_ring_allgather`
    ('halfway': its time-reverse)."""
    return _bidirectional(topology, ranks, order, "reduce_scatter", variant)


def bidirectional_ring_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                                 order: Sequence[int] | None = None,
                                 variant: str = "halves") -> Schedule:
    """Bidirectional ring allreduce: ``2(p - 1)`` steps, ``2p`` chunks ('halfway':
    ``2 floor(p/2)`` steps).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> bidirectional_ring_allreduce(ring(4)).collective.num_chunks
    8
    >>> bidirectional_ring_allreduce(ring(4), variant="halfway").num_steps
    4
    """
    return _bidirectional(topology, ranks, order, "allreduce", variant)
