"""Results -> text: Markdown tables, CSV and the demo report. Returns strings; never prints."""

from __future__ import annotations

from collections.abc import Sequence

from .selection.compare import CompareRow
from .units import format_rate, format_size, format_time

__all__ = ["design_markdown", "compare_table", "compare_markdown", "demo_markdown"]

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


def design_markdown(record: dict, title: str, question: str) -> str:
    """A ``topocoll design`` record (its ``--json``) as a Markdown section: one row per
    design, the winner marked, its flow-level re-check and its ties."""
    win = record.get("winner") or {}
    rows = ["| family | box | oversub | Gb/s per port | cost | power | iteration | MFU | "
            "exposed comm | parallelism |", "|---|---|--:|--:|--:|--:|--:|--:|--:|---|"]
    best = None
    for d in record["designs"]:
        is_win = (d["family"], d["box"], d["oversubscription"]) == (
            win.get("family"), win.get("box"), win.get("oversubscription"))
        best = d if is_win else best
        name = f"**{d['family']}**" if is_win else d["family"]
        if d["iteration_s"] is None:
            rows.append(f"| {name} | {d['box']} | {d['oversubscription']:g} | - | "
                        f"${d['cost_usd']:,.0f} | {d['power_w'] / 1e3:,.1f} kW | - | - | - | "
                        f"{d['reason']} |")
            continue
        rows.append(f"| {name} | {d['box']} | {d['oversubscription']:g} | "
                    f"{d['rate_gbps']:,.0f} | ${d['cost_usd']:,.0f} | "
                    f"{d['power_w'] / 1e3:,.1f} kW | {format_time(d['iteration_s'])}"
                    f"{'' if d['feasible'] else ' (misses)'} | {100 * d['mfu']:.1f}% | "
                    f"{format_time(d['exposed_comm_s'])} | `{d['parallel']}` |")
    out = [f"## {title}: {question}", ""]
    if best is not None:
        line = (f"Best: **{best['family']}** ({best['box']}), "
                f"{format_time(best['iteration_s'])} per iteration with `{best['parallel']}`")
        if best.get("recheck") and "skipped" not in best["recheck"]:
            rc = best["recheck"]
            line += (f"; at flow level {format_time(rc['iteration_s'])} "
                     f"({100 * rc['difference']:+.2f}%)")
        ties = [t["family"] for t in record.get("ties", [])]
        if ties:
            line += f". Within 1% of it: {', '.join(ties)}"
        out += [line + ".", ""]
    return "\n".join(out + rows + [""])


def demo_markdown(sections: Sequence[tuple[str, str, Sequence[CompareRow]]], *,
                  header: str = "", lead: str = "") -> str:
    """The demo report: ``lead`` (the design section) first, then one section per
    (topology description, collective, rows)."""
    out = ["# topocoll demo report", ""] + ([lead, ""] if lead else [])
    if header:
        out += [header, ""]
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
