"""Exception hierarchy of topocoll.

Every class also subclasses the matching built-in exception, so callers can catch
either. Messages say what, where, what was expected and what was found; structured
fields carry the offending item so that tools (the CLI, tests) need not parse text.
"""

from __future__ import annotations

__all__ = [
    "TopocollError",
    "InputError",
    "InputTypeError",
    "TopologyError",
    "ScheduleError",
    "NotSupportedError",
    "OverBudgetError",
    "InfeasibleError",
]


class TopocollError(Exception):
    """Base class of every error raised by topocoll."""


class InputError(TopocollError, ValueError):
    """An argument value that is out of its domain: a negative size, an unknown choice,
    an option that does not apply.

    Parameters
    ----------
    message : str
        Names the argument and says what was expected and what was given, e.g.
        ``"size must be a whole number of bytes > 0, got '1.5B'"``.
    item : str, optional
        The argument, e.g. ``"size"``, ``"option 'root'"``.
    """

    def __init__(self, message: str, *, item: str | None = None) -> None:
        super().__init__(message)
        self.item = item


class InputTypeError(TopocollError, TypeError):
    """An argument of the wrong type (a string where a count is expected, a list where a
    rate is); the message names the parameter.

    Parameters
    ----------
    message : str
    item : str, optional
        The parameter, e.g. ``"num_ranks"``.
    """

    def __init__(self, message: str, *, item: str | None = None) -> None:
        super().__init__(message)
        self.item = item


class TopologyError(TopocollError, ValueError):
    """A malformed topology, a missing link or path, or a bad topology spec.

    Parameters
    ----------
    message : str
        Human-readable description naming the offending item.
    item : str, optional
        The offending item in a stable textual form, e.g. ``"link 3->7"``,
        ``"rank 5"``, ``"switch 12"``, ``"generator 'foo'"``, ``"field 'bandwidth'"``.
    """

    def __init__(self, message: str, *, item: str | None = None) -> None:
        super().__init__(message)
        self.item = item


class ScheduleError(TopocollError, ValueError):
    """A schedule that violates its collective or the topology.

    Parameters
    ----------
    message : str
        Human-readable description, e.g.
        ``"step 4, transfer 3->6: chunk 2 reduced twice from rank 0"``.
    kind : str, optional
        Stable violation kind (see :mod:`topocoll.verification`).
    step, transfer, rank, chunk : int, optional
        Where the violation happened. ``transfer`` is the global transfer index.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str | None = None,
        step: int | None = None,
        transfer: int | None = None,
        rank: int | None = None,
        chunk: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.step = step
        self.transfer = transfer
        self.rank = rank
        self.chunk = chunk


class NotSupportedError(TopocollError, NotImplementedError):
    """An algorithm or format does not apply to this input (e.g. a torus-only algorithm)."""


class OverBudgetError(NotSupportedError):
    """A method whose size estimate exceeds its work budget (counted work, never
    seconds): not attempted here; the message gives the estimate and the budget."""


class InfeasibleError(TopocollError):
    """An optimizer found no solution under the given constraints."""
