"""DLCP's study: the schemes' communication time on a leaf-spine fabric under background
load (packet engine), what their gradient loss costs in accuracy (torch on digits), and
the two combined into time to a target accuracy (``docs/studies/dlcp.md``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..fabric import profile_summary, run_dlcp
from ..topology.spec import parse_spec
from ..workload import LAYERED
from ._common import save_figure
from .dlcp_convergence import run_convergence, train_with_loss

__all__ = ["STUDY_TOPOLOGY", "SCALE", "SCALE_SCHEMES", "run_dlcp_study", "write_dlcp_study",
           "steps_to"]

STUDY_TOPOLOGY = "leafspine:leaves=4,spines=2,hosts=4,bw=10Gbps"
#: the larger fabrics (workers, topology), non-blocking like the main one: 10 Gb/s hosts,
#: 20 Gb/s uplinks
SCALE = ((32, "leafspine:leaves=8,spines=2,hosts=4,bw=10Gbps"),
         (64, "leafspine:leaves=8,spines=4,hosts=8,bw=10Gbps"))
#: the schemes run at scale: both baselines, the two flow-level steps and the full stack
SCALE_SCHEMES = ("baseline", "dctcp", "layer_priority", "spray", "dlcp")
#: 9,000-byte packets: the schemes compared and the window (packets) that keeps the bytes
#: in flight of two 64 KiB segments
JUMBO_SCHEMES = ("spray", "selective_drop", "dlcp")
JUMBO_WINDOW = 14


def steps_to(accuracy: list[float], target: float, steps_per_epoch: int) -> float:
    """Optimizer steps until the test accuracy first reaches ``target`` (inf if never)."""
    for e, a in enumerate(accuracy):
        if a >= target:
            return float((e + 1) * steps_per_epoch)
    return float("inf")


def run_dlcp_study(*, workers: int = 16, background_load: float = 0.5, iterations: int = 5,
                   seed: int = 1, epochs: int = 20, seeds: tuple[int, ...] = (0, 1, 2),
                   target: float = 0.95, topology: str = STUDY_TOPOLOGY,
                   scale: Sequence[tuple[int, str]] = SCALE, scale_iterations: int = 2,
                   scale_schemes: Sequence[str] = SCALE_SCHEMES,
                   eps_values: Sequence[float] = (0.005, 0.01, 0.02, 0.05, 0.1),
                   gradient_scale: float = 1.0, low_background_iterations: int = 3,
                   jumbo_iterations: int = 2,
                   progress: Callable[[str], None] | None = None) -> dict:
    """The engine's schemes on ``topology``, the same at the larger ``scale`` (fewer
    schemes and iterations: the engine is pure Python, about 25 s per scheme-iteration
    at 64 workers), the convergence grid and time to ``target`` accuracy, with the wall
    time of each part (simulation and training). The main fabric runs once more with the
    background in class 7, below every gradient class (``low_background_iterations``;
    0 leaves it out), and with 9,000-byte packets instead of 64 KiB segments (the same
    bytes in flight: 14 packets; ``spray``, ``selective_drop`` and ``dlcp``,
    ``jumbo_iterations``), where a 2% budget can cover a packet of a message.
    ``gradient_scale`` shrinks the model's gradients (tests)."""
    t0 = time.perf_counter()
    topo = parse_spec(topology)
    model = LAYERED["resnet50"]

    def variant(label: str, fabric=topo, **kw) -> list[dict]:
        """One more run of the engine beside the main one, its loss profiles summarized
        (only the main run's profiles are trained with)."""
        rows = run_dlcp(fabric, model, background_load=background_load, seed=seed,
                        scale=gradient_scale, progress=None if progress is None else
                        (lambda msg: progress(f"{label}: {msg}")), **kw)
        for r in rows:
            r.update(profile_summary(r.pop("loss_profile")))
        return rows

    schemes = run_dlcp(topo, model, workers=workers, background_load=background_load,
                       iterations=iterations, seed=seed, scale=gradient_scale,
                       progress=progress)
    low = variant("background class 7", workers=workers, background_class=7,
                  iterations=low_background_iterations) if low_background_iterations else []
    jumbo = variant("9,000-byte packets", workers=workers, iterations=jumbo_iterations,
                    payload=9000, window=JUMBO_WINDOW,
                    schemes=JUMBO_SCHEMES) if jumbo_iterations else []
    at_scale = [{"workers": w, "topology": spec, "iterations": scale_iterations,
                 "schemes": variant(f"{w} workers", parse_spec(spec), workers=w,
                                    iterations=scale_iterations, schemes=scale_schemes)}
                for w, spec in scale]
    t_sim = time.perf_counter() - t0
    t0 = time.perf_counter()
    if progress is not None:
        progress("convergence")
    conv = run_convergence(eps_values=eps_values, seeds=seeds, epochs=epochs)
    # 1,437 training images, 8 workers x 16 per step
    spe = 1437 // (8 * 16)
    tta = []
    for s in schemes:
        eps = s["loss_fraction"]
        # a lossy scheme trains with what the engine dropped, not with a synthetic rule
        runs = [c["accuracy"] for c in conv if c["pattern"] == "none"] if eps == 0 else \
            [train_with_loss("engine", eps, seed=k, epochs=epochs,
                             profile=s["loss_profile"]) for k in seeds]
        steps = [steps_to(a, target, spe) for a in runs]
        mean_steps = float(np.mean(steps))
        tta.append({"scheme": s["scheme"], "loss_fraction": eps, "steps": mean_steps,
                    "p50_s": s["p50_s"], "time_to_accuracy_s": mean_steps * s["p50_s"],
                    "final_accuracy": float(np.mean([a[-1] for a in runs]))})
    for s in schemes:         # the profile trained with; its summary stays in the record
        s.update(profile_summary(s.pop("loss_profile")))
    t_train = time.perf_counter() - t0
    return {"setup": {"topology": topology, "model": "resnet50", "workers": workers,
                      "background_load": background_load, "iterations": iterations,
                      "seed": seed, "epochs": epochs, "seeds": list(seeds),
                      "target": target, "gradient_scale": gradient_scale},
            "schemes": schemes, "scale": at_scale,
            "low_background": {"background_class": 7,
                               "iterations": low_background_iterations, "schemes": low},
            "jumbo": {"payload": 9000, "window": JUMBO_WINDOW,
                      "iterations": jumbo_iterations, "schemes": jumbo},
            "convergence": conv,
            "time_to_accuracy": tta,
            "wall_s": {"simulation": round(t_sim), "training": round(t_train)}}


def write_dlcp_study(directory: str | Path, res: dict) -> list[Path]:
    """``dlcp-results.json`` (without wall times: artifacts carry no timings) and
    ``dlcp-convergence.png`` in ``directory``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    pj = d / "dlcp-results.json"
    pj.write_text(json.dumps({k: v for k, v in res.items() if k != "wall_s"}, indent=1,
                             sort_keys=True) + "\n")
    conv = res["convergence"]
    eps_values = sorted({c["eps"] for c in conv if c["pattern"] != "none"})
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    none = np.mean([c["accuracy"] for c in conv if c["pattern"] == "none"], axis=0)
    axes[0].plot(range(1, len(none) + 1), none, "k-", label="no loss")
    for pattern, style in (("random", "--"), ("dlcp", "-")):
        for eps in (eps_values[-1],):
            acc = np.mean([c["accuracy"] for c in conv if c["pattern"] == pattern
                           and c["eps"] == eps], axis=0)
            axes[0].plot(range(1, len(acc) + 1), acc, style, label=f"{pattern}, eps {eps:g}")
        final = [np.mean([c["accuracy"][-1] for c in conv if c["pattern"] == pattern
                          and c["eps"] == e]) for e in eps_values]
        axes[1].plot([e * 100 for e in eps_values], final, "o" + style, label=pattern)
    axes[1].axhline(float(none[-1]), color="k", lw=0.8, label="no loss")
    axes[0].set_xlabel("epoch")
    axes[0].set_ylabel("test accuracy")
    axes[1].set_xlabel("loss budget eps (%)")
    axes[1].set_ylabel("final test accuracy")
    axes[1].set_xscale("log")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    pp = save_figure(fig, d / "dlcp-convergence.png", dpi=100)
    out = [pj, pp]
    if res.get("scale"):
        out.append(_scale_figure(plt, d, res))
    return out


def _scale_figure(plt, d: Path, res: dict) -> Path:
    """p50 iteration communication time per scheme against the number of workers."""
    sets = [(res["setup"]["workers"], res["schemes"])] + \
        [(s["workers"], s["schemes"]) for s in res["scale"]]
    names = [r["scheme"] for r in sets[-1][1]]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name in names:
        pts = [(w, r["p50_s"] * 1e3) for w, rows in sets for r in rows
               if r["scheme"] == name]
        ax.plot([w for w, _ in pts], [y for _, y in pts], "o-", label=name)
    ax.set_xlabel("workers")
    ax.set_ylabel("p50 iteration communication (ms)")
    ax.set_xticks([w for w, _ in sets])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, d / "dlcp-scale.png", dpi=100)
