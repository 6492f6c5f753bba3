"""Where DLCP's claim holds: the packet engine over a grid of background load, switch
buffer, the background's class and the incast of the exchange (``docs/studies/dlcp.md``,
section "Regime map").

Every cell runs the main study's fabric and workload (ResNet-50 on 16 workers,
1,500-byte packets, 128 KiB in flight per message) with ``iterations`` seeded
iterations of four schemes: the two baselines (``baseline``: drop-tail, no congestion
control; ``dctcp``), flow-level priority (``layer_priority``) and the full DLCP stack
(``dlcp``). A cell reports each scheme's p50 and the two comparisons the paper's "up to
84.3% faster" mixes: the best DLCP-side scheme against the best baseline, and ``dlcp``
against ``layer_priority`` (what the per-packet mechanisms add over flow priority).
The incast axis is the exchange's pattern: ``ps`` (every worker pushes to every shard's
server at once: 15-to-1 incast) and ``ring`` (each worker sends to one neighbour).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..topology.spec import parse_spec
from ..workload import LAYERED
from ._common import write_tables
from .dlcp import STUDY_TOPOLOGY, window_for
from .dlcp_scenario import run_dlcp

__all__ = ["REGIME_LOADS", "REGIME_BUFFERS", "REGIME_CLASSES", "REGIME_PATTERNS",
           "REGIME_SCHEMES", "run_regime", "write_regime", "render_regime"]

REGIME_LOADS = (0.25, 0.5, 0.75)
REGIME_BUFFERS = (256 * 1024, 1 << 20, 4 << 20)
#: The background's traffic class: 4 (the middle, as the main study) or 7 (below every
#: gradient class).
REGIME_CLASSES = (4, 7)
REGIME_PATTERNS = ("ps", "ring")
REGIME_SCHEMES = ("baseline", "dctcp", "layer_priority", "dlcp")
_PAYLOAD = 1500


def run_regime(*, loads: Sequence[float] = REGIME_LOADS,
               buffers: Sequence[int] = REGIME_BUFFERS,
               classes: Sequence[int] = REGIME_CLASSES,
               patterns: Sequence[str] = REGIME_PATTERNS, iterations: int = 6,
               workers: int = 16, seed: int = 1, gradient_scale: float = 1.0, jobs: int = 1,
               topology: str = STUDY_TOPOLOGY,
               progress: Callable[[str], None] | None = None) -> dict:
    """One row per cell (see the module docstring); ``gradient_scale`` shrinks the
    gradients (tests); ``jobs`` worker processes share each cell's scheme-iterations."""
    topo = parse_spec(topology)
    model = LAYERED["resnet50"]
    rows = []
    for pattern in patterns:
        for cls in classes:
            for buf in buffers:
                for load in loads:
                    if progress is not None:
                        progress(f"{pattern}, class {cls}, {buf >> 10} KiB, load {load:g}")
                    recs = run_dlcp(topo, model, workers=workers, background_load=load,
                                    iterations=iterations, seed=seed, schemes=REGIME_SCHEMES,
                                    buffer=buf, payload=_PAYLOAD,
                                    window=window_for(_PAYLOAD), pattern=pattern,
                                    background_class=cls, scale=gradient_scale, jobs=jobs)
                    p50 = {r["scheme"]: r["p50_s"] for r in recs}
                    loss = {r["scheme"]: r["loss_fraction"] for r in recs}
                    base = min(p50["baseline"], p50["dctcp"])
                    ours = min(p50["layer_priority"], p50["dlcp"])
                    rows.append({"pattern": pattern, "background_class": cls,
                                 "buffer": buf, "load": load, "p50_s": p50,
                                 "loss_fraction": loss,
                                 "best_vs_baselines": 1 - ours / base,
                                 "dlcp_vs_baselines": 1 - p50["dlcp"] / base,
                                 "dlcp_vs_layer_priority": 1 - p50["dlcp"] /
                                 p50["layer_priority"]})
    return {"setup": {"topology": topology, "workers": workers, "payload": _PAYLOAD,
                      "iterations": iterations, "seed": seed, "schemes": list(REGIME_SCHEMES),
                      "gradient_scale": gradient_scale},
            "cells": rows}


def render_regime(res: dict) -> str:
    """The regime map as Markdown (``dlcp-regime.md``)."""
    out = ["<!-- written by `topocoll study dlcp-regime`; do not edit -->", "",
           f"p50 of the iteration's communication over {res['setup']['iterations']} "
           "iterations; a positive share is time saved.", "",
           "| exchange | background class | buffer | load | baseline ms | dctcp ms | "
           "layer_priority ms | dlcp ms | best vs baselines | dlcp vs baselines | "
           "dlcp vs layer_priority | dlcp gradient loss |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in res["cells"]:
        p = c["p50_s"]
        out.append(f"| {c['pattern']} | {c['background_class']} | {c['buffer'] >> 10} KiB | "
                   f"{c['load']:g} | " + " | ".join(f"{p[s] * 1e3:.1f}" for s in
                                                    REGIME_SCHEMES) +
                   f" | {c['best_vs_baselines']:+.1%} | {c['dlcp_vs_baselines']:+.1%} | "
                   f"{c['dlcp_vs_layer_priority']:+.1%} | {c['loss_fraction']['dlcp']:.3%} |")
    return "\n".join(out) + "\n"


def write_regime(directory: str | Path, res: dict) -> list[Path]:
    """``dlcp-regime.json`` and ``dlcp-regime.md`` in ``directory``."""
    return write_tables(directory, "dlcp-regime", res, render_regime(res))
