"""Benchmark: Swing allreduce on 64x64 (synthesize + verify + cost) and the Swing study sweep.

Each case runs in a fresh subprocess so that its peak memory (max RSS) is its own; numba
kernels are compiled (and cached) once before timing. Run with::

    .venv/bin/python benchmarks/bench_swing.py            # both targets
    .venv/bin/python benchmarks/bench_swing.py --quick    # 32x32 and one study topology

Targets (issue 3, 2 cores): Swing allreduce on the 64x64 torus (4096 ranks, all four
ports) synthesized, verified and costed in under 10 s; the full reproduction sweep
(``topocoll study swing``) in under 10 minutes.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time


def run_swing(shape: str, routing: str, multiport: bool) -> dict:
    import dataclasses

    from topocoll.cost import AlphaBeta
    from topocoll.synth import swing_allreduce
    from topocoll.topology import torus
    from topocoll.verification import verify

    warm = torus((4, 4))
    verify(swing_allreduce(warm), warm)
    AlphaBeta().evaluate(swing_allreduce(warm), warm, 2**20)

    dims = tuple(int(x) for x in shape.split("x"))
    topo = dataclasses.replace(torus(dims, bandwidth=50e9, latency=1e-7), routing=routing)
    t0 = time.perf_counter()
    s = swing_allreduce(topo, multiport=multiport)
    t1 = time.perf_counter()
    rep = verify(s, topo)
    t2 = time.perf_counter()
    res = AlphaBeta().evaluate(s, topo, 2**30)
    t3 = time.perf_counter()
    return {"case": f"swing allreduce {shape} ({'4' if multiport else '1'} port"
                    f"{'s' if multiport else ''}, {routing})",
            "ranks": topo.num_ranks, "transfers": s.num_transfers,
            "chunk_entries": int(s.chunk_ptr[-1]), "synth_s": t1 - t0, "verify_s": t2 - t1,
            "cost_s": t3 - t2, "total_s": t3 - t0, "method": rep.method,
            "peak_rss_GiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "allreduce_1GiB_s": res.time}


def run_study(topologies: list[str]) -> dict:
    import tempfile

    from topocoll.studies.swing import (
        TOPOLOGIES,
        StudySetup,
        parse_study_topology,
        study_topology,
        write_study,
    )

    tops = [parse_study_topology(t) for t in topologies] if topologies else list(TOPOLOGIES)
    setup = StudySetup()
    t0 = time.perf_counter()
    results = [study_topology(st, setup) for st in tops]
    with tempfile.TemporaryDirectory() as d:
        write_study(d, results, setup)
    t1 = time.perf_counter()
    return {"case": "study sweep: " + ", ".join(st.label for st in tops),
            "ranks": max(r.topology.ports for r in results), "transfers": 0,
            "chunk_entries": 0, "synth_s": 0.0, "verify_s": 0.0, "cost_s": 0.0,
            "total_s": t1 - t0, "method": "-",
            "peak_rss_GiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "allreduce_1GiB_s": float("nan")}


def _sub(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--swing", nargs=3, metavar=("SHAPE", "ROUTING", "MULTIPORT"))
    ap.add_argument("--study", nargs="*")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip-study", action="store_true", help="only the 64x64 rows")
    args = ap.parse_args()
    if args.swing:
        shape, routing, mp = args.swing
        print(json.dumps(run_swing(shape, routing, mp == "1")))
        return
    if args.study is not None:
        print(json.dumps(run_study(args.study)))
        return
    shape = "32x32" if args.quick else "64x64"
    rows = [_sub(["--swing", shape, "shortest", "1"]), _sub(["--swing", shape, "spray", "1"]),
            _sub(["--swing", shape, "shortest", "0"])]
    if not args.skip_study:
        rows.append(_sub(["--study", "torus:8x8"] if args.quick else ["--study"]))
    print(f"Machine: {platform.machine()}, Python {platform.python_version()}\n")
    print("| case | transfers | chunk entries | synth s | verify s | cost s | total s | "
          "verify mode | peak RSS GiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['transfers']:,} | {r['chunk_entries']:,} | "
              f"{r['synth_s']:.2f} | {r['verify_s']:.2f} | {r['cost_s']:.2f} | "
              f"{r['total_s']:.2f} | {r['method']} | {r['peak_rss_GiB']:.2f} |")


if __name__ == "__main__":
    main()
