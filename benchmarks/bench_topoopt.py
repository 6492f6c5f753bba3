"""Benchmark: TopoOpt's alternating optimization and its baselines (issues 20 and 33).

Prints one table row per case. Run with::

    .venv/bin/python benchmarks/bench_topoopt.py

Target (issue 20): what a user gets by default, ``topocoll topoopt --model dlrm --json``
(128 servers, 4 ports of 100 Gb/s, 3 rounds of 2,000 moves, every even port split tried
at each topology step, then the five baselines with their own searches), in under 5
minutes on 2 cores; timed as a fresh process twice (cold: the first run after a change
compiles nothing, so cold and warm differ only by the file cache). Below it, in-process:
one design of the study at the artifact's budget (issue 33: 4,000 moves over two rounds,
then the 1:1 and 2:1 fat-trees' searches), the unit ``topocoll study topoopt`` runs 240
times.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    from topocoll.studies.topoopt import _design

    rows = []
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
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'case':<66} {'seconds':>9} {'target':>8}  met")
    for name, t, target in rows:
        tgt = f"{target:8.0f}" if target else f"{'':>8}"
        met = ("yes" if t <= target else "no") if target else ""
        print(f"{name:<66} {t:9.2f} {tgt}  {met}")


if __name__ == "__main__":
    main()
