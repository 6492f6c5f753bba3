"""LIBRA's multi-workload objective: a weighted mix of workloads on one network, against
brute force and the single-workload solver."""

from __future__ import annotations

import itertools

import pytest

from topocoll.errors import InputError, InputTypeError
from topocoll.fabric import (
    LibraCollective,
    LibraWorkload,
    LibraWorkloadMix,
    TimeModel,
    check_allocation,
    iteration_time,
    parse_network,
    solve,
    workload_from_model,
    workload_parts,
)
from topocoll.workload import find_device, parse_model, parse_parallel

NET3 = parse_network("hier:ring(4)x fc(4)x switch(4)")
CONS = ["B0 + B1 + B2 == 60"]


def _a() -> LibraWorkload:      # tensor-parallel-like: heavy on the inner dimensions
    return LibraWorkload((LibraCollective("allreduce", 3e9, (4, 4, -1), count=2),
                     LibraCollective("allgather", 1e8, (4, -1, 4))), compute_s=0.1, name="a")


def _b() -> LibraWorkload:      # data-parallel-like: heavy on the outer switch
    return LibraWorkload((LibraCollective("allreduce", 8e9, (-1, -1, 4)),
                     LibraCollective("alltoall", 2e9, (4, 4, 4), count=3)), compute_s=0.2,
                    name="b")


def test_weights_are_normalized_and_scale_free():
    m1 = LibraWorkloadMix(((_a(), 3.0), (_b(), 1.0)))
    m2 = LibraWorkloadMix(((_a(), 0.75), (_b(), 0.25)))
    assert [x for _, x in m1.parts] == [0.75, 0.25]
    r1, r2 = solve(NET3, m1, constraints=CONS), solve(NET3, m2, constraints=CONS)
    assert r1.bandwidth_GBps == pytest.approx(r2.bandwidth_GBps, rel=1e-6)
    assert workload_parts(_a()) == ((_a(), 1.0),)
    assert m1.compute_s == pytest.approx(0.75 * 0.1 + 0.25 * 0.2)


def test_mix_of_one_is_the_workload():
    one = solve(NET3, LibraWorkloadMix(((_b(), 5.0),)), constraints=CONS)
    alone = solve(NET3, _b(), constraints=CONS)
    assert one.bandwidth_GBps == pytest.approx(alone.bandwidth_GBps, rel=1e-5)
    assert one.time_s == pytest.approx(alone.time_s, rel=1e-9)
    assert one.workloads[0]["own_optimum_time_s"] == pytest.approx(alone.time_s, rel=1e-9)


@pytest.mark.parametrize("weights", [(1.0, 1.0), (5.0, 1.0), (1.0, 20.0)])
def test_mix_optimum_agrees_with_a_brute_force_grid(weights):
    mix = LibraWorkloadMix(((_a(), weights[0]), (_b(), weights[1])))
    r = solve(NET3, mix, constraints=CONS)
    wa, wb = (x / sum(weights) for x in weights)

    def mean(B) -> float:
        return wa * iteration_time(NET3, _a(), B) + wb * iteration_time(NET3, _b(), B)

    assert r.time_s == pytest.approx(mean(r.bandwidth_GBps), rel=1e-9)
    grid = min(mean((x, y, 60 - x - y))
               for x, y in itertools.product(range(1, 59), repeat=2) if x + y < 60)
    assert r.time_s <= grid + 1e-9 and grid <= r.time_s * 1.05
    # no workload does better than its own optimum; the mix lies between them
    for row in r.workloads:
        assert row["time_s"] >= row["own_optimum_time_s"] * (1 - 1e-6)
    assert r.time_s <= mean(r.workloads[0]["own_optimum_bandwidth_GBps"]) + 1e-9
    assert r.time_s <= mean(r.workloads[1]["own_optimum_bandwidth_GBps"]) + 1e-9


def test_heavier_weight_pulls_the_allocation_towards_that_workload():
    own_a = solve(NET3, _a(), constraints=CONS).bandwidth_GBps
    heavy_a = solve(NET3, LibraWorkloadMix(((_a(), 1000.0), (_b(), 1.0))), constraints=CONS)
    heavy_b = solve(NET3, LibraWorkloadMix(((_a(), 1.0), (_b(), 1000.0))), constraints=CONS)
    assert heavy_a.bandwidth_GBps == pytest.approx(own_a, rel=0.05)
    assert heavy_b.bandwidth_GBps[2] > heavy_a.bandwidth_GBps[2] * 2


def test_mix_under_the_overlap_loop_and_its_flow_check():
    net = parse_network("hier:ring(4)x fc(8)")
    dev = find_device("a100-80g")
    jobs = [workload_from_model(net, parse_model("gpt3-175b:layers=4"),
                                parse_parallel(p), dev) for p in ("tp=4,dp=8", "tp=1,dp=32")]
    mix = LibraWorkloadMix(((jobs[0], 1.0), (jobs[1], 2.0)))
    model = TimeModel(algorithms=("bidirectional_ring", "direct"), phases="sequential",
                      loop="overlap")
    r = solve(net, mix, constraints=["B0 + B1 == 200"], model=model)
    parts = [iteration_time(net, j, r.bandwidth_GBps, model) for j in jobs]
    assert r.time_s == pytest.approx(parts[0] / 3 + 2 * parts[1] / 3, rel=1e-6)
    for row, t in zip(r.workloads, parts, strict=True):
        assert row["time_s"] == pytest.approx(t, rel=1e-9)
        assert t >= row["own_optimum_time_s"] * (1 - 1e-6)
    c = check_allocation(net, mix, r.bandwidth_GBps, model)
    assert c["iteration_s"] == pytest.approx(r.time_s, rel=1e-9)
    each = [w["flow_iteration_s"] for w in c["workloads"]]
    assert c["flow_iteration_s"] == pytest.approx(each[0] / 3 + 2 * each[1] / 3, rel=1e-9)
    # the sequential model is the hierarchical schedule's own: flow agrees
    assert c["ratio"] == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("parts", [(), ((None, 1.0),), "bad-weight"])
def test_bad_mixes_are_refused(parts):
    if parts == "bad-weight":
        parts = ((_a(), -1.0),)
    with pytest.raises((InputError, InputTypeError)):
        LibraWorkloadMix(parts)


def test_libra_format_writer_refuses_what_the_format_cannot_hold(tmp_path):
    from topocoll.fabric import LibraLayer, write_libra_inputs, write_libra_workload

    two = LibraWorkload.from_layers([LibraLayer("l0", 1e-3, wg=(
        LibraCollective("allreduce", 1e6, (4, 4, -1)),
        LibraCollective("allreduce", 1e6, (-1, -1, 4))))])
    with pytest.raises(InputError, match="one collective per phase"):
        write_libra_workload(two, tmp_path / "w.txt", 3)
    mixed = LibraWorkload.from_layers([
        LibraLayer("l0", wg=(LibraCollective("allreduce", 1e6, (4, 4, -1)),)),
        LibraLayer("l1", wg=(LibraCollective("allreduce", 1e6, (-1, -1, 4)),))])
    with pytest.raises(InputError, match="one communicator per phase"):
        write_libra_workload(mixed, tmp_path / "w.txt", 3)
    # counts become bytes, the tail the first layer's weight-gradient compute
    w = LibraWorkload.from_layers([LibraLayer("l0", 1e-3, 2e-3, 3e-3, fwd=(
        LibraCollective("allreduce", 1e6, (4, -1, -1), count=3),))], tail_s=5e-3)
    n, t, c = write_libra_inputs(tmp_path, "x", NET3, w)
    assert t.read_text().split() == ["l0", "-1", "1000000", "ALLREDUCE", "3000000",
                                     "2000000", "NONE", "0", "8000000", "NONE", "0", "0"]
    assert "InputGrad: [-1, -1, -1]" in c.read_text() and "Switch" in n.read_text()
