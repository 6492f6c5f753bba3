"""The iteration's timeline as a Chrome/Perfetto trace (one track per pipeline stage)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from .iteration import Task

__all__ = ["timeline_events", "write_timeline"]

_NAMES = {"F": "forward", "B": "backward", "dp": "data-parallel sync (exposed)",
          "opt": "optimizer"}


def timeline_events(tasks: Sequence[Task]) -> list[dict]:
    """Trace-event records (``ph: "X"``, microseconds) of ``tasks``, sorted by start."""
    ev = []
    for t in sorted(tasks, key=lambda t: (t.start, t.stage, t.kind, t.micro)):
        name = _NAMES.get(t.kind, t.kind) + (f" mb{t.micro}" if t.micro >= 0 else "")
        ev.append({"name": name, "cat": t.kind, "ph": "X", "pid": 0, "tid": t.stage,
                   "ts": t.start * 1e6, "dur": (t.end - t.start) * 1e6})
    return ev


def write_timeline(tasks: Sequence[Task], path: str | Path) -> Path:
    """Write ``tasks`` as a trace JSON that https://ui.perfetto.dev opens."""
    meta = [{"name": "thread_name", "ph": "M", "pid": 0, "tid": s,
             "args": {"name": f"stage {s}"}} for s in sorted({t.stage for t in tasks})]
    p = Path(path)
    p.write_text(json.dumps({"traceEvents": meta + timeline_events(tasks),
                             "displayTimeUnit": "ms"}))
    return p
