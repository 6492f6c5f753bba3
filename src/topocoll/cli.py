"""The ``topocoll`` command line. The only module that parses arguments, prints or exits.

Every command takes ``--json`` for machine-readable output. Library errors
(:class:`~topocoll.errors.TopocollError`) are printed as one line on stderr and exit
with status 2; ``verify`` exits with status 1 when the schedule has violations.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from .errors import TopocollError
from .units import format_rate, format_size, format_time, parse_size

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="topocoll: topologies, collective schedules, verification and cost.")
topology_app = typer.Typer(no_args_is_help=True, help="Describe and validate topologies.")
app.add_typer(topology_app, name="topology")

# Piped output (CI logs, `make demo | tee`) would otherwise be cut to rich's default 80
# columns, truncating every table cell; a terminal or an explicit COLUMNS still wins.
_PIPE_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
out = Console(soft_wrap=True, width=_PIPE_WIDTH)
err = Console(stderr=True, soft_wrap=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
TopoOpt = Annotated[str, typer.Option("--topology", "-t",
                                      help="Generator spec (e.g. torus:8x8,bw=400Gbps) or a file.")]
BackendOpt = Annotated[str, typer.Option(
    "--backend", "-b",
    help="Cost model: analytical (alpha-beta), flow, packet (simulators) or ns3 (needs ns-3).")]


def _handle_errors(fn):
    """Turn library and file errors into one line on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (TopocollError, FileNotFoundError, IsADirectoryError, PermissionError) as e:
            msg = str(e) if isinstance(e, TopocollError) else f"{e.strerror}: {e.filename}"
            err.print(f"error: {msg}", markup=False, highlight=False)
            raise typer.Exit(2) from None

    return wrapper


def _topology(spec: str):
    from .topology.spec import load_topology

    return load_topology(spec)


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")


def _ranks(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(x) for x in text.replace(" ", "").split(",") if x)
    except ValueError:
        raise typer.BadParameter(f"ranks must be comma-separated integers, got {text!r}") from None


# ------------------------------------------------------------------- topology
@topology_app.command("show")
@_handle_errors
def topology_show(spec: Annotated[str, typer.Argument(help="Generator spec or file.")],
                  as_json: JsonOpt = False) -> None:
    """Summarize a topology: ranks, switches, links, bandwidths, diameter, dimensions."""
    t = _topology(spec)
    d = t.describe()
    if as_json:
        _print_json(d)
        return
    table = Table(title=f"topology {t.name}", show_header=False)
    for k, v in d.items():
        if k.endswith("_Bps"):
            v = format_rate(v)
        elif k.endswith("_s"):
            v = format_time(v)
        table.add_row(k, ", ".join(v) if isinstance(v, list) else str(v))
    out.print(table)


@topology_app.command("validate")
@_handle_errors
def topology_validate(path: Annotated[Path, typer.Argument(help="YAML/JSON topology file.")],
                      as_json: JsonOpt = False) -> None:
    """Check a topology file; print a summary, or the offending item and exit 2."""
    t = _topology(str(path))
    if as_json:
        _print_json({"valid": True, **t.describe()})
    else:
        out.print(f"valid: {t.name}: {t.num_ranks} ranks, {t.num_switches} switches, "
                  f"{len(t.links)} links", highlight=False)


# -------------------------------------------------------------------- compare
@app.command()
@_handle_errors
def compare(topology: TopoOpt,
            collective: Annotated[str, typer.Option("--collective", "-c")] = "allreduce",
            size: Annotated[list[str] | None,
                            typer.Option("--size", "-s", help="Message size; repeatable.")] = None,
            algorithm: Annotated[list[str] | None, typer.Option("--algorithm", "-a")] = None,
            ranks: Annotated[str | None, typer.Option(help="Subgroup, e.g. 0,1,2,3.")] = None,
            root: Annotated[int | None, typer.Option(help="Root of broadcast/reduce.")] = None,
            backend: BackendOpt = "analytical",
            as_json: JsonOpt = False) -> None:
    """Every applicable algorithm, verified and costed, fastest first, per size."""
    from .optimize import compare_algorithms
    from .sim.backends import cost_model

    t = _topology(topology)
    sizes = [parse_size(s) for s in (size or ["64MiB"])]
    skipped: list[tuple[str, str]] = []
    rows = compare_algorithms(t, collective, sizes, algorithms=algorithm, ranks=_ranks(ranks),
                              root=root, model=cost_model(backend), skipped=skipped)
    if as_json:
        _print_json([r.to_dict() for r in rows])
        return
    _print_rows(f"{collective} on {t.name}", rows)
    for name, why in skipped:
        out.print(f"not shown: {name} ({why})", style="dim", highlight=False)


def _print_rows(title: str, rows) -> None:
    from .report import compare_table

    cells = compare_table(rows)
    table = Table(title=title)
    for h in cells[0]:
        table.add_column(h, justify="left" if h in ("algorithm", "params") else "right")
    last = None
    for r, c in zip(rows, cells[1:], strict=True):
        if last is not None and r.size_bytes != last:
            table.add_section()
        last = r.size_bytes
        table.add_row(*c, style=None if r.verified else "red")
    out.print(table)


# ---------------------------------------------------------- synth and verify
@app.command()
@_handle_errors
def synth(topology: TopoOpt,
          collective: Annotated[str, typer.Option("--collective", "-c")] = "allreduce",
          algorithm: Annotated[str, typer.Option("--algorithm", "-a")] = "ring",
          output: Annotated[Path, typer.Option("--output", "-o",
                                               help=".json or .npz")] = Path("schedule.json"),
          ranks: Annotated[str | None, typer.Option()] = None,
          root: Annotated[int | None, typer.Option()] = None,
          option: Annotated[list[str] | None, typer.Option("--option", help="key=value")] = None,
          as_json: JsonOpt = False) -> None:
    """Synthesize a schedule and write it to a file."""
    from .schedule import save_schedule
    from .synth import find_synthesizer

    t = _topology(topology)
    syn = find_synthesizer(algorithm, collective)
    kwargs: dict[str, Any] = {}
    for o in option or []:
        k, _, v = o.partition("=")
        if not _ or not k:
            raise typer.BadParameter(f"--option must be key=value, got {o!r}")
        kwargs[k] = int(v) if v.lstrip("-").isdigit() else v
    if ranks:
        kwargs["ranks"] = _ranks(ranks)
    if root is not None:
        kwargs["root"] = root
    s = syn(t, **kwargs)
    save_schedule(s, output)
    info = {"output": str(output), "algorithm": algorithm, "collective": collective,
            "steps": s.num_steps, "transfers": s.num_transfers,
            "chunks": s.collective.num_chunks}
    if as_json:
        _print_json(info)
    else:
        out.print(f"wrote {output}: {algorithm} {collective}, {s.num_steps} steps, "
                  f"{s.num_transfers} transfers", highlight=False)


def _short(xs: list[int], limit: int = 8) -> str:
    """``xs`` as a comma list, cut after ``limit`` items."""
    head = ", ".join(str(x) for x in xs[:limit])
    return head + (f", ... ({len(xs)} in all)" if len(xs) > limit else "")


@app.command()
@_handle_errors
def verify(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
           topology: Annotated[str | None, typer.Option("--topology", "-t")] = None,
           max_violations: int = 50, as_json: JsonOpt = False) -> None:
    """Verify a schedule file; exit 1 and list violations if it is wrong."""
    from .schedule import load_schedule
    from .verification import verify as _verify

    s = load_schedule(schedule)
    t = _topology(topology) if topology else None
    rep = _verify(s, t, collect=True, max_violations=max_violations)
    idle = sorted(set(range(t.num_ranks)) - set(s.collective.ranks)) if t else []
    if idle and not as_json:
        err.print(f"note: the schedule's collective covers {len(s.collective.ranks)} of the "
                  f"{t.num_ranks} ranks of {t.name}; idle ranks: {_short(idle)}",
                  markup=False, highlight=False)
    if as_json:
        _print_json({"ok": rep.ok, "method": rep.method, "error_probability": rep.error_probability,
                     "total_violations": rep.total_violations, "idle_ranks": idle,
                     "violations": [dataclasses.asdict(v) for v in rep.violations]})
    elif rep.ok:
        out.print(f"ok: {s.collective.describe()} in {s.num_steps} steps verified "
                  f"({rep.method}, error probability <= {rep.error_probability:.1e})",
                  highlight=False)
    else:
        for v in rep.violations:
            err.print(f"{v.kind}: {v.message}", markup=False, highlight=False)
        err.print(f"{rep.total_violations} violation(s)", highlight=False)
    if not rep.ok:
        raise typer.Exit(1)


@app.command()
@_handle_errors
def cost(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
         topology: TopoOpt,
         size: Annotated[list[str] | None, typer.Option("--size", "-s")] = None,
         backend: BackendOpt = "analytical",
         as_json: JsonOpt = False) -> None:
    """Cost a schedule file with the analytical (alpha-beta, congestion) model or a
    simulator (``--backend``)."""
    from .schedule import load_schedule
    from .sim.backends import cost_model

    s = load_schedule(schedule)
    t = _topology(topology)
    model = cost_model(backend)
    results = [model.evaluate(s, t, parse_size(n)) for n in (size or ["64MiB"])]
    if as_json:
        _print_json([{"size_bytes": r.message_bytes, "time_s": r.time, "algbw_Bps": r.algbw,
                      "busbw_Bps": r.busbw, "bound_s": r.bound,
                      "bound_fraction": r.bound_fraction} for r in results])
        return
    table = Table(title=f"{s.name or 'schedule'} on {t.name}")
    for h in ("size", "time", "algbw", "busbw", "% of bound"):
        table.add_column(h, justify="right")
    for r in results:
        table.add_row(format_size(r.message_bytes), format_time(r.time), format_rate(r.algbw),
                      format_rate(r.busbw), f"{100 * r.bound_fraction:.1f}%")
    out.print(table)


# ----------------------------------------------------------------------- demo
DEMO_FABRICS = (
    ("torus:8x8,bw=400Gbps,lat=100ns", "allreduce"),
    ("fattree:k=4,bw=100Gbps,lat=500ns,routing=ecmp", "allreduce"),
    ("dgx-h100:2", "allreduce"),
    ("hier:ring(4,100GB/s,200ns)x switch(8,25GB/s,1500ns)", "allgather"),
)
DEMO_SIZES = ("32KiB", "1MiB", "64MiB")


@app.command()
@_handle_errors
def demo(output: Annotated[Path, typer.Option("--output", "-o")] = Path("topocoll-report.md"),
         as_json: JsonOpt = False) -> None:
    """The main job on built-in defaults: representative fabrics, all algorithms, a report."""
    from rich.progress import Progress

    from .optimize import compare_algorithms
    from .report import demo_markdown

    sizes = [parse_size(s) for s in DEMO_SIZES]
    sections = []
    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("demo", total=len(DEMO_FABRICS))
        for spec, kind in DEMO_FABRICS:
            t = _topology(spec)
            bar.update(task, description=f"{kind} on {t.name}")
            rows = compare_algorithms(
                t, kind, sizes, progress=lambda name, t=t, kind=kind: bar.update(
                    task, description=f"{kind} on {t.name}: {name}"))
            sections.append((f"{t.name} ({t.num_ranks} ranks, {t.num_switches} switches)",
                             kind, rows))
            bar.advance(task)
    output.write_text(demo_markdown(
        sections, header="Every applicable algorithm, verified by symbolic execution and "
                         "costed with the alpha-beta model with link congestion. "
                         "`% of bound` is the lower bound's time divided by the schedule's."))
    if as_json:
        _print_json([{"topology": topo, "collective": kind, "rows": [r.to_dict() for r in rows]}
                     for topo, kind, rows in sections])
        return
    for topo, kind, rows in sections:
        _print_rows(f"{kind} on {topo}", rows)
    out.print(f"report written to {output}", highlight=False)


# ------------------------------------------------------------------- simulate
@app.command()
@_handle_errors
def simulate(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
             topology: TopoOpt,
             size: Annotated[str, typer.Option("--size", "-s")] = "64MiB",
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
             as_json: JsonOpt = False) -> None:
    """Simulate a schedule; per-transfer timing, busiest links, optional trace/heat map."""
    from .errors import NotSupportedError
    from .schedule import load_schedule
    from .sim.backends import cost_model
    from .sim.outputs import link_utilization, plot_utilization, write_trace
    from .units import parse_rate, parse_time

    if backend not in ("flow", "packet"):
        raise NotSupportedError(f"simulate supports --backend flow or packet (got {backend!r});"
                                " use `topocoll cost --backend` for the other models")
    s = load_schedule(schedule)
    t = _topology(topology)
    opts: dict[str, Any] = {}
    if reduce_bandwidth:
        opts["reduce_bandwidth"] = parse_rate(reduce_bandwidth)
    if background_load:
        from .sim import FlowSim, poisson_traffic

        if backend != "packet":
            raise NotSupportedError("background traffic needs --backend packet")
        if not 0 < background_load <= 1:
            raise NotSupportedError(f"--background-load must be in (0, 1], got "
                                    f"{background_load}")
        span = FlowSim(bound=False).evaluate(s, t, parse_size(size)).time
        opts["background"] = poisson_traffic(t, background_load, max(span, 1e-6),
                                             distribution=background_dist, seed=seed)
    run = cost_model(backend, alpha=parse_time(alpha), **opts).run(s, t, parse_size(size))
    r = run.result
    if trace:
        write_trace(run, trace)
    if heatmap:
        plot_utilization(run, heatmap)
    edges, util = link_utilization(run, bins=100)
    busy = util.mean(axis=0)
    if utilization:
        import numpy as np

        head = "t_start_s,t_end_s," + ",".join(
            f"{int(a)}->{int(b)}#{i}" for i, (a, b) in enumerate(zip(t.link_src, t.link_dst,
                                                                      strict=True)))
        np.savetxt(utilization, np.column_stack([edges[:-1], edges[1:], util]), delimiter=",",
                   header=head, comments="", fmt="%.6g")
    top = [int(i) for i in busy.argsort(kind="stable")[::-1][:5] if busy[i] > 0]
    info = {**r.to_dict(), "steps": s.num_steps, "transfers": s.num_transfers,
            "first_start_s": float(r.transfer_start.min()) if s.num_transfers else 0.0,
            "last_finish_s": r.time, **run.stats,
            "busiest_links": [{"link": i, "src": int(t.link_src[i]), "dst": int(t.link_dst[i]),
                               "mean_utilization": float(busy[i])} for i in top],
            "trace": str(trace) if trace else None, "heatmap": str(heatmap) if heatmap else None,
            "utilization": str(utilization) if utilization else None}
    if as_json:
        info.pop("step_times_s")
        info.pop("link_load_bytes")
        _print_json(info)
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
# ---------------------------------------------------------------------- bound
@app.command()
@_handle_errors
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
    from .collective import busbw_factor, make_collective
    from .cost.bounds import cut_bound

    t = _topology(topology)
    M = parse_size(size)
    group = _ranks(ranks) or tuple(range(t.num_ranks))
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
        info.update(_barrier_floor(t, collective, group, M))
    if as_json:
        _print_json(info)
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


def _barrier_floor(t, collective: str, group: tuple[int, ...], M: float) -> dict[str, Any]:
    """The relay-stock certificate (topology/stockbound.py) for ``bound --barrier``."""
    from .errors import NotSupportedError
    from .topology.groupbound import group_lower_bound
    from .topology.stockbound import stock_lower_bound

    if collective not in ("allgather", "reduce_scatter", "allreduce"):
        raise NotSupportedError(f"--barrier certifies allgather, reduce_scatter and "
                                f"allreduce, not {collective}")
    if len(group) != t.num_ranks:
        raise NotSupportedError("--barrier needs every rank (no --ranks subgroup)")
    kinds = ("reduce_scatter", "allgather") if collective == "allreduce" else (collective,)
    parts, names = [], []
    for k in kinds:                       # the stronger of the two certificates
        st = stock_lower_bound(t, M, reverse=k == "reduce_scatter")
        gr = group_lower_bound(t, M, reverse=k == "reduce_scatter")
        parts.append(gr if gr.time > st.time else st)
        names.append(f"group-drain (group of {len(gr.group)})" if gr.time > st.time
                     else "relay-stock")
    return {"barrier_floor_s": sum(p.time for p in parts),
            "barrier_steps": sum(p.steps for p in parts),
            "barrier_certificate": " + ".join(names),
            "barrier_scope": ("reduce-scatter followed by allgather"
                              if collective == "allreduce" else collective)}
# ------------------------------------------------------------------- testbed
testbed_app = typer.Typer(no_args_is_help=True,
                          help="Emulated cluster: network namespaces, shaped veth links, workers.")
app.add_typer(testbed_app, name="testbed")
NameOpt = Annotated[str, typer.Option("--name", help="Testbed id (1-12 lower-case a-z/0-9).")]
DelayOpt = Annotated[str, typer.Option("--delay", help="Link latency: auto (netem if the kernel "
                                       "has it, else the userspace delay line), netem, relay, "
                                       "off.")]
_DELAY_NOTE = {"netem": "link delay: netem",
               "relay": "link delay: userspace delay line (relay namespace {ns}; the kernel "
                        "has no sch_netem or relay was asked for; latencies under 100 us "
                        "are left to the veth)",
               "none": "link delay: none (every link latency is 0, or under the delay "
                       "line's 100 us resolution)",
               "off": "link delay: off (link latency is NOT emulated)"}


@testbed_app.command("up")
@_handle_errors
def testbed_up(topology: TopoOpt, name: NameOpt = "0", delay: DelayOpt = "auto",
               as_json: JsonOpt = False) -> None:
    """Build one namespace per rank and switch, veth links, tc shaping and delay per direction."""
    from .testbed.netns import up

    tb = up(_topology(topology), name=name, spec=topology, delay=delay)
    if as_json:
        _print_json(dataclasses.asdict(tb))
        return
    out.print(f"testbed {tb.name}: {tb.num_ranks} ranks, {len(tb.nodes)} namespaces, "
              f"{len(tb.links)} shaped directions (prefix {tb.prefix})", highlight=False)
    out.print(_DELAY_NOTE[tb.delay_mode].format(ns=tb.relay_ns), highlight=False)


@testbed_app.command("down")
@_handle_errors
def testbed_down(name: NameOpt = "0", as_json: JsonOpt = False) -> None:
    """Remove everything of a testbed (idempotent, also after a crash)."""
    from .testbed.netns import down

    removed = down(name)
    if as_json:
        _print_json({"name": name, "removed": removed})
    else:
        out.print(f"testbed {name}: removed {len(removed)} namespaces", highlight=False)


@testbed_app.command("run", context_settings={"allow_extra_args": True,
                                              "ignore_unknown_options": True})
@_handle_errors
def testbed_run(ctx: typer.Context, name: NameOpt = "0",
                timeout: Annotated[float, typer.Option(help="Seconds before workers are killed.")]
                = 600.0, as_json: JsonOpt = False) -> None:
    """Run a command once per rank inside the namespaces: testbed run -- python train.py

    Workers get RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and GLOO_SOCKET_IFNAME.
    """
    from .testbed.launch import run_workers
    from .testbed.netns import TestbedError, load

    if not ctx.args:
        raise TestbedError("testbed run needs a command after --")
    res = run_workers(load(name), list(ctx.args), timeout=timeout)
    if as_json:
        _print_json([dataclasses.asdict(r) for r in res])
    else:
        for r in res:
            out.print(f"--- rank {r.rank} (exit {r.returncode})", highlight=False)
            out.print(r.output.rstrip(), markup=False, highlight=False)
    if any(r.returncode for r in res):
        raise typer.Exit(1)


@testbed_app.command("bench")
@_handle_errors
def testbed_bench(topology: TopoOpt,
                  algorithms: Annotated[str, typer.Option(help="Comma-separated names; "
                                                          "'torch' = torch's own.")] = "ring",
                  size: Annotated[str, typer.Option("--size", "-s")] = "64MiB",
                  collective: Annotated[str, typer.Option("--collective", "-c")] = "allreduce",
                  iters: Annotated[int, typer.Option(help="Timed runs per algorithm.")] = 3,
                  name: Annotated[str | None, typer.Option(
                      "--name", help="Testbed id (default: b<process id>, unique).")] = None,
                  delay: DelayOpt = "auto", as_json: JsonOpt = False) -> None:
    """Measure algorithms on an emulated cluster and compare with the alpha-beta prediction."""
    from .testbed.bench import bench
    from .testbed.netns import down, up

    topo = _topology(topology)
    algs = [a.strip() for a in algorithms.split(",") if a.strip()]
    name = name or f"b{os.getpid()}"
    tb = up(topo, name=name, spec=topology, delay=delay)
    try:
        rows = bench(tb, topo, algs, int(parse_size(size)), collective=collective, iters=iters)
    finally:
        down(name)
    if as_json:
        for r in rows:
            sys.stdout.write(json.dumps(r) + "\n")
        return
    table = Table(title=f"{collective} of {format_size(parse_size(size))} on {topology}")
    for col in ("algorithm", "measured", "predicted (alpha-beta)", "error"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["algorithm"], format_time(r["measured_s"]), format_time(r["predicted_s"]),
                      f"{100 * r['error']:+.1f}%")
    out.print(table)


# ------------------------------------------------------------------- export
export_app = typer.Typer(no_args_is_help=True, help="Write schedules for other runtimes.")
app.add_typer(export_app, name="export")


@export_app.command("msccl")
@_handle_errors
def export_msccl(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
                 output: Annotated[Path, typer.Option("--output", "-o")],
                 dialect: Annotated[str, typer.Option(help="msccl or msccl-executor.")] = "msccl",
                 as_json: JsonOpt = False) -> None:
    """Write MSCCL XML (allreduce, allgather, reduce_scatter)."""
    from .export.msccl import to_msccl_xml
    from .schedule import load_schedule

    output.write_text(to_msccl_xml(load_schedule(schedule), dialect=dialect))
    if as_json:
        _print_json({"output": str(output), "dialect": dialect})
    else:
        out.print(f"wrote {output}", highlight=False)


@export_app.command("chakra")
@_handle_errors
def export_chakra(schedule: Annotated[Path, typer.Argument(help="Schedule file (.json/.npz).")],
                  output: Annotated[Path, typer.Option("--output", "-o", help="Directory.")],
                  size: Annotated[str, typer.Option("--size", "-s")] = "64MiB",
                  as_json: JsonOpt = False) -> None:
    """Write Chakra send/recv traces (<dir>/topocoll.<rank>.et) and an ASTRA-sim system.json."""
    from .export.chakra import write_chakra
    from .schedule import load_schedule

    paths = write_chakra(load_schedule(schedule), parse_size(size), output)
    if as_json:
        _print_json({"files": [str(p) for p in paths]})
    else:
        out.print(f"wrote {len(paths)} traces to {output}", highlight=False)
# ---------------------------------------------------------------------- study
@app.command()
@_handle_errors
def study(name: Annotated[str, typer.Argument(help="Study to run: swing.")],
          output: Annotated[Path, typer.Option("--output", "-o", help="Directory for the "
                                               "results page, JSON and figures.")]
          = Path("docs/studies"),
          topology: Annotated[list[str] | None, typer.Option(
              "--topology", "-t", help="Restrict to torus:AxB... or hyperx:AxB; repeatable.")]
          = None,
          routing: Annotated[str, typer.Option(help="spray (even split over minimal paths) "
                                               "or shortest (dimension order).")] = "spray",
          as_json: JsonOpt = False) -> None:
    """Regenerate a paper reproduction (tables, JSON and figures)."""
    from rich.progress import Progress

    from .errors import NotSupportedError
    from .studies.swing import (
        TOPOLOGIES,
        StudySetup,
        parse_study_topology,
        study_topology,
        write_study,
    )

    if name != "swing":
        raise NotSupportedError(f"unknown study {name!r} (available: swing)")
    if routing not in ("spray", "shortest", "ecmp"):
        raise NotSupportedError(f"routing must be spray, shortest or ecmp, got {routing!r}")
    setup = StudySetup(routing=routing)
    tops = [parse_study_topology(x) for x in topology] if topology else list(TOPOLOGIES)
    results = []
    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("swing study", total=len(tops))
        for st in tops:
            results.append(study_topology(
                st, setup, progress=lambda m: bar.update(task, description=m)))
            bar.advance(task)
    paths = write_study(output, results, setup)
    if as_json:
        _print_json({"written": [str(p) for p in paths], "results": [r.to_dict() for r in results]})
        return
    for r in results:
        names, other = r.best_other()
        sw = r.times["swing"]
        sp = other / sw
        out.print(f"{r.topology.label}: swing speedup over the best other algorithm "
                  f"{sp.min():.2f}x..{sp.max():.2f}x (at 32 B: {sp[0]:.2f}x over {names[0]})",
                  highlight=False)
    out.print(f"written: {', '.join(str(p) for p in paths)}", highlight=False)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
