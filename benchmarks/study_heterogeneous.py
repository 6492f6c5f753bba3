"""Study: topology-adaptive allreduce vs ring, best-ordered ring, PS and double binary tree
on heterogeneous networks (docs/studies/heterogeneous.md).

Run with::

    .venv/bin/python benchmarks/study_heterogeneous.py [--quick] [--figure PATH]

Prints a Markdown table of speedups (baseline time / topology-adaptive time, AlphaBeta
with alpha = 0 and 1 us per link) for both partition variants of topology_adaptive
(fixed ``1/N`` per worker, and free partitions at the tree-LP optimum), and writes the
figure if matplotlib is installed. Scenarios: random and bimodal cable bandwidths, and
``hosts``: one switch whose host links are log-uniform in ``[100/S, 100]`` Gb/s.
"""

from __future__ import annotations

import argparse
import time

WORKERS = (8, 16, 32, 64)
SPREADS = (1, 3, 10, 100)
SIZES = (2.0**20, 2.0**25, 2.0**30)
BASELINES = ("ring", "best_ring", "parameter_server", "double_binary_tree")
KINDS = ("random", "bimodal", "hosts")


def host_links(n: int, spread: float, seed: int):
    """``n`` hosts on one switch, host link bandwidths log-uniform in [100/S, 100] Gb/s
    (the study module's generator)."""
    from topocoll.studies.adaptive import host_links as hosts

    return hosts(n, spread, seed)


def scenario(kind: str, n: int, spread: float, seed: int):
    if kind == "hosts":
        return host_links(n, spread, seed)
    density = min(1.0, 8 / (n - 1))          # about 8 cables per worker
    if kind == "random":
        return f"random:{n},spread={spread:g},density={density:.3f},seed={seed}"
    # bimodal: one slow cable in eight, slow = fast / spread
    slow = 100 / spread
    return (f"bimodal:{n},slow={slow:g}Gbps,bw=100Gbps,frac={1 / 8:.3f},density={density:.3f},"
            f"seed={seed}")


def measure(spec) -> dict:
    from topocoll.cost import AlphaBeta
    from topocoll.selection import find_algorithm
    from topocoll.topology import parse_spec

    t = parse_spec(spec) if isinstance(spec, str) else spec
    model = AlphaBeta(bound=False)
    out: dict = {}
    adaptive = find_algorithm("topology_adaptive", "allreduce")
    for M in SIZES:
        row = {f"adaptive_{v}": model.evaluate(adaptive(t, message_bytes=M, budget=200_000,
                                                        partition=v), t, M).time
               for v in ("fixed", "free")}
        row["topology_adaptive"] = min(row["adaptive_fixed"], row["adaptive_free"])
        for name in BASELINES:
            syn = find_algorithm(name, "allreduce")
            if name == "double_binary_tree":
                row[name] = min(model.evaluate(syn(t, pipeline=p), t, M).time
                                for p in (1, 4, 16, 64))
            else:
                row[name] = model.evaluate(syn(t), t, M).time
        out[M] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--figure", default="docs/studies/heterogeneous.png")
    a = ap.parse_args()
    workers = WORKERS[:2] if a.quick else WORKERS
    results = []
    t0 = time.time()
    for kind in KINDS:
        for n in workers:
            for spread in SPREADS:
                spec = scenario(kind, n, spread, seed=n)
                for M, row in measure(spec).items():
                    results.append((kind, n, spread, M, row))
    print("Speedups: fixed partitions / free partitions (baseline time over adaptive time)\n")
    print("| scenario | workers | spread | size | vs ring | vs best ring | vs PS "
          "| vs double binary tree | free over fixed |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, n, spread, M, row in results:
        fx, fr = row["adaptive_fixed"], row["adaptive_free"]
        cells = [f"{row[b] / fx:.2f}x / {row[b] / fr:.2f}x" for b in BASELINES]
        print(f"| {kind} | {n} | {spread:g}x | {M / 2**20:g} MiB | " + " | ".join(cells)
              + f" | {fx / fr:.2f}x |")
    print(f"\n(total {time.time() - t0:.0f} s)")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no figure")
        return
    fig, axes = plt.subplots(1, len(KINDS) + 1, figsize=(18, 4))
    for ax, kind in zip(axes, KINDS, strict=False):
        for b, style in zip(BASELINES, ("o-", "s-", "^-", "d-"), strict=True):
            for n, alpha in ((workers[0], 0.45), (workers[-1], 1.0)):
                xs = [s for k, w, s, M, _ in results if k == kind and w == n and M == SIZES[-1]]
                ys = [r[b] / r["topology_adaptive"] for k, w, s, M, r in results
                      if k == kind and w == n and M == SIZES[-1]]
                ax.plot(xs, ys, style, alpha=alpha, label=f"{b}, {n} workers")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("bandwidth spread (max/min)")
        ax.set_title(f"{kind}: speedup at 1 GiB", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("baseline time / topology-adaptive time")
    axes[1].legend(fontsize=7, ncol=2)
    ax = axes[-1]
    for kind, style in zip(KINDS, ("o-", "s-", "^-"), strict=True):
        for n, alpha in ((workers[0], 0.45), (workers[-1], 1.0)):
            xs = [s for k, w, s, M, _ in results if k == kind and w == n and M == SIZES[-1]]
            ys = [r["adaptive_fixed"] / r["adaptive_free"] for k, w, s, M, r in results
                  if k == kind and w == n and M == SIZES[-1]]
            ax.plot(xs, ys, style, alpha=alpha, label=f"{kind}, {n} workers")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("bandwidth spread (max/min)")
    ax.set_title("free over fixed partitions (time ratio), 1 GiB", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(a.figure, dpi=110)
    print(f"figure written to {a.figure}")


if __name__ == "__main__":
    main()
