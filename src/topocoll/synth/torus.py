"""Torus baselines for Swing: mirrored recursive doubling, bucket (concurrent
dimension-wise rings on all ports) and edge-disjoint Hamiltonian rings.

- **Mirrored recursive doubling** is the multi-port butterfly of
  :mod:`topocoll.synth.multiport` with the recursive-doubling rule ``x ^ 2**sigma`` per
  dimension: ``2D`` instances, instance ``j`` starting at dimension ``j mod D``, instances
  ``j >= D`` mirrored (partner ``x - 2**sigma`` where plain recursive doubling uses
  ``x + 2**sigma``), so all ports are busy (the baseline the Swing authors built).
- **Bucket** runs ``D`` copies of the dimension-by-dimension bidirectional ring scheme of
  :mod:`topocoll.synth.hierarchical` at once, copy ``j`` visiting the dimensions in the
  order ``j, j+1, ...``, each on ``1/D`` of the data: at every step the copies use
  different dimensions, hence all ``2D`` ports (Sack and Gropp; Jain and Sabharwal).
- **Hamiltonian rings**: a 2-D torus ``a x b`` with ``a | b`` (or ``b | a``) has two
  edge-disjoint Hamiltonian cycles, a row-major "staircase" and its complement
  (:func:`hamiltonian_cycles`, when the complement is one cycle); each carries a
  bidirectional ring on half of the data, so four unidirectional rings use all four ports.

References
----------
.. [1] De Sensi et al., "Swing: Short-cutting Rings for Higher Bandwidth Allreduce",
   NSDI 2024, §2.2 and §5 (the baselines).
.. [2] Sack and Gropp, "Faster topology-aware collective algorithms through
   non-minimal communication", PPoPP 2012.
.. [3] Jain and Sabharwal, "Optimal bucket algorithms for large MPI collectives on torus
   interconnects", ICS 2010.
.. [4] Bae and Bose, "Edge-disjoint Hamiltonian cycles in k-ary n-cubes and hypercubes",
   IEEE TC 52(10), 2003.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..collective import Collective
from ..errors import NotSupportedError
from ..schedule import Schedule, ScheduleBuilder
from ..topology import Dim, Topology
from ._common import block_index, gather_parts, grid_translations, require, resolve_group
from .hierarchical import hierarchical_unsupported_reason, phases
from .multiport import butterfly_schedule, half_turns, make_plan
from .ring import ring_passes

__all__ = ["mirrored_recursive_doubling_allreduce", "mirrored_recursive_doubling_allgather",
           "mirrored_recursive_doubling_reduce_scatter", "bucket_allreduce",
           "bucket_reduce_scatter", "bucket_allgather", "hamiltonian_cycles",
           "hamiltonian_unsupported_reason", "hamiltonian_rings_allreduce",
           "hamiltonian_rings_reduce_scatter", "hamiltonian_rings_allgather"]


# ------------------------------------------------------- mirrored recursive doubling
def _xor_rule(x: np.ndarray, q: int, sigma: int) -> np.ndarray:
    return x ^ (1 << sigma)


def mirrored_recursive_doubling_allreduce(topology: Topology, *,
                                          ranks: Sequence[int] | None = None,
                                          variant: str = "bandwidth") -> Schedule:
    """Return the mirrored (multi-port) recursive-doubling allreduce.

    Parameters
    ----------
    topology : Topology
        Any topology; with ``dims`` and all ranks the steps rotate over dimensions.
    ranks : sequence of int, optional
    variant : {'bandwidth', 'latency'}
        Reduce-scatter + allgather on halving blocks, or whole-vector exchanges.

    Returns
    -------
    Schedule
        ``2L`` steps (bandwidth) or ``L`` steps (latency), ``L = sum_k log2 d_k``, plus
        two per dimension that is not a power of two (folded).

    Notes
    -----
    Identical to Swing (:func:`~topocoll.synth.swing.swing_allreduce`) except for the
    pairing rule: distance ``2**sigma`` in place of ``|rho(sigma)|``, so the same volume
    travels farther and congests more (De Sensi et al., Table 2).

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> s = mirrored_recursive_doubling_allreduce(torus((4, 4)))
    >>> s.num_steps, s.meta["ports"]
    (8, '4')
    """
    if variant not in ("bandwidth", "latency"):
        raise NotSupportedError(f"variant must be 'bandwidth' or 'latency', got {variant!r}")
    plan = make_plan(topology, ranks, _xor_rule)
    s = butterfly_schedule(plan, "allreduce", variant=variant,
                           name="mirrored_recursive_doubling", meta={"variant": variant})
    return s.replace(symmetries=half_turns(plan, "allreduce")) if variant == "bandwidth" else s


def mirrored_recursive_doubling_reduce_scatter(topology: Topology, *,
                                               ranks: Sequence[int] | None = None) -> Schedule:
    """Mirrored recursive-doubling reduce-scatter (``L`` steps, ``2D`` ports).

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> mirrored_recursive_doubling_reduce_scatter(torus((4, 2))).num_steps
    3
    """
    plan = make_plan(topology, ranks, _xor_rule)
    s = butterfly_schedule(plan, "reduce_scatter", name="mirrored_recursive_doubling")
    return s.replace(symmetries=half_turns(plan, "reduce_scatter"))


def mirrored_recursive_doubling_allgather(topology: Topology, *,
                                          ranks: Sequence[int] | None = None) -> Schedule:
    """Mirrored recursive-doubling allgather (``L`` steps, ``2D`` ports).

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> mirrored_recursive_doubling_allgather(torus((4, 2))).collective.num_chunks
    32
    """
    plan = make_plan(topology, ranks, _xor_rule)
    s = butterfly_schedule(plan, "allgather", name="mirrored_recursive_doubling")
    return s.replace(symmetries=half_turns(plan, "allgather"))


# ------------------------------------------------------------------------ bucket
class _Recorder:
    """Stands in for a ScheduleBuilder: records the steps :func:`hierarchical._phase`
    emits on a rotated virtual torus, mapping nodes and chunks to the real ones."""

    def __init__(self, node_map: np.ndarray, chunk_map: np.ndarray) -> None:
        self.node_map, self.chunk_map = node_map, chunk_map
        self.steps: list[list[tuple]] = []

    def new_step(self) -> _Recorder:
        self.steps.append([])
        return self

    def add_many(self, src, dst, chunks, op) -> _Recorder:
        self.steps[-1].append((self.node_map[src], self.node_map[dst],
                               self.chunk_map[np.asarray(chunks)], op))
        return self


def _bucket(topology: Topology, ranks, kind: str, dimension_algorithm: str) -> Schedule:
    group = resolve_group(topology, ranks)
    reason = hierarchical_unsupported_reason(topology, group)
    require(reason is None, f"bucket {kind} on {topology.name}: {reason}")
    require(dimension_algorithm in ("auto", "ring"),
            f"dimension_algorithm must be 'auto' or 'ring', got {dimension_algorithm!r}")
    dims = topology.dims
    if dimension_algorithm == "ring":
        dims = tuple(Dim("ring", d.size, d.bandwidth, d.latency) for d in dims)
    p, D = topology.num_ranks, len(dims)
    h = 2 if any(x.kind in ("ring", "line") for x in dims) else 1
    per_rank = D * h
    sizes = [d.size for d in dims]
    strides = [math.prod(sizes[:k]) for k in range(D)]
    parts = []
    for j in range(D):
        perm = [(j + i) % D for i in range(D)]          # virtual dim i = real dim perm[i]
        rot = tuple(dims[k] for k in perm)
        v = np.arange(p)
        real = np.zeros(p, dtype=np.int64)
        rest = v.copy()
        for k in perm:
            real += (rest % sizes[k]) * strides[k]
            rest //= sizes[k]
        vchunk = np.arange(p * h)
        chunk_map = real[vchunk // h] * per_rank + j * h + vchunk % h
        rec = _Recorder(real, chunk_map)
        phases(rec, rot, h, kind)
        parts.append(rec.steps)
    split = p * per_rank if kind == "allreduce" else per_rank
    b = ScheduleBuilder(Collective(kind, group, split))
    for i in range(max(len(s) for s in parts)):
        b.new_step()
        for steps in parts:
            if i < len(steps):
                for src, dst, ch, op in steps[i]:
                    b.add_many(src, dst, ch, op)
    return b.build(name="bucket", meta={"dims": ",".join(f"{x.kind}({x.size})" for x in dims),
                                        "parts": str(D), "variant": dimension_algorithm},
                   symmetries=grid_translations(sizes, p * per_rank))


def bucket_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                     dimension_algorithm: str = "auto") -> Schedule:
    """Return the bucket allreduce: ``D`` concurrent dimension-wise ring schemes.

    Parameters
    ----------
    topology : Topology
        A topology with ``dims`` (torus, mesh, HyperX-style multi-dimensional).
    ranks : sequence of int, optional
        Must be None or all ranks in rank order.
    dimension_algorithm : {'auto', 'ring'}
        'auto': bidirectional rings on ring and line dimensions, one direct exchange on
        fully connected and switch ones (as :mod:`~topocoll.synth.hierarchical`);
        'ring': bidirectional rings on every dimension (the paper's bucket on HyperX).

    Returns
    -------
    Schedule
        An allreduce of ``p * D * h`` chunks (``h = 2`` with ring or line dimensions):
        chunk ``(c * D + j) * h + e`` is half ``e`` of shard ``c`` of copy ``j``.

    Raises
    ------
    NotSupportedError
        If the topology has no ``dims`` or ``ranks`` is a proper subgroup.

    Notes
    -----
    ``2 sum_k (d_k - 1)`` steps on a torus; copy ``j`` reduce-scatters dimensions
    ``j, j+1, ...`` with bidirectional rings and allgathers back, so each rank sends
    ``2(p - 1)/p * message_bytes`` in all and at every step the copies occupy different
    dimensions (on a rectangular torus the phases drift apart, so some steps mix them).

    References
    ----------
    .. [1] Jain and Sabharwal, ICS 2010.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> s = bucket_allreduce(torus((4, 4)))
    >>> s.num_steps, s.collective.num_chunks, len(s.step(0))
    (12, 64, 64)
    """
    return _bucket(topology, ranks, "allreduce", dimension_algorithm)


def bucket_reduce_scatter(topology: Topology, *, ranks: Sequence[int] | None = None,
                          dimension_algorithm: str = "auto") -> Schedule:
    """Bucket reduce-scatter (``sum_k (d_k - 1)`` steps on a torus); see
    :func:`bucket_allreduce`.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> bucket_reduce_scatter(torus((3, 5))).num_steps
    6
    """
    return _bucket(topology, ranks, "reduce_scatter", dimension_algorithm)


def bucket_allgather(topology: Topology, *, ranks: Sequence[int] | None = None,
                     dimension_algorithm: str = "auto") -> Schedule:
    """Bucket allgather; see :func:`bucket_allreduce`.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> bucket_allgather(torus((3, 5))).collective.num_chunks
    60
    """
    return _bucket(topology, ranks, "allgather", dimension_algorithm)


# ---------------------------------------------------------- Hamiltonian rings
def _staircase(a: int, b: int) -> list[int]:
    """Hamiltonian cycle of the ``a x b`` torus (rank ``x + a*y``) for ``a | b``: row ``y``
    is walked in ``+x`` from column ``-y mod a`` and left by ``+y`` from its last column."""
    order = []
    for y in range(b):
        start = (-y) % a
        order += [(start + i) % a + a * y for i in range(a)]
    return order


def hamiltonian_cycles(topology: Topology) -> tuple[list[int], list[int]]:
    """Two edge-disjoint Hamiltonian cycles of a 2-D torus, as rank orders.

    The first is the staircase of :func:`_staircase` (rows in ``+x``, one ``+y`` hop per
    row, which closes when one side divides the other); the second is its complement
    (every node keeps exactly two unused links), accepted only if it is a single cycle.

    Raises
    ------
    NotSupportedError
        If the topology is not a 2-D torus with both sides >= 3, neither side divides the
        other, or the complement splits into several cycles.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> a, b = hamiltonian_cycles(torus((3, 3)))
    >>> a, b
    ([0, 1, 2, 5, 3, 4, 7, 8, 6], [0, 2, 8, 5, 4, 1, 7, 6, 3])
    """
    dims = topology.dims
    if len(dims) != 2 or any(d.kind != "ring" for d in dims) or topology.num_switches:
        raise NotSupportedError(f"Hamiltonian rings need a 2-D torus, got {topology.name}")
    a, b = dims[0].size, dims[1].size
    if min(a, b) < 3:
        raise NotSupportedError(f"Hamiltonian rings need both torus sides >= 3, got {a}x{b}")
    if b % a == 0:
        first = _staircase(a, b)
    elif a % b == 0:  # transpose: walk columns
        first = [(r // b) + a * (r % b) for r in _staircase(b, a)]
    else:
        raise NotSupportedError(f"Hamiltonian rings need one torus side to divide the other, "
                                f"got {a}x{b}")
    n = a * b
    used = set()
    for i in range(n):
        u, v = first[i], first[(i + 1) % n]
        used.add((min(u, v), max(u, v)))

    def neighbours(r: int) -> list[int]:
        x, y = r % a, r // a
        return [(x + 1) % a + a * y, (x - 1) % a + a * y, x + a * ((y + 1) % b),
                x + a * ((y - 1) % b)]

    second, prev, cur = [0], -1, 0
    while True:
        free = [v for v in neighbours(cur) if (min(cur, v), max(cur, v)) not in used]
        nxt = free[0] if free[0] != prev else free[1]
        if nxt == 0:
            break
        second.append(nxt)
        prev, cur = cur, nxt
        if len(second) > n:
            break
    if len(second) != n:
        raise NotSupportedError(f"the complement of the staircase cycle on the {a}x{b} torus "
                                f"is not one Hamiltonian cycle")
    return first, second


def hamiltonian_unsupported_reason(topology: Topology, group: Sequence[int]) -> str | None:
    """None if :func:`hamiltonian_rings_allreduce` applies, else why not.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> hamiltonian_unsupported_reason(torus((4, 4)), tuple(range(16))) is None
    True
    """
    if tuple(group) != tuple(range(topology.num_ranks)):
        return "Hamiltonian rings run on all ranks of the topology in rank order"
    try:
        hamiltonian_cycles(topology)
    except NotSupportedError as e:
        return str(e)
    return None


def _hamiltonian(topology: Topology, ranks, kind: str) -> Schedule:
    """The two cycles' bidirectional rings (``variant="halves"``) in one schedule: block
    ``b`` of cycle ``i`` in direction ``h`` is chunk ``4 b + 2 i + h``; every step holds
    the four rings' transfers, written straight into the schedule's arrays."""
    group = resolve_group(topology, ranks)
    reason = hamiltonian_unsupported_reason(topology, group)
    require(reason is None, f"hamiltonian_rings {kind} on {topology.name}: {reason}")
    p = topology.num_ranks
    coll = Collective(kind, group, 4 * p if kind == "allreduce" else 4)
    rings = [(np.asarray(cyc, dtype=np.int64), block_index(group, np.asarray(cyc)), 2 * i)
             for i, cyc in enumerate(hamiltonian_cycles(topology))]
    b = ScheduleBuilder(coll)
    sym = ring_passes(b, rings, phases=gather_parts(kind), directions=(1, -1), scale=4)
    return b.build(name="hamiltonian_rings", meta={"rings": "4"}, symmetries=sym)


def hamiltonian_rings_allreduce(topology: Topology, *,
                                ranks: Sequence[int] | None = None) -> Schedule:
    """Return the allreduce on two edge-disjoint Hamiltonian cycles of a 2-D torus, each
    used in both directions (four rings on a quarter of the data each).

    Parameters
    ----------
    topology : Topology
        A 2-D torus accepted by :func:`hamiltonian_cycles`.
    ranks : sequence of int, optional
        Must be None or all ranks in rank order.

    Returns
    -------
    Schedule
        ``2(p - 1)`` steps with ``4p`` one-hop transfers each; ``4p`` chunks.

    Raises
    ------
    NotSupportedError
        If the torus has no such pair of cycles (see :func:`hamiltonian_cycles`).

    Notes
    -----
    Every directed link carries exactly one ring, so there is no congestion; cost
    ``2(p - 1)(alpha + hop latency + n / (4 p B))``: optimal bandwidth, linear latency.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> s = hamiltonian_rings_allreduce(torus((4, 4)))
    >>> s.num_steps, len(s.step(0)), s.collective.num_chunks
    (30, 64, 64)
    """
    return _hamiltonian(topology, ranks, "allreduce")


def hamiltonian_rings_reduce_scatter(topology: Topology, *,
                                     ranks: Sequence[int] | None = None) -> Schedule:
    """Hamiltonian-rings reduce-scatter (``p - 1`` steps); see
    :func:`hamiltonian_rings_allreduce`.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> hamiltonian_rings_reduce_scatter(torus((4, 8))).num_steps
    31
    """
    return _hamiltonian(topology, ranks, "reduce_scatter")


def hamiltonian_rings_allgather(topology: Topology, *,
                                ranks: Sequence[int] | None = None) -> Schedule:
    """Hamiltonian-rings allgather (``p - 1`` steps); see
    :func:`hamiltonian_rings_allreduce`.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> hamiltonian_rings_allgather(torus((3, 3))).collective.num_chunks
    36
    """
    return _hamiltonian(topology, ranks, "allgather")

