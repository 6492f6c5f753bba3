"""The check every exporter runs first: nothing leaves topocoll unverified."""

from __future__ import annotations

from ..errors import ScheduleError
from ..schedule import Schedule
from ..verification import verify

__all__ = ["check_correct"]


def check_correct(schedule: Schedule) -> None:
    """Raise unless ``schedule`` verifies (symbolic execution of its collective).

    Raises
    ------
    ScheduleError
        Naming the first violation (kind, step, transfer, rank and chunk where known).

    Examples
    --------
    >>> from topocoll.synth import ring_allgather
    >>> from topocoll.topology import ring
    >>> check_correct(ring_allgather(ring(4)))
    """
    rep = verify(schedule, None, collect=True, max_violations=1)
    if not rep.ok:
        v = rep.violations[0]
        raise ScheduleError(f"the schedule is not correct ({v.kind}: {v.message}); it is not "
                            f"exported (verify=False, or --no-verify on the command line, "
                            f"writes it anyway)", kind=v.kind, step=v.step,
                            transfer=v.transfer, rank=v.rank, chunk=v.chunk)
