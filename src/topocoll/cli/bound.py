"""``topocoll bound``: the exact optimum over every cut, and the barrier-step floor."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..errors import InputError
from ..units import format_rate, format_size, format_time
from .app import (
    AlphaOpt,
    CollectiveOpt,
    JsonOpt,
    RanksOpt,
    RootOpt,
    TopoOpt,
    app,
    collective_opt,
    handle_errors,
    load_topo,
    out,
    print_json,
    size_opt,
    time_opt,
)

__all__ = ["bound"]


@app.command()
@handle_errors
def bound(topology: TopoOpt,
          collective: CollectiveOpt = "allgather",
          size: Annotated[str, typer.Option(
              "--size", "-s", help="Message size with units (1GiB, 64MB).")] = "1GiB",
          ranks: RanksOpt = None,
          root: RootOpt = None,
          alpha: AlphaOpt = "0s",
          barrier: Annotated[bool, typer.Option(
              "--barrier", help="Also certify how close any schedule whose steps are "
              "barriers (the analytical model) can get: allgather, reduce_scatter, or "
              "allreduce as reduce-scatter + allgather, on every rank.")] = False,
          as_json: JsonOpt = False) -> None:
    """The strongest proven lower bound (the one "% of bound" uses everywhere), with the
    exact optimum over every cut (max-flow) and its critical cut."""
    from ..collective import busbw_factor, make_collective
    from ..optimum import EXACT_KINDS, barrier_floor, cut_bound, lower_bound
    from ..optimum.barrier import BARRIER_KINDS

    M = size_opt(size)
    a = time_opt(alpha, "--alpha")
    t = load_topo(topology)
    coll = collective_opt(collective, t, ranks, root)
    group = coll.ranks
    if collective not in EXACT_KINDS:
        raise InputError(f"--collective: bound covers {', '.join(EXACT_KINDS)}, not "
                         f"{collective} (its exact cut optimum is a multicommodity flow); "
                         f"`topocoll compare -c {collective}` reports the candidate-cut bound",
                         item="--collective")
    if barrier and collective not in BARRIER_KINDS:
        raise InputError(f"--barrier certifies {', '.join(BARRIER_KINDS)}, not {collective}",
                         item="--barrier")
    if barrier and ranks:
        raise InputError("--barrier certifies a collective on every rank: drop --ranks",
                         item="--barrier")
    lb = lower_bound(coll, t, M, alpha=a)
    cb = cut_bound(coll, t, M, method="exact")
    info: dict[str, Any] = {
        "topology": t.name, "collective": collective, "ranks": len(group),
        "size_bytes": M, "time_s": lb.time, "certificate": lb.certificate,
        "binding": lb.binding, "algbw_Bps": M / lb.time if lb.time else None,
        "busbw_Bps": M / lb.time * busbw_factor(collective, len(group)) if lb.time else None,
        "latency_bound_s": lb.latency, "injection_bound_s": lb.injection,
        "cut_time_s": cb.time, "exact": str(cb.exact),
        "exact_unit": ("seconds per byte of one rank's block"
                       if collective in ("allgather", "reduce_scatter") else "bytes/s"),
        "cut_direction": cb.direction,
        "cut_capacity_Bps": cb.capacity, "critical_cut": list(cb.ranks)}
    if collective == "allreduce":  # what reduce-scatter + allgather trees achieve
        rs = cut_bound(make_collective("reduce_scatter", group), t, M, method="exact")
        ag = cut_bound(make_collective("allgather", group), t, M, method="exact")
        info["rs_ag_time_s"] = rs.time + ag.time
        info["rs_ag_algbw_Bps"] = M / (rs.time + ag.time) if rs.time + ag.time else None
    if barrier:
        f = barrier_floor(t, collective, M, alpha=a)
        info.update({"barrier_floor_s": f.time, "barrier_steps": f.steps,
                     "barrier_certificate": f.certificate, "barrier_scope": f.scope})
    if as_json:
        print_json(info)
        return
    out.print(f"{collective} on {t.name}, {format_size(M)}: no schedule is faster than "
              f"{format_time(lb.time)} (algbw {format_rate(info['algbw_Bps'] or 0)}; "
              f"{lb.certificate})", highlight=False)
    attained = collective in ("allgather", "reduce_scatter", "broadcast", "reduce")
    out.print(f"cut over every cut: {format_time(cb.time)} (exact {cb.exact}"
              f"{', attained by tree packings' if attained else ''}); critical cut "
              f"{cb.direction} of {len(cb.ranks)} ranks, capacity {format_rate(cb.capacity)}",
              highlight=False)
    if "rs_ag_time_s" in info:
        out.print(f"reduce-scatter + allgather trees: {format_time(info['rs_ag_time_s'])}",
                  highlight=False)
    if barrier:
        ref = info.get("rs_ag_time_s", cb.time)
        what = ("any reduce-scatter followed by an allgather"
                if collective == "allreduce" else f"any {collective}")
        out.print(f"with barrier steps, {what} takes at least "
                  f"{format_time(info['barrier_floor_s'])} ({info['barrier_floor_s'] / ref:.4f} "
                  f"of the cut optimum; best at {info['barrier_steps']} steps; "
                  f"{info['barrier_certificate']} certificate)", highlight=False)
