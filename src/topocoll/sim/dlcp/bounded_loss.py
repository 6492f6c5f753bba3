"""Bounded-loss delivery of gradient messages (DLCP), and where loss is allowed at all.

``../shared/reference/algorithms.md`` sections 4.2 (4) and 4.3. Per message the receiver
keeps a bitmap of the packets it holds (never duplicate-ACK heuristics: packets arrive in
any order). When the sender's last packet has arrived, or the tail timer fires, it
decides: if the missing bytes are at most ``eps`` of the message, the missing gradients
are taken as zero and the message completes without waiting for a retransmission
timeout; otherwise it asks for the missing packets again (most important first) and
re-arms the timer.

Loss is allowed only where every replica stays consistent (:func:`loss_allowed`):

- parameter server: worker -> server pushes may lose; parameter pulls must be reliable
  (a lost parameter would leave the workers with different models);
- all-reduce: the reduce(-scatter) phase may lose; the all-gather (broadcast) phase must be
  reliable, so every replica receives the same, possibly zero-filled, reduced block;
- in a ring reduce-scatter a block lost at hop ``h`` removes ``h`` workers'
  contributions, so the budget counts *contributions*: a message of a block that already
  carries ``h`` contributions is charged ``h`` times its lost bytes
  (:meth:`BoundedLossReceiver.decide` takes ``weight``).

Examples
--------
>>> r = BoundedLossReceiver(packets=[1000] * 100, eps=0.02)
>>> for i in range(98):
...     _ = r.receive(i)
>>> r.decide()                      # two packets (2%) missing: complete, zero-filled
('complete', ())
>>> r2 = BoundedLossReceiver(packets=[1000] * 100, eps=0.02)
>>> for i in range(97):
...     _ = r2.receive(i)
>>> r2.decide(priorities=[1] * 99 + [0])   # 3% missing: ask again, class 0 first
('nack', (99, 97, 98))
>>> loss_allowed("ps", "pull"), loss_allowed("allreduce", "reduce-scatter")
(False, True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import InputError

__all__ = ["BoundedLossReceiver", "loss_allowed", "PHASES"]

#: Phases of each pattern and whether a bounded loss keeps the replicas consistent.
PHASES = {("ps", "push"): True, ("ps", "pull"): False,
          ("allreduce", "reduce-scatter"): True, ("allreduce", "reduce"): True,
          ("allreduce", "all-gather"): False, ("allreduce", "broadcast"): False}


def loss_allowed(pattern: str, phase: str) -> bool:
    """Whether the ``phase`` of ``pattern`` (``ps`` or ``allreduce``) may lose data
    without making replicas diverge (see the module docstring).

    Raises
    ------
    InputError
        For an unknown pattern or phase.
    """
    key = (pattern, phase)
    if key not in PHASES:
        raise InputError(f"unknown phase {phase!r} of {pattern!r} (known: "
                         f"{', '.join(f'{a}/{b}' for a, b in PHASES)})", item="phase")
    return PHASES[key]


class BoundedLossReceiver:
    """The receiver of one message of packets with ``packets[i]`` bytes each and a loss
    budget ``eps`` (a fraction of the message's bytes; 0: reliable)."""

    def __init__(self, packets: Sequence[int], eps: float) -> None:
        if not 0 <= eps < 1:
            raise InputError(f"the loss budget must be in [0, 1), got {eps}", item="eps")
        self.sizes = np.asarray(packets, dtype=np.int64)
        self.eps = float(eps)
        self.have = np.zeros(len(self.sizes), bool)
        self.total = int(self.sizes.sum())
        self.completed = False
        self.zero_filled = 0           # bytes taken as zero at completion

    def receive(self, index: int) -> bool:
        """Mark packet ``index`` received (any order, duplicates ignored); True when
        that completes the message."""
        self.have[index] = True
        if not self.completed and self.have.all():
            self.completed = True
        return self.completed

    @property
    def missing_bytes(self) -> int:
        return int(self.sizes[~self.have].sum())

    def decide(self, priorities: Sequence[int] | None = None, weight: float = 1.0) \
            -> tuple[str, tuple[int, ...]]:
        """At the end marker or the tail timer: ``("complete", ())`` when the missing
        bytes (times ``weight``, the contributions a block carries) fit in the budget,
        else ``("nack", missing packets, most important first)``."""
        if self.completed:
            return "complete", ()
        miss = np.flatnonzero(~self.have)
        if self.missing_bytes * weight <= self.eps * self.total:
            self.completed = True
            self.zero_filled = self.missing_bytes
            return "complete", ()
        pr = np.zeros(len(self.sizes), int) if priorities is None else np.asarray(priorities)
        order = miss[np.lexsort((miss, pr[miss]))]
        return "nack", tuple(int(i) for i in order)
