"""Benchmark: the test suite as CI runs it (issue 30's scope: under 15 minutes on 2 cores).

Run with::

    .venv/bin/python benchmarks/bench_suite.py [--slowest N] [--path tests/...]

Times the two phases of ``make test`` (``pytest -n 2 -m "not alone"``, then ``pytest -m
alone``) in this checkout, each with ``--durations``, and prints their wall times, the
machine's CPU and load before the run, the test counts and the slowest tests (where to
look next). ``--path`` restricts both phases to some tests (a module's own time). The
suite's numba kernels and schedule caches are whatever this checkout has; CI's clean clone
compiles them once more (about a minute).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 15 * 60


def _phase(args: list[str], slowest: int) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "pytest", "-q", *args, f"--durations={slowest}"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    return time.perf_counter() - t0, out.stdout + out.stderr


def _summary(text: str) -> str:
    found = re.findall(r"^=*\s*(\d+ \w+.*?) in [\d.]+s", text, re.M)
    return found[-1] if found else "no summary (see the output)"


def _slowest(text: str, n: int) -> list[str]:
    return re.findall(r"^\d+\.\d+s (?:call|setup|teardown)\s+\S+", text, re.M)[:n]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slowest", type=int, default=15)
    ap.add_argument("--path", action="append", default=[])
    a = ap.parse_args()
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in
                   Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"machine: {cpu}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} before")
    total = 0.0
    for name, args in (("parallel", ["-n", "2", "-m", "not alone"]),
                       ("alone", ["-m", "alone"])):
        seconds, text = _phase([*args, *a.path], a.slowest)
        total += seconds
        print(f"\n{name}: {seconds / 60:.1f} min ({_summary(text)})")
        for line in _slowest(text, a.slowest):
            print("  " + line)
    verdict = "meets" if total <= TARGET_S else "misses"
    print(f"\ntotal {total / 60:.1f} min: {verdict} the {TARGET_S // 60}-minute target")


if __name__ == "__main__":
    main()
