"""Benchmark: the free-partition tree allreduce LP (column generation) vs the RS+AG optimum.

Run with::

    .venv/bin/python benchmarks/bench_treelp.py [--quick] [--rounds N]

Prints two Markdown tables:

1. quality on built-in and heterogeneous topologies: the allreduce time of 1 GiB at the
   LP optimum (``M / X``), the exact reduce-scatter + allgather optimum
   (``topocoll bound``: ``(M/N)(x*_RS + x*_AG)``), the exact fixed-partition overlap
   (the ``topology_adaptive`` forests with every worker owning ``1/N``: joint per-arc
   load), the allreduce lower bound (cut/injection, ``lower_bound(method="exact")``),
   and the free-partition schedule costed by AlphaBeta (alpha = 0, batches chosen by
   the model for 1 GiB);
2. column-generation time for 8..256 ranks: iterations, seconds, proved optimal or
   the certified gap after ``--rounds`` master solves (work, not seconds).

Each timing row runs in a fresh subprocess (wall clock, HiGHS single-threaded).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

M = 2.0**30
QUALITY = ["ring:16", "torus:4x4", "torus:4x4x4", "star:16", "fc:8", "hypercube:4",
           "dgx:2,gpus=4", "dgx-a100:2", "fattree:k=4", "leafspine:leaves=4,spines=2,hosts=4",
           "mi250:1", "mi250:2", "twotier:racks=4,hosts=4,oversub=2",
           "twotier:racks=3,hosts=2,oversub=2,contention=0.5,keep=0.25,seed=1",
           "random:8,spread=30,seed=2", "random:12,spread=10,density=0.6,seed=3",
           "random:16,spread=100,density=0.5,seed=5", "bimodal:12,frac=0.3,seed=1",
           "bimodal:16,slow=1Gbps,frac=0.2,seed=4",
           "random:8,spread=3,contention=0.5,keep=0.2,seed=1",
           "bimodal:12,frac=0.2,contention=0.3,keep=0.3,seed=2"]
TIMING = ["ring:8", "dgx:2,gpus=4", "torus:4x4", "random:16,spread=10,density=0.5,seed=1",
          "dgx:4", "bimodal:32,slow=10Gbps,frac=0.125,density=0.26,seed=32",
          "torus:8x8", "random:64,spread=10,density=0.127,seed=64", "dgx:8",
          "twotier:racks=8,hosts=16,oversub=4", "torus:16x16"]


def quality(spec: str) -> dict:
    from topocoll.collective import allreduce
    from topocoll.cost import AlphaBeta
    from topocoll.errors import TopocollError
    from topocoll.optimum.bounds import lower_bound
    from topocoll.optimum.maxflow import allgather_optimum
    from topocoll.synth.adaptive import _fixed_fluid, _forests
    from topocoll.synth.free_partition import free_partition_allreduce, tree_lp
    from topocoll.topology import parse_spec

    t = parse_spec(spec)
    group = tuple(range(t.num_ranks))
    n = len(group)
    lp = tree_lp(t, group)
    rsag = None
    try:
        rsag = M / n * float(allgather_optimum(t, group).value
                             + allgather_optimum(t, group, reverse=True).value)
    except TopocollError:   # no exact RS+AG optimum here: the table says n/a
        rsag = None
    pin, pout, used = _forests(t, group, "auto")
    fixed = M * _fixed_fluid(t, pin, pout, n)
    lb = lower_bound(allreduce(group), t, M, method="exact").time
    s = free_partition_allreduce(t, size=M)
    sched = AlphaBeta(alpha=0.0, bound=False).evaluate(s, t, M).time
    return {"spec": spec, "n": n, "lp": M / lp.value, "rsag": rsag, "fixed": fixed,
            "forests": used, "lb": lb, "sched": sched, "optimal": lp.optimal,
            "it": lp.iterations, "sec": lp.seconds, "loss": s.meta["rounding_loss"],
            "P": s.meta["batches"]}


def timing(spec: str, limit: int) -> dict:
    from topocoll.optimum.treelp import tree_allreduce_lp
    from topocoll.topology import parse_spec

    t = parse_spec(spec)
    lp = tree_allreduce_lp(t, max_iterations=limit)
    arcs = len({(lk.src, lk.dst) for lk in t.links})
    return {"spec": spec, "n": t.num_ranks, "arcs": arcs, "it": lp.iterations,
            "sec": lp.seconds, "optimal": lp.optimal, "gap": lp.gap, "trees": len(lp.trees)}


def _sub(kind: str, spec: str, limit: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--one", kind, spec, "--rounds",
                          str(limit)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ms(x):
    return "n/a" if x is None else f"{x * 1e3:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=5000)
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        kind, spec = a.one
        print(json.dumps(quality(spec) if kind == "quality" else timing(spec, a.rounds)))
        return
    specs = QUALITY[:6] if a.quick else QUALITY
    print("| topology | ranks | LP free partitions (ms) | RS+AG optimum (ms) | fixed-partition "
          "overlap (ms) | lower bound (ms) | RS+AG / LP | schedule at 1 GiB (ms) | P "
          "| rounding loss | LP iterations | LP s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for spec in specs:
        r = _sub("quality", spec, a.rounds)
        ratio = "n/a" if r["rsag"] is None else f"{r['rsag'] / r['lp']:.3f}"
        print(f"| `{spec}` | {r['n']} | {_ms(r['lp'])}{'' if r['optimal'] else ' (capped)'} | "
              f"{_ms(r['rsag'])} | {_ms(r['fixed'])} ({r['forests']}) | {_ms(r['lb'])} | "
              f"{ratio} | {_ms(r['sched'])} | {r['P']} | {r['loss']} | {r['it']} | "
              f"{r['sec']:.2f} |", flush=True)
    print()
    specs = TIMING[:5] if a.quick else TIMING
    print("| topology | ranks | arcs | iterations | seconds | optimal | certified gap | trees |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in specs:
        r = _sub("timing", spec, a.rounds)
        print(f"| `{spec}` | {r['n']} | {r['arcs']} | {r['it']} | {r['sec']:.2f} | "
              f"{'yes' if r['optimal'] else 'no (round cap)'} | {r['gap']:.2e} | "
              f"{r['trees']} |", flush=True)


if __name__ == "__main__":
    main()
