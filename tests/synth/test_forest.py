"""The `optimal` tree-packing synthesizer: verified, bandwidth term == exact bound."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from topocoll.collective import allgather, make_collective
from topocoll.cost import AlphaBeta
from topocoll.errors import NotSupportedError
from topocoll.optimum.cuts import cut_bound
from topocoll.optimum.maxflow import capacity_graph
from topocoll.optimum.packing import broadcast_packing, optimal_packing
from topocoll.selection import find_algorithm
from topocoll.synth.forest import (
    choose_batches,
    optimal_allgather,
    optimal_allreduce,
    optimal_broadcast,
    optimal_reduce,
    optimal_reduce_scatter,
)
from topocoll.topology import parse_spec, ring
from topocoll.verification import verify

M = 2.0**30


def _exact_time(kind, t, ranks=None, root=None):
    group = tuple(ranks or range(t.num_ranks))
    if kind == "allreduce":
        return sum(_exact_time(k, t, ranks) for k in ("reduce_scatter", "allgather"))
    return cut_bound(make_collective(kind, group, root=root), t, M, method="exact").time


def _bandwidth_term(s, t) -> float:
    """max over links of (bytes the schedule puts on it) / bandwidth: the fluid time."""
    r = AlphaBeta(bound=False).evaluate(s, t, M)
    bw = t.link_bandwidth
    # parallel links share a hop by bandwidth, so per-link load / bandwidth is the hop's
    return float(np.max(r.link_load / bw))


@pytest.mark.parametrize("spec", ["ring:6", "uniring:5", "torus:3x4", "star:5", "fc:4",
                                  "dgx:2,gpus=4", "fattree:k=4", "mesh:2x3",
                                  "twotier:racks=3,hosts=2,oversub=2", "mi250:1",
                                  "random:7,spread=30,density=0.5,seed=4",
                                  "bimodal:6,frac=0.4,seed=2"])
@pytest.mark.parametrize("kind", ["allgather", "reduce_scatter", "allreduce", "broadcast",
                                  "reduce"])
def test_verified_and_bandwidth_term_equals_exact_bound(spec, kind):
    t = parse_spec(spec)
    root = 1 if kind in ("broadcast", "reduce") else None
    opts = {"root": root} if root is not None else {}
    s = find_algorithm("optimal", kind)(t, batches=3, **opts)
    rep = verify(s, t)
    assert rep.ok, rep.violations[:3]
    assert _bandwidth_term(s, t) == pytest.approx(_exact_time(kind, t, root=root), rel=1e-9)


def _random(seed):
    n = 5 + seed % 8
    spread = (1, 3, 10, 30, 100)[seed % 5]
    return n, parse_spec(f"random:{n},spread={spread},density=0.6,seed={seed}")


@pytest.mark.parametrize("seed", range(100))
def test_random_heterogeneous_graphs(seed):
    """100 seeded heterogeneous graphs: exact packing loads, fluid term == bound, and
    the alpha-beta time at 1 GiB within 10% with a 50k-transfer budget."""
    n = 5 + seed % 8
    spread = (1, 3, 10, 30, 100)[seed % 5]
    t = parse_spec(f"random:{n},spread={spread},density=0.6,seed={seed}")
    p = optimal_packing(t)
    g = capacity_graph(t)
    caps = {(int(u), int(v)): c for u, v, c in zip(g.src, g.dst, g.cap, strict=True)}
    worst = max(Fraction(load, caps[a]) for a, load in p.arc_loads().items())
    assert worst == p.scale          # tight: some arc carries exactly scale * c trees
    assert p.ratio * 1 == cut_bound(allgather(n), t, M, method="exact").exact * g.unit
    s = optimal_allgather(t, budget=50_000, pipeline="batches")
    bound = _exact_time("allgather", t)
    assert _bandwidth_term(s, t) == pytest.approx(bound, rel=1e-9)
    assert AlphaBeta(bound=False).evaluate(s, t, M).time <= 1.10 * bound
    if seed % 10 == 0:
        assert verify(s, t).ok


@pytest.mark.slow
def test_random_graphs_quality_with_longer_pipelines():
    """With a larger transfer budget the median is within 1% and the worst within 3%
    (pipeline fill and per-step latency are what remains; docs/performance.md)."""
    ratios = []
    for seed in range(100):
        n, t = _random(seed)
        s = optimal_allgather(t, budget=400_000, pipeline="batches")
        b = _exact_time("allgather", t)
        ratios.append(AlphaBeta(bound=False).evaluate(s, t, M).time / b)
    assert min(ratios) >= 1 - 1e-12
    assert float(np.median(ratios)) <= 1.01 and max(ratios) <= 1.03


@pytest.mark.parametrize("spec", ["ring:8", "uniring:6", "torus:4x4", "torus:3x3x3", "star:16",
                                  "fc:8"])
def test_within_one_percent_at_1GiB_on_symmetric_fabrics(spec):
    t = parse_spec(spec)
    for kind in ("allgather", "reduce_scatter", "allreduce"):
        s = find_algorithm("optimal", kind)(t)
        r = AlphaBeta().evaluate(s, t, M)
        assert r.time <= 1.01 * _exact_time(kind, t), (kind, r.time)


def test_torus_packing_is_translation_symmetric_and_exact():
    t = parse_spec("torus:5x5x5")
    p = optimal_packing(t)
    assert p.torus_shape == (5, 5, 5) and p.per_root[0] == 6 and p.max_flows == 1
    loads = p.arc_loads()
    assert set(loads.values()) == {124} and p.scale == 124   # every arc carries N - 1 trees
    assert max(max(tc.depth().values()) for tc in p.trees) == 12


def test_broadcast_packing_edmonds_rate():
    t = parse_spec("torus:3x3")
    p = broadcast_packing(t, 4)
    assert p.per_root == {4: 4} and max(p.arc_loads().values()) == 1
    s = optimal_broadcast(t, root=4, batches=2)
    assert s.collective.root == 4 and verify(s, t).ok
    r = optimal_reduce(t, root=4, batches=2)
    assert r.collective.kind == "reduce" and verify(r, t).ok


def test_subgroup_and_errors():
    t = ring(6)
    s = optimal_allgather(t, ranks=(0, 2, 4), batches=2)
    assert s.collective.ranks == (0, 2, 4) and verify(s, t).ok
    with pytest.raises(NotSupportedError, match="in- and out-capacity"):
        optimal_allgather(parse_spec("twotier:racks=2,hosts=2,contention=0.5,keep=0.5"))
    with pytest.raises(NotSupportedError, match="root 9"):
        optimal_broadcast(t, root=9)
    with pytest.raises(NotSupportedError, match="batches"):
        optimal_allgather(t, batches=0)


def test_choose_batches_grows_with_size():
    t = parse_spec("dgx:2,gpus=4")
    small = optimal_allgather(t, message_bytes=2.0**16, pipeline="batches")
    big = optimal_allgather(t, message_bytes=2.0**30, pipeline="batches")
    assert int(small.meta["batches"]) < int(big.meta["batches"])
    assert choose_batches is not None


def test_reduce_scatter_and_allreduce_structure():
    t = parse_spec("random:6,spread=10,seed=3")
    rs = optimal_reduce_scatter(t, batches=2)
    ar = optimal_allreduce(t, batches=2)
    assert rs.op.max() == 1 and ar.collective.kind == "allreduce"
    assert verify(rs, t).ok and verify(ar, t).ok


# -- the exact packing's work budget (issue 30: budgets count work, never seconds) ---------

def test_packing_over_its_budget_is_refused_with_the_estimate(monkeypatch):
    from topocoll.errors import OverBudgetError
    from topocoll.optimum.packing import capacity_graph, optimal_packing, packing_work
    from topocoll.topology import fat_tree

    t = fat_tree(4)
    work = packing_work(capacity_graph(t))
    assert work == 21 * 16 * 96
    monkeypatch.setenv("TOPOCOLL_PACKING_WORK", str(work - 1))
    with pytest.raises(OverBudgetError, match=f"{work:,} units of work.*{work - 1:,}"):
        optimal_packing(t)
    monkeypatch.setenv("TOPOCOLL_PACKING_WORK", str(work))      # at the budget: packed
    assert optimal_packing(t).per_root


@pytest.mark.parametrize("raw", ["0", "-5", "lots"])
def test_packing_budget_names_the_variable(monkeypatch, raw):
    from topocoll.errors import InputError
    from topocoll.optimum.packing import packing_budget

    monkeypatch.setenv("TOPOCOLL_PACKING_WORK", raw)
    with pytest.raises(InputError, match="TOPOCOLL_PACKING_WORK"):
        packing_budget()


def test_optimal_weighs_the_one_pass_constructions_when_the_packing_is_over_budget(
        monkeypatch):
    """Over the packing's budget, ``optimal`` (pipeline auto) is still the fastest of the
    spread direct, two-level and butterfly constructions, says so, and verifies; the
    same fabric within the budget keeps the batches pipeline's answer."""
    from topocoll.topology import fat_tree

    t = fat_tree(4)          # a fresh fabric for each: the packing is memoized on it
    within = find_algorithm("optimal", "allgather")(t, message_bytes=2**26)
    monkeypatch.setenv("TOPOCOLL_PACKING_WORK", "1")
    over = find_algorithm("optimal", "allgather")(fat_tree(4), message_bytes=2**26)
    assert "over its work budget" in over.meta["auto"]
    assert over.meta["auto"].split()[0] in ("spread", "two_level", "swing",
                                            "mirrored_recursive_doubling")
    assert verify(over, t).ok
    assert "over its work budget" not in within.meta.get("auto", "")
    # the bound is the same exact optimum either way: the one-pass answer is no faster
    from topocoll.cost.kernel import model_time
    assert model_time(over, t, 2**26, 0.0) >= model_time(within, t, 2**26, 0.0) * (1 - 1e-9)


def test_topology_adaptive_over_both_budgets_is_refused(monkeypatch):
    from topocoll.errors import OverBudgetError
    from topocoll.synth.adaptive import topology_adaptive_allreduce
    monkeypatch.setenv("TOPOCOLL_PACKING_WORK", "1")
    with pytest.raises(OverBudgetError, match="multiplicative-weights.*over its budget"):
        topology_adaptive_allreduce(parse_spec("dgx:3"))   # 96 x 24^3 > 400,000
