"""Results -> text: Markdown tables, CSV and the demo report. Returns strings; never prints."""

from __future__ import annotations

from collections.abc import Sequence

from .selection.compare import CompareRow
from .units import format_rate, format_size, format_time

__all__ = ["compare_table", "compare_markdown", "demo_markdown"]

_HEADER = ("algorithm", "size", "time", "algbw", "busbw", "% of bound", "steps", "verified",
           "params")


def compare_table(rows: Sequence[CompareRow]) -> list[tuple[str, ...]]:
    """Rows of human-readable cells (header first) for a terminal or Markdown table."""
    out = [_HEADER]
    for r in rows:
        params = ",".join(f"{k}={v}" for k, v in r.params.items())
        out.append((r.algorithm, format_size(r.size_bytes), format_time(r.time_s),
                    format_rate(r.algbw_Bps), format_rate(r.busbw_Bps),
                    f"{100 * r.bound_fraction:.1f}%", str(r.steps),
                    "yes" if r.verified else ("model" if r.model == "nccl" else "NO"),
                    params))
    return out


def compare_markdown(rows: Sequence[CompareRow]) -> str:
    """A Markdown table of comparison rows.

    Examples
    --------
    >>> from topocoll.selection import CompareRow
    >>> row = CompareRow("ring", "allreduce", 1024.0, 1e-5, 1.024e8, 1.792e8, 5e-6, 0.5,
    ...                  True, 14, 112)
    >>> print(compare_markdown([row]).splitlines()[2])
    | ring | 1KiB | 10us | 102.4MB/s | 179.2MB/s | 50.0% | 14 | yes |  |
    """
    t = compare_table(rows)
    lines = ["| " + " | ".join(t[0]) + " |", "|" + "---|" * len(t[0])]
    lines += ["| " + " | ".join(r) + " |" for r in t[1:]]
    return "\n".join(lines) + "\n"


def demo_markdown(sections: Sequence[tuple[str, str, Sequence[CompareRow]]], *,
                  header: str = "") -> str:
    """The demo report: one section per (topology description, collective, rows)."""
    out = ["# topocoll demo report", "", header, ""] if header else ["# topocoll demo report", ""]
    for topo, kind, rows in sections:
        out.append(f"## {kind} on {topo}")
        out.append("")
        sizes = sorted({r.size_bytes for r in rows})
        best = []
        for n in sizes:
            at = [r for r in rows if r.size_bytes == n and r.verified]
            if at:
                b = min(at, key=lambda r: r.time_s)
                best.append(f"{format_size(n)}: **{b.algorithm}** ({format_time(b.time_s)}, "
                            f"{100 * b.bound_fraction:.0f}% of bound)")
        out.append("Fastest verified algorithm per size: " + "; ".join(best) + ".")
        out.append("")
        out.append(compare_markdown(rows))
    return "\n".join(out)
