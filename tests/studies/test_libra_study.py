"""The LIBRA study on one network and two workloads: both models, the flow-level check,
and the tables."""

from __future__ import annotations

import json

import pytest

from topocoll.fabric import iteration_time, parse_network, read_communicator, read_libra_workload
from topocoll.studies.libra import (
    LIBRA_NETWORKS,
    _workload,
    render_mix_table,
    run_libra_mix,
    run_libra_study,
    write_libra_study,
)


def test_libra_study_one_network(tmp_path):
    cases = run_libra_study(networks=["4d"], workloads=["GPT-3 (TP-16, DP-256)",
                                                        "MSFT-1T (TP-128, DP-32)"])
    assert [(c.workload[:5], c.objective, c.model) for c in cases] == [
        ("GPT-3", "perf", "libra"), ("GPT-3", "perf-per-cost", "libra"),
        ("GPT-3", "perf", "rich"), ("MSFT-", "perf", "libra"),
        ("MSFT-", "perf-per-cost", "libra"), ("MSFT-", "perf", "rich")]
    gpt_libra, _, gpt_rich, res_libra, _, res_rich = cases
    # LIBRA's model (slowest dimension, all FC links usable) is optimistic on its fabric
    assert gpt_libra.flow_time_s > 2 * gpt_libra.time_s
    assert res_libra.flow_time_s >= res_libra.time_s
    # the richer model is the hierarchical schedule's: simulation agrees
    for c in (gpt_rich, res_rich):
        assert c.flow_time_s == pytest.approx(c.time_s, rel=1e-3)
        assert c.libra_alloc_flow_time_s >= c.flow_time_s * (1 - 1e-6)
    assert gpt_rich.libra_alloc_flow_time_s / gpt_rich.flow_time_s > 1.3
    paths = write_libra_study(tmp_path, cases)
    assert len(json.loads(paths[0].read_text())) == 6
    table = paths[1].read_text()
    assert table.count("| 4d |") == 6 and "gain (flow)" in table


def test_libra_study_mix(tmp_path):
    names = ["GPT-3 (TP-16, DP-256)", "Turing-NLG (DP-4096)"]
    mixes = run_libra_mix(networks=["4d"], workloads=names)
    assert [(m.model, m.weights) for m in mixes] == [
        ("libra", "time"), ("libra", "slowdown"), ("rich", "time"), ("rich", "slowdown")]
    for m in mixes:
        # no job beats its own optimum; weighed by slowdown, the mean slowdown is least
        assert min(m.slowdown) >= 1 - 1e-6
        assert sum(m.bandwidth_GBps) == pytest.approx(500, rel=1e-6)
    for t, s in (mixes[:2], mixes[2:]):
        assert s.mean_slowdown <= t.mean_slowdown + 1e-6
        assert s.mean_slowdown <= s.equal_mean_slowdown
    table = render_mix_table(mixes, names)
    assert table.count("| 4d |") == 4 and "| GPT-3 | Turing-NLG |" in table


def test_libra_rows_run_from_libra_files(tmp_path):
    names = ["GPT-3 (TP-16, DP-256)", "DLRM (DP-4096, tables model-parallel, 128/NPU)"]
    direct = run_libra_study(networks=["4d"], workloads=names, check=False)
    files = run_libra_study(networks=["4d"], workloads=names, check=False, inputs=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "4d_DLRM.txt", "4d_DLRM_comm.yml", "4d_DLRM_network.yml", "4d_GPT-3.txt",
        "4d_GPT-3_comm.yml", "4d_GPT-3_network.yml"]
    for a, b in zip(direct, files, strict=True):
        # LIBRA's model reads the same iteration from its own format (counts folded into
        # sizes, integer ns and bytes); the richer model keeps the workload itself
        assert b.bandwidth_GBps == pytest.approx(a.bandwidth_GBps, rel=1e-3)  # flat optimum
        assert b.time_s == pytest.approx(a.time_s, rel=1e-5)   # perf-per-cost: rtol 1e-6
    # the same iteration under LIBRA's model at any allocation, to the rounding of ns
    net = parse_network(LIBRA_NETWORKS["4d"])
    for name, stem in zip(names, ("4d_GPT-3", "4d_DLRM"), strict=True):
        w = _workload(net, name)
        back = read_libra_workload(tmp_path / f"{stem}.txt",
                                   read_communicator(tmp_path / f"{stem}_comm.yml", 4))
        for b in ([125.0] * 4, [300.0, 100.0, 60.0, 40.0]):
            assert iteration_time(net, back, b) == pytest.approx(
                iteration_time(net, w, b), abs=1.5e-9 * len(w.layers))   # whole ns
    comm = (tmp_path / "4d_GPT-3_comm.yml").read_text()
    assert "Forward: [4, 4, -1, -1]" in comm and "WeightGrad: [-1, 2, 4, 32]" in comm
    mixes = run_libra_mix(networks=["4d"], workloads=names, inputs=tmp_path)
    same = run_libra_mix(networks=["4d"], workloads=names)
    for a, b in zip(mixes, same, strict=True):
        assert a.slowdown == pytest.approx(b.slowdown, rel=1e-5)
