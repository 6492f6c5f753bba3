"""DLCP's study: the schemes' communication time on a leaf-spine fabric under background
load (packet engine), what their gradient loss costs in accuracy (torch on digits), and
the two combined into time to a target accuracy (``docs/studies/dlcp.md``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..topology.spec import parse_spec
from ..workload import LAYERED
from ._common import save_figure
from .dlcp_convergence import run_convergence, train_with_loss
from .dlcp_scenario import SCHEMES, profile_summary, run_dlcp

__all__ = ["STUDY_TOPOLOGY", "SCALE", "SCALE_SCHEMES", "PAYLOADS", "IN_FLIGHT", "window_for",
           "run_dlcp_study", "write_dlcp_study", "steps_to", "render_tables"]

STUDY_TOPOLOGY = "leafspine:leaves=4,spines=2,hosts=4,bw=10Gbps"
#: the larger fabrics (workers, topology), non-blocking like the main one: 10 Gb/s hosts,
#: 20 Gb/s uplinks
SCALE = ((32, "leafspine:leaves=8,spines=2,hosts=4,bw=10Gbps"),
         (64, "leafspine:leaves=8,spines=4,hosts=8,bw=10Gbps"))
#: the schemes run at scale: both baselines, the two flow-level steps and the full stack
SCALE_SCHEMES = ("baseline", "dctcp", "layer_priority", "spray", "dlcp")
#: packet sizes: Ethernet's MTU and jumbo frames (the paper's engine works per packet)
PAYLOADS = (1500, 9000)
#: bytes in flight per message (two 64 KiB segments, the earlier study's window): the
#: window in packets is this over the payload (87 at 1,500 bytes, 14 at 9,000)
IN_FLIGHT = 2 * 64 * 1024


def window_for(payload: int) -> int:
    """Packets in flight per message that keep :data:`IN_FLIGHT` bytes in flight."""
    return max(1, IN_FLIGHT // payload)


def steps_to(accuracy: list[float], target: float, steps_per_epoch: int) -> float:
    """Optimizer steps until the test accuracy first reaches ``target`` (inf if never)."""
    for e, a in enumerate(accuracy):
        if a >= target:
            return float((e + 1) * steps_per_epoch)
    return float("inf")


def run_dlcp_study(*, workers: int = 16, background_load: float = 0.5, iterations: int = 30,
                   seed: int = 1, epochs: int = 20, seeds: tuple[int, ...] = (0, 1, 2),
                   target: float = 0.95, topology: str = STUDY_TOPOLOGY,
                   payloads: Sequence[int] = PAYLOADS,
                   scale: Sequence[tuple[int, str]] = SCALE, scale_iterations: int = 10,
                   scale_schemes: Sequence[str] = SCALE_SCHEMES,
                   eps_values: Sequence[float] = (0.005, 0.01, 0.02, 0.05, 0.1),
                   gradient_scale: float = 1.0, low_background_iterations: int = 10,
                   dctcp_iterations: int = 10, jobs: int = 1,
                   progress: Callable[[str], None] | None = None) -> dict:
    """The engine's schemes on ``topology`` at the first of ``payloads`` (the main run,
    ``iterations`` each, trained with), every scheme again at the other packet sizes,
    the larger fabrics of ``scale`` at every packet size (``scale_schemes``,
    ``scale_iterations``), the main fabric with the background in class 7, below every
    gradient class (``low_background_iterations``; 0 leaves it out), the main fabric with
    DCTCP and ECN marks under every scheme (``dctcp_iterations``; 0 leaves it out), the
    convergence
    grid and time to ``target`` accuracy, with the wall time of each part (simulation
    and training). Every run keeps :data:`IN_FLIGHT` bytes in flight per message.
    ``gradient_scale`` shrinks the model's gradients (tests); ``jobs`` worker processes
    share the scheme-iterations (the records do not depend on it)."""
    t0 = time.perf_counter()
    topo = parse_spec(topology)
    model = LAYERED["resnet50"]
    main_payload = payloads[0]

    def variant(label: str, fabric=topo, payload: int = main_payload, **kw) -> list[dict]:
        """One more run of the engine beside the main one, its loss profiles summarized
        (only the main run's profiles are trained with)."""
        rows = run_dlcp(fabric, model, background_load=background_load, seed=seed,
                        scale=gradient_scale, payload=payload, window=window_for(payload),
                        jobs=jobs, progress=None if progress is None else
                        (lambda msg: progress(f"{label}: {msg}")), **kw)
        for r in rows:
            r.update(profile_summary(r.pop("loss_profile")))
        return rows

    schemes = run_dlcp(topo, model, workers=workers, background_load=background_load,
                       iterations=iterations, seed=seed, scale=gradient_scale,
                       payload=main_payload, window=window_for(main_payload), jobs=jobs,
                       progress=progress)
    sizes = [{"payload": p, "window": window_for(p), "iterations": iterations,
              "schemes": variant(f"{p}-byte packets", payload=p, workers=workers,
                                 iterations=iterations)}
             for p in payloads[1:]]
    # the variants leave out the schemes they cannot change: drop-tail ports ignore the
    # background's class, and under DCTCP everywhere the baseline is the dctcp scheme
    low = variant("background class 7", workers=workers, background_class=7,
                  iterations=low_background_iterations,
                  schemes=[s for s in SCHEMES if s not in ("baseline", "dctcp")]) \
        if low_background_iterations else []
    cc = variant("DCTCP in every scheme", workers=workers, transport="dctcp",
                 iterations=dctcp_iterations,
                 schemes=[s for s in SCHEMES if s != "dctcp"]) if dctcp_iterations else []
    at_scale = [{"workers": w, "topology": spec, "payload": p, "window": window_for(p),
                 "iterations": scale_iterations,
                 "schemes": variant(f"{w} workers, {p} B", parse_spec(spec), payload=p,
                                    workers=w, iterations=scale_iterations,
                                    schemes=scale_schemes)}
                for w, spec in scale for p in payloads]
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
                      "payload": main_payload, "window": window_for(main_payload),
                      "seed": seed, "epochs": epochs, "seeds": list(seeds),
                      "target": target, "gradient_scale": gradient_scale},
            "schemes": schemes, "scale": at_scale, "sizes": sizes,
            "low_background": {"background_class": 7,
                               "iterations": low_background_iterations, "schemes": low},
            "dctcp_everywhere": {"iterations": dctcp_iterations, "schemes": cc},
            "convergence": conv,
            "time_to_accuracy": tta,
            "wall_s": {"simulation": round(t_sim), "training": round(t_train)}}


def write_dlcp_study(directory: str | Path, res: dict) -> list[Path]:
    """``dlcp-results.json`` (without wall times: artifacts carry no timings),
    ``dlcp-convergence.png``, ``dlcp-scale.png`` and ``dlcp-tables.md`` in
    ``directory``."""
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
    pt = d / "dlcp-tables.md"
    pt.write_text(render_tables(res))
    out = [pj, pp, pt]
    if res.get("scale"):
        out.append(_scale_figure(plt, d, res))
    return out


def _scale_figure(plt, d: Path, res: dict) -> Path:
    """p50 iteration communication time per scheme against the number of workers, one
    line style per packet size."""
    names = [r["scheme"] for r in res["scale"][-1]["schemes"]]
    main = res["setup"]
    base = {main["payload"]: res["schemes"], **{z["payload"]: z["schemes"]
                                                for z in res.get("sizes", [])}}
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    styles = ("o-", "s--", "^:")
    for k, (payload, rows16) in enumerate(sorted(base.items())):
        sets = [(main["workers"], rows16)] + [(s["workers"], s["schemes"])
                                              for s in res["scale"]
                                              if s["payload"] == payload]
        for j, name in enumerate(names):
            pts = [(w, r["p50_s"] * 1e3) for w, rows in sets for r in rows
                   if r["scheme"] == name]
            ax.plot([w for w, _ in pts], [y for _, y in pts], styles[k % len(styles)],
                    color=f"C{j}", label=f"{name}, {payload} B")
    ax.set_xlabel("workers")
    ax.set_ylabel("p50 iteration communication (ms)")
    ax.set_xticks(sorted({main["workers"], *(s["workers"] for s in res["scale"])}))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    return save_figure(fig, d / "dlcp-scale.png", dpi=100)


def _ms(x) -> str:
    return "-" if x is None else f"{x * 1e3:.1f}"


def _rows_table(rows: list[dict], *, tta: dict | None = None) -> list[str]:
    head = ("| scheme | p50 (ms) [95% CI] | p99 (ms) [lower 95% bound] | gradient loss | "
            "retransmitted (MB / iteration) | dropped packets | pushes that lost within "
            "budget |" + (" time to 95% (s) |" if tta else ""))
    out = [head, "|---" * (7 + bool(tta)) + "|"]
    for r in rows:
        lo, hi = r["p50_ci_s"]
        lossy = (f"{r['lossy_messages']:,} of {r['messages_that_may_lose']:,}"
                 if r.get("messages_that_may_lose") else "-")
        line = (f"| {r['scheme']} | {_ms(r['p50_s'])} [{_ms(lo)}, {_ms(hi)}] | "
                f"{_ms(r['p99_s'])} [{_ms(r['p99_ci_s'][0])}] | "
                f"{r['loss_fraction']:.3%} | {r['retransmitted_bytes'] / 1e6:,.1f} | "
                f"{r['drops']:,} | {lossy} |")
        if tta:
            line += f" {tta[r['scheme']]:.1f} |"
        out.append(line)
    return out


def render_tables(res: dict) -> str:
    """The study's result tables as Markdown (``dlcp-tables.md``, pasted into
    ``docs/studies/dlcp.md``): the main run with time to accuracy, the other packet
    sizes, the larger fabrics, the background below the gradients."""
    st = res["setup"]
    tta = {t["scheme"]: t["time_to_accuracy_s"] for t in res["time_to_accuracy"]}
    out = [f"### {st['workers']} workers, {st['payload']}-byte packets "
           f"({st['iterations']} iterations, window {st['window']})", ""]
    out += _rows_table(res["schemes"], tta=tta)
    for z in res.get("sizes", []):
        out += ["", f"### {st['workers']} workers, {z['payload']}-byte packets "
                    f"({z['iterations']} iterations, window {z['window']})", ""]
        out += _rows_table(z["schemes"])
    for sc in res.get("scale", []):
        out += ["", f"### {sc['workers']} workers on `{sc['topology']}`, {sc['payload']}-byte "
                    f"packets ({sc['iterations']} iterations, window {sc['window']})", ""]
        out += _rows_table(sc["schemes"])
    low = res.get("low_background", {})
    if low.get("schemes"):
        out += ["", f"### Background in class 7, below every gradient class "
                    f"({low['iterations']} iterations, {st['payload']}-byte packets)", ""]
        out += _rows_table(low["schemes"])
    cc = res.get("dctcp_everywhere", {})
    if cc.get("schemes"):
        out += ["", f"### DCTCP and ECN marks in every scheme ({cc['iterations']} iterations, "
                    f"{st['payload']}-byte packets)", ""]
        out += _rows_table(cc["schemes"])
    return "\n".join(out) + "\n"
