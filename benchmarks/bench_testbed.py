"""Measurement study: allreduce on emulated heterogeneous clusters, measured vs predicted.

Builds each testbed (needs root and iproute2), times every algorithm with torch gloo
workers inside the namespaces, and prints a Markdown table of measured time, alpha-beta
and flow-level predictions and errors, with the CPU picture of each run. Raw rows go to
docs/studies/testbed.json; with matplotlib installed (``pip install '.[plot]'``) the figure
docs/studies/testbed.png is redrawn. Case C has 2 ms link latency, applied by netem or,
without it, by the userspace delay line. Run with::

    .venv/bin/python benchmarks/bench_testbed.py            # about 25-35 min on 2 busy cores
    .venv/bin/python benchmarks/bench_testbed.py --quick    # one small case
    .venv/bin/python benchmarks/bench_testbed.py --probes   # transport probes (about 1 min)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from topocoll.testbed.bench import bench
from topocoll.testbed.netns import delay_line_stats, down, up
from topocoll.topology.spec import parse_spec
from topocoll.units import parse_size

# '+duplex': one process group per direction (gloo serializes the two directions of one
# connection; see the study, item 2); every schedule that sends both ways runs that way
ALGS = ["ring", "recursive_doubling+duplex", "swing+duplex", "optimal+duplex",
        "topology_adaptive+duplex", "hierarchical+duplex", "torch",
        "swing", "optimal"]
CASES = [  # (label, spec, size): link rates low enough that the network, not 2 cores, limits
    ("A", "hier:ring(4,100Mbps,0s)x switch(2,40Mbps,0s)", "16MiB"),
    ("B", "hier:ring(4,50Mbps,0s)x ring(4,25Mbps,0s)", "8MiB"),
    ("C", "hier:ring(4,100Mbps,2ms)x switch(2,40Mbps,2ms)", "1MiB"),
]
QUICK = [("Q", "hier:ring(2,100Mbps,0s)x switch(2,40Mbps,0s)", "4MiB")]
OUT = Path(__file__).resolve().parent.parent / "docs" / "studies"


def plot(rows: list[dict], path: Path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    cases = list(dict.fromkeys(r["topology"] for r in rows))
    fig, axes = plt.subplots(1, len(cases), figsize=(6 * len(cases), 4), squeeze=False)
    for ax, case in zip(axes[0], cases, strict=True):
        rs = [r for r in rows if r["topology"] == case]
        x = range(len(rs))
        ax.bar([i - 0.27 for i in x], [r["measured_s"] for r in rs], 0.27, label="measured")
        ax.bar([i for i in x], [r["predicted_s"] for r in rs], 0.27, label="alpha-beta")
        ax.bar([i + 0.27 for i in x], [r["predicted_flow_s"] for r in rs], 0.27,
               label="flow level")
        ax.set_xticks(list(x), [r["algorithm"] for r in rs], rotation=35, ha="right")
        ax.set_ylabel("allreduce time (s)")
        ax.set_title(f"{rs[0]['case']}: {case}\n{rs[0]['size_bytes'] / 2**20:.0f} MiB",
                     fontsize=8)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


DUPLEX = """
import time, torch, torch.distributed as dist
dist.init_process_group("gloo")
r = dist.get_rank(); peer = 1 - r; a, b = torch.ones(2**21), torch.empty(2**21)   # 8 MiB
for mode in ("one-way", "duplex") * 2:
    dist.barrier(); t0 = time.perf_counter()
    ops = [dist.P2POp(dist.isend, a, peer)] if mode == "duplex" or r == 0 else []
    ops += [dist.P2POp(dist.irecv, b, peer)] if mode == "duplex" or r == 1 else []
    for w in dist.batch_isend_irecv(ops): w.wait()
    dist.barrier()
    if r == 0: print("PROBE", mode, round(time.perf_counter() - t0, 3), flush=True)
"""


def probes() -> None:
    """Transport probes behind the study's explanations (100 Mbit/s links)."""
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from topocoll.testbed.launch import measure_throughput, run_workers

    name = f"p{os.getpid()}"
    for spec, flows in (("line:2,bw=100Mbps", [(0, 1), (1, 0)]),
                        ("line:2,bw=25Mbps", [(0, 1), (1, 0)]),
                        ("ring:4,bw=100Mbps", [(0, 2), (1, 3), (2, 0), (3, 1)])):
        tb = up(parse_spec(spec), name=name, spec=spec)
        try:
            with ThreadPoolExecutor(len(flows)) as ex:
                fs = [ex.submit(measure_throughput, tb, a, b, 3.0, 29700 + i)
                      for i, (a, b) in enumerate(flows)]
                rates = [f.result() * 8 / 1e6 for f in fs]
            print(f"{spec}: concurrent TCP flows {flows}: "
                  + ", ".join(f"{x:.1f}" for x in rates) + " Mbit/s", flush=True)
            if spec == "line:2,bw=100Mbps":
                for r in run_workers(tb, [sys.executable, "-c", DUPLEX])[:1]:
                    print("\n".join(x for x in r.output.splitlines() if x.startswith("PROBE")))
        finally:
            down(name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--probes", action="store_true")
    ap.add_argument("--cases", default="", help="comma-separated labels (default: all)")
    ap.add_argument("--algorithms", default="", help="comma-separated (default: ALGS)")
    a = ap.parse_args()
    if a.probes:
        probes()
        return
    algs = a.algorithms.split(",") if a.algorithms else ALGS
    cases = [c for c in (QUICK if a.quick else CASES) if not a.cases or c[0] in a.cases]
    rows, name, cores = [], f"s{os.getpid()}", os.cpu_count()
    for label, spec, size in cases:
        topo = parse_spec(spec)
        tb = up(topo, name=name, spec=spec)
        print(f"case {label}: {spec}, {size}, link delay: {tb.delay_mode}", flush=True)
        t0 = time.time()
        try:
            if tb.delay_mode == "relay":
                delay_line_stats(tb)   # reset its counters
            for r in bench(tb, topo, algs, int(parse_size(size)), iters=a.iters):
                r.update(case=label, topology=spec, num_ranks=topo.num_ranks)
                rows.append(r)
                print(f"  {r['algorithm']}: {r['measured_s']:.2f} s (alpha-beta "
                      f"{r['predicted_s']:.2f} s, flow {r['predicted_flow_s']:.2f} s); workers "
                      f"{r['workers_cpu_share']:.0%} of the CPU, machine "
                      f"{r['machine_busy']:.0%} busy", flush=True)
            if tb.delay_mode == "relay":
                st = delay_line_stats(tb)
                print(f"  delay line: {st}", flush=True)
                for r in rows:
                    if r["case"] == label:
                        r["delay_line"] = st
        finally:
            down(name)
        print(f"  case took {time.time() - t0:.0f} s", flush=True)
    print(f"\nmachine: {platform.machine()}, {cores} cores shared with other jobs\n")
    print("| case | algorithm | measured (s) | alpha-beta (s) | error | flow level (s) | error "
          "| workers' CPU | machine busy |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['algorithm']} | {r['measured_s']:.2f} | "
              f"{r['predicted_s']:.2f} | {100 * r['error']:+.0f}% | "
              f"{r['predicted_flow_s']:.2f} | "
              f"{100 * (r['measured_s'] / r['predicted_flow_s'] - 1):+.0f}% | "
              f"{r['workers_cpu_share']:.0%} | {r['machine_busy']:.0%} |")
    if not a.quick:
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / "testbed.json").write_text(json.dumps(rows, indent=1) + "\n")
        plot(rows, OUT / "testbed.png")


if __name__ == "__main__":
    main()
