"""Shared check of the barrier-step certificates: no schedule we build beats them."""

from __future__ import annotations

from topocoll.cost import AlphaBeta
from topocoll.errors import NotSupportedError
from topocoll.selection import algorithms_for
from topocoll.topology.spec import parse_spec


def assert_below_every_schedule(bound, spec: str, kind: str,
                                sizes=(2.0**20, 2.0**30)) -> None:
    """``bound(topology, size, reverse=...)`` (seconds, ``.time`` and ``.cut``) is at
    least the cut bound and at most the AlphaBeta time of every synthesizer of ``kind``
    that applies to ``spec`` (at least three of them)."""
    t = parse_spec(spec)
    for size in sizes:
        b = bound(t, size, reverse=kind == "reduce_scatter")
        assert b.time >= b.cut * (1 - 1e-12)
        tried = 0
        for syn in algorithms_for(kind):
            kw = {"pipeline": "batches"} if syn.name == "optimal" else {}
            try:
                s = syn(t, **kw)
            except NotSupportedError:
                continue
            tried += 1
            got = AlphaBeta(bound=False).evaluate(s, t, size).time
            assert got >= b.time * (1 - 1e-9), (spec, kind, syn.name, size, got / b.time)
        assert tried >= 3
