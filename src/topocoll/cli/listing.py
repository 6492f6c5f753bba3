"""``topocoll list``: what can be named: algorithms per collective, generators, backends."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from ..errors import InputError
from .app import JsonOpt, app, handle_errors, out, print_json

__all__ = ["list_command", "LISTS", "catalog"]

#: What ``topocoll list`` can show.
LISTS = ("algorithms", "collectives", "generators", "backends", "models", "devices")


def catalog() -> dict[str, Any]:
    """Every list, as plain data (the ``--json`` output of ``topocoll list``)."""
    from ..collective import COLLECTIVE_KINDS
    from ..selection import algorithms_for, nccl_names
    from ..sim.backends import BACKEND_TABLE
    from ..topology.spec import GENERATOR_USAGE
    from ..workload import DEVICES, LAYERED, MODELS

    return {
        "algorithms": {k: [a.name for a in algorithms_for(k)] + list(nccl_names(k))
                       for k in COLLECTIVE_KINDS},
        "collectives": list(COLLECTIVE_KINDS),
        "generators": dict(GENERATOR_USAGE),
        "backends": {b.name: b.description for b in BACKEND_TABLE.values()},
        "models": {**{n: _model_line(m) for n, m in MODELS.items()},
                   **{n: f"{m.parameters / 1e6:,.1f}M params, {len(m.layers)} layers, "
                         f"{m.forward_flops / 1e9:.3g} GFLOP forward per sample"
                      for n, m in LAYERED.items()}},
        "devices": {n: f"{d.peak_flops / 1e12:g} TFLOP/s, {d.memory / 2**30:.0f} GiB, "
                       f"{d.memory_bandwidth / 1e12:g} TB/s" for n, d in DEVICES.items()},
    }


def _model_line(m) -> str:
    kv = f" ({m.kv_heads} kv)" if m.kv_heads != m.heads else ""
    moe = f", {m.experts} experts top-{m.top_k}" if m.moe else ""
    return (f"{m.parameters / 1e9:.2f}B params: hidden {m.hidden}, ffn {m.ffn}, heads "
            f"{m.heads}{kv}, layers {m.layers}, seq {m.seq}, vocab {m.vocab}{moe}")


@app.command("list")
@handle_errors
def list_command(what: Annotated[str | None, typer.Argument(
                     help="algorithms, collectives, generators, backends, models or devices "
                          "(default: all).")]
                 = None, as_json: JsonOpt = False) -> None:
    """List what can be named: algorithms per collective, topology generators, backends,
    models and devices."""
    if what is not None and what not in LISTS:
        raise InputError(f"nothing called {what!r} to list; choose one of {', '.join(LISTS)}",
                         item=what)
    data = catalog()
    shown = {what: data[what]} if what else data
    if as_json:
        print_json(shown)
        return
    for key, value in shown.items():
        table = Table(title=key, show_header=False)
        if isinstance(value, dict):
            for k, v in value.items():
                table.add_row(k, ", ".join(v) if isinstance(v, list) else str(v))
        else:
            for v in value:
                table.add_row(v)
        out.print(table)
