"""Benchmark: ``topocoll design`` as a user runs it (issue 32).

Target: every family for Llama-3 70B on 1,024 GPUs (the default command) in under 2
minutes on 2 cores, cold (a fresh schedule cache). Also timed: the same warm (the cache
of the cold run) and at 8,192 GPUs cold. Run with::

    .venv/bin/python benchmarks/bench_design.py [--skip-large]

Prints one Markdown row per case (machine, load, seconds), for docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time


def _cli(args: list[str], cache: str) -> float:
    env = {**os.environ, "TOPOCOLL_CACHE": cache}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "topocoll", *args, "--json"], env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-large", action="store_true")
    a = ap.parse_args()
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    load = os.getloadavg()[0]
    cache = tempfile.mkdtemp(prefix="bench-design-")
    cases = [("design (llama3-70b, 1,024 GPUs, every family), cold", ["design"], cache),
             ("same, warm", ["design"], cache)]
    if not a.skip_large:
        cases.append(("design --gpus 8192 --global-batch 2048, cold",
                      ["design", "--gpus", "8192", "--global-batch", "2048"],
                      tempfile.mkdtemp(prefix="bench-design-")))
    print("| case | seconds | target | machine | load |")
    print("|---|--:|--:|---|--:|")
    for label, args, c in cases:
        s = _cli(args, c)
        target = "120" if "1,024" in label and "cold" in label else "-"
        print(f"| {label} | {s:.1f} | {target} | {machine} | {load:.2f} |", flush=True)


if __name__ == "__main__":
    main()
