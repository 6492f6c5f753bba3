"""TopoOpt's alternating optimization: strategy for a fixed topology (MCMC), topology for
a fixed strategy (TopologyFinder), K rounds, the best (strategy, topology) pair kept; and
the baselines it is compared with.

Wang et al., "TopoOpt" (NSDI 2023), ``../shared/reference/algorithms.md`` sections 1.2,
1.6 and 1.7. The strategy search is a Metropolis walk over per-layer choices
(:class:`~topocoll.fabric.topoopt.job.Job`): a move changes one layer (a table to another
server, a dense layer to another degree), is scored on the fixed topology, and is
accepted when faster or with probability ``exp(-beta (t_new / t_cur - 1))``; the walk
restarts from the best every ``clamp(steps / 100, 1, 1000)`` moves (the released code's
reset span). Moves that do not fit in memory are rejected. Budgets count moves, never
seconds, and every draw comes from one seeded generator, so a run is reproducible.
Pairs are always scored together (the pitfall of a flapping topology).

Baselines, each with its own strategy search:

- ``fattree``: the non-blocking fat-tree that costs the same as the TopoOpt design
  (:func:`~topocoll.fabric.prices.equivalent_fattree_bandwidth`), modelled as one
  non-blocking switch at that per-server bandwidth;
- ``ideal_switch``: a non-blocking switch at ``d x B`` per server;
- ``expander``: a random ``d``-regular graph (networkx, seeded) at ``B`` per port;
- ``ocs``: a circuit switch reconfigured per phase: all ports as rings for the
  all-reduce, then the TopologyFinder's topology for the model-parallel traffic alone, plus
  two reconfiguration delays per iteration (TopoOpt's strategy).

Examples
--------
>>> from topocoll.workload import LAYERED, find_device
>>> job = Job(LAYERED["resnet50"], servers=16, device=find_device("a100-80g"),
...           batch_per_gpu=128)
>>> r = optimize(job, degree=4, port_bandwidth=12.5e9, rounds=1, steps=50, seed=1)
>>> r.topology.meta["jumps"], r.timing.iteration_s > r.timing.compute_s
({'16': [1, 5]}, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ...topology import Link, Topology
from ..prices import PriceTable, equivalent_fattree_bandwidth, topoopt_cost
from .finder import FinderResult, mp_matchings, topology_finder
from .job import FabricEval, Job, Timing

__all__ = ["SPLITS", "mcmc", "optimize", "TopoOptResult", "baselines", "switch_fabric",
           "expander_fabric", "describe_strategy", "fattree_fabric", "search_fixed",
           "FATTREE_OVERSUBSCRIPTIONS"]

Progress = Callable[[int, int], None]


def mcmc(fabric: FabricEval, start: tuple[int, ...], *, steps: int, rng: np.random.Generator,
         beta: float = 20.0, progress: Progress | None = None) \
        -> tuple[tuple[int, ...], Timing]:
    """The best strategy found by ``steps`` Metropolis moves from ``start`` on
    ``fabric`` (see the module docstring)."""
    job = fabric.job
    cur = tuple(start)
    t_cur = fabric.score(cur)
    if t_cur is None:
        raise InputError("the starting strategy does not fit in memory", item="strategy")
    best, t_best = cur, t_cur
    L = job.layers
    mutable = [i for i in range(len(cur)) if len(job.options(i)) > 1]
    if not mutable:
        return best, t_best
    span = min(max(steps // 100, 1), 1000)
    since = 0
    for step in range(steps):
        if since >= span:
            cur, t_cur, since = best, t_best, 0
        since += 1
        i = mutable[int(rng.integers(len(mutable)))]
        opts = [o for o in job.options(i) if o != cur[i]]
        new = cur[:i] + (opts[int(rng.integers(len(opts)))],) + cur[i + 1:]
        if i == L:
            # a new pipeline degree comes with a micro-batch count drawn for it (the
            # pair moves together: alone, either is rarely an improvement)
            ms = [m for m in job.options(L + 1) if m <= new[L] * job.batch_per_gpu]
            new = new[:L + 1] + (ms[int(rng.integers(len(ms)))],)
        u = rng.random()                       # drawn every move: the stream stays aligned
        t_new = fabric.score(new)
        if progress is not None:
            progress(step + 1, steps)
        if t_new is None:
            continue
        a, b = t_new.iteration_s, t_cur.iteration_s
        if a < t_best.iteration_s:
            best, t_best, since = new, t_new, 0
        if a < b or u < math.exp(-beta * (a / b - 1.0)):
            cur, t_cur = new, t_new
    return best, t_best


@dataclass(frozen=True)
class TopoOptResult:
    """The best (strategy, topology) pair and how the search got there."""

    job: Job
    degree: int
    port_bandwidth: float
    strategy: tuple[int, ...]
    timing: Timing
    finder: FinderResult
    diameter: int
    history: tuple[dict, ...]

    @property
    def topology(self) -> Topology:
        return self.finder.topology


SPLITS = ("best", "proportional", "all-reduce")


def _finder(job: Job, strategy, degree, bw, latency, split, routing, overlap=True) \
        -> tuple[FinderResult, FabricEval]:
    """The topology step: TopologyFinder for ``strategy``'s traffic. ``split="best"``
    builds every even all-reduce port count and keeps the one the strategy runs fastest
    on (ties: fewer ring ports); the matchings are computed once and shared."""
    tr = job.traffic(strategy)
    groups = {g: x for g, x in tr.allreduce.items() if x > 0}
    mp = tr.mp_matrix()
    if split != "best" or not groups or not mp.any():
        fr = topology_finder(job.servers, degree, allreduce=groups, mp=mp, bandwidth=bw,
                             latency=latency, split="proportional" if split == "best"
                             else split)
        return fr, FabricEval(job, fr.topology, rings=fr.jumps, routing=routing,
                              overlap=overlap)
    if job.servers % 2:
        fr = topology_finder(job.servers, degree, allreduce=groups, mp=mp, bandwidth=bw,
                             latency=latency, split="all-reduce")
        return fr, FabricEval(job, fr.topology, rings=fr.jumps, routing=routing,
                              overlap=overlap)
    rounds = mp_matchings(mp, degree - 2)
    best = None
    for da in range(2, degree - degree % 2 + 1, 2):
        fr = topology_finder(job.servers, degree, allreduce=groups, mp=mp, bandwidth=bw,
                             latency=latency, allreduce_ports=da, matchings=rounds)
        fe = FabricEval(job, fr.topology, rings=fr.jumps, routing=routing,
                        overlap=overlap)
        t = fe.time(tr).iteration_s
        if best is None or t < best[0]:
            best = (t, fr, fe)
    return best[1], best[2]


def _pipeline_starts(job: Job) -> list[tuple[int, tuple[int, ...], tuple[int, ...]]]:
    """Per pipeline degree ``P`` that fits: the data-parallel strategy with ``P`` stages
    (:meth:`Job.initial_strategy`) and the micro-batch counts to try with it (one
    without a pipeline)."""
    L = job.layers
    out = []
    for P in job.pipelines:
        s0 = job.initial_strategy() if P == 1 else job.initial_strategy(P)
        if job.fits(s0):
            out.append((P, s0[:L], job.options(L + 1) if P > 1 else (1,)))
    return out


def _start(job: Job, degree, bw, latency, split, routing, overlap):
    """The starting pair: for each pipeline degree ``P`` the data-parallel strategy with
    ``P`` stages (:func:`_pipeline_starts`), each micro-batch count tried on the topology
    built for it, the fastest kept (ties: the smaller ``P``, then the fewer
    micro-batches). A strategy search on a fixed topology rarely accepts a new pipeline
    degree (the topology's rings serve the old groups), so each degree starts with a
    topology of its own."""
    best = None
    for P, layers, ms in _pipeline_starts(job):
        # the micro-batches change no volume of the iteration: one topology per degree,
        # its port split chosen at a typical count (4 per stage)
        m0 = max(m for m in ms if m <= min(4 * P, P * job.batch_per_gpu))
        fr, fe = _finder(job, layers + (P, m0), degree, bw, latency, split, routing,
                         overlap)
        for m in ms:
            t = fe.score(layers + (P, m))
            if t is not None and (best is None or t.iteration_s < best[1].iteration_s):
                best = (layers + (P, m), t, fr, fe)
    return best


def optimize(job: Job, *, degree: int, port_bandwidth: float, rounds: int = 3,
             steps: int = 2000, seed: int = 0, latency: float = 1e-6,
             split: str = "best", routing: str = "ecmp", beta: float = 20.0,
             overlap: bool = True, progress: Progress | None = None) -> TopoOptResult:
    """TopoOpt's alternating optimization (see the module docstring): start from the
    data-parallel strategy with the fastest pipeline degree, each scored on its own
    TopologyFinder topology; then ``rounds`` times search the strategy on the current
    topology and rebuild the topology for it. ``overlap``: see
    :class:`~topocoll.fabric.FabricEval`.

    ``split``: ``"proportional"`` (the paper's port split by volume), ``"all-reduce"``
    (the released code: every port to rings) or ``"best"`` (every even split tried on
    the strategy, the fastest kept)."""
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InputError(f"rounds must be a positive integer, got {rounds!r}", item="rounds")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise InputError(f"steps must be a non-negative integer, got {steps!r}",
                         item="steps")
    if split not in SPLITS:
        raise InputError(f"split must be one of {', '.join(SPLITS)}, got {split!r}",
                         item="split")
    rng = np.random.default_rng(seed)
    s, t, fr, fe = _start(job, degree, port_bandwidth, latency, split, routing, overlap)
    best = (s, t, fr, fe.links.diameter)
    history = [{"round": 0, "iteration_s": t.iteration_s,
                "step": "data parallel" if s[-2] == 1 else f"pipeline {s[-2]}"}]
    done = 0
    total = rounds * steps

    def tick(k, _n):
        if progress is not None:
            progress(done + k, total)

    for k in range(1, rounds + 1):
        s, t = mcmc(fe, s, steps=steps, rng=rng, beta=beta, progress=tick)
        done += steps
        if t.iteration_s < best[1].iteration_s:
            best = (s, t, fr, fe.links.diameter)
        history.append({"round": k, "iteration_s": t.iteration_s, "step": "strategy"})
        fr, fe = _finder(job, s, degree, port_bandwidth, latency, split, routing, overlap)
        t = fe.score(s)
        if t.iteration_s < best[1].iteration_s:
            best = (s, t, fr, fe.links.diameter)
        history.append({"round": k, "iteration_s": t.iteration_s, "step": "topology"})
    s, t, fr, diam = best
    return TopoOptResult(job, degree, port_bandwidth, s, t, fr, diam, tuple(history))


def switch_fabric(n: int, bandwidth: float, latency: float = 1e-6) -> Topology:
    """``n`` servers on one non-blocking switch at ``bandwidth`` bytes/s each way."""
    links = []
    for r in range(n):
        links += [Link(r, n, bandwidth, latency / 2), Link(n, r, bandwidth, latency / 2)]
    return Topology(f"switch:{n},B={bandwidth / 1e9:g}GB/s", n, 1, tuple(links))


def expander_fabric(n: int, degree: int, bandwidth: float, latency: float = 1e-6,
                    seed: int = 0) -> Topology:
    """A random ``degree``-regular graph on ``n`` servers (networkx, seeded; redrawn
    with the next seeds until connected)."""
    import networkx as nx

    if (n * degree) % 2:
        raise InputError(f"a {degree}-regular graph needs n x d even, got {n} x {degree}",
                         item="degree")
    for k in range(100):
        g = nx.random_regular_graph(degree, n, seed=seed + k)
        if nx.is_connected(g):
            break
    links = []
    for a, b in sorted(g.edges()):
        links += [Link(a, b, bandwidth, latency), Link(b, a, bandwidth, latency)]
    return Topology(f"expander:{n},d={degree},seed={seed}", n, 0, tuple(links))


def fattree_fabric(n: int, bandwidth: float, *, radix: int = 64,
                   oversubscription: float = 1.0, latency: float = 1e-6,
                   fill: str = "plan") -> Topology:
    """The fat-tree of ``radix``-port switches that :func:`~topocoll.fabric.fattree_cost`
    prices, routed: one switch up to ``radix`` servers; else leaves of
    ``leaf_ports(radix, oversubscription)[0]`` consecutive servers at ``bandwidth`` each
    way, each leaf with the plan's uplinks (``ClosPlan.leaf_uplinks``) at ``bandwidth``,
    spread evenly over the spines of :func:`~topocoll.topology.scaleout.clos_plan` (ECMP splits
    over them). A third tier (more than ``radix^2 / 2`` servers) is folded into the spines:
    at the fluid level a non-blocking core adds hops, not limits. Every link has half of
    ``latency`` (a switch traversal is ``latency``, as :func:`switch_fabric`). ``fill``:
    ``"plan"`` fills each leaf before the next (the last may hold a few servers, with
    uplinks in proportion); ``"even"`` spreads the servers evenly over as many leaves."""
    from ...topology.scaleout import clos_plan, leaf_ports

    if fill not in ("plan", "even"):
        raise InputError(f"fill must be 'plan' or 'even', got {fill!r}", item="fill")
    if n <= radix:
        return switch_fabric(n, bandwidth, latency)
    down, _ = leaf_ports(radix, oversubscription)
    groups = [range(i, min(n, i + down)) for i in range(0, n, down)]
    if fill == "even":
        cuts = [n * k // len(groups) for k in range(len(groups) + 1)]
        groups = [range(a, b) for a, b in zip(cuts, cuts[1:], strict=False)]
    plan = clos_plan(groups, radix=radix, oversubscription=oversubscription)
    leaves = len(groups)
    spines = max(plan.spines, 1)
    links = []
    for leaf, g in enumerate(groups):
        sw = n + leaf
        for r in g:
            links += [Link(r, sw, bandwidth, latency / 2), Link(sw, r, bandwidth, latency / 2)]
        up = plan.leaf_uplinks(leaf) * bandwidth / spines
        for k in range(spines):
            sp = n + leaves + k
            links += [Link(sw, sp, up, latency / 2), Link(sp, sw, up, latency / 2)]
    o = f",o={oversubscription:g}" if oversubscription != 1 else ""
    o += ",even" if fill == "even" else ""
    return Topology(f"fattree:{n},radix={radix}{o},B={bandwidth / 1e9:g}GB/s", n,
                    leaves + spines, tuple(links))


def search_fixed(fabric: FabricEval, *, steps: int, rng: np.random.Generator,
                 beta: float = 20.0) -> tuple[tuple[int, ...], Timing]:
    """The strategy search on a fixed fabric: the data-parallel strategy with the fastest
    pipeline degree and micro-batch count on it (as :func:`optimize` starts), then
    :func:`mcmc`; the best of the start and the walk."""
    start, t0 = None, None
    for P, layers, ms in _pipeline_starts(fabric.job):
        for m in ms:
            t = fabric.score(layers + (P, m))
            if t is not None and (t0 is None or t.iteration_s < t0.iteration_s):
                start, t0 = layers + (P, m), t
    s, t = mcmc(fabric, start, steps=steps, rng=rng, beta=beta)
    return (s, t) if t.iteration_s <= t0.iteration_s else (start, t0)


#: Edge oversubscriptions of the equal-cost fat-trees.
FATTREE_OVERSUBSCRIPTIONS = (1.0, 2.0)


def baselines(result: TopoOptResult, *, prices: PriceTable | None = None, steps: int = 2000,
              seed: int = 0, latency: float = 1e-6, reconfig_delay: float = 1e-3,
              routing: str = "ecmp", beta: float = 20.0, radix: int = 64,
              overlap: bool = True) -> dict[str, dict]:
    """The baselines of the module docstring for a TopoOpt ``result``; each with its own
    strategy search of ``steps`` moves (:func:`search_fixed`). ``fattree`` is the
    non-blocking fat-tree that costs what the TopoOpt design costs, ``fattree_2to1`` the
    2:1 oversubscribed one (faster edge links for the same money)."""
    job, d, B = result.job, result.degree, result.port_bandwidth
    n = job.servers
    cost = topoopt_cost(n, d, B, prices)
    out: dict[str, dict] = {}
    fabrics = {}
    bws = {}
    for o in FATTREE_OVERSUBSCRIPTIONS:
        key = "fattree" if o == 1 else f"fattree_{o:g}to1"
        bws[key] = (equivalent_fattree_bandwidth(n, cost, prices, radix, o), o)
        fabrics[key] = fattree_fabric(n, bws[key][0], radix=radix, oversubscription=o,
                                      latency=latency)
    fabrics["ideal_switch"] = switch_fabric(n, d * B, latency)
    fabrics["expander"] = expander_fabric(n, d, B, latency, seed)
    for name, topo in fabrics.items():
        fe = FabricEval(job, topo, routing=routing, overlap=overlap)
        s, t = search_fixed(fe, steps=steps, rng=np.random.default_rng(seed), beta=beta)
        out[name] = {**t.to_dict(), "strategy": describe_strategy(job, s)["counts"]}
        if name in bws:
            out[name].update(bandwidth=bws[name][0], oversubscription=bws[name][1],
                             cost_usd=cost)
    # OCS: the circuits serve one phase at a time: the iteration without its all-reduce
    # on the finder's topology for the model-parallel traffic, then the whole all-reduce
    # on rings, two reconfigurations between them
    tr = job.traffic(result.strategy)
    ar = {g: x for g, x in tr.allreduce.items() if x > 0}
    mp = tr.mp_matrix()
    t_ar = 0.0
    if ar:
        fr = topology_finder(n, d, allreduce=ar, bandwidth=B, latency=latency,
                             split="all-reduce")
        t_ar = FabricEval(job, fr.topology, rings=fr.jumps, routing=routing).time(
            _only(tr, allreduce=True)).allreduce_s
    fr = topology_finder(n, d, allreduce={n: 1.0}, mp=mp if mp.any() else None, bandwidth=B,
                         latency=latency, split="all-reduce" if n % 2 or not mp.any()
                         else "proportional")
    rest = FabricEval(job, fr.topology, rings=fr.jumps, routing=routing).time(
        _only(tr, allreduce=False))
    out["ocs"] = {"iteration_s": rest.iteration_s + t_ar + 2 * reconfig_delay,
                  "compute_s": rest.compute_s, "mp_s": rest.mp_s, "allreduce_s": t_ar,
                  "exposed_allreduce_s": t_ar, "bubble_s": rest.bubble_s,
                  "reconfig_delay_s": reconfig_delay,
                  "cost_usd": topoopt_cost(n, d, B, prices, ocs=True)}
    return out


def _only(tr, *, allreduce: bool):
    from dataclasses import replace

    if allreduce:
        return replace(tr, tp={}, embedding=np.zeros_like(tr.embedding), mp_phases=0)
    return replace(tr, allreduce={})


def describe_strategy(job: Job, strategy: tuple[int, ...]) -> dict:
    """The strategy for people (:meth:`Job.describe`)."""
    return job.describe(strategy)
