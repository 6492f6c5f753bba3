"""Hierarchical (multi-dimensional) collectives: the ASTRA-sim / LIBRA bucket scheme.

On a topology described by ``dims`` (mixed radix, dimension 0 fastest), an allreduce
reduce-scatters dimension by dimension (dimension 0 first) on a shrinking shard, then
allgathers back in the reverse dimension order. Within one dimension, the ranks that
differ only in that coordinate form a *group*; all groups of a dimension run in the same
steps. Ring and line dimensions use the bidirectional ring (half of every chunk each
way; a line's wrap-around hop is routed by the topology), fully connected and switch
dimensions the direct one-step exchange.

Chunk numbering: with ``h = 2`` if some dimension is a ring or line, else ``h = 1``,
chunk ``c*h + e`` is half ``e`` of shard ``c``, and shard ``c`` is reduced at (and owned
by) rank ``c``. Before the reduce-scatter of dimension ``d`` a rank works on the shards
whose coordinates below ``d`` equal its own; group member ``a`` keeps those whose
coordinate ``d`` is ``a``.

References
----------
.. [1] Rashidi et al., "ASTRA-SIM: Enabling SW/HW co-design exploration for distributed
   DL training platforms", ISPASS 2020.
.. [2] Won, Rashidi, Srinivasan and Krishna, "LIBRA: Enabling workload-aware
   multi-dimensional network topology optimization for distributed training of large AI
   models", ISPASS 2024.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..collective import Collective
from ..schedule import Op, Schedule, ScheduleBuilder
from ..topology import Topology
from ._common import grid_translations, require, resolve_group

__all__ = ["hierarchical_allreduce", "hierarchical_allgather", "hierarchical_reduce_scatter",
           "hierarchical_unsupported_reason", "phases"]

_RING_KINDS = ("ring", "line")


def hierarchical_unsupported_reason(topology: Topology, group: Sequence[int]) -> str | None:
    """None if the hierarchical scheme applies, else why not (it needs ``topology.dims``
    and all of the topology's ranks in rank order).

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> hierarchical_unsupported_reason(torus((2, 2)), (0, 1, 2))
    'the hierarchical scheme runs on all ranks of the topology in rank order'
    """
    if not topology.dims:
        return "the hierarchical scheme needs a topology with dims (torus, mesh, multi-dim)"
    if tuple(group) != tuple(range(topology.num_ranks)):
        return "the hierarchical scheme runs on all ranks of the topology in rank order"
    return None


def _phase(b: ScheduleBuilder, dims, d: int, h: int, reduce: bool) -> None:
    """Append the reduce-scatter (``reduce``) or allgather of dimension ``d``."""
    p = math.prod(x.size for x in dims)
    n = dims[d].size
    stride = math.prod(x.size for x in dims[:d])
    nxt = stride * n
    r = np.arange(p)
    a = (r // stride) % n
    base = (r % stride)[:, None] + nxt * np.arange(p // nxt)[None, :]

    def block(blk: np.ndarray, halves) -> np.ndarray:  # (p, m * len(halves)) chunk ids
        c = (base + (blk * stride)[:, None]) * h
        return np.concatenate([c + e for e in halves], axis=1)

    def peer(off: int) -> np.ndarray:
        return r + ((a + off) % n - a) * stride

    op = Op.REDUCE if reduce else Op.COPY
    if dims[d].kind in _RING_KINDS:
        shift = 1 if reduce else 0
        for s in range(n - 1):
            st = b.new_step()
            for e, di in enumerate((1, -1)):
                st.add_many(r, peer(di), block((a - di * (s + shift)) % n, (e,)), op)
    else:
        st = b.new_step()
        for off in range(1, n):
            st.add_many(r, peer(off), block((a + off) % n if reduce else a, range(h)), op)



def phases(b, dims, h: int, kind: str) -> None:
    """Append the bucket scheme for ``kind``: reduce-scatter dimension by dimension
    (``0, 1, ...``), then allgather back (``..., 1, 0``); either half alone for
    reduce_scatter and allgather. ``b`` is a builder or anything with its
    ``new_step``/``add_many``."""
    if kind != "allgather":
        for d in range(len(dims)):
            _phase(b, dims, d, h, reduce=True)
    if kind != "reduce_scatter":
        for d in reversed(range(len(dims))):
            _phase(b, dims, d, h, reduce=False)


def _hierarchical(topology: Topology, ranks, kind: str) -> Schedule:
    group = resolve_group(topology, ranks)
    reason = hierarchical_unsupported_reason(topology, group)
    require(reason is None, f"hierarchical {kind} on {topology.name}: {reason}")
    dims = topology.dims
    p = topology.num_ranks
    h = 2 if any(x.kind in _RING_KINDS for x in dims) else 1
    split = p * h if kind == "allreduce" else h
    b = ScheduleBuilder(Collective(kind, group, split))
    phases(b, dims, h, kind)
    return b.build(name="hierarchical",
                   meta={"dims": ",".join(f"{x.kind}({x.size})" for x in dims)},
                   symmetries=grid_translations([x.size for x in dims], p * h))


def hierarchical_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None) -> Schedule:
    """Return the hierarchical allreduce: reduce-scatter over dims ``0, 1, ...``, then
    allgather over dims ``..., 1, 0``.

    Parameters
    ----------
    topology : Topology
        A topology with ``dims`` (torus, mesh, hypercube, multi-dimensional...).
    ranks : sequence of int, optional
        Must be None or all ranks in rank order.

    Returns
    -------
    Schedule
        An allreduce of ``p * h`` chunks (see the module docstring).

    Raises
    ------
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one.
    NotSupportedError
        If the topology has no ``dims`` or ``ranks`` is a proper subgroup.

    Notes
    -----
    Steps: ``2 * sum_d s_d`` with ``s_d = n_d - 1`` for ring and line dimensions and
    ``s_d = 1`` for fully connected and switch ones. The reduce-scatter of dimension ``d``
    moves ``(n_d - 1) / (n_0 ... n_d)`` of the buffer per rank; the sum telescopes, so each
    rank sends ``2(p - 1)/p * message_bytes`` in all, of which the share on dimension
    ``d`` shrinks with ``d`` (LIBRA's reason to give low dimensions more bandwidth).

    References
    ----------
    .. [1] Won et al., ISPASS 2024.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> s = hierarchical_allreduce(torus((4, 4)))
    >>> s.num_steps, s.collective.num_chunks, float(s.bytes_sent(32.0)[0])
    (12, 32, 60.0)
    """
    return _hierarchical(topology, ranks, "allreduce")


def hierarchical_reduce_scatter(topology: Topology, *,
                                ranks: Sequence[int] | None = None) -> Schedule:
    """Return the hierarchical reduce-scatter (dims ``0, 1, ...``); shard ``c`` ends at
    rank ``c``.

    Parameters and Raises as :func:`hierarchical_allreduce`.

    Notes
    -----
    ``sum_d s_d`` steps (see :func:`hierarchical_allreduce`), ``h`` chunks per block;
    each rank sends ``(p - 1)/p * message_bytes``.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> hierarchical_reduce_scatter(torus((2, 3))).num_steps
    3
    """
    return _hierarchical(topology, ranks, "reduce_scatter")


def hierarchical_allgather(topology: Topology, *, ranks: Sequence[int] | None = None) -> Schedule:
    """Return the hierarchical allgather (dims ``..., 1, 0``); rank ``c`` owns block ``c``.

    Parameters and Raises as :func:`hierarchical_allreduce`.

    Notes
    -----
    ``sum_d s_d`` steps (see :func:`hierarchical_allreduce`), ``h`` chunks per block;
    each rank sends ``(p - 1)/p * message_bytes``.

    Examples
    --------
    >>> from topocoll.topology import fully_connected
    >>> hierarchical_allgather(fully_connected(4)).num_steps
    1
    """
    return _hierarchical(topology, ranks, "allgather")
