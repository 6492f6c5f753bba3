"""``topocoll simulate``: time a schedule with the flow- or packet-level simulator."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import InputError
from ..units import format_rate, format_size, format_time
from .app import (
    JsonOpt,
    TopoOpt,
    app,
    choice_opt,
    handle_errors,
    load_topo,
    out,
    print_json,
    rate_opt,
    size_opt,
    time_opt,
)

__all__ = ["simulate"]


@app.command()
@handle_errors
def simulate(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
             topology: TopoOpt,
             size: Annotated[str, typer.Option(
                 "--size", "-s", help="Message size with units (64MiB, 1GB).")] = "64MiB",
             backend: Annotated[str, typer.Option("--backend", "-b",
                                                  help="Simulator: flow or packet.")] = "flow",
             alpha: Annotated[str, typer.Option(help="Per-transfer overhead, e.g. 2us.")] = "0s",
             reduce_bandwidth: Annotated[str | None, typer.Option(
                 help="Per-rank reduction rate, e.g. 200GB/s (default: free).")] = None,
             trace: Annotated[Path | None, typer.Option(
                 help="Write a Chrome/Perfetto trace-event JSON timeline here.")] = None,
             heatmap: Annotated[Path | None, typer.Option(
                 help="Write a link-utilization heat map (PNG) here.")] = None,
             utilization: Annotated[Path | None, typer.Option(
                 help="Write per-link utilization over time (CSV, 100 bins) here.")] = None,
             background_load: Annotated[float, typer.Option(
                 help="packet: Poisson background traffic at this fraction of the ranks' "
                      "injection bandwidth, over the flow-level run time.")] = 0.0,
             background_dist: Annotated[str, typer.Option(
                 help="packet: background flow sizes, websearch or datamining.")] = "websearch",
             seed: Annotated[int, typer.Option(help="Seed of the background traffic.")] = 0,
             no_verify: Annotated[bool, typer.Option(
                 "--no-verify", help="Skip the correctness check (a warning is printed).")]
             = False,
             as_json: JsonOpt = False) -> None:
    """Simulate a schedule; per-transfer timing, busiest links, optional trace/heat map."""
    from ..sim import FlowSim, poisson_traffic
    from ..sim.backends import backend_names, cost_model
    from ..sim.outputs import busiest_links, plot_utilization, write_trace, write_utilization_csv
    from ..sim.traffic import FLOW_SIZE_CDFS
    from .schedules import idle_note, output_path, verified_schedule

    # every option is checked before anything runs, whether or not it is used
    if backend in ("analytical", "ns3"):
        raise InputError(f"--backend: simulate supports flow and packet, not {backend} "
                         f"(`topocoll cost --backend {backend}` gives its time)", item="--backend")
    choice_opt(backend, backend_names(run=True), "--backend")
    M = size_opt(size)
    a = time_opt(alpha, "--alpha")
    choice_opt(background_dist, tuple(FLOW_SIZE_CDFS), "--background-dist")
    if not (math.isfinite(background_load) and 0 <= background_load <= 1):
        raise InputError(f"--background-load must be a fraction in [0, 1], got "
                         f"{background_load}", item="--background-load")
    if background_load and backend != "packet":
        raise InputError("--background-load: background traffic needs --backend packet",
                         item="--background-load")
    if seed < 0:
        raise InputError(f"--seed must be >= 0, got {seed}", item="--seed")
    opts: dict[str, Any] = {}
    if reduce_bandwidth:
        opts["reduce_bandwidth"] = rate_opt(reduce_bandwidth, "--reduce-bandwidth")
    for p, suffixes in ((trace, (".json",)), (heatmap, (".png", ".svg", ".pdf")),
                        (utilization, (".csv",))):
        if p is not None:
            output_path(p, suffixes)
    t = load_topo(topology)
    s = verified_schedule(schedule, t, no_verify)
    idle_note(s, t, as_json)
    if background_load:
        span = FlowSim(bound=False).evaluate(s, t, M).time
        opts["background"] = poisson_traffic(t, background_load, max(span, 1e-6),
                                             distribution=background_dist, seed=seed)
    run = cost_model(backend, alpha=a, **opts).run(s, t, M)
    r = run.result
    if trace:
        write_trace(run, trace)
    if heatmap:
        plot_utilization(run, heatmap)
    if utilization:
        write_utilization_csv(run, utilization)
    info = {**r.to_dict(), "steps": s.num_steps, "transfers": s.num_transfers,
            "first_start_s": float(r.transfer_start.min()) if s.num_transfers else 0.0,
            "last_finish_s": r.time, **run.stats, "busiest_links": busiest_links(run),
            "topology": t.name, "schedule": s.name,
            "trace": str(trace) if trace else None, "heatmap": str(heatmap) if heatmap else None,
            "utilization": str(utilization) if utilization else None}
    if as_json:
        info.pop("step_times_s")
        info.pop("link_load_bytes")
        print_json(info)
        return
    out.print(f"{s.name or 'schedule'} on {t.name}, {format_size(r.message_bytes)}: "
              f"{format_time(r.time)} ({backend}), algbw {format_rate(r.algbw)}, busbw "
              f"{format_rate(r.busbw)}, {100 * (r.bound_fraction or 0):.1f}% of bound",
              highlight=False)
    for b in info["busiest_links"]:
        out.print(f"  link {b['src']}->{b['dst']}: {100 * b['mean_utilization']:.1f}% busy",
                  highlight=False)
    if backend == "packet":
        st = run.stats
        if len(run.background_finish):
            fct = run.background_finish - run.background_start
            out.print(f"  {len(fct)} background flows, mean completion "
                      f"{format_time(float(fct.mean()))}", highlight=False)
        out.print(f"  {st['packets']} packets, {st['drops']} drops, {st['retransmits']} "
                  f"retransmits, {st['ecn_marks']} ECN marks, peak queue "
                  f"{format_size(float(run.queue_peak.max()))}, {st['events']} events "
                  f"({st['events_per_s'] / 1e6:.2f} M events/s)", highlight=False)
    for label, p in (("trace", trace), ("heat map", heatmap), ("utilization", utilization)):
        if p:
            out.print(f"{label} written to {p}", highlight=False)
