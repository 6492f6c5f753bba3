"""``topocoll testbed up|down|run|bench``: the emulated cluster."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Annotated

import typer
from rich.table import Table

from ..errors import InputError
from ..units import format_size, format_time
from .app import (
    JsonOpt,
    TopoOpt,
    app,
    choice_opt,
    collective_opt,
    handle_errors,
    load_topo,
    out,
    print_json,
    size_opt,
)

__all__ = ["testbed_app", "testbed_bench", "testbed_down", "testbed_run", "testbed_up",
           "testbed_dlcp"]


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
@handle_errors
def testbed_up(topology: TopoOpt, name: NameOpt = "0", delay: DelayOpt = "auto",
               as_json: JsonOpt = False) -> None:
    """Build one namespace per rank and switch, veth links, tc shaping and delay per direction."""
    from ..testbed.netns import DELAY_MODES, check_name, up

    check_name(name)
    choice_opt(delay, DELAY_MODES, "--delay")
    tb = up(load_topo(topology), name=name, spec=topology, delay=delay)
    if as_json:
        print_json(dataclasses.asdict(tb))
        return
    out.print(f"testbed {tb.name}: {tb.num_ranks} ranks, {len(tb.nodes)} namespaces, "
              f"{len(tb.links)} shaped directions (prefix {tb.prefix})", highlight=False)
    out.print(_DELAY_NOTE[tb.delay_mode].format(ns=tb.relay_ns), highlight=False)


@testbed_app.command("down")
@handle_errors
def testbed_down(name: NameOpt = "0", as_json: JsonOpt = False) -> None:
    """Remove everything of a testbed (idempotent, also after a crash)."""
    from ..testbed.netns import check_name, down

    check_name(name)
    removed = down(name)
    if as_json:
        print_json({"name": name, "removed": removed})
    else:
        out.print(f"testbed {name}: removed {len(removed)} namespaces", highlight=False)


@testbed_app.command("run", context_settings={"allow_extra_args": True,
                                              "ignore_unknown_options": True})
@handle_errors
def testbed_run(ctx: typer.Context, name: NameOpt = "0",
                timeout: Annotated[float, typer.Option(
                    min=0.001, help="Seconds before workers are killed.")] = 600.0,
                as_json: JsonOpt = False) -> None:
    """Run a command once per rank inside the namespaces: testbed run -- python train.py

    Workers get RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and GLOO_SOCKET_IFNAME.
    """
    from ..testbed.launch import run_workers
    from ..testbed.netns import TestbedError, check_name, load

    check_name(name)
    if not ctx.args:
        raise TestbedError("testbed run needs a command after --")
    res = run_workers(load(name), list(ctx.args), timeout=timeout)
    if as_json:
        print_json([dataclasses.asdict(r) for r in res])
    else:
        for r in res:
            out.print(f"--- rank {r.rank} (exit {r.returncode})", highlight=False)
            out.print(r.output.rstrip(), markup=False, highlight=False)
    if any(r.returncode for r in res):
        raise typer.Exit(1)


@testbed_app.command("bench")
@handle_errors
def testbed_bench(topology: TopoOpt,
                  algorithms: Annotated[str, typer.Option(help="Comma-separated names; "
                                                          "'torch' = torch's own.")] = "ring",
                  size: Annotated[str, typer.Option("--size", "-s")] = "64MiB",
                  collective: Annotated[str, typer.Option("--collective", "-c")] = "allreduce",
                  iters: Annotated[int, typer.Option(min=1, help="Timed runs per algorithm.")]
                  = 3,
                  name: Annotated[str | None, typer.Option(
                      "--name", help="Testbed id (default: b<process id>, unique).")] = None,
                  delay: DelayOpt = "auto", as_json: JsonOpt = False) -> None:
    """Measure algorithms on an emulated cluster and compare with the alpha-beta prediction."""
    from ..selection import find_algorithm
    from ..testbed.bench import bench
    from ..testbed.netns import DELAY_MODES, check_name, down, up

    M = size_opt(size)
    choice_opt(delay, DELAY_MODES, "--delay")
    if name is not None:
        check_name(name)
    algs = [a.strip() for a in algorithms.split(",") if a.strip()]
    if not algs:
        raise InputError("--algorithms names no algorithm", item="--algorithms")
    topo = load_topo(topology)
    collective_opt(collective, topo, None, None)
    for a in algs:
        if a != "torch":
            find_algorithm(a, collective)
    name = name or f"b{os.getpid()}"
    try:        # a kill while the testbed is coming up still takes all of it down
        tb = up(topo, name=name, spec=topology, delay=delay)
        rows = bench(tb, topo, algs, int(M), collective=collective, iters=iters)
    finally:
        down(name)
    if as_json:
        for r in rows:
            sys.stdout.write(json.dumps(r) + "\n")
        return
    table = Table(title=f"{collective} of {format_size(M)} on {topo.name}")
    for col in ("algorithm", "measured", "predicted (alpha-beta)", "error"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["algorithm"], format_time(r["measured_s"]), format_time(r["predicted_s"]),
                      f"{100 * r['error']:+.1f}%")
    out.print(table)


@testbed_app.command("dlcp")
@handle_errors
def testbed_dlcp(topology: Annotated[str, typer.Option("--topology", "-t")]
                 = "leafspine:leaves=2,spines=2,hosts=2,bw=50Mbps",
                 src: Annotated[int, typer.Option(help="Sending rank.")] = 0,
                 dst: Annotated[int, typer.Option(help="Receiving rank.")] = 3,
                 size: Annotated[str, typer.Option("--size", "-s")] = "2MB",
                 eps: Annotated[str, typer.Option(
                     help="Loss budgets, comma-separated (one run each).")] = "0.02",
                 window: Annotated[int | None, typer.Option(
                     help="Packets in flight (default 64; 32 with --contend, below the "
                          "last band's limit).")] = None,
                 queue_packets: Annotated[int, typer.Option(
                     help="Queue of every shaped direction (packets).")] = 100,
                 bands: Annotated[bool, typer.Option(
                     "--bands", help="Switch ports as 8 strict-priority bands by DSCP, "
                                     "per-band limits falling from --queue-packets to 30% "
                                     "of it (DLCP's selective dropping).")] = False,
                 contend: Annotated[int | None, typer.Option(
                     "--contend", help="A second sender: this rank sends the same size "
                                       "to --dst from the same instant, every packet in "
                                       "class 6 against --src's class 1 (reliable; with "
                                       "--bands the port serves class 1 first).")] = None,
                 name: Annotated[str | None, typer.Option(
                     "--name", help="Testbed id (default: d<process id>, unique).")] = None,
                 as_json: JsonOpt = False) -> None:
    """A bounded-loss gradient message over UDP between two namespaced ranks (DLCP's
    receiver, DSCP-marked by priority) beside the packet engine's prediction; with
    ``--contend``, two concurrent messages into one port."""
    from ..testbed.dlcp_peer import band_limits, compare_contended, compare_message
    from ..testbed.netns import check_name, down, up

    M = int(size_opt(size))
    if name is not None:
        check_name(name)
    topo = load_topo(topology)
    n = topo.num_ranks
    for flag, r in (("--src", src), ("--dst", dst)):
        if not 0 <= r < n:
            raise InputError(f"{flag} {r}: the topology has ranks 0..{n - 1}", item=flag)
    if src == dst:
        raise InputError("--src and --dst must differ", item="--dst")
    if contend is not None and (not 0 <= contend < n or contend in (src, dst)):
        raise InputError(f"--contend {contend}: a rank of 0..{n - 1} other than --src and "
                         "--dst", item="--contend")
    try:
        budgets = [float(x) for x in eps.split(",")]
    except ValueError:
        raise InputError(f"--eps must be numbers, got {eps!r}", item="--eps") from None
    if any(not 0 <= b < 1 for b in budgets):
        raise InputError(f"--eps values must be in [0, 1), got {eps!r}", item="--eps")
    if window is None:
        window = 32 if contend is not None else 64
    if not 1 <= window <= 100_000 or not 2 <= queue_packets <= 100_000:
        raise InputError("--window must be 1..100000 and --queue-packets 2..100000",
                         item="--window")
    if not 0 < M <= 1 << 30:
        raise InputError(f"--size must be 1 B .. 1 GiB, got {size}", item="--size")
    name = name or f"d{os.getpid()}"
    limits = band_limits(queue_packets) if bands else None
    try:        # a kill while the testbed is coming up still takes all of it down
        tb = up(topo, name=name, spec=topology, queue_packets=queue_packets,
                band_limits=limits, delay="off" if bands else "auto")
        if contend is not None:
            rows = compare_contended(tb, topo, [(src, dst, M, 1), (contend, dst, M, 6)],
                                     window=window, queue_packets=queue_packets,
                                     bands=bands)
        else:
            rows = [compare_message(tb, topo, src, dst, M, eps=b, window=window,
                                    queue_packets=queue_packets, bands=bands)
                    for b in budgets]
    finally:
        down(name)
    if as_json:
        print_json(rows)
        return
    if contend is not None:
        table = Table(title=f"two {format_size(M)} messages into rank {dst} on {topo.name}"
                            f" ({'strict-priority bands' if bands else 'one FIFO'})")
        for col in ("sender", "class", "measured", "predicted (engine)", "error"):
            table.add_column(col)
        for r in rows:
            table.add_row(str(r["src"]), str(r["class"]), format_time(r["measured_s"]),
                          format_time(r["predicted_s"]), f"{100 * r['error']:+.1f}%")
        out.print(table)
        return
    if as_json:
        print_json(rows)
        return
    table = Table(title=f"one {format_size(M)} message, rank {src} -> {dst} on {topo.name}")
    for col in ("eps", "measured", "predicted (engine)", "error", "zero-filled (meas/pred)",
                "resent (meas/pred)"):
        table.add_column(col)
    for r in rows:
        table.add_row(f"{r['eps']:g}", format_time(r["measured_s"]),
                      format_time(r["predicted_s"]), f"{100 * r['error']:+.1f}%",
                      f"{r['measured_zero_filled']} / {r['predicted_zero_filled']}",
                      f"{r['measured_retransmitted_bytes']} / "
                      f"{r['predicted_retransmitted_bytes']}")
    out.print(table)
