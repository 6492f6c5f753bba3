"""Self-describing gradient packets and their priority by layer and magnitude (DLCP).

Wang et al., "Domain-specific Communication Optimization for Distributed DNN Training"
(DLCP, arXiv 2020) and its successor MLT (NSDI 2024); ``../shared/reference/algorithms.md``
section 4.2. A gradient message (one tensor slice from one sender to one receiver) is cut
into packets that each carry ``(message, layer, offset, length, priority)``: summation is
commutative and every packet names its offset, so a receiver applies packets in any order
and the sender may spray them over every path.

Priority (a lower value is served first; class 0 is kept for control and acknowledgements):

``prio = clamp(a * layer_rank + b * magnitude_bucket, 1, Q - 1)``

``layer_rank`` is 0 for the layer nearest the input (its gradient is needed first by the
next forward pass); ``magnitude_bucket`` is 0 for the blocks with the largest mean
``|g|`` within the message, up to ``m - 1``, by quantiles of the block scores.

Examples
--------
>>> packet_priority(0, 0), packet_priority(3, 1, a=1, b=2), packet_priority(40, 3)
(1, 5, 7)
>>> magnitude_buckets([0.1, 5.0, 0.2, 3.0], buckets=2).tolist()
[1, 0, 1, 0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import InputError

__all__ = ["GradientPacket", "packet_priority", "magnitude_buckets", "packetize",
           "NUM_QUEUES"]

#: Hardware queues of a commodity switch port (IEEE 802.1Q traffic classes).
NUM_QUEUES = 8


@dataclass(frozen=True)
class GradientPacket:
    """One packet of gradient ``message``: bytes ``[offset, offset + length)`` of its
    tensor, from ``layer``, served in class ``priority``."""

    message: int
    layer: int
    offset: int
    length: int
    priority: int


def packet_priority(layer_rank: int, magnitude_bucket: int, *, a: int = 1, b: int = 1,
                    queues: int = NUM_QUEUES) -> int:
    """``clamp(a * layer_rank + b * magnitude_bucket, 1, queues - 1)``."""
    if layer_rank < 0 or magnitude_bucket < 0:
        raise InputError("layer rank and magnitude bucket must be >= 0", item="priority")
    if queues < 2:
        raise InputError(f"need at least 2 queues, got {queues}", item="queues")
    return int(min(max(a * layer_rank + b * magnitude_bucket, 1), queues - 1))


def magnitude_buckets(scores: Sequence[float], buckets: int = 2) -> np.ndarray:
    """Bucket of each block: 0 for the top ``1/buckets`` of scores, up to
    ``buckets - 1`` for the smallest (ties broken by position, so the result is
    deterministic)."""
    s = np.asarray(scores, float)
    if buckets < 1:
        raise InputError(f"buckets must be >= 1, got {buckets}", item="buckets")
    if len(s) == 0:
        return np.zeros(0, int)
    order = np.lexsort((np.arange(len(s)), -s))          # largest first, stable
    rank = np.empty(len(s), int)
    rank[order] = np.arange(len(s))
    return (rank * buckets // len(s)).astype(int)


def packetize(message: int, nbytes: int, payload: int, *, layer: int = 0, layer_rank: int = 0,
              scores: Sequence[float] | None = None, buckets: int = 2, a: int = 1, b: int = 1,
              queues: int = NUM_QUEUES, flat_priority: int | None = None) \
        -> list[GradientPacket]:
    """The packets of a ``nbytes`` message, ``payload`` bytes each (the last shorter).
    ``scores`` (one per packet-sized block, e.g. mean ``|g|``) set the magnitude buckets;
    ``flat_priority`` gives every packet the same class instead (flow-level schemes)."""
    if nbytes < 0 or payload < 1:
        raise InputError(f"bad message size {nbytes} or payload {payload}", item="payload")
    n = max(1, -(-int(nbytes) // int(payload)))
    if scores is None:
        mb = np.zeros(n, int)
    else:
        if len(scores) != n:
            raise InputError(f"{len(scores)} block scores for {n} packets", item="scores")
        mb = magnitude_buckets(scores, buckets)
    out = []
    for i in range(n):
        ln = min(payload, int(nbytes) - i * payload) if nbytes else 0
        pr = flat_priority if flat_priority is not None else packet_priority(
            layer_rank, int(mb[i]), a=a, b=b, queues=queues)
        out.append(GradientPacket(message, layer, i * payload, ln, pr))
    return out
