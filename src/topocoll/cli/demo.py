"""``topocoll demo``: the main job on built-in fabrics, with a Markdown report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..units import parse_size
from .app import (
    JsonOpt,
    NoCacheOpt,
    app,
    err,
    handle_errors,
    load_topo,
    out,
    print_json,
    schedule_cache,
)
from .compare import print_rows

__all__ = ["demo", "DEMO_FABRICS", "DEMO_SIZES", "DEMO_DESIGN"]

#: The design the demo leads with: which fabric to build for this job, every family at the
#: cost of the box's own rail-optimized network.
DEMO_DESIGN = {"model": "llama3-70b", "gpus": 512, "box": "dgx-h100", "global_batch": 512}


DEMO_FABRICS = (
    ("torus:8x8,bw=400Gbps,lat=100ns", "allreduce"),
    ("fattree:k=4,bw=100Gbps,lat=500ns,routing=ecmp", "allreduce"),
    ("dgx-h100:2", "allreduce"),
    ("hier:ring(4,100GB/s,200ns)x switch(8,25GB/s,1500ns)", "allgather"),
)
DEMO_SIZES = ("32KiB", "1MiB", "64MiB")


@app.command()
@handle_errors
def demo(output: Annotated[Path, typer.Option(
             "--output", "-o", help="Markdown report to write.")] = Path("topocoll-report.md"),
         no_cache: NoCacheOpt = False, as_json: JsonOpt = False) -> None:
    """The main job on built-in defaults: which fabric to build for a Llama training job
    (every family at equal cost), then every collective algorithm on representative
    fabrics; a Markdown report."""
    from rich.progress import Progress

    from ..fabric.design import DESIGN_ALGORITHMS, DesignJob, design_fabrics
    from ..report import demo_markdown, design_markdown
    from ..selection import compare_algorithms
    from ..topology.boxes import find_box
    from ..workload import find_device, parse_model
    from .design import design_question, print_design
    from .schedules import output_path

    output_path(output, (".md",))
    sizes = [parse_size(s) for s in DEMO_SIZES]
    cache = schedule_cache(no_cache)
    sections = []
    dd = DEMO_DESIGN
    box = find_box(dd["box"])
    job = DesignJob(parse_model(dd["model"]), dd["gpus"], find_device(box.gpu),
                    dd["global_batch"])
    title = f"Which fabric for {dd['model']} on {dd['gpus']} x {box.gpu}"
    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("design", total=None)
        res = design_fabrics(job, boxes=(box,), algorithms=DESIGN_ALGORITHMS, cache=cache,
                             progress=lambda s: bar.update(task, description=f"design: {s}"))
    design_rec = {**dd, "device": box.gpu, **res.to_dict()}
    with Progress(console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("demo", total=len(DEMO_FABRICS))
        for spec, kind in DEMO_FABRICS:
            t = load_topo(spec)
            bar.update(task, description=f"{kind} on {t.name}")
            rows = compare_algorithms(
                t, kind, sizes, cache=cache, progress=lambda name, t=t, kind=kind: bar.update(
                    task, description=f"{kind} on {t.name}: {name}"))
            sections.append((f"{t.name} ({t.num_ranks} ranks, {t.num_switches} switches)",
                             kind, rows))
            bar.advance(task)
    lead = design_markdown(design_rec, title, design_question(res))
    output.write_text(demo_markdown(
        sections, lead=lead,
        header="Every applicable algorithm, verified by symbolic execution and "
               "costed with the alpha-beta model with link congestion. "
               "`% of bound` is the strongest proven lower bound's time "
               "(`topocoll bound`) divided by the schedule's: no schedule is "
               "faster than that bound."))
    if as_json:
        print_json({"design": design_rec,
                    "collectives": [{"topology": topo, "collective": kind,
                                     "rows": [r.to_dict() for r in rows]}
                                    for topo, kind, rows in sections]})
        return
    print_design(res, title)
    for topo, kind, rows in sections:
        print_rows(f"{kind} on {topo}", rows)
    out.print(f"report written to {output}", highlight=False)
