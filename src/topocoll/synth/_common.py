"""Helpers shared by synthesizers: group and order resolution, preconditions."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import InputTypeError, NotSupportedError, TopologyError
from ..schedule import Symmetry
from ..topology import Topology

__all__ = ["resolve_group", "resolve_order", "block_index", "require", "gather_parts",
           "DEFAULT_SIZE", "grid_translations", "grid_shifts"]

#: Message size (bytes) that size-planned synthesizers (pipeline depths, two-level
#: plans, the ``optimal`` portfolio) plan for when none is given.
DEFAULT_SIZE = 2.0**30


def resolve_group(topology: Topology, ranks: Sequence[int] | None) -> tuple[int, ...]:
    """The participating ranks: ``ranks`` (validated) or every rank of the topology."""
    if not isinstance(topology, Topology):
        raise InputTypeError(f"topology must be a Topology, got {type(topology).__name__} "
                             f"{topology!r:.60} (a spec string goes through "
                             "topocoll.topology.parse_spec)", item="topology")
    if ranks is None:
        return tuple(range(topology.num_ranks))
    group = tuple(int(r) for r in ranks)
    if not group:
        raise TopologyError("ranks must not be empty", item="ranks")
    for r in group:
        if not 0 <= r < topology.num_ranks:
            raise TopologyError(f"rank {r} is not a rank of topology {topology.name!r} "
                                f"(0..{topology.num_ranks - 1})", item=f"rank {r}")
    if len(set(group)) != len(group):
        dup = next(r for r in group if group.count(r) > 1)
        raise TopologyError(f"rank {dup} appears twice in ranks", item=f"rank {dup}")
    return group


def resolve_order(topology: Topology, group: tuple[int, ...],
                  order: Sequence[int] | None) -> np.ndarray:
    """A ring order over ``group``: ``order`` if given (must be a permutation of the
    group), else the topology's ``ring_order`` hint restricted to the group, else the
    group order."""
    if order is None:
        hint = topology.meta.get("ring_order") if topology.meta else None
        if hint is not None and len(group) == topology.num_ranks:
            order = hint
        else:
            order = group
    o = np.asarray([int(x) for x in order], dtype=np.int64)
    if sorted(o.tolist()) != sorted(group):
        raise TopologyError(f"order {list(o)} is not a permutation of the ranks {list(group)}",
                            item="order")
    return o


def block_index(group: tuple[int, ...], order: np.ndarray) -> np.ndarray:
    """For each position in ``order``, the index of that rank in ``group`` (its block)."""
    pos = {r: i for i, r in enumerate(group)}
    return np.array([pos[int(r)] for r in order], dtype=np.int64)


def require(condition: bool, message: str) -> None:
    """Raise :class:`NotSupportedError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise NotSupportedError(message)


def gather_parts(kind: str) -> tuple[bool, ...]:
    """The allgather-shaped parts of ``kind``, in run order: True for a reduce-scatter
    (an allgather of the reversed graph run backwards), False for an allgather.

    >>> gather_parts("allreduce")
    (True, False)
    """
    return {"allgather": (False,), "reduce_scatter": (True,),
            "allreduce": (True, False)}[kind]


def grid_shifts(sizes: Sequence[int], by: int = 1) -> list[np.ndarray]:
    """Translations of a grid of ``prod(sizes)`` positions (dimension 0 fastest) that
    generate the shifts by multiples of ``by`` in every dimension, as position maps:
    the diagonal shift alone (by ``by`` in every dimension at once) where its orbits
    have 16 positions or more (one symmetry for a verifier to check, few orbits left:
    64 of 4,096 positions on a 64x64 torus), else one shift per dimension.

    >>> [m.tolist() for m in grid_shifts([2, 3])]
    [[1, 0, 3, 2, 5, 4], [2, 3, 4, 5, 0, 1]]
    >>> len(grid_shifts([64, 64])), grid_shifts([64, 64])[0][:2].tolist()
    (1, [65, 66])
    """
    p = int(np.prod(sizes))
    v = np.arange(p)
    strides = np.cumprod([1, *sizes[:-1]])

    def shift(offsets):
        w = v.copy()
        for n, st, off in zip(sizes, strides, offsets, strict=True):
            a = (v // st) % n
            w += ((a + off) % n - a) * st
        return w

    dims = [k for k, n in enumerate(sizes) if n > by]
    if not dims:
        return []
    orders = [sizes[k] // math.gcd(sizes[k], by) for k in dims]
    if math.lcm(*orders) >= 16:
        return [shift([by if n > by else 0 for n in sizes])]
    return [shift([by if j == k else 0 for j in range(len(sizes))]) for k in dims]


def grid_translations(sizes: Sequence[int], num_chunks: int) -> list[Symmetry]:
    """The translations of a grid of ``prod(sizes)`` ranks (:func:`grid_shifts`), rank
    ``r``'s chunks ``r k .. r k + k - 1`` moving with it (``k = num_chunks / ranks``):
    the symmetries a schedule built by the same rank arithmetic at every grid position
    may claim (:class:`~topocoll.schedule.Symmetry`; the verifier checks them). None
    unless every rank has ``k`` chunks.

    >>> [y.rank_images.tolist() for y in grid_translations([2, 3], 6)]
    [[1, 0, 3, 2, 5, 4], [2, 3, 4, 5, 0, 1]]
    """
    p = int(np.prod(sizes))
    if p < 2 or num_chunks % p:
        return []
    k = num_chunks // p
    r = np.arange(p)
    c = np.arange(num_chunks)
    return [Symmetry(r, img, c, img[c // k] * k + c % k) for img in grid_shifts(sizes)]
