"""Benchmark: synthesize + verify + cost allreduce schedules at 64, 1024 and 4096 ranks.

Each case runs in a fresh subprocess so that its peak memory (max RSS) is its own; numba
kernels are compiled (and cached) once before timing. Run with::

    make bench            # or: .venv/bin/python benchmarks/bench_core.py [--quick]

Targets (issue "Core engine", 2 cores): 4096-rank ring allreduce < 10 s and < 4 GiB;
1024 ranks < 1 s.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time

CASES = [("ring", "ring"), ("recursive_doubling", "ring"), ("ring", "star"),
         ("recursive_doubling", "star")]
SIZES = (64, 1024, 4096)


def run_case(algorithm: str, fabric: str, p: int) -> dict:
    from topocoll.cost import AlphaBeta
    from topocoll.selection import find_algorithm
    from topocoll.topology import ring, star
    from topocoll.verification import verify

    warm = ring(8) if fabric == "ring" else star(8)     # compile numba kernels outside timing
    syn = find_algorithm(algorithm, "allreduce")
    verify(syn(warm), warm)
    AlphaBeta().evaluate(syn(warm), warm, 2**20)

    topo = ring(p) if fabric == "ring" else star(p)
    t0 = time.perf_counter()
    s = syn(topo)
    t1 = time.perf_counter()
    rep = verify(s, topo)
    t2 = time.perf_counter()
    res = AlphaBeta().evaluate(s, topo, 2**30)
    t3 = time.perf_counter()
    return {"algorithm": algorithm, "topology": topo.name, "ranks": p,
            "transfers": s.num_transfers, "synth_s": t1 - t0, "verify_s": t2 - t1,
            "cost_s": t3 - t2, "total_s": t3 - t0, "method": rep.method,
            "peak_rss_GiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "allreduce_1GiB_s": res.time}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", nargs=3, metavar=("ALGORITHM", "FABRIC", "RANKS"))
    ap.add_argument("--quick", action="store_true", help="only 64 and 1024 ranks")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.case:
        a, f, p = args.case
        print(json.dumps(run_case(a, f, int(p))))
        return
    rows = []
    for p in SIZES[:2] if args.quick else SIZES:
        for a, f in CASES:
            cmd = [sys.executable, __file__, "--case", a, f, str(p)]
            rows.append(json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                                  text=True).stdout))
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
          f"python {platform.python_version()}")
    head = ("algorithm", "topology", "ranks", "transfers", "synth s", "verify s", "cost s",
            "total s", "verify mode", "peak RSS GiB")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print(f"| {r['algorithm']} | {r['topology']} | {r['ranks']} | {r['transfers']:,} | "
              f"{r['synth_s']:.2f} | {r['verify_s']:.2f} | {r['cost_s']:.2f} | "
              f"{r['total_s']:.2f} | {r['method']} | {r['peak_rss_GiB']:.2f} |")


if __name__ == "__main__":
    main()
