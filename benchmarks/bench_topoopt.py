"""Benchmark: TopoOpt's alternating optimization and its baselines (issues 20 and 33).

Prints one table row per case. Run with::

    .venv/bin/python benchmarks/bench_topoopt.py
    .venv/bin/python benchmarks/bench_topoopt.py --flow   # the flow-level re-check only

Target (issue 20): what a user gets by default, ``topocoll topoopt --model dlrm --json``
(128 servers, 4 ports of 100 Gb/s, 3 rounds of 2,000 moves, every even port split tried
at each topology step, then the five baselines with their own searches), in under 5
minutes on 2 cores; timed as a fresh process twice (cold: the first run after a change
compiles nothing, so cold and warm differ only by the file cache). Below it, in-process:
one design of the study at the artifact's budget (issue 33: 4,000 moves over two rounds,
then the 1:1 and 2:1 fat-trees' searches), the unit ``topocoll study topoopt`` runs 240
times. With ``--flow`` instead: one point of ``topocoll study topoopt-flow`` (DLRM, d=8, 100 Gb/s:
the design, both fat-trees, each exchange at flow level split and under three hash
seeds), and the flow check alone on the TopoOpt design (its 16,256-flow embedding
all-to-all dominates).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path


def _default_and_designs(rows: list, _design) -> None:
    """The default command cold and warm, and five study designs."""
    cli = [str(Path(sys.executable).with_name("topocoll")), "topoopt", "--model", "dlrm",
           "--json"]
    for label in ("cold", "warm"):
        t0 = time.perf_counter()
        subprocess.run(cli, check=True, capture_output=True)
        rows.append((f"topocoll topoopt --model dlrm ({label})", time.perf_counter() - t0,
                     300.0))
    for model, d in (("dlrm", 4), ("dlrm", 8), ("bert-topoopt", 8), ("ncf", 4),
                     ("candle-uno", 8)):
        moves = 8000 if model == "ncf" else 4000
        t0 = time.perf_counter()
        _design(model, d, 100, 0, 128, moves, "a100-80g")
        rows.append((f"study design: {model}, d={d}, 100 Gb/s, {moves} moves + fat-trees",
                     time.perf_counter() - t0, None))


def main(argv: list[str]) -> None:
    from topocoll.studies.topoopt import _design

    rows = []
    if "--flow" not in argv:
        _default_and_designs(rows, _design)
    else:
        from topocoll.fabric import FabricEval, flow_check, optimize
        from topocoll.studies.topoopt import study_job
        from topocoll.studies.topoopt_flow import flow_point

        t0 = time.perf_counter()
        flow_point("dlrm", 8, 100)
        rows.append(("topoopt-flow point: dlrm, d=8, 100 Gb/s (designs + checks)",
                     time.perf_counter() - t0, None))
        job = study_job("dlrm", 128, "a100-80g")
        r = optimize(job, degree=8, port_bandwidth=100e9 / 8, rounds=2, steps=2000, seed=0)
        fe = FabricEval(job, r.finder.topology, rings=r.finder.jumps)
        for hashed in (False, True):
            t0 = time.perf_counter()
            flow_check(fe, r.strategy, hashed=hashed)
            rows.append((f"flow_check, DLRM TopoOpt design, {'hashed' if hashed else 'split'}",
                         time.perf_counter() - t0, None))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'case':<66} {'seconds':>9} {'target':>8}  met")
    for name, t, target in rows:
        tgt = f"{target:8.0f}" if target else f"{'':>8}"
        met = ("yes" if t <= target else "no") if target else ""
        print(f"{name:<66} {t:9.2f} {tgt}  {met}")


if __name__ == "__main__":
    main(sys.argv[1:])
