"""ASTRA-sim compatibility mode: the formulas of formats.md section 2.3, ASTRA-sim's own
regression case (tests/rt_template: 117,780 cycles), and the command line on the same
Chakra trace that case feeds ASTRA-sim."""

from __future__ import annotations

import json
import math

import pytest

from topocoll.errors import InputError, NotSupportedError
from topocoll.topology.io import read_astra_network
from topocoll.workload.astra_compat import (
    AstraCoster,
    AstraSystem,
    collective_time_ns,
    phases,
    read_astra_system,
)

RING8 = read_astra_network({"topology": ["Ring"], "npus_count": [8], "bandwidth": [50.0],
                            "latency": [500.0]})
#: ASTRA-sim's tests/rt_template/inputs/system_cfg.json
RT_SYSTEM = {"scheduling-policy": "LIFO", "endpoint-delay": 10,
             "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4,
             "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
             "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"],
             "collective-optimization": "localBWAware", "local-mem-bw": 50, "boost-mode": 0}
RT_CYCLES = 117_780            # ASTRA-sim's tests/rt_template/refs/stdout.txt


def test_ring_allreduce_follows_the_documented_formula():
    sys_ = read_astra_system(RT_SYSTEM)
    C, S, p = 1_048_576, 4, 8
    alpha, beta, delta, mem = 500.0, 50 * 2**30 / 1e9, 10.0, 50.0
    m = C / (S * p)
    want = S * (2 * (p - 1) * (alpha + m / beta + delta) + (p - 1) * 3 * m / mem)
    assert collective_time_ns("allreduce", C, RING8, sys_) == pytest.approx(want, rel=1e-12)
    # ring all-gather: S (p - 1) hops of one chunk
    ag = collective_time_ns("allgather", C, RING8, sys_)
    assert ag == pytest.approx(S * (p - 1) * (alpha + (C / S) / beta + delta), rel=1e-12)


def test_astra_sims_own_regression_case_within_a_tenth_of_a_percent():
    t = collective_time_ns("allreduce", 1_048_576, RING8, read_astra_system(RT_SYSTEM))
    assert abs(t / RT_CYCLES - 1) < 1e-3
    assert round(t) == 117_790          # ten nanoseconds more than ASTRA-sim (documented)


def test_chunks_pipeline_through_dimensions_and_active_chunks_overlap():
    net = read_astra_network({"topology": ["Ring", "Switch"], "npus_count": [4, 8],
                              "bandwidth": [100.0, 25.0], "latency": [200.0, 1500.0]})
    one = AstraSystem(splits=1, local_mem_bw_GBps=1e12)
    four = AstraSystem(splits=4, local_mem_bw_GBps=1e12)
    C = 64e6
    # baseline: the all-reduce on every dimension in turn
    assert [k for k, _, _ in phases("allreduce", C, [4, 8], one)] == ["allreduce"] * 2
    lb = AstraSystem(collective_optimization="localBWAware")
    assert [(k, d, c) for k, d, c in phases("allreduce", C, [4, 8], lb)] == [
        ("reduce_scatter", 0, C), ("allreduce", 1, C / 4), ("allgather", 0, C / 4)]
    t1, t4 = (collective_time_ns("allreduce", C, net, s) for s in (one, four))
    assert t4 < t1                       # four chunks overlap the two dimensions
    two = AstraSystem(splits=4, active_chunks=2, local_mem_bw_GBps=1e12)
    assert collective_time_ns("allreduce", C, net, two) < t4
    # halving-doubling on a switch: log2(8) steps each way, two hops per message
    hd = AstraSystem(splits=1, all_reduce=("ring", "halvingDoubling"),
                     local_mem_bw_GBps=1e12)
    sw = collective_time_ns("allreduce", C, net, hd, involved=[False, True])
    beta, alpha = 25 * 2**30 / 1e9, 2 * 1500.0
    want = 2 * sum(alpha + C / 2 ** (i + 1) / beta + 10 for i in range(3))
    assert sw == pytest.approx(want, rel=1e-9)       # reductions at 1e12 GB/s: ~0


def test_bad_inputs_are_named():
    with pytest.raises(InputError) as e:
        read_astra_system({"all-reduce-implementation": ["tree"]})
    assert e.value.item == "all-reduce-implementation"
    with pytest.raises(InputError) as e:
        read_astra_system({"endpoint-delay": -1})
    assert e.value.item == "endpoint-delay"
    with pytest.raises(NotSupportedError):
        AstraCoster(RING8, AstraSystem()).time("x", "allreduce", (0, 1, 2), 1e6)  # 3 of 8
    # 4 of 8 ring members, two links apart: the 4-NPU ring with twice the latency
    c = AstraCoster(RING8, AstraSystem())
    half = read_astra_network({"topology": ["Ring"], "npus_count": [4], "bandwidth": [50.0],
                               "latency": [1000.0]})
    assert c.time("x", "allreduce", (0, 2, 4, 6), 1e6) == pytest.approx(
        collective_time_ns("allreduce", 1e6, half, AstraSystem()) * 1e-9, rel=1e-12)
    assert math.isclose(AstraCoster(RING8, AstraSystem()).time("x", "allreduce",
                                                               tuple(range(8)), 0.0), 0.0)


def test_command_line_on_the_regression_trace(tmp_path):
    pytest.importorskip("chakra")
    from typer.testing import CliRunner

    from topocoll.cli import app
    from topocoll.workload.chakra_et import write_chakra
    from topocoll.workload.taskgraph import TaskGraph, TaskNode

    # the trace of tests/rt_template: one 1 MiB all-reduce node per NPU
    g = TaskGraph(8, tuple(TaskNode(1 + 10 * r, r, "coll", "All-Reduce",
                                    collective="allreduce", size=1_048_576.0,
                                    group=tuple(range(8))) for r in range(8)))
    write_chakra(g, tmp_path / "et", prefix="chakra_trace")
    (tmp_path / "network.json").write_text(json.dumps(
        {"topology": ["Ring"], "npus_count": [8], "bandwidth": [50.0], "latency": [500.0]}))
    (tmp_path / "system.json").write_text(json.dumps(RT_SYSTEM))
    r = CliRunner().invoke(app, ["import", "chakra", str(tmp_path / "et"), "--astra-network",
                                 str(tmp_path / "network.json"), "--astra-system",
                                 str(tmp_path / "system.json"), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["mode"] == "astra-compat" and abs(d["iteration_cycles"] / RT_CYCLES - 1) < 1e-3
