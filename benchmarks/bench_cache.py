"""Benchmark: a second ``topocoll compare`` of the same case reuses the schedule cache.

Runs each command twice as a fresh process with an empty ``TOPOCOLL_CACHE`` (the first
run fills it, the second reads it) and prints the wall times and their ratio. Run with::

    .venv/bin/python benchmarks/bench_cache.py [--repeat N]

Target (issue "One room per layer", 2 cores): the second
``compare -t mi250:2 -c allgather -a optimal`` at least 5x faster than the first.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

CASES = [
    ["compare", "-t", "mi250:2", "-c", "allgather", "-a", "optimal", "-s", "1GiB"],
    ["compare", "-t", "dgx-h100:2", "-c", "allreduce", "-s", "64MiB"],
    ["compare", "-t", "torus:8x8,bw=400Gbps,lat=100ns", "-c", "allreduce", "-s", "1MiB"],
]


def _run(args: list[str], cache: str) -> float:
    env = {**os.environ, "TOPOCOLL_CACHE": cache}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "topocoll", *args, "--json"], env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3, help="cold/warm pairs per case")
    a = ap.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    print("| command | first (s) | second (s) | speedup |")
    print("|---|---|---|---|")
    for args in CASES:
        cold, warm = [], []
        for _ in range(a.repeat):
            with tempfile.TemporaryDirectory() as cache:
                cold.append(_run(args, cache))
                warm.append(_run(args, cache))
        c, w = statistics.median(cold), statistics.median(warm)
        print(f"| `topocoll {' '.join(args)}` | {c:.2f} | {w:.2f} | {c / w:.1f}x |",
              flush=True)


if __name__ == "__main__":
    main()
