"""Transport policies for the gradient packet engine (:mod:`topocoll.sim.dlcp.engine`).

A transport decides how many packets of a message may be in flight. The engine asks
``window(flow)`` before sending and reports every acknowledgement with
``on_ack(flow, marked, delivered)`` (``marked``: the packet crossed a port that set its ECN
congestion-experienced bit; ``delivered``: False for a selective NACK of a dropped
packet). One flow per message (a connection per transfer). Policies keep per-flow state,
so a fresh object serves one simulation.

- :class:`FixedWindow`: ``window`` packets, clocked by acknowledgements, no congestion
  control (the engine's default);
- :class:`DCTCP`: Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010. Slow start
  from ``init_window`` packets (Linux's 10) to the first mark or loss, then one packet per
  window of acknowledgements; once per window of acknowledgements the fraction ``F`` of
  marked ones updates ``alpha <- (1 - g) alpha + g F`` and, if any was marked, the window
  shrinks to ``cwnd (1 - alpha / 2)``; a loss halves it (once per window). Switch ports
  mark with :class:`~topocoll.sim.dlcp.queue_policies.ECNMarking` (queue above ``K``).

Examples
--------
>>> d = DCTCP(init_window=4)
>>> d.window(0)
4
>>> for _ in range(4):
...     d.on_ack(0, marked=False, delivered=True)   # slow start: one more per ACK
>>> d.window(0)
8
>>> for _ in range(8):
...     d.on_ack(0, marked=True, delivered=True)    # every ACK of a window marked
>>> d.window(0), round(d.alpha(0), 4)               # alpha 1/16 -> cut by 1/32
(7, 0.0625)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...errors import InputError

__all__ = ["FixedWindow", "DCTCP"]


@dataclass
class FixedWindow:
    """``size`` packets in flight per flow, whatever the network says."""

    size: int = 1 << 30

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise InputError(f"window must be a positive number of packets, got "
                             f"{self.size!r}", item="window")

    def window(self, flow) -> int:
        return self.size

    def compiled(self) -> tuple:
        """``(kind, parameters...)`` of this transport for the engine's compiled loop."""
        return (0, self.size, 0, 0.0, 0)

    def on_ack(self, flow, marked: bool, delivered: bool) -> None:
        return None


@dataclass
class _Flow:
    cwnd: float
    alpha: float = 0.0
    ssthresh: float = math.inf
    acked: int = 0
    marked: int = 0
    target: int = 0          # acknowledgements that close the current window
    cut: bool = False        # already reduced in this window


@dataclass
class DCTCP:
    """DCTCP's window per flow (see the module docstring)."""

    init_window: int = 10
    g: float = 1 / 16
    max_window: int = 1 << 16
    flows: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.g <= 1:
            raise InputError(f"DCTCP's gain g must be in (0, 1], got {self.g}", item="g")
        if self.init_window < 1:
            raise InputError(f"initial window must be at least 1, got {self.init_window}",
                             item="init_window")

    def _flow(self, flow) -> _Flow:
        f = self.flows.get(flow)
        if f is None:
            f = self.flows[flow] = _Flow(float(self.init_window), target=self.init_window)
        return f

    def window(self, flow) -> int:
        return max(1, min(self.max_window, int(self._flow(flow).cwnd)))

    def compiled(self) -> tuple:
        """``(kind, window, init_window, g, max_window)`` for the compiled loop (which
        keeps the per-flow state itself; this object's ``flows`` stay empty)."""
        return (1, 0, self.init_window, float(self.g), self.max_window)

    def alpha(self, flow) -> float:
        return self._flow(flow).alpha

    def on_ack(self, flow, marked: bool, delivered: bool) -> None:
        f = self._flow(flow)
        f.acked += 1
        f.marked += bool(marked)
        if not delivered and not f.cut:          # a loss: halve, once per window
            f.ssthresh = f.cwnd = max(1.0, f.cwnd / 2)
            f.cut = True
        elif delivered and not marked and not f.cut:
            f.cwnd += 1.0 if f.cwnd < f.ssthresh else 1.0 / f.cwnd
        if f.acked >= f.target:                  # one window of acknowledgements
            frac = f.marked / f.acked
            f.alpha = (1 - self.g) * f.alpha + self.g * frac
            if f.marked and not f.cut:
                f.ssthresh = f.cwnd = max(1.0, f.cwnd * (1 - f.alpha / 2))
            f.acked = f.marked = 0
            f.cut = False
            f.target = max(1, int(f.cwnd))
        f.cwnd = min(f.cwnd, float(self.max_window))
