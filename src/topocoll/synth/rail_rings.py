"""NCCL's rings across boxes as a schedule (``rail_rings``): one ring per GPU of a box.

NCCL runs a ring collective across boxes on several channels. Each channel's ring passes
through every GPU, box after box, and leaves each box through one GPU's NIC; the channels
rotate that exit over the box's GPUs, so that every NIC carries the same share. This
module writes that pattern as a schedule, which the verifier checks and the cost models,
exporters and runtime take like any other (the single rank-order ``ring`` leaves every box
through one NIC).

Ring ``c`` (``c = 0 .. q-1`` for ``q`` GPUs per box) enters box ``b`` at its local GPU
``(c - b) mod q``, walks the box in local order and leaves it at local GPU
``(c - b - 1) mod q``, the next box's entry GPU: the hops between boxes stay on one
rail (local index), except the hop that closes the ring when the number of boxes is not
a multiple of ``q``. Ring ``c`` carries a ``1/q`` share of every block, so each GPU is
the exit of one ring per box pass and sends ``(q-1)/q`` of its ring bytes over its box
links (NVLink) and ``1/q`` through its NIC: the bus rate is
``min(box links x q/(q-1), q x NIC)``, the rule :mod:`topocoll.cost.nccl` applies to
NCCL's rings at NCCL's effective rates (``docs/design-nccl.md``).

Boxes are the topology's named groups (``meta["groups"]``: box presets, ``dgx``,
``mi250``), equal in size, at least two of them.

Examples
--------
>>> from topocoll.topology import parse_spec
>>> s = rail_rings_allreduce(parse_spec("dgx-h100:2"))
>>> s.num_steps, len(s.step(0)), s.collective.num_chunks
(30, 128, 128)
>>> s.meta["rings"]
'8'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..collective import Collective
from ..schedule import Schedule, ScheduleBuilder
from ..topology import Topology
from ._common import block_index, gather_parts, require, resolve_group
from .ring import ring_passes
from .two_level import two_level_groupings

__all__ = ["rail_rings_allreduce", "rail_rings_reduce_scatter", "rail_rings_allgather",
           "rail_ring_orders", "rail_rings_unsupported_reason", "rail_rings_entries"]


def _boxes(topology: Topology, group: Sequence[int]) -> list[list[int]] | str:
    return two_level_groupings(topology, group, "meta")["meta"]


def rail_rings_entries(topology: Topology, group: Sequence[int], kind: str) -> int:
    """The (transfer, chunk) entries of the ``kind`` schedule on ``group``: ``q`` rings of
    ``p (p - 1)`` one-chunk transfers per pass (0 where it does not apply); the
    registry's size guard weighs these, not one ring's."""
    boxes = _boxes(topology, group)
    if isinstance(boxes, str):
        return 0
    p, q = sum(len(b) for b in boxes), len(boxes[0])
    return (2 if kind == "allreduce" else 1) * q * p * (p - 1)


def rail_rings_unsupported_reason(topology: Topology, group: Sequence[int]) -> str | None:
    """None if ``rail_rings`` applies to ``group``, else why not: the ranks must fill at
    least two of the topology's named groups (boxes) equally, at least two per box.

    Examples
    --------
    >>> from topocoll.topology import parse_spec, ring
    >>> rail_rings_unsupported_reason(ring(4), range(4))
    'the topology names no groups'
    >>> rail_rings_unsupported_reason(parse_spec("dgx-h100:2"), range(16)) is None
    True
    """
    boxes = _boxes(topology, group)
    return boxes if isinstance(boxes, str) else None


def rail_ring_orders(boxes: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """The ``q`` ring orders over ``boxes`` (each a list of ranks in local order): ring
    ``c`` enters box ``b`` at local index ``(c - b) mod q`` and leaves it at
    ``(c - b - 1) mod q``.

    Examples
    --------
    >>> [o.tolist() for o in rail_ring_orders([[0, 1, 2], [3, 4, 5]])]
    [[0, 1, 2, 5, 3, 4], [1, 2, 0, 3, 4, 5], [2, 0, 1, 4, 5, 3]]
    """
    q = len(boxes[0])
    out = []
    for c in range(q):
        order = []
        for b, box in enumerate(boxes):
            e = (c - b) % q
            order.extend(box[(e + i) % q] for i in range(q))
        out.append(np.asarray(order, dtype=np.int64))
    return out


def _build(topology: Topology, ranks, kind: str) -> Schedule:
    group = resolve_group(topology, ranks)
    reason = rail_rings_unsupported_reason(topology, group)
    require(reason is None, f"rail_rings {kind} on {topology.name}: {reason}")
    boxes = _boxes(topology, group)
    assert not isinstance(boxes, str)
    q, p = len(boxes[0]), len(group)
    coll = Collective(kind, group, q * p if kind == "allreduce" else q)
    rings = [(o, block_index(group, o), c) for c, o in enumerate(rail_ring_orders(boxes))]
    b = ScheduleBuilder(coll)
    sym = ring_passes(b, rings, phases=gather_parts(kind), directions=(1,), scale=q)
    return b.build(name="rail_rings", meta={"rings": str(q)}, symmetries=sym)


def rail_rings_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None
                         ) -> Schedule:
    """Return NCCL's rings across boxes as an allreduce: ``q`` rings (``q`` ranks per
    box), each a ring reduce-scatter then allgather of a ``1/q`` share of every block.

    Parameters
    ----------
    topology : Topology
        A topology whose ``meta["groups"]`` name its boxes.
    ranks : sequence of int, optional
        The participating ranks, the same number in each box they touch (default: all).

    Returns
    -------
    Schedule
        ``2(p - 1)`` steps of ``q p`` one-chunk transfers; ``q p`` chunks.

    Raises
    ------
    NotSupportedError
        See :func:`rail_rings_unsupported_reason`.

    Notes
    -----
    On links of rate ``B`` inside a box and NICs of rate ``N``, the bandwidth term is
    ``2(p-1)/p S / min(B q/(q-1), q N)`` (see the module docstring); latency ``2(p - 1)``
    hops, as one ring.
    """
    return _build(topology, ranks, "allreduce")


def rail_rings_reduce_scatter(topology: Topology, *, ranks: Sequence[int] | None = None
                              ) -> Schedule:
    """The reduce-scatter half of :func:`rail_rings_allreduce` (``p - 1`` steps)."""
    return _build(topology, ranks, "reduce_scatter")


def rail_rings_allgather(topology: Topology, *, ranks: Sequence[int] | None = None
                         ) -> Schedule:
    """The allgather half of :func:`rail_rings_allreduce` (``p - 1`` steps)."""
    return _build(topology, ranks, "allgather")
