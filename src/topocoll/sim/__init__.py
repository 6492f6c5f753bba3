"""Simulators: cost models that time every transfer (flow level and packet level).

Same contract as :mod:`topocoll.cost`: ``model.evaluate(schedule, topology,
message_bytes) -> SimResult``. See ``docs/design-sim.md``.
"""

from .events import EventQueue
from .flow import FlowRun, FlowSim
from .packet import PacketRun, PacketSim
from .traffic import BackgroundTraffic, poisson_traffic

__all__ = ["EventQueue", "FlowSim", "FlowRun", "PacketSim", "PacketRun", "BackgroundTraffic",
           "poisson_traffic"]
