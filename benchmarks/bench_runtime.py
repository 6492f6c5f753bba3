"""Executor overhead: our schedules vs torch's own gloo all_reduce on loopback (no shaping).

Starts 4 gloo processes on 127.0.0.1 and times allreduce of float32 tensors of several
sizes, median of 5 runs of the slowest rank, for torch's ``dist.all_reduce`` and for our
executor running ring and recursive-doubling schedules. Loopback is CPU-bound, so this
measures software overhead (Python per step, copies, reductions), not a network. Run::

    .venv/bin/python benchmarks/bench_runtime.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from topocoll.units import format_size

WORLD = 4
SIZES = (4 * 2**10, 2**20, 16 * 2**20)

WORKER = """
import json, sys, time, torch, torch.distributed as dist
from topocoll import runtime as rt
from topocoll.synth import ring_allreduce, recursive_doubling_allreduce
from topocoll.topology import ring
r, n, store, sizes = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
dist.init_process_group("gloo", init_method="file://" + store, rank=r, world_size=n)
algs = {"torch": None, "ring": ring_allreduce(ring(n)),
        "recursive_doubling": recursive_doubling_allreduce(ring(n))}
rows = []
for size in sizes:
    t = torch.ones(size // 4)
    for name, s in algs.items():
        run = (lambda: dist.all_reduce(t)) if s is None else (lambda: rt.all_reduce(t, s))
        run()
        times = []
        for _ in range(5):
            dist.barrier(); t0 = time.perf_counter(); run(); times.append(time.perf_counter() - t0)
        w = torch.tensor(times, dtype=torch.float64); dist.all_reduce(w, op=dist.ReduceOp.MAX)
        rows.append({"size": size, "algorithm": name, "median_s": sorted(w.tolist())[2]})
if r == 0:
    print(json.dumps(rows))
"""


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, OMP_NUM_THREADS="1")
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(r), str(WORLD),
                                   f"{tmp}/store", json.dumps(SIZES)], env=env,
                                  stdout=subprocess.PIPE, text=True) for r in range(WORLD)]
        t0 = time.time()
        outs = [p.communicate(timeout=900)[0] for p in procs]
    rows = json.loads(outs[0].strip().splitlines()[-1])
    print(f"allreduce on {WORLD} gloo processes, loopback, 2 shared cores "
          f"(took {time.time() - t0:.0f} s)\n")
    print("| size | torch all_reduce | ring (ours) | recursive doubling (ours) |")
    print("|---|---|---|---|")
    for size in SIZES:
        by = {r["algorithm"]: r["median_s"] for r in rows if r["size"] == size}
        print(f"| {format_size(size)} | {by['torch'] * 1e3:.2f} ms | {by['ring'] * 1e3:.2f} ms | "
              f"{by['recursive_doubling'] * 1e3:.2f} ms |")


if __name__ == "__main__":
    main()
