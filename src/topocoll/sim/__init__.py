"""Simulators: cost models that time every transfer (flow level).

Same contract as :mod:`topocoll.cost`: ``model.evaluate(schedule, topology,
message_bytes) -> SimResult``. See ``docs/design-sim.md``.
"""

from .events import EventQueue
from .flow import FlowRun, FlowSim

__all__ = ["EventQueue", "FlowSim", "FlowRun"]
