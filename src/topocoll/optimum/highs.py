"""A HiGHS instance that prints nothing and runs on one thread.

highspy's first ``Highs()`` of a process prints a licence banner on the C-level standard
output, before any option can be set; that corrupts ``--json`` output of the CLI. The
first construction therefore runs with file descriptor 1 pointed at ``/dev/null``.
Every instance is single-threaded with a fixed seed, so that a solve gives the same answer
on any machine, loaded or idle (budgets are counted in work: iterations and nodes).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading

__all__ = ["quiet_highs"]

_LOCK = threading.Lock()
_quiet = False


def quiet_highs():
    """A new ``highspy.Highs`` with ``output_flag`` off, no banner on stdout, one thread
    and random seed 0.

    >>> h = quiet_highs()
    >>> h.getOptionValue("output_flag")[1]
    False
    """
    import highspy

    global _quiet
    with _LOCK:
        if _quiet:
            h = highspy.Highs()
        else:
            sys.stdout.flush()
            saved = os.dup(1)
            try:
                with open(os.devnull, "w") as null:
                    os.dup2(null.fileno(), 1)
                    h = highspy.Highs()
                    _flush_c_stdout()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
            _quiet = True
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", 0)
    return h


def _flush_c_stdout() -> None:
    with contextlib.suppress(OSError, AttributeError):   # no C runtime to flush
        ctypes.CDLL(None).fflush(None)
