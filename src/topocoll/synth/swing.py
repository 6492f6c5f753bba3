"""Swing: short-cutting rings on tori (allreduce, reduce-scatter, allgather, broadcast,
reduce).

At step ``s`` a rank pairs with the rank ``rho(s) = sum_{i<=s} (-2)**i`` = 1, -1, 3, -5,
11, ... positions away, in the ``+`` direction if its coordinate is even and ``-`` if odd
(:func:`swing_peer`). Because every ``rho`` is odd, each step is a perfect matching, and
distances grow like ``2**(s+1)/3`` instead of recursive doubling's ``2**s``: messages
travel fewer hops and share fewer links. On a D-dimensional torus the steps swing
round-robin over the dimensions (the coordinate parity of the current dimension picks the
direction), and with ``multiport=True`` ``2D`` instances run at once, instance ``j``
starting at dimension ``j mod D`` and instances ``j >= D`` mirrored, each on ``1/(2D)`` of
the data, so every port of every node is busy at every step.

Variants: *bandwidth-optimal* (reduce-scatter on blocks that halve every step, then the
mirror-image allgather: ``2 L`` steps, ``2(p - 1)/p`` of the vector per rank) and
*latency-optimal* (whole-vector exchange and sum at each of ``L`` steps). ``L = sum_k
log2 d_k`` for power-of-two dimensions.

Sizes that are not powers of two: the bandwidth-optimal collectives run on the whole
shape as the paper does (:mod:`~topocoll.synth.block_trees`; ``ceil(log2 q)`` steps per
dimension, no extra step, every block sent once on its tree). Even sizes pair every
coordinate at every step; on an odd size ``d`` the first ``d - 1`` coordinates do, and
the last exchanges its blocks directly with ``(d - 1)/2**(s+1)`` of them at step ``s``.
The authors' negabinary block selection is not used: it loses contributions for some
even sizes (26, 50, ...; ``../shared/reference/algorithms.md`` §6.6). The latency-optimal
variant, broadcast and reduce, and groups over ``TREE_MAX_RANKS`` ranks, fold per
dimension onto the largest power of two (:mod:`topocoll.synth.multiport`), which is
correct for every shape.

References
----------
.. [1] De Sensi, Bonato, Saam and Hoefler, "Swing: Short-cutting Rings for Higher
   Bandwidth Allreduce", NSDI 2024.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..schedule import Schedule
from ..topology import Topology
from .multiport import butterfly_schedule, make_plan, plan_translations

__all__ = ["swing_rho", "swing_peer", "swing_allreduce", "swing_latency_allreduce",
           "swing_reduce_scatter", "swing_allgather", "swing_broadcast", "swing_reduce"]


def swing_rho(step: int) -> int:
    """``rho(s) = sum_{i=0}^{s} (-2)**i = (1 - (-2)**(s+1)) / 3``.

    Examples
    --------
    >>> [swing_rho(s) for s in range(8)]
    [1, -1, 3, -5, 11, -21, 43, -85]
    """
    return (1 - (-2) ** (step + 1)) // 3


def swing_peer(x, size: int, step: int):
    """The coordinate paired with ``x`` (scalar or array) at relative step ``step`` on a
    ring of ``size``: ``x + rho(step)`` if ``x`` is even, ``x - rho(step)`` if odd (mod
    ``size``).

    Examples
    --------
    >>> [swing_peer(0, 8, s) for s in range(3)]
    [1, 7, 3]
    >>> [swing_peer(5, 8, s) for s in range(3)]
    [4, 6, 2]
    """
    rho = swing_rho(step)
    x = np.asarray(x)
    out = np.where(x % 2 == 0, x + rho, x - rho) % size
    return int(out) if out.ndim == 0 else out


def _rule(x: np.ndarray, q: int, sigma: int) -> np.ndarray:
    return swing_peer(x, q, sigma)


def _schedule(topology, ranks, kind, multiport, variant="bandwidth", root=None) -> Schedule:
    unfolded = variant == "bandwidth" and kind in ("allreduce", "reduce_scatter", "allgather")
    plan = make_plan(topology, ranks, _rule, multiport=multiport, unfolded=unfolded)
    name = "swing_latency" if variant == "latency" else "swing"
    s = butterfly_schedule(plan, kind, variant=variant, root=root, name=name,
                           meta={"family": "swing"})
    if unfolded:   # Swing's peers depend on a coordinate's parity: shifts by 2 commute
        s = s.replace(symmetries=plan_translations(plan, kind, 2))
    return s


def swing_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                    multiport: bool = True) -> Schedule:
    """Return the bandwidth-optimal Swing allreduce (reduce-scatter + allgather).

    Parameters
    ----------
    topology : Topology
        Any topology. With ``dims`` (torus, mesh, HyperX-style ``hier:fc(..)x fc(..)``)
        and all ranks in rank order the steps swing over the dimensions; otherwise the
        group is one logical ring in ``ranks`` order.
    ranks : sequence of int, optional
        The participating ranks. Default: all ranks.
    multiport : bool
        Run ``2D`` instances (all ports) on ``1/(2D)`` of the data each; else one.

    Returns
    -------
    Schedule
        An allreduce of ``Q * P`` chunks (``Q`` core ranks, ``P`` instances).

    Raises
    ------
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one.

    Notes
    -----
    Power-of-two dimensions: ``2L`` steps, ``L = sum_k log2 d_k``; reduce-scatter step
    ``s`` moves ``1/2**(s+1)`` of each instance's data, so each rank sends
    ``2(p - 1)/p * message_bytes``. Other sizes: ``2L`` steps with ``L = sum_k
    ceil(log2 q_k)`` (``q_k = d_k``, or ``d_k - 1`` when odd), the same bytes per rank
    (each block on its tree; the steps are less even, and on odd sizes the last
    coordinate's direct exchanges cross several hops).

    References
    ----------
    .. [1] De Sensi et al., NSDI 2024, §3-4.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> s = swing_allreduce(torus((4, 4)))
    >>> s.num_steps, s.collective.num_chunks, float(s.bytes_sent(16.0 * 16)[0])
    (8, 64, 480.0)
    """
    return _schedule(topology, ranks, "allreduce", multiport)


def swing_latency_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                            multiport: bool = True) -> Schedule:
    """Return the latency-optimal Swing allreduce: at each of ``L`` steps every rank
    exchanges its whole (per-instance) vector with its Swing peer and both add.

    Parameters and Raises as :func:`swing_allreduce`.

    Returns
    -------
    Schedule
        An allreduce of ``P`` chunks, one per instance.

    Notes
    -----
    ``L`` steps (plus two per folded dimension); each rank sends ``L * message_bytes``.
    Best below a few KiB, where latency dominates.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> s = swing_latency_allreduce(torus((8, 8)))
    >>> s.num_steps, s.collective.num_chunks
    (6, 4)
    """
    return _schedule(topology, ranks, "allreduce", multiport, variant="latency")


def swing_reduce_scatter(topology: Topology, *, ranks: Sequence[int] | None = None,
                         multiport: bool = True) -> Schedule:
    """Return the Swing reduce-scatter (the time-reverse of :func:`swing_allgather`).

    Parameters and Raises as :func:`swing_allreduce`.

    Returns
    -------
    Schedule
        A reduce-scatter with ``P`` chunks per block (block ``i`` ends at ``ranks[i]``).

    Notes
    -----
    ``L`` steps for power-of-two dimensions; each rank sends ``(p - 1)/p *
    message_bytes``.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> swing_reduce_scatter(ring(8)).num_steps
    3
    """
    return _schedule(topology, ranks, "reduce_scatter", multiport)


def swing_allgather(topology: Topology, *, ranks: Sequence[int] | None = None,
                    multiport: bool = True) -> Schedule:
    """Return the Swing allgather: the reduce-scatter's steps in reverse order, each rank
    sending the blocks it holds to its peer.

    Parameters and Raises as :func:`swing_allreduce`.

    Returns
    -------
    Schedule
        An allgather with ``P`` chunks per block.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = swing_allgather(ring(8), multiport=False)
    >>> [len(t.chunks) for t in s.step(0)][:2], [len(t.chunks) for t in s.step(2)][:2]
    ([1, 1], [4, 4])
    """
    return _schedule(topology, ranks, "allgather", multiport)


def swing_broadcast(topology: Topology, *, ranks: Sequence[int] | None = None,
                    root: int | None = None, multiport: bool = True) -> Schedule:
    """Return the Swing broadcast: a tree over the Swing steps, longest distance first.

    Parameters
    ----------
    topology, ranks, multiport
        As :func:`swing_allreduce`.
    root : int, optional
        Root rank (default the first group member).

    Returns
    -------
    Schedule
        A broadcast of ``P`` chunks; instance ``j`` sends chunk ``j`` along its own tree.

    Notes
    -----
    ``L`` steps (plus folds); every non-root rank receives each chunk exactly once.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = swing_broadcast(ring(8), root=3, multiport=False)
    >>> [len(st) for st in s.steps]
    [1, 2, 4]
    """
    return _schedule(topology, ranks, "broadcast", multiport, root=root)


def swing_reduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                 root: int | None = None, multiport: bool = True) -> Schedule:
    """Return the Swing reduce: the time-reverse of :func:`swing_broadcast`.

    Parameters, Returns and Notes as :func:`swing_broadcast` (a reduce to ``root``).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> [len(st) for st in swing_reduce(ring(8), root=3, multiport=False).steps]
    [4, 2, 1]
    """
    return _schedule(topology, ranks, "reduce", multiport, root=root)
