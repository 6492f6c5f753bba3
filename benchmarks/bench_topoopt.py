"""Benchmark: TopoOpt's full alternating optimization (issue 20).

Prints one table row per case. Run with::

    .venv/bin/python benchmarks/bench_topoopt.py

Target: one full alternating optimization for DLRM on 128 servers (the CLI's defaults:
3 rounds of 2,000 MCMC moves, every even port split tried at each topology step) in under
5 minutes on 2 cores. The baselines' own strategy searches are timed separately.
"""

from __future__ import annotations

import os
import platform
import time


def main() -> None:
    from topocoll.fabric import TOPOOPT_BATCH, Job, baselines, optimize
    from topocoll.workload import LAYERED, find_device

    rows = []
    a100 = find_device("a100-80g")
    for model, d in (("dlrm", 4), ("dlrm", 8), ("ncf", 4), ("candle-uno", 8)):
        job = Job(LAYERED[model], servers=128, device=a100, batch_per_gpu=TOPOOPT_BATCH[model])
        t0 = time.perf_counter()
        r = optimize(job, degree=d, port_bandwidth=100e9 / 8, rounds=3, steps=2000, seed=0)
        t_opt = time.perf_counter() - t0
        t0 = time.perf_counter()
        b = baselines(r, steps=2000, seed=0)
        t_base = time.perf_counter() - t0
        rows.append((f"{model}, 128 servers, d={d}, 100 Gb/s: alternating optimization",
                     t_opt, 300.0, r.timing.iteration_s / b["fattree"]["iteration_s"]))
        rows.append(("  the four baselines", t_base, None, None))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'case':<62} {'seconds':>9} {'target':>8}  met")
    for name, t, target, _ in rows:
        tgt = f"{target:8.0f}" if target else f"{'':>8}"
        met = ("yes" if t <= target else "no") if target else ""
        print(f"{name:<62} {t:9.2f} {tgt}  {met}")


if __name__ == "__main__":
    main()
