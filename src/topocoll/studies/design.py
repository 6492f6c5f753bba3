"""Which fabric to build: three jobs at 1,024 and 8,192 GPUs, every family at the cost of
the box's own rail-optimized network, and the cost of holding the reference's iteration
time (``docs/studies/design.md``, ``topocoll study design``).

Jobs: a dense LLM (Llama-3 70B on DGX H100), an MoE (Mixtral 8x7B on DGX H100) and DLRM
(TopoOpt's configuration, on DGX A100). For each job and size:

- **equal cost**: :func:`~topocoll.fabric.design.design_fabrics` with no budget: every
  family at the bill of the reference (the box's NICs on a non-blocking rail-optimized
  Clos);
- **same time, least cost** (1,024 GPUs): every switched and direct family's cheapest
  product line rate that holds the reference's iteration time within 1%, which is the
  comparison the rail-only paper makes ("the same training time at 38-77% less network
  cost").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..fabric.design import FAMILIES, DesignJob, design_fabrics
from ..topology.boxes import find_box
from ..workload import LAYERED, find_device, parse_model
from ._common import headless_pyplot, save_figure, write_json

__all__ = ["STUDY_JOBS", "STUDY_GPUS", "SAVINGS_GPUS", "run_design_study",
           "write_design_study", "rail_only_savings"]

#: (name, model, box, global batch per GPU, sizes, least-cost comparison). The DLRM job
#: runs at 1,024 GPUs only: its all-to-all over every GPU (a million transfers at 1,024,
#: 67 million at 8,192) took 8 minutes per set of families at 1,024; Mixtral at 8,192
#: takes 25 minutes (``docs/studies/design.md``).
STUDY_JOBS = (("dense", "llama3-70b", "dgx-h100", 1, (1024, 8192), True),
              ("moe", "mixtral-8x7b", "dgx-h100", 1, (1024, 8192), True),
              ("dlrm", "dlrm", "dgx-a100", 32, (1024,), False))
STUDY_GPUS = (1024, 8192)
#: The families of the least-cost comparison (LIBRA's and the torus's line rates are not
#: the products the others are sold at).
TARGET_FAMILIES = ("fat-tree", "rail", "rail-only", "topoopt")


def _job(model: str, box: str, gpus: int, per_gpu: int) -> DesignJob:
    b = find_box(box)
    mdl = LAYERED[model] if model in LAYERED else parse_model(model)
    return DesignJob(mdl, gpus, find_device(b.gpu), per_gpu * gpus)


def run_design_study(jobs: Sequence[tuple] = STUDY_JOBS, *, target_gpus: int = 1024,
                     progress: Callable[[str], None] | None = None) -> dict:
    """Every job at each of its sizes at equal cost and at the reference's line rate; at
    ``target_gpus`` also each family's least cost for the reference's time (for the jobs
    that ask for it)."""
    out = []
    for name, model, box, per, sizes, least_cost in jobs:
        for n in sizes:
            job = _job(model, box, n, per)

            def step(s: str, name=name, n=n) -> None:
                if progress is not None:
                    progress(f"{name} on {n}: {s}")

            eq = design_fabrics(job, boxes=(box,), families=FAMILIES, libra_equal_split=True,
                                progress=step)
            rec = {"job": name, "model": model, "box": box, "gpus": n,
                   "global_batch": job.global_batch, "equal_cost": eq.to_dict()}
            # rail-only at the reference's own line rate: the rail-only paper's comparison
            # (the same NICs, the spine removed)
            ref_rate = find_box(box).nic_Bps
            same = design_fabrics(job, boxes=(box,), families=("rail", "rail-only"),
                                  budget=None, time_target=None, bounds=False,
                                  recheck=False, progress=step, rate=ref_rate)
            rec["same_rate"] = same.to_dict()
            if least_cost and n == target_gpus:
                ref = next(d for d in eq.designs if d.family == "rail")
                target = ref.iteration_s * 1.01
                tt = design_fabrics(job, boxes=(box,), families=TARGET_FAMILIES,
                                    time_target=target, bounds=False, recheck=False,
                                    progress=step)
                rec["same_time"] = {"target_s": target, **tt.to_dict()}
            out.append(rec)
    return {"jobs": out, "rail_only_savings": rail_only_savings()}


#: Cluster sizes of :func:`rail_only_savings`.
SAVINGS_GPUS = (1024, 2048, 4096, 8192, 16384, 32768)


def rail_only_savings(box: str = "dgx-h100", gpus: Sequence[int] = SAVINGS_GPUS) -> list[dict]:
    """Rail-only against rail-optimized at the box's own line rate, by cluster size, from
    the bills alone (the same NICs; what the spine costs): tiers of each, and the saving in
    cost (all of it, and without the scale-up ports both pay) and in power."""
    from ..fabric import PriceTable
    from ..fabric.design import family_bill
    from ..topology import cluster_plans

    b = find_box(box)
    p = PriceTable()
    out = []
    for n in gpus:
        r = family_bill("rail", b, n, b.nic_Bps, p)
        o = family_bill("rail-only", b, n, b.nic_Bps, p)
        up = {part: c * u for part, c, _, u, _ in r.lines}.get("scaleup_port", 0.0)
        out.append({"gpus": n, "box": box,
                    "rail_tiers": max(pl.tiers for pl in cluster_plans(b.gpus, n // b.gpus,
                                                                         "rail")),
                    "rail_only_tiers": max(pl.tiers for pl in cluster_plans(
                        b.gpus, n // b.gpus, "rail-only")),
                    "rail_usd": r.cost_usd, "rail_only_usd": o.cost_usd,
                    "cost_saving": 1 - o.cost_usd / r.cost_usd,
                    "scaleout_saving": 1 - (o.cost_usd - up) / (r.cost_usd - up),
                    "power_saving": 1 - o.power_w / r.power_w})
    return out


def _row(d: dict) -> str:
    if d["iteration_s"] is None:
        return (f"| {d['family']} | - | ${d['cost_usd'] / 1e6:,.2f}M | "
                f"{d['power_w'] / 1e3:,.0f} kW | - | - | {d['reason']} |")
    return (f"| {d['family']} | {d['rate_gbps']:,.0f} | ${d['cost_usd'] / 1e6:,.2f}M | "
            f"{d['power_w'] / 1e3:,.0f} kW | {d['iteration_s']:.4g} s | "
            f"{100 * d['mfu']:.1f}% | `{d['parallel']}` |")


def write_design_study(out: Path, res: dict) -> list[Path]:
    """``design-results.json``, ``design-equal-cost.png`` and the tables of the study
    (``design-results.md``, which ``docs/studies/design.md`` discusses)."""
    paths = [write_json(out / "design-results.json", res)]
    lines = []
    for rec in res["jobs"]:
        eq = rec["equal_cost"]
        lines += [f"### {rec['job']}: {rec['model']} on {rec['gpus']:,} GPUs "
                  f"({rec['box']}, global batch {rec['global_batch']:,})", "",
                  f"Equal cost: ${eq['budget_usd'] / 1e6:,.2f}M (the reference: "
                  f"{eq['reference']['box']} NICs at {eq['reference']['rate_gbps']:g} Gb/s "
                  f"on a rail-optimized Clos). Winner: **{eq['winner']['family']}**"
                  + (f"; within 1%: {', '.join(t['family'] for t in eq['ties'])}"
                     if eq["ties"] else "") + ".", "",
                  "| family | Gb/s per port | cost | power | iteration | MFU | parallelism |",
                  "|---|--:|--:|--:|--:|--:|---|"]
        lines += [_row(d) for d in eq["designs"]]
        lines.append("")
        lib = next((d for d in eq["designs"] if d["family"] == "libra"
                    and d.get("libra", {}).get("equal_split")), None)
        if lib is not None:
            li, es = lib["libra"], lib["libra"]["equal_split"]
            lines += [f"LIBRA's allocation over the pod and cross-pod dimensions "
                      f"{' / '.join(f'{g:,.0f}' for g in li['scaleout_gbps'])} Gb/s per GPU: "
                      f"{lib['iteration_s']:.4g} s; the same budget split equally "
                      f"({es['scaleout_gbps'][0]:,.0f} Gb/s each): {es['iteration_s']:.4g} s "
                      f"({es['iteration_s'] / lib['iteration_s']:.3f}x).", ""]
        if "same_rate" in rec:
            sr = {d["family"]: d for d in rec["same_rate"]["designs"]}
            r, o = sr.get("rail"), sr.get("rail-only")
            if r and o and r["iteration_s"] and o["iteration_s"]:
                lines += [f"At the reference's line rate ({r['rate_gbps']:,.0f} Gb/s), the "
                          f"spine removed: rail-only costs ${o['cost_usd'] / 1e6:,.2f}M "
                          f"against ${r['cost_usd'] / 1e6:,.2f}M "
                          f"({100 * (1 - o['cost_usd'] / r['cost_usd']):.0f}% less), draws "
                          f"{o['power_w'] / 1e3:,.0f} against {r['power_w'] / 1e3:,.0f} kW "
                          f"({100 * (1 - o['power_w'] / r['power_w']):.0f}% less), and runs "
                          f"an iteration in {o['iteration_s']:.4g} s against "
                          f"{r['iteration_s']:.4g} s.", ""]
        if "same_time" in rec:
            st = rec["same_time"]
            lines += [f"Least cost for the reference's iteration time within 1% "
                      f"({st['target_s']:.4g} s), at product line rates:", "",
                      "| family | Gb/s per port | cost | power | iteration | MFU | "
                      "parallelism |", "|---|--:|--:|--:|--:|--:|---|"]
            lines += [_row(d) for d in st["designs"]]
            lines.append("")
    sv = res.get("rail_only_savings") or []
    if sv:
        lines += ["### Rail-only against rail-optimized by cluster size (the same NICs)", "",
                  "| GPUs | tiers (rail / rail-only) | rail | rail-only | cost saved | "
                  "scale-out cost saved | power saved |", "|--:|--:|--:|--:|--:|--:|--:|"]
        lines += [f"| {x['gpus']:,} | {x['rail_tiers']} / {x['rail_only_tiers']} | "
                  f"${x['rail_usd'] / 1e6:,.2f}M | ${x['rail_only_usd'] / 1e6:,.2f}M | "
                  f"{100 * x['cost_saving']:.0f}% | {100 * x['scaleout_saving']:.0f}% | "
                  f"{100 * x['power_saving']:.0f}% |" for x in sv]
        lines.append("")
    tables = out / "design-results.md"
    tables.write_text("# Which fabric to build: the tables (`topocoll study design`)\n\n"
                      + "\n".join(lines))
    paths.append(tables)
    plt = headless_pyplot()
    if plt is not None:
        recs = res["jobs"]
        fig, axes = plt.subplots(1, len(recs), figsize=(3.2 * len(recs), 3.2), sharey=False)
        for ax, rec in zip(list(axes) if len(recs) > 1 else [axes], recs, strict=True):
            ds = [d for d in rec["equal_cost"]["designs"] if d["iteration_s"] is not None]
            ref = next(d for d in ds if d["family"] == "rail")["iteration_s"]
            ax.bar([d["family"] for d in ds], [ref / d["iteration_s"] for d in ds],
                   color="#4477aa")
            ax.axhline(1.0, color="k", lw=0.6)
            ax.set_title(f"{rec['job']}, {rec['gpus']:,} GPUs", fontsize=8)
            ax.tick_params(axis="x", labelrotation=60, labelsize=7)
            ax.tick_params(axis="y", labelsize=7)
        (list(axes) if len(recs) > 1 else [axes])[0].set_ylabel(
            "speedup over rail at equal cost", fontsize=7)
        paths.append(save_figure(fig, out / "design-equal-cost.png"))
    return paths
