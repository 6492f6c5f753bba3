"""LIBRA: the time and cost models against hand computation, the solver against brute
force, and LIBRA's own input files."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from topocoll.errors import InfeasibleError, InputError
from topocoll.fabric import (
    LibraCollective,
    LibraWorkload,
    communicators,
    cost,
    dimension_traffic,
    iteration_time,
    parse_constraint,
    parse_network,
    read_communicator,
    read_libra_workload,
    solve,
    workload_from_model,
)
from topocoll.workload import find_device, parse_model, parse_parallel

NET2 = parse_network("hier:ring(4)x switch(8)")
NET3 = parse_network("hier:ring(4)x fc(4)x switch(4)")


def test_traffic_follows_the_hierarchical_walk():
    m = 8e9
    np.testing.assert_allclose(dimension_traffic("allreduce", m, (4, 8)),
                               [2 * m * 3 / 4, 2 * (m / 4) * 7 / 8])
    np.testing.assert_allclose(dimension_traffic("reduce_scatter", m, (4, -1, 8)),
                               [m * 3 / 4, 0, (m / 4) * 7 / 8])
    # all-gather walks outward-in: the outer dimension sees the per-NPU shard
    np.testing.assert_allclose(dimension_traffic("allgather", m, (4, 8)), [8 * m * 3, m * 7])
    np.testing.assert_allclose(dimension_traffic("alltoall", m, (4, 8)),
                               [m * 3 / 4, m * 7 / 8])


def test_cost_is_linear_with_switch_terms_only_on_switch_dimensions():
    net = parse_network("hier:ring(4)x fc(8)x ring(4)x switch(32)")
    assert [d.cost_class for d in net.dims] == ["InterChiplet", "InterPackage", "InterNode",
                                                 "InterPod"]
    np.testing.assert_allclose(net.kappa(), [2.0, 4.0, 4.0, 7.8 + 18.0 + 31.6])
    assert cost(net, [1, 0, 0, 0]) == pytest.approx(4096 * 2.0)
    fc_pod = parse_network("hier:ring(4)x fc(8)", ["InterNode", "InterPod"])
    np.testing.assert_allclose(fc_pod.kappa(), [4.0, 7.8])   # no switch, no NIC


def test_single_collective_optimum_is_proportional_to_traffic():
    m = 1e9
    w = LibraWorkload((LibraCollective("allreduce", m, (4, 8)),), compute_s=0.5)
    r = solve(NET2, w, constraints=["B0 + B1 == 100"])
    s = dimension_traffic("allreduce", m, (4, 8)) / 1e9
    np.testing.assert_allclose(r.bandwidth_GBps, 100 * s / s.sum(), rtol=1e-5)
    assert r.time_s == pytest.approx(0.5 + s.sum() / 100, rel=1e-6)
    assert r.equal_split_time_s == pytest.approx(0.5 + max(s) / 50, rel=1e-9)


def _mixed() -> LibraWorkload:
    return LibraWorkload((LibraCollective("allreduce", 3e9, (4, 4, -1)),
                     LibraCollective("allreduce", 8e9, (-1, -1, 4)),
                     LibraCollective("alltoall", 2e9, (4, 4, 4), count=3),
                     LibraCollective("allgather", 1e8, (4, -1, 4))), compute_s=0.1)


def test_solver_agrees_with_a_brute_force_grid():
    w = _mixed()
    r = solve(NET3, w, constraints=["B0 + B1 + B2 == 60"])
    grid = min(iteration_time(NET3, w, (a, b, 60 - a - b))
               for a, b in itertools.product(range(1, 59), repeat=2) if a + b < 60)
    assert r.time_s <= grid + 1e-9
    # a grid of 1 GB/s steps is within a few percent of the continuous optimum
    assert grid <= r.time_s * 1.05


def test_perf_per_cost_minimizes_the_product_over_cost_levels():
    w = _mixed()
    cons = ["B0 + B1 + B2 <= 300", "B2 >= 1"]
    r = solve(NET3, w, objective="perf-per-cost", constraints=cons)
    best = r.time_s * r.cost_usd
    for C in np.geomspace(cost(NET3, [1e-3, 1e-3, 1]) * 1.01, cost(NET3, [100, 100, 100]),
                          40):
        p = solve(NET3, w, constraints=cons, budget=float(C))
        assert best <= p.time_s * p.cost_usd * (1 + 1e-4)


def test_min_cost_meets_the_target_at_least_cost():
    w = _mixed()
    fast = solve(NET3, w, constraints=["B0 + B1 + B2 == 60"])
    target = fast.time_s * 1.5
    r = solve(NET3, w, objective="min-cost", time_target=target,
              constraints=["B0 + B1 + B2 <= 60"])
    assert r.time_s <= target * (1 + 1e-6) and r.cost_usd <= fast.cost_usd


def test_infeasible_and_unbounded_problems_are_named():
    w = _mixed()
    with pytest.raises(InfeasibleError) as e:
        solve(NET3, w, constraints=["B0 >= 400", "B1 <= 70", "B0 + B1 + B2 == 300"])
    assert str(e.value).endswith(": B0 >= 400; B0 + B1 + B2 == 300")   # B1 <= 70 innocent
    with pytest.raises(InfeasibleError) as e:                  # the target is to blame
        solve(NET3, w, objective="min-cost", constraints=["B0 + B1 + B2 <= 300"],
              time_target=1e-6)
    assert str(e.value).endswith(": time <= 1e-06 s; B0 + B1 + B2 <= 300")
    with pytest.raises(InputError):
        solve(NET3, w)   # nothing limits the bandwidth: unbounded
    with pytest.raises(InputError):
        solve(NET3, w, objective="min-cost")   # no time target


@pytest.mark.parametrize("text", ["B0 + B9 == 1", "B0 + ", "B0 = 3", "B0 ** 2 <= 1",
                                  "speed <= 3", "== 4"])
def test_bad_constraints_are_named(text):
    with pytest.raises(InputError) as e:
        parse_constraint(text, 3)
    assert text in e.value.item


def test_constraints_with_cost_and_constants():
    a, c, op, rhs = parse_constraint("2*B0 - B2 + 5 <= cost - 1", 3)
    np.testing.assert_allclose(a, [2, 0, -1])
    assert (c, op, rhs) == (-1.0, "<=", -6.0)


def test_libra_files_and_the_model_mapping(tmp_path):
    net = parse_network("hier:ring(4)x fc(8)x ring(4)x switch(32)")
    # LIBRA's own GPT-3 communicator (TP-16, DP-256) is what our placement gives
    assert communicators(net, 16) == ((4, 4, -1, -1), (-1, 2, 4, 32))
    (tmp_path / "comm.yml").write_text(
        "Forward: [4, 4, -1, -1]\nInputGrad: [4, 4, -1, -1]\nWeightGrad: [-1, 2, 4, 32]\n")
    (tmp_path / "w.txt").write_text(
        "attn -1 420000 ALLREDUCE 25165824 420000 ALLREDUCE 25165824 380000 NONE 0 1\n"
        "mlp -1 910000 ALLREDUCE 25165824 910000 ALLREDUCE 25165824 850000 ALLREDUCE "
        "100663296 1\n")
    comm = read_communicator(tmp_path / "comm.yml", 4)
    w = read_libra_workload(tmp_path / "w.txt", comm)
    assert w.compute_s == pytest.approx((420000 * 2 + 380000 + 910000 * 2 + 850000) * 1e-9)
    assert sum(c.count for c in w.collectives) == 5     # 4 TP all-reduces counted once
    assert [len(ly.fwd) + len(ly.ig) + len(ly.wg) for ly in w.layers] == [2, 3]
    b = [100.0] * 4
    want = w.compute_s + 4 * 2 * 25165824 * (3 / 4) / 100e9 + \
        2 * 100663296 * (1 / 2) / 100e9 * 0 + max(
            dimension_traffic("allreduce", 100663296, (-1, 2, 4, 32)) / 100e9)
    assert iteration_time(net, w, b) == pytest.approx(want)
    (tmp_path / "bad.txt").write_text("attn -1 1 ALLREDUCE 2\n")
    with pytest.raises(InputError) as e:
        read_libra_workload(tmp_path / "bad.txt", comm)
    assert e.value.item == "line 1"
    m = workload_from_model(net, parse_model("gpt3-175b"), parse_parallel("tp=16,dp=256"),
                            find_device("a100-80g"))
    kinds = {(c.kind, c.comm) for c in m.collectives}
    assert kinds == {("allreduce", (4, 4, -1, -1)), ("allreduce", (-1, 2, 4, 32))}
