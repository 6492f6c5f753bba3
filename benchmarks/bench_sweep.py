"""Benchmark: a local analytical sweep (topologies x algorithms x sizes).

Run with::

    .venv/bin/python benchmarks/bench_sweep.py [--points N] [--workers W] [--backend ray]

Target (issue "Design-space sweeps"): 10,000 points in under 5 minutes on 2 cores. Prints
points, seconds, points per second and the per-point overhead against running the same
commands in one process without the sweep machinery. With ``--backend ray`` the same
points run as tasks on a local Ray cluster (started and stopped by the sweep, included in
the time); the overhead per point is ``seconds x workers / points`` minus the direct time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import tempfile
import time
from pathlib import Path

TOPOS = [f"ring:{n}" for n in range(4, 84)] + [f"torus:{a}x{b}" for a in (2, 3, 4)
                                               for b in (2, 3, 4, 5)]
ALGOS = ["ring", "recursive_doubling", "direct", "bidirectional_ring", "swing"]
SIZES = [f"{2 ** k}B" for k in range(4, 30)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--backend", default="local")
    a = ap.parse_args()
    from topocoll.cli.runner import run_argv
    from topocoll.sweep import SweepStore, parse_sweep, run_sweep

    combos = list(itertools.product(TOPOS, ALGOS, SIZES))[: a.points]
    # one point per combination: a 'sample' of explicit choices keeps the grid exact
    doc = {"command": "compare", "fixed": {"collective": "allreduce", "no_cache": True},
           "grid": {"topology": sorted({c[0] for c in combos}), "algorithm": ALGOS,
                    "size": SIZES}}
    spec = parse_sweep(doc)
    pts = spec.points()[: a.points]
    spec = parse_sweep(doc)
    d = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    store = SweepStore(d / "b.duckdb")
    os.environ["TOPOCOLL_CACHE"] = str(d / "cache")
    # the same number of points: trim by running a prefix (the grid is ordered)
    from topocoll.sweep.spec import SweepSpec

    class Prefix(SweepSpec):
        def points(self):
            return pts

    pre = Prefix(spec.command, spec.grid, spec.fixed, spec.sample, spec.repeat)
    t0 = time.perf_counter()
    s = run_sweep(pre, store, run_argv, workers=a.workers, backend=a.backend)
    dt = time.perf_counter() - t0
    store.close()
    t1 = time.perf_counter()
    for p in pts[:100]:
        run_argv(p.argv())
    direct = (time.perf_counter() - t1) / min(100, len(pts))
    print(json.dumps({"points": s.total, "failed": s.failed, "workers": a.workers,
                      "backend": a.backend,
                      "overhead_s_per_point": round(dt * a.workers / s.total - direct, 4),
                      "seconds": round(dt, 2), "points_per_s": round(s.total / dt, 1),
                      "direct_s_per_point_one_process": round(direct, 4),
                      "load": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
