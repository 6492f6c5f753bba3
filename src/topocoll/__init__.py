"""topocoll: the network side of distributed deep-learning training.

Describe a fabric (:mod:`topocoll.topology`), state a collective
(:mod:`topocoll.collective`), synthesize schedules (:mod:`topocoll.synth`), verify them
(:func:`topocoll.verify`) and cost them (:mod:`topocoll.cost`).
"""

from .errors import InfeasibleError, NotSupportedError, ScheduleError, TopocollError, TopologyError
from .lazy import lazy_exports
from .units import GB, MB, GBps, Gbps, GiB, KiB, MiB, ms, ns, us

__version__ = "0.1.0"

__all__ = ["verify", "TopocollError", "TopologyError", "ScheduleError", "NotSupportedError",
           "InfeasibleError", "KiB", "MiB", "GiB", "MB", "GB", "GBps", "Gbps", "us", "ns", "ms",
           "__version__"]

#: ``verify`` pulls in every synthesizer; imported on first use.
__getattr__, __dir__ = lazy_exports(__name__, {"verify": "verification"})
