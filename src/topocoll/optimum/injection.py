"""The injection bound: every rank must send or receive some bytes through its own
links, and the ranks together must make a minimum number of transmissions
(:func:`injection_bound`; combined with the others in
:func:`~topocoll.optimum.bounds.lower_bound`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .bound_sets import MemberSets, collective_sets, in_set, memo_part

if TYPE_CHECKING:
    from ..collective import Collective
    from ..topology import Topology

__all__ = ["injection_bound"]

def _transmissions(collective: Collective, pre: MemberSets, post: MemberSets, R: int,
                   p: int) -> np.ndarray:
    """Minimum number of rank-to-rank transmissions of each chunk.

    For a reduction (or a copy with one owner) with ``|pre| = a``, ``|post| = b``: take
    the first transfer after which some node ``x`` holds all of ``pre``. Before it, every
    contributor other than ``x`` has sent (distinct senders); after it, every receiver
    other than ``x`` must still receive (distinct receivers). So at least
    ``a + b - 2`` transfers if ``pre`` and ``post`` meet, else ``a + b - 1``: ``2(p - 1)``
    for allreduce (the one-way gossip bound), ``p - 1`` for reduce, ``|post \\ pre|`` for
    a copy. Serializing a step's transfers only adds knowledge, so the count also holds
    for concurrent transfers; relays (switches or other ranks on a route) do not count.
    For copies with several holders: ``|post \\ pre|`` receptions.
    """
    nc = len(pre.size)
    meet = np.zeros(nc, dtype=np.int64)  # |pre & post|
    meet[pre.every & post.every] = p
    meet[pre.every & ~post.every] = post.size[pre.every & ~post.every]
    meet[~pre.every & post.every] = pre.size[~pre.every & post.every]
    both = ~pre.every & ~post.every
    if both.any():
        sel = both[post.e_chunk]
        c, r = post.e_chunk[sel], post.e_rank[sel]
        meet += np.bincount(c[in_set(c, r, pre, R)], minlength=nc)
    a, b = pre.size.astype(np.int64), post.size.astype(np.int64)
    gossip = a + b - 2 + (meet == 0)
    single = collective.is_reduction | (a == 1)
    t = np.where(single, gossip, b - meet)
    return np.where((b == 0) | (a == 0), 0, np.maximum(t, 0))


def _per_rank(collective: Collective, members, pre: MemberSets, post: MemberSets, R: int):
    """Chunks each rank must send and receive (see :func:`injection_bound` Notes)."""
    red = collective.is_reduction
    send = np.zeros(R, dtype=np.int64)
    recv = np.zeros(R, dtype=np.int64)
    qone = post.size == 1
    # sender rule: r in pre(c) sends c if post(c) has a rank other than r
    eligible = np.full(len(pre.size), red) | (pre.size == 1)
    pall = eligible & pre.every
    send[members] += int((pall & (post.size >= 2)).sum()) + int((pall & qone).sum())
    send -= np.bincount(post.single[pall & qone], minlength=R)
    sel = eligible[pre.e_chunk]
    c, r = pre.e_chunk[sel], pre.e_rank[sel]
    ok = (post.size[c] >= 2) | (qone[c] & (post.single[c] != r))
    send += np.bincount(r[ok], minlength=R)
    # receiver rule: r in post(c) receives c unless it already holds all of it
    pone = pre.size == 1
    qall = post.every
    if red:
        recv[members] += int((qall & ((pre.size >= 2) | pone)).sum())
        recv -= np.bincount(pre.single[qall & pone], minlength=R)
    else:
        recv[members] += int((qall & ~pre.every).sum())
        sel = (qall & ~pre.every)[pre.e_chunk]
        recv -= np.bincount(pre.e_rank[sel], minlength=R)
    sel = ~qall[post.e_chunk]
    c, r = post.e_chunk[sel], post.e_rank[sel]
    holds = in_set(c, r, pre, R)
    need = ~holds | (red & ~(pone[c] & (pre.single[c] == r)))
    recv += np.bincount(r[need], minlength=R)
    return send, recv


def injection_bound(collective: Collective, topology: Topology, message_bytes: float) -> float:
    """Lower bound from the bandwidth of the ranks' own links.

    Parameters
    ----------
    collective : Collective
        What must happen.
    topology : Topology
        The network; uses :meth:`~Topology.egress_bandwidth` and
        :meth:`~Topology.ingress_bandwidth` of its ranks.
    message_bytes : float
        The nccl-tests size ``S``.

    Returns
    -------
    float
        The largest of the per-rank and aggregate bounds below, in seconds.

    Raises
    ------
    TopologyError
        If a rank of the collective is not a rank of the topology.

    Notes
    -----
    With ``b`` = ``collective.chunk_bytes(message_bytes)``:

    - Egress of rank ``r``: ``r`` must send chunk ``c`` (or a reduction containing it)
      when ``r`` is in ``pre(c)`` and ``post(c)`` holds another rank, for reductions and
      single-owner copies (nobody else has its contribution). Time >= chunks * b /
      egress(r).
    - Ingress of rank ``r``: ``r`` in ``post(c)`` must receive ``c`` unless it is in
      ``pre(c)`` and, for reductions, ``pre(c) = {r}``. Time >= chunks * b / ingress(r).
    - Aggregate: chunk ``c`` needs at least ``T(c)`` rank-to-rank transfers (see
      ``_transmissions``: ``2(p - 1)`` for allreduce, ``p - 1`` per chunk of
      reduce-scatter or reduce, ``|post \\ pre|`` for copies). Each leaves a rank and
      enters a rank, so time >= ``sum(T) * b`` / (total egress of all ranks), and the same
      over ingress. All ranks of the topology count, since non-members may relay.

    Each is valid because a step lasts at least ``load_l / bandwidth_l`` on every link,
    and so at least the bytes crossing a set of links over that set's capacity.

    Examples
    --------
    Allreduce on a bidirectional ring (egress ``2B`` per rank) needs
    ``2(p - 1) n / (2 p B)``:

    >>> from topocoll.collective import allreduce
    >>> from topocoll.topology import ring
    >>> injection_bound(allreduce(4), ring(4, bandwidth=1e9), 8e9)   # 2*3*8e9/(2*4*1e9)
    6.0
    """
    unit = memo_part(topology, collective, "injection",
                   lambda: _injection_unit(collective, topology))
    return float(unit * collective.chunk_bytes(message_bytes))


def _injection_unit(collective: Collective, topology: Topology) -> float:
    """:func:`injection_bound` for chunks of one byte."""
    members, pre, post = collective_sets(collective, topology)
    R = topology.num_ranks
    b = 1.0
    egress = topology.egress_bandwidth()[:R]
    ingress = topology.ingress_bandwidth()[:R]
    send, recv = _per_rank(collective, members, pre, post, R)
    total = float(_transmissions(collective, pre, post, R, len(members)).sum()) * b
    with np.errstate(divide="ignore", invalid="ignore"):
        per_rank = max(_safe_max(send * b / egress), _safe_max(recv * b / ingress))
    if total == 0:
        return float(per_rank)
    return float(max(per_rank, total / egress.sum(), total / ingress.sum()))


def _safe_max(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    return float(x.max()) if len(x) else 0.0


