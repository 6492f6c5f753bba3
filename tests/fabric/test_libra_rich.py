"""LIBRA beyond the paper: the cone program against cvxpy, algorithms and latency per
dimension against closed forms, the overlap loop by hand and by brute force, ``choose``'s
fixed point, the flow-level check, and layered (CNN, DLRM) workloads."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from topocoll.errors import InputError
from topocoll.fabric import (
    LIBRA_MODEL,
    LibraCollective,
    LibraLayer,
    LibraWorkload,
    TimeModel,
    check_allocation,
    dim_profile,
    iteration_time,
    parse_network,
    solve,
    workload_from_layered,
)
from topocoll.fabric.libra.check import sub_fabric
from topocoll.fabric.libra.timing import choose_algorithms
from topocoll.workload import LAYERED, find_device

NET = parse_network("hier:ring(4)x fc(4)x switch(8)")
LAT = (2e-6, 1e-6, 5e-6)


@pytest.mark.parametrize("block,n,c,phase,alg,r", [
    ("Ring", 8, 8, "reduce_scatter", "bidirectional_ring", 7 / 8),
    ("Ring", 8, 8, "allgather", "ring", 2 * 7 / 8),         # one direction of two
    ("FullyConnected", 8, 8, "reduce_scatter", "direct", 7 / 8),
    ("FullyConnected", 8, 2, "reduce_scatter", "direct", 7 / 2),   # 1 of 7 links
    ("FullyConnected", 8, 4, "allgather", "direct", 3 / 4 * 7 / 3),
    ("Switch", 16, 16, "allgather", "direct", 15 / 16),
    ("Switch", 16, 4, "reduce_scatter", "ring", 3 / 4),
    ("Switch", 16, 16, "alltoall", "direct", 15 / 16),
])
def test_dimension_profiles_match_closed_forms(block, n, c, phase, alg, r):
    a, got = dim_profile(block, n, c, phase, alg)
    assert a == pytest.approx(0.0, abs=1e-15)
    assert got == pytest.approx(r, rel=1e-9)


def test_latency_is_charged_per_step_and_hop():
    lat = 1e-6
    # bidirectional ring reduce-scatter among 8: 7 steps of one hop
    assert dim_profile("Ring", 8, 8, "reduce_scatter", "bidirectional_ring", lat)[0] == \
        pytest.approx(7 * lat)
    # among 4 of 8 (stride 2): 3 steps of two hops each
    assert dim_profile("Ring", 8, 4, "reduce_scatter", "bidirectional_ring", lat)[0] == \
        pytest.approx(3 * 2 * lat)
    # recursive halving on a switch: log2(8) steps, two links (up and down) each
    assert dim_profile("Switch", 8, 8, "reduce_scatter", "recursive_halving", lat)[0] == \
        pytest.approx(3 * 2 * lat)
    # LIBRA's ideal traffic with the natural algorithm's steps
    assert dim_profile("Ring", 8, 8, "reduce_scatter", "libra", lat) == \
        pytest.approx((7 * lat, 7 / 8))
    with pytest.raises(InputError, match="divide"):
        dim_profile("Ring", 8, 3, "reduce_scatter", "ring")


def _cvxpy_perf(net, w, model, total):
    """The same perf problem in cvxpy (no overlap), solved independently."""
    import cvxpy as cp

    from topocoll.fabric.libra.timing import collective_terms

    D = len(net.dims)
    B = cp.Variable(D, pos=True)
    expr = w.compute_s
    for c in w.collectives:
        terms = collective_terms(net, c, model)
        parts = [a + f * cp.inv_pos(B[i]) for i, a, f in terms]
        t = cp.maximum(*parts) if model.phases == "pipelined" and len(parts) > 1 else (
            parts[0] if len(parts) == 1 else cp.sum(cp.hstack(parts)))
        expr = expr + c.count * t
    prob = cp.Problem(cp.Minimize(expr), [cp.sum(B) == total, B >= 1e-3])
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value, np.asarray(B.value)


@pytest.mark.parametrize("model", [
    LIBRA_MODEL,
    TimeModel(latency_s=LAT),
    TimeModel(algorithms=("ring", "direct", "recursive_halving"), latency_s=LAT),
    TimeModel(algorithms=("bidirectional_ring", "direct", "direct"), phases="sequential"),
])
def test_cone_program_agrees_with_cvxpy(model):
    w = LibraWorkload((LibraCollective("allreduce", 4e8, (4, 4, 8), 3),
                  LibraCollective("reduce_scatter", 1e8, (2, -1, 8), 2),
                  LibraCollective("allgather", 2e7, (4, 2, -1)),
                  LibraCollective("alltoall", 5e7, (4, 4, 8))), compute_s=0.02)
    r = solve(NET, w, constraints=["B0 + B1 + B2 == 300"], model=model)
    want, b = _cvxpy_perf(NET, w, model, 300.0)
    assert r.time_s == pytest.approx(want, rel=1e-5)
    assert r.time_s <= want * (1 + 1e-7)          # never worse than cvxpy's answer
    assert r.gap < 1e-6
    np.testing.assert_allclose(r.bandwidth_GBps, b, rtol=2e-3)


def _two_layer_workload():
    tp = LibraCollective("allreduce", 2e8, (4, -1, -1))
    dp1 = LibraCollective("allreduce", 8e8, (-1, 4, 8))
    dp2 = LibraCollective("allreduce", 3e8, (-1, 4, 8))
    layers = (LibraLayer("a", 0.010, 0.010, 0.010, fwd=(tp,), ig=(tp,), wg=(dp1,)),
              LibraLayer("b", 0.020, 0.020, 0.020, fwd=(tp,), ig=(tp,), wg=(dp2,)))
    return LibraWorkload.from_layers(layers, "two", tail_s=0.001), tp, dp1, dp2


def test_overlap_loop_by_hand():
    w, tp, dp1, dp2 = _two_layer_workload()
    b = [100.0, 50.0, 20.0]
    ov = TimeModel(loop="overlap")
    t = {c: iteration_time(NET, LibraWorkload((c,), 0.0), b) for c in (tp, dp1, dp2)}
    fwd = 0.010 + 0.020 + 2 * t[tp]
    e_b = fwd + 0.040 + t[tp]               # layer b's backward (last layer first)
    g_b = e_b + t[dp2]
    e_a = e_b + 0.020 + t[tp]
    g_a = max(g_b, e_a) + t[dp1]
    assert iteration_time(NET, w, b, ov) == pytest.approx(max(e_a, g_a) + 0.001)
    assert iteration_time(NET, w, b) == pytest.approx(
        0.091 + 4 * t[tp] + t[dp1] + t[dp2])
    assert iteration_time(NET, w, b, ov) < iteration_time(NET, w, b)


@pytest.mark.parametrize("model", [TimeModel(loop="overlap"),
                                   TimeModel(latency_s=LAT, loop="overlap",
                                             phases="sequential")])
def test_overlap_optimum_against_brute_force(model):
    w, *_ = _two_layer_workload()
    total = 120.0
    r = solve(NET, w, constraints=[f"B0 + B1 + B2 == {total}"], model=model)
    best = min(iteration_time(NET, w, (x, y, total - x - y), model)
               for x, y in itertools.product(np.linspace(1, total - 2, 120), repeat=2)
               if total - x - y > 0.5)
    assert r.time_s <= best + 1e-12
    assert r.time_s == pytest.approx(best, rel=2e-3)


def test_choose_reaches_a_fixed_point_of_fastest_algorithms():
    w = LibraWorkload((LibraCollective("allreduce", 1e5, (4, 4, 8), 50),
                  LibraCollective("allreduce", 4e8, (4, 4, 8))), compute_s=0.0)
    m = TimeModel(algorithms=("choose",) * 3, latency_s=(5e-6,) * 3)
    r = solve(NET, w, constraints=["B0 + B1 + B2 == 300"], model=m)
    chosen = dict(r.algorithms)
    assert chosen == choose_algorithms(NET, w, m, r.bandwidth_GBps)
    small = {a for (k, _, _), a in chosen.items() if k[1] == 1e5}
    assert small & {"recursive_halving", "recursive_doubling", "swing"}  # log2 steps
    # every fixed algorithm assignment of the candidates is no faster at its own optimum
    for alg in ("bidirectional_ring", "direct"):
        fixed = TimeModel(algorithms=(alg,) * 3, latency_s=(5e-6,) * 3)
        t = solve(NET, w, constraints=["B0 + B1 + B2 == 300"], model=fixed).time_s
        assert r.time_s <= t * (1 + 1e-6)


def test_sub_fabric_keeps_the_links_a_group_really_has():
    net = parse_network("hier:ring(8)x fc(8)x switch(4)")
    assert sub_fabric(net, (2, 8, 4), [80, 70, 10], [1e-6, 2e-6, 3e-6]) == (
        "hier:ring(2,4e+10B/s,4e-06s)x fc(8,1e+10B/s,2e-06s)x switch(4,1e+10B/s,3e-06s)")


@pytest.mark.parametrize("kind,comm", [("allreduce", (4, 2, 8)), ("reduce_scatter", (2, 4, 4)),
                                       ("allgather", (4, -1, 8)), ("allreduce", (2, 2, 2))])
def test_flow_check_equals_the_sequential_model_of_the_same_schedule(kind, comm):
    w = LibraWorkload((LibraCollective(kind, 3e8, comm),), compute_s=0.01)
    b = [120.0, 60.0, 25.0]
    seq = TimeModel(algorithms=("bidirectional_ring", "direct", "direct"), latency_s=LAT,
                    phases="sequential")
    c = check_allocation(NET, w, b, seq)
    assert c["flow_iteration_s"] == pytest.approx(c["iteration_s"], rel=1e-6)
    # LIBRA's model takes the slowest dimension only: never above the simulated time
    lib = check_allocation(NET, w, b)
    assert lib["iteration_s"] <= lib["flow_iteration_s"] * (1 + 1e-9)
    assert lib["collectives"][0]["flow_s"] == pytest.approx(c["collectives"][0]["flow_s"],
                                                            rel=0.05)


def test_flow_check_of_a_direct_alltoall_lies_between_the_phase_models():
    w = LibraWorkload((LibraCollective("alltoall", 3e8, (4, 4, -1)),), compute_s=0.0)
    b = [120.0, 60.0, 25.0]
    algs = ("direct", "direct", "direct")
    seq = check_allocation(NET, w, b, TimeModel(algorithms=algs, phases="sequential"))
    pip = iteration_time(NET, w, b, TimeModel(algorithms=algs))
    assert pip <= seq["flow_iteration_s"] * (1 + 1e-9) <= seq["iteration_s"] * (1 + 1e-9)
    assert seq["flow_iteration_s"] < seq["iteration_s"]   # all pairs at once, not in turn


def test_layered_workloads_for_cnn_and_dlrm():
    net = parse_network("hier:ring(4)x switch(8)")
    dev = find_device("a100-80g")
    res = workload_from_layered(net, LAYERED["resnet50"], dev, batch_per_npu=32)
    assert {c.kind for c in res.collectives} == {"allreduce"}
    assert sum(c.size * c.count for c in res.collectives) == pytest.approx(
        2 * LAYERED["resnet50"].dense_parameters)
    assert all(c.comm == (4, 8) for c in res.collectives)
    dl = workload_from_layered(net, LAYERED["dlrm"], dev, batch_per_npu=64)
    a2a = [c for c in dl.collectives if c.kind == "alltoall"]
    assert len(a2a) == 1 and a2a[0].count == 2          # forward and input gradient
    assert dl.layers[0].fwd == dl.layers[0].ig == (a2a[0].__class__(
        "alltoall", a2a[0].size, (4, 8)),)
    r = solve(net, dl, constraints=["B0 + B1 == 200"], model=TimeModel(loop="overlap"))
    assert r.time_s <= iteration_time(net, dl, r.bandwidth_GBps) + 1e-12
    with pytest.raises(InputError, match="batch"):
        workload_from_layered(net, LAYERED["resnet50"], dev, batch_per_npu=0)


def test_overlap_needs_layers_and_lists_need_one_value_per_dimension():
    w = LibraWorkload((LibraCollective("allreduce", 1e8, (4, 4, 8)),), compute_s=0.0)
    with pytest.raises(InputError, match="per-layer"):
        solve(NET, w, constraints=["B0 + B1 + B2 == 30"], model=TimeModel(loop="overlap"))
    with pytest.raises(InputError) as e:
        solve(NET, w, constraints=["B0 + B1 + B2 == 30"],
              model=TimeModel(algorithms=("ring", "direct")))
    assert e.value.item == "algorithm"
    with pytest.raises(InputError) as e:
        TimeModel(algorithms=("nope",) * 3)
    assert e.value.item == "algorithm 'nope'"


def test_fabric_imports_only_what_it_uses():
    code = ("import sys, topocoll.fabric as f; f.solve; "
            "print(sorted(m for m in ('topocoll.sim.dlcp.engine', 'topocoll.fabric.topoopt',"
            " 'cvxpy', 'topocoll.synth') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_flow_check_scales_one_simulation_per_schedule_without_latency():
    """Without latency the check simulates one size per schedule and scales it; the
    scaled times equal direct simulations of every size."""
    from topocoll.sim.backends import cost_model
    from topocoll.synth.hierarchical import hierarchical_allreduce
    from topocoll.topology.spec import parse_spec

    b = [120.0, 60.0, 25.0]
    sizes = (1e6, 7e7, 3e8)
    w = LibraWorkload(tuple(LibraCollective("allreduce", s, (4, 2, 8)) for s in sizes), 0.0)
    c = check_allocation(NET, w, b)
    top = parse_spec(c["collectives"][0]["fabric"])
    sched = hierarchical_allreduce(top)
    for row, s in zip(c["collectives"], sizes, strict=True):
        assert row["flow_s"] == pytest.approx(cost_model("flow").evaluate(sched, top, s).time,
                                              rel=1e-9)


def test_flow_check_with_latency_reads_verified_lines_or_simulates():
    from topocoll.sim.backends import cost_model
    from topocoll.synth.hierarchical import hierarchical_allreduce
    from topocoll.topology.spec import parse_spec

    b = [120.0, 60.0, 25.0]
    sizes = (1e3, 4e5, 2e6, 7e7, 3e8)
    w = LibraWorkload(tuple(LibraCollective("allreduce", s, (4, 2, 8)) for s in sizes), 0.0)
    c = check_allocation(NET, w, b, TimeModel(latency_s=LAT))
    assert c["simulations"] == 3                   # two ends and the verifying middle
    top = parse_spec(c["collectives"][0]["fabric"])
    assert "2e-06s" in c["collectives"][0]["fabric"]
    sched = hierarchical_allreduce(top)
    for row, s in zip(c["collectives"], sizes, strict=True):
        assert row["flow_s"] == pytest.approx(cost_model("flow").evaluate(sched, top, s).time,
                                              rel=1e-9)
