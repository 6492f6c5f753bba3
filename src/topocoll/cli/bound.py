"""``topocoll bound``: the exact optimum over every cut, and the barrier-step floor."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..units import format_rate, format_size, format_time, parse_size
from .app import JsonOpt, TopoOpt, app, handle_errors, load_topo, out, parse_ranks, print_json

__all__ = ["bound"]


@app.command()
@handle_errors
def bound(topology: TopoOpt,
          collective: Annotated[str, typer.Option("--collective", "-c")] = "allgather",
          size: Annotated[str, typer.Option("--size", "-s")] = "1GiB",
          ranks: Annotated[str | None, typer.Option(help="Subgroup, e.g. 0,1,2,3.")] = None,
          root: Annotated[int | None, typer.Option(help="Root of broadcast/reduce.")] = None,
          barrier: Annotated[bool, typer.Option(
              "--barrier", help="Also certify how close any schedule whose steps are "
              "barriers (the analytical model) can get: allgather, reduce_scatter, or "
              "allreduce as reduce-scatter + allgather, on every rank.")] = False,
          as_json: JsonOpt = False) -> None:
    """Exact bandwidth optimum over every cut (max-flow), with the critical cut."""
    from ..collective import busbw_factor, make_collective
    from ..errors import NotSupportedError
    from ..optimum import barrier_floor, cut_bound

    t = load_topo(topology)
    M = parse_size(size)
    group = parse_ranks(ranks) or tuple(range(t.num_ranks))
    coll = make_collective(collective, group, root=root)
    cb = cut_bound(coll, t, M, method="exact")
    info: dict[str, Any] = {
        "topology": t.name, "collective": collective, "ranks": len(group),
        "size_bytes": M, "time_s": cb.time, "algbw_Bps": M / cb.time if cb.time else None,
        "busbw_Bps": M / cb.time * busbw_factor(collective, len(group)) if cb.time else None,
        "exact": str(cb.exact),
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
        if len(group) != t.num_ranks:
            raise NotSupportedError("--barrier needs every rank (no --ranks subgroup)")
        f = barrier_floor(t, collective, M)
        info.update({"barrier_floor_s": f.time, "barrier_steps": f.steps,
                     "barrier_certificate": f.certificate, "barrier_scope": f.scope})
    if as_json:
        print_json(info)
        return
    out.print(f"{collective} on {t.name}, {format_size(M)}: optimum {format_time(cb.time)}, "
              f"algbw {format_rate(info['algbw_Bps'] or 0)} (exact {cb.exact}); critical cut "
              f"{cb.direction} of {len(cb.ranks)} ranks, capacity "
              f"{format_rate(cb.capacity)}", highlight=False)
    if "rs_ag_time_s" in info:
        out.print(f"reduce-scatter + allgather trees: {format_time(info['rs_ag_time_s'])}",
                  highlight=False)
    if barrier:
        ref = info.get("rs_ag_time_s", cb.time)
        what = ("any reduce-scatter followed by an allgather"
                if collective == "allreduce" else f"any {collective}")
        out.print(f"with barrier steps, {what} takes at least "
                  f"{format_time(info['barrier_floor_s'])} ({info['barrier_floor_s'] / ref:.4f} "
                  f"of the optimum; best at {info['barrier_steps']} steps; "
                  f"{info['barrier_certificate']} certificate)", highlight=False)
