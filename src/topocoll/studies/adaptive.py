"""Topology-adaptive parameter synchronization (Zhang, Wu, Li, INFOCOM 2021) against
strong baselines, under contention from other jobs, and inside real training iterations
(``docs/studies/heterogeneous.md``, section "Strong baselines, contention, training").

The paper's premise is that the bandwidth among workers is heterogeneous "due to
different hardware configurations, switching topologies, and contention with concurrent
jobs". Every scenario here has 16 workers:

- ``random``: about 8 cables per worker, bandwidths log-uniform in [10, 100] Gb/s;
- ``bimodal``: one cable in eight at 10 Gb/s, the rest 100 Gb/s;
- ``hosts``: 16 hosts on one switch, host links log-uniform in [10, 100] Gb/s;
- ``contention``: a homogeneous random graph (100 Gb/s cables) on which other jobs load
  each directed link with probability 1/4 at 50% or 90%
  (:func:`~topocoll.topology.scenarios.contention`, the ``random:...,contention=F,keep=K``
  spec); as a fluid, the job sees the residual bandwidth on those links. The
  topology-adaptive schedule and
  the bottleneck-aware ring are synthesized on what the job sees (they adapt, as the
  paper's scheme measures available bandwidth); the other baselines do not depend on
  bandwidths.

Baselines: ring in rank order, ``best_ring`` (bottleneck-aware order, bidirectional),
``direct`` (the sharded parameter server, BytePS-like: every worker serves ``1/N``),
``parameter_server`` (one server), ``double_binary_tree`` (NCCL's tree), each with its
options chosen by the alpha-beta model (``selection.choose``, as ``topocoll compare``
does); ``topology_adaptive`` is the better of fixed and free partitions the same way.
Collectives at 1 MiB and 256 MiB; iterations of BERT-large (data-parallel, 8 sequences
per worker) and ResNet-50 (32 images per worker) on the ``a100-80g`` preset, the
weight-gradient all-reduces overlapped with the backward pass, the algorithm forced.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..topology import Topology, parse_spec
from ..topology.explicit import from_edges

__all__ = ["ADAPTIVE_SCENARIOS", "ADAPTIVE_BASELINES", "ADAPTIVE_SIZES", "host_links",
           "scenario_topology", "AdaptiveCase", "run_adaptive_study",
           "render_adaptive_tables", "write_adaptive_study", "PAPER_MAX_SPEEDUP"]

#: The paper's headline: "outperforms state-of-the-art parameter synchronization schemes
#: by up to 18.3 times" (abstract; its setup is not public to us).
PAPER_MAX_SPEEDUP = 18.3
ADAPTIVE_BASELINES = ("ring", "best_ring", "direct", "parameter_server",
                      "double_binary_tree")
ADAPTIVE_SIZES = (2.0 ** 20, 2.0 ** 28)
_N = 16
_DENSITY = 8 / (_N - 1)
_HOMOGENEOUS = f"random:{_N},spread=1,density={_DENSITY:.3f},seed={_N}"
#: name -> topology spec (``hosts``: :func:`host_links`)
ADAPTIVE_SCENARIOS: dict[str, str] = {
    "random, spread 10": f"random:{_N},spread=10,density={_DENSITY:.3f},seed={_N}",
    "bimodal, spread 10": (f"bimodal:{_N},slow=10Gbps,bw=100Gbps,frac=0.125,"
                           f"density={_DENSITY:.3f},seed={_N}"),
    "hosts, spread 10": "hosts",
    "contention: none (random, 100 Gb/s)": _HOMOGENEOUS,
    "contention, 1/4 of links at 50%": f"{_HOMOGENEOUS},contention=0.25,keep=0.5",
    "contention, 1/4 of links at 90%": f"{_HOMOGENEOUS},contention=0.25,keep=0.1",
}
#: Training jobs: (model, samples per worker).
ADAPTIVE_JOBS = (("bert-large", 8), ("resnet50", 32))


def host_links(n: int, spread: float, seed: int) -> Topology:
    """``n`` hosts on one switch, host link bandwidths log-uniform in ``[100/spread, 100]``
    Gb/s (up = down), 1 us per link.

    Examples
    --------
    >>> t = host_links(4, 10, 0)
    >>> t.num_ranks, t.num_switches, len(t.links)
    (4, 1, 8)
    """
    rng = random.Random(seed)
    bws = [max(1, round(100 / spread ** rng.random())) * 1.25e8 for _ in range(n)]
    return from_edges([(i, n, b, 1e-6) for i, b in enumerate(bws)], num_ranks=n,
                      num_switches=1, bidirectional=True, name=f"hosts:{n},spread={spread:g}")


def scenario_topology(name: str) -> Topology:
    """The fabric a job sees in scenario ``name`` of :data:`ADAPTIVE_SCENARIOS`."""
    spec = ADAPTIVE_SCENARIOS[name]
    return host_links(_N, 10, _N) if spec == "hosts" else parse_spec(spec)


@dataclass
class AdaptiveCase:
    """One scenario: seconds per algorithm for each collective size and each job."""

    scenario: str
    collective_s: dict[str, dict[str, float]] = field(default_factory=dict)
    iteration_s: dict[str, dict[str, float]] = field(default_factory=dict)

    def speedups(self, times: dict[str, float]) -> dict[str, float]:
        """Each baseline's time over the topology-adaptive time."""
        a = times["topology_adaptive"]
        return {b: times[b] / a for b in ADAPTIVE_BASELINES if b in times}


def _collective_time(t: Topology, alg: str, size: float) -> float:
    from ..workload import CollectiveCoster

    cc = CollectiveCoster(t, algorithms=[alg], bounds=False, subfabric=False)
    return cc.time("allreduce", "allreduce", tuple(range(t.num_ranks)), size)


def _iteration_time(t: Topology, alg: str, job: tuple[str, int]) -> float:
    from ..workload import (
        LAYERED,
        find_device,
        parse_model,
        parse_parallel,
        simulate_dp_iteration,
        simulate_iteration,
    )

    name, per = job
    dev = find_device("a100-80g")
    if name in LAYERED:
        return simulate_dp_iteration(LAYERED[name], t, dev, batch_per_rank=per,
                                     algorithms=[alg]).iteration_s
    par = parse_parallel(f"tp=1,pp=1,dp={t.num_ranks},mb={per},gb={per * t.num_ranks}")
    return simulate_iteration(parse_model(name), par, t, dev, algorithms=[alg]).iteration_s


def run_adaptive_study(scenarios: Sequence[str] | None = None, *,
                       sizes: Sequence[float] = ADAPTIVE_SIZES,
                       jobs: Sequence[tuple[str, int]] = ADAPTIVE_JOBS,
                       step: Callable[[str], None] | None = None) -> list[AdaptiveCase]:
    """Every scenario (or those named): the collectives and the training iterations under
    the topology-adaptive schedule and every baseline."""
    out = []
    algs = ("topology_adaptive", *ADAPTIVE_BASELINES)
    for name in scenarios or ADAPTIVE_SCENARIOS:
        if step:
            step(name)
        t = scenario_topology(name)
        case = AdaptiveCase(name)
        for n in sizes:
            case.collective_s[f"{n:g}"] = {a: _collective_time(t, a, n) for a in algs}
        for job in jobs:
            case.iteration_s[job[0]] = {a: _iteration_time(t, a, job) for a in algs}
        out.append(case)
    return out


def _size(n: float) -> str:
    return f"{n / 2 ** 20:g} MiB"


def render_adaptive_tables(cases: Sequence[AdaptiveCase]) -> str:
    """Markdown: per scenario and size (or job), each baseline's time over the adaptive
    time, and the best baseline."""
    head = ("| scenario | what | adaptive | " + " | ".join(ADAPTIVE_BASELINES)
            + " | best baseline |\n|" + "---|" * (4 + len(ADAPTIVE_BASELINES)))
    rows = [head]
    for c in cases:
        items = [(_size(float(k)), v) for k, v in c.collective_s.items()]
        items += [(f"{k} iteration", v) for k, v in c.iteration_s.items()]
        for what, times in items:
            sp = c.speedups(times)
            best = min(sp, key=lambda b: (sp[b], b))
            a = times["topology_adaptive"]
            rows.append(f"| {c.scenario} | {what} | {a * 1e3:.3f} ms | "
                        + " | ".join(f"{sp[b]:.2f}x" for b in ADAPTIVE_BASELINES)
                        + f" | {best} ({sp[best]:.2f}x) |")
    return "\n".join(rows) + "\n"


def write_adaptive_study(directory: str | Path, cases: Sequence[AdaptiveCase]) -> list[Path]:
    """``adaptive-results.json`` and ``adaptive-results.md`` in ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    js = d / "adaptive-results.json"
    js.write_text(json.dumps([dataclasses.asdict(c) for c in cases], indent=1,
                             sort_keys=True) + "\n")
    md = d / "adaptive-results.md"
    md.write_text("# Topology-adaptive synchronization: generated tables\n\nGenerated by "
                  "`topocoll study adaptive`; discussion in [heterogeneous.md]"
                  "(heterogeneous.md). Each cell: the baseline's time over the "
                  "topology-adaptive time.\n\n" + render_adaptive_tables(cases))
    return [js, md]

