"""Output-queue policies of a switch port: which packet is admitted and which is sent next.

A policy is an object with ``admit(occupancy, size, priority) -> bool`` (``occupancy``:
bytes already queued at the port, all classes) and ``order(priority) -> int`` (the class
a packet waits in; the lowest non-empty class is served first). The packet engine
(:mod:`topocoll.sim.dlcp.engine`) calls only these two methods, so a new discipline is a
new class, not a branch in the engine. A policy whose admission is a byte limit per
priority also states itself as tables (``port_tables``: class and limit per priority, the
``per_class`` flag, the marking threshold), which the engine's compiled loop runs; a
policy without ``port_tables`` runs in the Python loop.

- :class:`DropTail`: one FIFO class, a packet dropped when the buffer is full;
- :class:`StrictPriority`: IEEE 802.1Q strict priority over the packet's class, one shared
  buffer, a packet dropped when full;
- :class:`SelectiveDrop`: strict priority with per-class admission thresholds ``K_q``
  decreasing with the class (DLCP's selective dropping, WRED-style colours on a commodity
  switch): under congestion the least important packets go first, while the buffer still
  has room for the important ones;
- :class:`BandLimits`: strict priority where every class is a FIFO of its own limit (Linux
  bands: a ``pfifo`` per class under a priority scheduler, the emulated cluster's
  ``--bands``); a policy with ``per_class = True`` is given the occupancy of the packet's
  class instead of the port's;
- :class:`ECNMarking`: any of these plus ``mark(occupancy, size, priority) -> bool``, the
  ECN bit DCTCP reacts to (the engine calls ``mark`` when a policy has it; ``occupancy``
  there is always the port's).

Examples
--------
>>> q = SelectiveDrop(buffer=100_000, queues=8)
>>> q.thresholds[1], q.thresholds[7]
(100000, 30000)
>>> q.admit(40_000, 9000, priority=7), q.admit(40_000, 9000, priority=1)
(False, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ...errors import InputError

__all__ = ["DropTail", "StrictPriority", "SelectiveDrop", "BandLimits", "ECNMarking",
           "PortTables"]


@dataclass(frozen=True)
class PortTables:
    """A policy as tables over priorities ``0..len(order) - 1``: a packet of priority
    ``p`` waits in class ``order[p]`` and is admitted while the bytes queued (the port's,
    or its class's when ``per_class``) plus its own are at most ``limit[p]``; it is
    ECN-marked when the port's bytes plus its own exceed ``mark`` (-1: never)."""

    order: np.ndarray
    limit: np.ndarray
    per_class: bool = False
    mark: int = -1


def _tables(policy, max_priority: int, per_class: bool = False,
            mark: int = -1) -> PortTables | None:
    """The tables of a policy whose ``admit`` is ``occupancy + size <= limit(priority)``:
    its ``order`` and ``limit`` per priority, checked against its own ``admit`` (and
    ``mark``) at each boundary; None when they disagree (a subclass that changed
    ``admit`` alone), so the engine runs it in the Python loop."""
    pr = range(max_priority + 1)
    order = np.array([policy.order(p) for p in pr], np.int64)
    limit = np.array([policy.limit(p) for p in pr], np.int64)
    for p in pr:
        lim = int(limit[p])
        if not policy.admit(lim - 1, 1, p) or policy.admit(lim, 1, p):
            return None
        if mark >= 0 and (not policy.mark(mark, 1, p) or policy.mark(mark - 1, 1, p)):
            return None
    if order.min(initial=0) < 0:
        return None
    return PortTables(order, limit, per_class, mark)


def _check_buffer(buffer: int) -> None:
    if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
        raise InputError(f"buffer must be a positive number of bytes, got {buffer!r}",
                         item="buffer")


@dataclass(frozen=True)
class DropTail:
    """One FIFO of ``buffer`` bytes."""

    buffer: int

    def __post_init__(self) -> None:
        _check_buffer(self.buffer)

    def limit(self, priority: int) -> int:
        """Bytes the port may hold, this packet included, to admit ``priority``."""
        return self.buffer

    def admit(self, occupancy: int, size: int, priority: int) -> bool:
        return occupancy + size <= self.limit(priority)

    def order(self, priority: int) -> int:
        return 0

    def port_tables(self, max_priority: int) -> PortTables | None:
        """This policy as tables for priorities ``0..max_priority`` (compiled engine)."""
        return _tables(self, max_priority)


@dataclass(frozen=True)
class StrictPriority(DropTail):
    """Strict priority by class over one shared ``buffer`` (admission as drop-tail)."""

    def order(self, priority: int) -> int:
        return priority


@dataclass(frozen=True)
class SelectiveDrop:
    """Strict priority with a per-class admission threshold: class ``q`` is admitted
    while the port holds at most ``thresholds[q]`` bytes. By default classes 0 and 1 may
    fill the buffer and the threshold falls linearly to ``floor`` of it at the last class."""

    buffer: int
    queues: int = 8
    floor: float = 0.3
    thresholds: Sequence[int] = field(default=())

    def __post_init__(self) -> None:
        _check_buffer(self.buffer)
        if not 0 < self.floor <= 1:
            raise InputError(f"floor must be in (0, 1], got {self.floor}", item="floor")
        if not self.thresholds:
            span = max(self.queues - 2, 1)
            th = [self.buffer, self.buffer] + [
                int(round(self.buffer * (1 - (1 - self.floor) * (q - 1) / span)))
                for q in range(2, self.queues)]
            object.__setattr__(self, "thresholds", tuple(th[:self.queues]))
        elif len(self.thresholds) != self.queues or any(
                t > self.buffer or t < 0 for t in self.thresholds):
            raise InputError(f"thresholds need {self.queues} values in 0..buffer",
                             item="thresholds")

    def limit(self, priority: int) -> int:
        return self.thresholds[min(priority, self.queues - 1)]

    def admit(self, occupancy: int, size: int, priority: int) -> bool:
        return occupancy + size <= self.limit(priority)

    def order(self, priority: int) -> int:
        return priority

    def port_tables(self, max_priority: int) -> PortTables | None:
        return _tables(self, max_priority)


@dataclass(frozen=True)
class BandLimits:
    """Strict priority by class, class ``q`` a FIFO of at most ``limits[q]`` bytes of its
    own (classes beyond the last share the last band). Unlike :class:`SelectiveDrop`'s
    one shared buffer, a full band drops only its own class: a burst of class 6 cannot
    crowd out class 1, and class 1 never makes room by pushing class 6 out either.

    Examples
    --------
    >>> q = BandLimits((90_000,) * 2 + (30_000,) * 6)
    >>> q.admit(25_000, 9000, priority=6), q.admit(25_000, 9000, priority=1)
    (False, True)
    """

    limits: tuple[int, ...]
    per_class: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if not self.limits or any(isinstance(x, bool) or not isinstance(x, int) or x < 1
                                  for x in self.limits):
            raise InputError(f"band limits must be positive byte counts, got {self.limits!r}",
                             item="limits")

    def limit(self, priority: int) -> int:
        return self.limits[min(priority, len(self.limits) - 1)]

    def admit(self, occupancy: int, size: int, priority: int) -> bool:
        return occupancy + size <= self.limit(priority)

    def order(self, priority: int) -> int:
        return min(priority, len(self.limits) - 1)

    def port_tables(self, max_priority: int) -> PortTables | None:
        return _tables(self, max_priority, per_class=True)


@dataclass(frozen=True)
class ECNMarking:
    """``inner``'s admission and order, plus DCTCP's marking: a packet admitted while
    more than ``threshold`` bytes are queued at the port (its own included) carries the
    congestion-experienced bit (``mark``; Alizadeh et al., SIGCOMM 2010, the step
    marking at ``K``)."""

    inner: DropTail | StrictPriority | SelectiveDrop | BandLimits
    threshold: int

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int) or \
                self.threshold < 0:
            raise InputError(f"marking threshold must be bytes >= 0, got {self.threshold!r}",
                             item="threshold")

    @property
    def per_class(self) -> bool:
        """The inner policy's: marking a :class:`BandLimits` keeps its per-band FIFOs."""
        return bool(getattr(self.inner, "per_class", False))

    def admit(self, occupancy: int, size: int, priority: int) -> bool:
        return self.inner.admit(occupancy, size, priority)

    def limit(self, priority: int) -> int:
        return self.inner.limit(priority)

    def order(self, priority: int) -> int:
        return self.inner.order(priority)

    def mark(self, occupancy: int, size: int, priority: int) -> bool:
        return occupancy + size > self.threshold

    def port_tables(self, max_priority: int) -> PortTables | None:
        inner = getattr(self.inner, "port_tables", None)
        inner = inner(max_priority) if inner is not None else None
        if inner is None:
            return None
        return _tables(self, max_priority, inner.per_class, self.threshold)

