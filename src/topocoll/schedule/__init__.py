"""Layer 3: the schedule IR (topology- and size-agnostic), its transforms and I/O."""

from .io import load_schedule, save_schedule, schedule_from_dict, schedule_to_dict
from .ir import Op, Schedule, ScheduleBuilder, Symmetry, Transfer
from .transforms import concat, overlay, relabel, remap_chunks, reverse

__all__ = ["Op", "Transfer", "Schedule", "ScheduleBuilder", "Symmetry",
           "concat", "overlay", "reverse",
           "relabel", "remap_chunks", "save_schedule", "load_schedule", "schedule_to_dict",
           "schedule_from_dict"]
