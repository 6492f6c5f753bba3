"""Pipelining of the `optimal` tree schedules: loopless switch paths, unequal batch sizes
and the resulting alpha-beta quality at 1 GiB (docs/performance.md, issue 4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from topocoll.collective import allgather, make_collective
from topocoll.cost import AlphaBeta
from topocoll.optimum.cuts import cut_bound
from topocoll.optimum.packing import optimal_packing
from topocoll.selection import find_algorithm
from topocoll.synth.forest_rows import build_rows, loopless, quantum, row_entries, tree_rows
from topocoll.synth.pipeline import batch_units, fill_overhead, pipeline_time
from topocoll.topology import parse_spec
from topocoll.verification import verify

M = 2.0**30


def _exact(kind, t):
    group = tuple(range(t.num_ranks))
    if kind == "allreduce":
        return _exact("allgather", t) + _exact("reduce_scatter", t)
    return cut_bound(make_collective(kind, group), t, M, method="exact").time


def _paths(s):
    pp = s.path_ptr
    return [tuple(s.path_nodes[pp[i]:pp[i + 1]].tolist()) for i in range(s.num_transfers)
            if pp[i + 1] > pp[i]]


def test_loopless_cuts_every_cycle():
    assert loopless((1, 2, 3)) == (1, 2, 3)
    assert loopless((0, 5, 6, 5, 7, 5, 6, 8)) == (0, 5, 6, 8)
    assert loopless((0, 5, 0, 9)) == (0, 9)
    for path in itertools.product(range(4), repeat=6):
        out = loopless(path)
        assert len(set(out)) == len(out) and out[0] == path[0] and out[-1] == path[-1]
        hops = set(zip(path, path[1:], strict=False))
        assert set(zip(out, out[1:], strict=False)) <= hops      # only links removed



def _row_entries_by_row(rows, topology, reverse_graph):
    """:func:`row_entries` one row and hop at a time: bandwidths summed and latencies
    least over parallel links, links numbered as they first appear."""
    bw, lat = {}, {}
    for lk in topology.links:
        k = (lk.src, lk.dst)
        bw[k] = bw.get(k, 0.0) + lk.bandwidth
        lat[k] = min(lat.get(k, float("inf")), lk.latency)
    keys, ent, ell = {}, [], 0.0
    for i in range(len(rows.src)):
        path = rows.paths[i] or (int(rows.src[i]), int(rows.dst[i]))
        hops = list(zip(path, path[1:], strict=False))
        if reverse_graph:
            hops = [(b, a) for a, b in hops]
        t = sum(lat[h] for h in hops)
        if topology.node_latency:
            t += sum(topology.node_latency[v] for v in path[1:-1])
        ell = max(ell, t)
        ent += [(i, keys.setdefault(h, len(keys)), rows.count[i] / bw[h]) for h in hops]
    return [e[0] for e in ent], [e[1] for e in ent], [e[2] for e in ent], ell, len(keys)


@pytest.mark.parametrize("spec", ["ring:7", "torus:3x4", "dgx-h100:2", "fattree:k=4",
                                  "mi250:1,fwd=300ns", "hier:fc(2)x ring(3)x switch(2)",
                                  "twotier:racks=3,hosts=3,oversub=4"])
def test_row_entries_equal_a_row_by_row_count(spec):
    """The vectorized entries are the row-by-row ones exactly: same order, same link
    numbers (LP columns follow them), same floats, same latency."""
    t = parse_spec(spec)
    p = optimal_packing(t)
    rows = tree_rows(p, {r: 0 for r in p.per_root}, quantum(p), 1)
    for reverse in (False, True):
        got = row_entries(rows, t, reverse)
        want = _row_entries_by_row(rows, t, reverse)
        for g, w in zip(got[:3], want[:3], strict=True):
            assert g.tolist() == w
        assert got[3] == want[3] and got[4] == want[4]
    if spec in ("dgx-h100:2", "fattree:k=4"):
        assert any(rows.paths)                          # routed rows were compared


@pytest.mark.parametrize("spec", ["dgx-h100:2", "fattree:k=4"])
def test_switch_paths_are_simple_and_the_bandwidth_term_stays_the_bound(spec):
    """Edge splitting chains splits (paths like 0-18-26-18-8 on dgx-h100:2; which fabric
    shows them depends on the packing's tie order); the schedule carries them without
    cycles, so latency drops and no link load grows."""
    t = parse_spec(spec)
    p = optimal_packing(t)
    raw = [path for tc in p.classes() for _, _, pieces in tc.arcs for path, _ in pieces]
    assert any(len(set(q)) < len(q) for q in raw)        # the packing has cyclic paths
    s = find_algorithm("optimal", "allgather")(t, batches=2)
    assert all(len(set(q)) == len(q) for q in _paths(s))
    assert verify(s, t).ok
    r = AlphaBeta(bound=False).evaluate(s, t, M)
    assert float(np.max(r.link_load / t.link_bandwidth)) == pytest.approx(
        _exact("allgather", t), rel=1e-9)


def test_unequal_batches_match_alphabeta_and_verify():
    """pipeline_time (the model the batch sizes are chosen on) equals AlphaBeta on the
    built schedule when every transfer is one link of equal latency."""
    t = parse_spec("random:7,spread=30,density=0.5,seed=4")
    p = optimal_packing(t)
    Q = quantum(p)
    units = np.array([5, 3, 2, 1])
    U = int(units.sum())
    rows = tree_rows(p, {r: r * Q * U for r in range(7)}, Q, len(units))
    assert all(q is None for q in rows.paths)
    s = build_rows(allgather(7, split=Q * U), rows, len(units), units=units)
    assert verify(s, t).ok
    ent_row, ent_link, ent_w, ell, nl = row_entries(rows, t, False)
    L = np.zeros((rows.D, nl))
    np.add.at(L, (rows.depth[ent_row] - 1, ent_link), ent_w * (M / 7 / Q))
    got = AlphaBeta(bound=False).evaluate(s, t, M).time
    assert got == pytest.approx(pipeline_time(L, units, ell), rel=1e-9)
    assert got >= _exact("allgather", t)


def test_batch_units_is_the_lp_optimum():
    """Two batches on random level loads: the LP's sizes are no worse than a fine grid
    of splits, and never worse than equal batches."""
    rng = np.random.default_rng(7)
    for _ in range(5):
        L = rng.random((3, 4)) * (rng.random((3, 4)) < 0.7)
        u = batch_units(L, 2, 1000)
        t = pipeline_time(L, u, 0.0)
        grid = min(pipeline_time(L, np.array([k, 1000 - k]), 0.0) for k in range(1, 1000))
        assert t <= grid + 1e-3 * L.sum(axis=0).max()
        assert t <= pipeline_time(L, np.ones(2), 0.0) + 1e-9


def test_fill_overhead_is_the_excess_of_equal_batches():
    """(time of P equal batches) = F (P + O) / P for P >= D: checked on random loads."""
    rng = np.random.default_rng(3)
    for _ in range(5):
        L = rng.random((4, 5))
        F = L.sum(axis=0).max()
        for P in (4, 7):
            assert pipeline_time(L, np.ones(P), 0.0) == pytest.approx(
                F * (P + fill_overhead(L)) / P, rel=1e-12)


def test_dgx_within_one_percent_with_unequal_batches():
    """dgx:2,gpus=4: level 1 only loads NVLink, so equal batches leave a drain step
    (1.033 of the bound before); geometrically shrinking batches reach 1%."""
    t = parse_spec("dgx:2,gpus=4")
    for kind in ("allgather", "reduce_scatter", "allreduce"):
        s = find_algorithm("optimal", kind)(t, pipeline="weighted")
        assert "batch_units" in s.meta
        assert verify(s, t).ok
        assert AlphaBeta().evaluate(s, t, M).time <= 1.01 * _exact(kind, t), kind


# measured at 1 GiB with a 100k-transfer budget (docs/performance.md); before loopless
# paths and unequal batches these were 1.048-1.417 (400k budget)
# thresholds hold for the HiGHS in scipy 1.17 / highspy 1.16 (an LP with many optimal
# vertices: which one the solver returns moves the rounded batches by tenths of a percent)
# and for the packing's canonical tie order (anti-diagonal, since the CPU-independence
# fix; measured 1.0374, 1.0820, 1.0404, 1.0228, 1.0887, 1.0625 in the order below: the
# tie order of a proportional split moves these by up to 5%, either way)
QUALITY = {"hypercube:4": 1.04, "fattree:k=4": 1.09, "leafspine:leaves=4,spines=2,hosts=4": 1.045,
           "twotier:racks=4,hosts=4,oversub=2": 1.025, "mi250:1": 1.09, "dgx-a100:2": 1.23}


@pytest.mark.parametrize("spec", sorted(QUALITY))
def test_quality_on_switched_fabrics(spec):
    t = parse_spec(spec)
    s = find_algorithm("optimal", "allgather")(t, budget=100_000, pipeline="weighted")
    assert AlphaBeta(bound=False).evaluate(s, t, M).time <= QUALITY[spec] * _exact("allgather", t)


def test_fluid_counts_are_causal_and_complete():
    """Rounded per-arc sends never forward a unit before the parent arc delivered it."""
    from topocoll.synth.pipeline import fluid_counts, fluid_sends

    t = parse_spec("leafspine:leaves=4,spines=2,hosts=4")
    p = optimal_packing(t)
    from topocoll.synth.forest_rows import arc_units

    rows = tree_rows(p, {r: 0 for r in p.per_root}, quantum(p), 1)
    unit, parent = arc_units(p)
    ent_row, ent_link, ent_w, _, _ = row_entries(rows, t, False)
    w = ent_w * 1e9                                   # seconds for 1 GB per chunk slot
    y, bw = fluid_sends(parent, unit[ent_row], ent_link, w, rows.D + 1)
    busiest = np.bincount(ent_link, weights=w).max()  # no plan beats the busiest link
    assert busiest * (1 - 1e-6) <= bw <= busiest * (rows.D + 1)
    assert np.all(np.diff(y, axis=1) >= -1e-9)
    K = fluid_counts(y, parent, 1024)
    assert np.all(K[:, -1] == 1024) and np.all(np.diff(K, axis=1) >= 0)
    child = parent >= 0
    assert np.all(K[child, 1:] <= K[parent[child], :-1])


@pytest.mark.parametrize("spec", ["leafspine:leaves=4,spines=2,hosts=4",
                                  "twotier:racks=4,hosts=4,oversub=2"])
def test_fluid_pipeline_within_one_percent(spec):
    """pipeline='fluid' (per-arc sends from the time-expanded LP): verified, bandwidth
    term == bound, and within 1% at 1 GiB where batches reach 2.3-3.1%."""
    t = parse_spec(spec)
    for kind in ("allgather", "reduce_scatter"):
        s = find_algorithm("optimal", kind)(t, pipeline="fluid")
        assert s.meta["pipeline"] == "fluid" and verify(s, t).ok
        r = AlphaBeta(bound=False).evaluate(s, t, M)
        assert float(np.max(r.link_load / t.link_bandwidth)) == pytest.approx(
            _exact(kind, t), rel=1e-9)
        assert r.time <= 1.01 * _exact(kind, t), kind


@pytest.mark.slow
def test_fluid_allreduce_and_fattree_within_one_percent():
    t = parse_spec("fattree:k=4")
    s = find_algorithm("optimal", "allgather")(t, pipeline="fluid")
    assert verify(s, t).ok       # 1.0102 with the interior-point solution of HiGHS 1.16
    assert AlphaBeta(bound=False).evaluate(s, t, M).time <= 1.015 * _exact("allgather", t)
    t = parse_spec("twotier:racks=4,hosts=4,oversub=2")
    s = find_algorithm("optimal", "allreduce")(t, pipeline="fluid", steps=9)
    assert verify(s, t).ok and s.meta["steps"] == "9+9"
    assert AlphaBeta(bound=False).evaluate(s, t, M).time <= 1.01 * _exact("allreduce", t)


def test_fluid_errors():
    from topocoll.errors import NotSupportedError

    t = parse_spec("ring:6")
    with pytest.raises(NotSupportedError, match="pipeline must be one of"):
        find_algorithm("optimal", "allgather")(t, pipeline="tubes")
    with pytest.raises(NotSupportedError, match="steps must be >= the tree depth"):
        find_algorithm("optimal", "allgather")(t, pipeline="fluid", steps=2)
    with pytest.raises(NotSupportedError, match="tree arcs"):
        find_algorithm("optimal", "allgather")(parse_spec("torus:8x8"), pipeline="fluid")
