"""One rank of a timed collective: ``python -m topocoll.testbed.worker --topology SPEC ...``.

Started by :func:`topocoll.testbed.launch.start_workers` inside a testbed namespace (the
torch.distributed environment variables come from there), or by hand with ``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` set. It synthesizes the schedule
locally (every rank gets the same one), checks it once on integers against
``dist.all_reduce``, prints ``ready``, then times ``--iters`` runs separated by barriers.
Rank 0 prints one JSON line: ``{"algorithm", "collective", "size_bytes", "times_s",
"measured_s", "cpu_s", "wall_s", "machine_busy"}`` where each time is the slowest rank's,
``measured_s`` the median, ``cpu_s`` the CPU time of all ranks (all threads) during the
timed runs, ``wall_s`` their wall time and ``machine_busy`` the fraction of all cores busy
meanwhile (anything on the machine, from ``/proc/stat``).
``--algorithm torch`` times torch's own collective instead of a schedule; a ``+duplex``
suffix (``ring+duplex``) runs the schedule over :func:`topocoll.runtime.duplex_groups`.

Failures (a peer died, a timeout) end the process with status 3 and one line on stderr
naming the rank and the error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta

__all__ = ["main"]


def _collective(kind, sched, t, dist, rt, timeout, group):
    n = dist.get_world_size()
    if kind == "allreduce":
        if sched is None:
            return lambda: dist.all_reduce(t)
        return lambda: rt.all_reduce(t, sched, timeout=timeout, group=group)
    if kind == "allgather":
        out = t.new_empty(t.numel())
        part = t[: t.numel() // n]
        if sched is None:
            return lambda: dist.all_gather_into_tensor(out, part)
        return lambda: rt.all_gather_into_tensor(out, part, sched, timeout=timeout, group=group)
    if kind == "reduce_scatter":
        out = t.new_empty(t.numel() // n)
        if sched is None:
            return lambda: dist.reduce_scatter_tensor(out, t)
        return lambda: rt.reduce_scatter_tensor(out, t, sched, timeout=timeout, group=group)
    raise SystemExit(f"worker: collective {kind} is not timed by the testbed worker")


def _explain(e: Exception) -> str:
    """First line of ``e`` with testbed addresses replaced by the ranks that own them."""
    text = str(e).splitlines()[0] if str(e) else ""
    addrs = [a for a in os.environ.get("TOPOCOLL_RANK_ADDRS", "").split(",") if a]
    for r, a in enumerate(addrs):
        text = text.replace(f"[{a}]", f"[{a}] (rank {r})")
    text = text.split(" This is typically")[0]
    return f"{type(e).__name__}: {text}"


def _ticks() -> tuple[int, int]:
    """(idle, total) jiffies of all cores from ``/proc/stat``."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return v[3] + v[4], sum(v)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see module docstring); returns the exit status."""
    ap = argparse.ArgumentParser(prog="topocoll.testbed.worker")
    ap.add_argument("--topology", required=True)
    ap.add_argument("--algorithm", default="ring")
    ap.add_argument("--collective", default="allreduce")
    ap.add_argument("--size", default="64MiB")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=60.0)
    a = ap.parse_args(argv)

    import torch
    import torch.distributed as dist

    from .. import runtime as rt
    from ..selection import find_algorithm
    from ..topology.spec import parse_spec
    from ..units import parse_size

    rank = int(os.environ["RANK"])
    try:
        dist.init_process_group("gloo", timeout=timedelta(seconds=a.timeout))
        topo = parse_spec(a.topology)
        name, _, variant = a.algorithm.partition("+")
        group = rt.duplex_groups() if variant == "duplex" else None
        sched = None if name == "torch" else find_algorithm(name, a.collective)(topo)
        if sched is not None and a.collective == "allreduce":   # one exact check first
            x = torch.arange(1000, dtype=torch.int64) * (rank + 1)
            ref = x.clone()
            dist.all_reduce(ref)
            rt.all_reduce(x, sched, timeout=a.timeout, group=group)
            if not torch.equal(x, ref):
                print(f"rank {rank}: result differs from dist.all_reduce", file=sys.stderr)
                return 4
        size = int(parse_size(a.size))
        t = torch.ones(size // 4, dtype=torch.float32)
        run = _collective(a.collective, sched, t, dist, rt, a.timeout, group)
        run()
        print("ready", flush=True)
        times = []
        dist.barrier()
        ticks0, cpu0, wall0 = _ticks(), time.process_time(), time.perf_counter()
        for _ in range(a.iters):
            dist.barrier()
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        cpu, wall, ticks1 = time.process_time() - cpu0, time.perf_counter() - wall0, _ticks()
        worst = torch.tensor(times, dtype=torch.float64)
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        cpu_all = torch.tensor([cpu], dtype=torch.float64)
        dist.all_reduce(cpu_all)
        if rank == 0:
            ts = sorted(worst.tolist())
            print(json.dumps({"algorithm": a.algorithm, "collective": a.collective,
                              "size_bytes": size, "times_s": worst.tolist(),
                              "measured_s": ts[len(ts) // 2], "cpu_s": cpu_all.item(),
                              "wall_s": wall, "machine_busy": 1.0 - (ticks1[0] - ticks0[0])
                              / max(1, ticks1[1] - ticks0[1])}), flush=True)
        dist.destroy_process_group()
        return 0
    except Exception as e:   # report one clear line per rank; the launcher collects them
        print(f"rank {rank}: collective failed: {_explain(e)}", file=sys.stderr, flush=True)
        os._exit(3)   # do not hang in process-group teardown after a peer died


if __name__ == "__main__":
    sys.exit(main())
