"""``topocoll dlcp``: gradient exchange under background load with DLCP's packet-level
mechanisms added one at a time (priorities, spraying, selective dropping, bounded loss)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ..errors import InputError
from .app import JsonOpt, app, choice_opt, err, handle_errors, out, print_json

__all__ = ["dlcp"]


@app.command()
@handle_errors
def dlcp(
    topology: Annotated[str, typer.Option("--topology", "-t", help="A switched fabric.")]
        = "leafspine:leaves=4,spines=2,hosts=4,bw=10Gbps",
    model: Annotated[str, typer.Option("--model", "-m", help="A layered model.")]
        = "resnet50",
    workers: Annotated[int, typer.Option(help="Workers (the first hosts).")] = 16,
    background_load: Annotated[float, typer.Option(
        help="Background traffic per host, fraction of its link.")] = 0.5,
    background_class: Annotated[int, typer.Option(
        help="Class of the background (1-7; gradients use 1-6, lower is served "
             "first).")] = 4,
    iterations: Annotated[int, typer.Option(help="Iterations per scheme.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of background and magnitudes.")] = 0,
    schemes: Annotated[str | None, typer.Option(
        help="Comma-separated subset of baseline, dctcp, layer_priority, spray, "
             "packet_priority, selective_drop, dlcp (default: all, in that order).")] = None,
    eps: Annotated[float, typer.Option(help="Loss budget of a push (fraction).")] = 0.02,
    buffer: Annotated[str, typer.Option(help="Switch port buffer.")] = "1MiB",
    payload: Annotated[str, typer.Option(help="Bytes of gradient per packet.")] = "64KiB",
    window: Annotated[int, typer.Option(help="Packets in flight per message.")] = 2,
    pattern: Annotated[str, typer.Option(
        help="ps (co-located parameter server), ring or tree (all-reduce).")] = "ps",
    transport: Annotated[str, typer.Option(
        help="fixed (a window of --window packets; DCTCP only in the dctcp scheme) or "
             "dctcp (DCTCP with ECN marks in every scheme).")] = "fixed",
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", help="Worker processes for the scheme-iterations (0: every "
                             "core; results do not depend on it).")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """DLCP: iteration communication time (p50, p99), loss and retransmissions per
    scheme."""
    from rich.progress import Progress

    from ..procs import available_cores
    from ..studies.dlcp_scenario import SCHEMES as DLCP_SCHEMES
    from ..studies.dlcp_scenario import run_dlcp
    from ..topology.spec import parse_spec
    from ..units import parse_size
    from ..workload import LAYERED

    name = choice_opt(model.strip().lower(), sorted(LAYERED), "--model")
    chosen = tuple(choice_opt(s.strip(), DLCP_SCHEMES, "--schemes")
                   for s in schemes.split(",")) if schemes else DLCP_SCHEMES
    if not 1 <= iterations <= 1000:
        raise InputError(f"--iterations must be 1..1000, got {iterations}", item="--iterations")
    if not 1 <= window <= 1_000_000:
        raise InputError(f"--window must be 1..1000000, got {window}", item="--window")
    buf = int(parse_size(buffer))
    pay = int(parse_size(payload))
    if buf < 64:
        raise InputError(f"--buffer must hold at least one 64 B packet, got {buffer}",
                         item="--buffer")
    if not 64 <= pay <= buf:
        raise InputError(f"--payload must be 64 B .. the buffer ({buf} B), got {payload}",
                         item="--payload")
    if not 0 <= jobs <= 256:
        raise InputError(f"--jobs must be 0..256, got {jobs}", item="--jobs")
    t = parse_spec(topology)
    if t.num_switches == 0:
        raise InputError(f"{t.name}: DLCP needs a switched fabric (switch ports run the "
                         f"queue policies)", item="--topology")
    if t.num_ranks > 256:
        raise InputError(f"{t.name}: at most 256 hosts in the packet engine", item="--topology")
    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("DLCP", total=len(chosen) * iterations)
        recs = run_dlcp(t, LAYERED[name], workers=workers, background_load=background_load,
                        iterations=iterations, seed=seed, schemes=chosen, eps=eps,
                        buffer=buf, payload=pay, window=window, pattern=pattern,
                        background_class=background_class,
                        jobs=jobs or available_cores(), transport=transport,
                        progress=lambda s: bar.update(task, advance=1, description=s))
    from ..studies.dlcp_scenario import profile_summary

    for r in recs:            # the raw profile is for training; its summary is printed
        r.update(profile_summary(r.pop("loss_profile")))
    rec = {"topology": t.name, "model": name, "workers": workers,
           "background_load": background_load, "background_class": background_class,
           "iterations": iterations, "seed": seed,
           "eps": eps, "buffer": buf, "payload": pay, "window": window, "pattern": pattern,
           "transport": transport,
           "schemes": recs}
    if as_json:
        print_json(rec)
        return
    tab = Table(title=f"DLCP: {name}, {workers} workers on {t.name}, background "
                      f"{background_load:g}")
    for col in ("scheme", "p50 (ms)", "p99 (ms)", "loss", "retransmitted (MB/it)", "drops"):
        tab.add_column(col, justify="left" if col == "scheme" else "right")
    for r in recs:
        tab.add_row(r["scheme"], f"{r['p50_s'] * 1e3:.4g}", f"{r['p99_s'] * 1e3:.4g}",
                    f"{r['loss_fraction']:.3%}", f"{r['retransmitted_bytes'] / 1e6:.4g}",
                    str(r["drops"]))
    out.print(tab)
