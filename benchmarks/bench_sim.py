"""Benchmark: flow-level simulator on the issue-6 targets.

Run with::

    .venv/bin/python benchmarks/bench_sim.py [--quick]

Cases (targets from issue 6, each < 10 s):

- ring allreduce of 1 GiB on a 1024-rank 1-D ring;
- 1,000 concurrent flows (random pairs, 1-16 chunks of 1 MiB, seed 0) on a 128-server
  k=8 fat-tree with ECMP;
- Swing allreduce (bandwidth-optimal, multiport: ``synth.registry`` name ``swing``) of
  1 GiB on a 32x32 torus;
- bidirectional ring and hierarchical allreduce of 1 GiB on the same torus (for scale).

numba kernels are compiled (and cached) on a tiny case before timing. Synthesis time is
reported separately from simulation time (the ``FlowSim.evaluate`` path: no rate log);
simulation time is given as wall time and as process CPU time (the latter is less
sensitive to other jobs on a shared machine). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np


def _warm() -> None:
    from topocoll.sim import FlowSim
    from topocoll.synth.ring import ring_allreduce
    from topocoll.topology import ring

    t = ring(4)
    FlowSim().run(ring_allreduce(t), t, 2**20)


def _random_flows(topo, n_flows: int, seed: int):
    from topocoll.collective import allgather
    from topocoll.schedule import ScheduleBuilder

    rng = np.random.default_rng(seed)
    n = topo.num_ranks
    src = rng.integers(0, n, n_flows)
    dst = (src + rng.integers(1, n, n_flows)) % n
    sizes = rng.integers(1, 17, n_flows)
    b = ScheduleBuilder(allgather(16)).new_step()
    for s, d, k in zip(src, dst, sizes, strict=True):
        b.add(int(s), int(d), list(range(int(k))))
    return b.build(name=f"{n_flows} random flows")


def cases(quick: bool):
    from topocoll.selection import find_algorithm
    from topocoll.synth.hierarchical import hierarchical_allreduce
    from topocoll.synth.ring import bidirectional_ring_allreduce, ring_allreduce
    from topocoll.topology import ring, torus
    from topocoll.topology.spec import parse_spec

    GiB = 2.0**30
    p = 128 if quick else 1024
    side = 8 if quick else 32
    yield ("ring allreduce 1 GiB", f"ring:{p}", lambda: ring(p, bandwidth=50e9, latency=1e-6),
           ring_allreduce, GiB)
    yield ("1,000 random flows (ECMP)", "fat-tree k=8 (128 servers)",
           lambda: parse_spec("fattree:k=8,bw=100Gbps,lat=1us,routing=ecmp"),
           lambda t: _random_flows(t, 1000, 0), 16 * 2.0**20)
    for name, syn in (("Swing allreduce 1 GiB", find_algorithm("swing", "allreduce")),
                      ("bidirectional ring allreduce 1 GiB", bidirectional_ring_allreduce),
                      ("hierarchical allreduce 1 GiB", hierarchical_allreduce)):
        yield (name, f"torus {side}x{side}",
               lambda: torus((side, side), bandwidth=50e9, latency=1e-6), syn, GiB)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = ap.parse_args(argv)
    from topocoll.cost import AlphaBeta
    from topocoll.sim import FlowSim

    _warm()
    print(f"machine: {platform.processor() or platform.machine()}, python "
          f"{sys.version.split()[0]}\n")
    print("| case | topology | transfers | synth s | flow sim s (wall) | flow sim s (CPU) "
          "| instants | full re-rates | simulated time | alpha-beta time |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, tname, make, syn, size in cases(args.quick):
        topo = make()
        t0 = time.perf_counter()
        s = syn(topo)
        t1, c1 = time.perf_counter(), time.process_time()
        run = FlowSim(bound=False).run(s, topo, size, record=False)
        t2, c2 = time.perf_counter(), time.process_time()
        ab = AlphaBeta(bound=False).evaluate(s, topo, size).time
        print(f"| {name} | {tname} | {s.num_transfers:,} | {t1 - t0:.2f} | {t2 - t1:.2f} | "
              f"{c2 - c1:.2f} | "
              f"{run.stats['instants']:,} | {run.stats['full_recomputes']:,} | "
              f"{run.result.time * 1e3:.3f} ms | {ab * 1e3:.3f} ms |", flush=True)


if __name__ == "__main__":
    main()
