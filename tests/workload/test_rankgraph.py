"""The per-rank task graph of an iteration: replayed, it gives simulate_iteration's time
operation by operation (two independent implementations of the same model), and it
round-trips through Chakra for ASTRA-sim."""

from __future__ import annotations

import json

import pytest

from topocoll.errors import InputError
from topocoll.topology.spec import parse_spec
from topocoll.workload import (
    CollectiveCoster,
    find_device,
    parse_model,
    parse_parallel,
    simulate_iteration,
)
from topocoll.workload.rankgraph import iteration_graph
from topocoll.workload.taskgraph import replay

MODEL = parse_model("transformer:hidden=1024,ffn=4096,heads=16,layers=8,seq=512,vocab=32000")
DEV = find_device("a100-80g")
TOP = parse_spec("dgx-a100:1")


@pytest.mark.parametrize("par", ["tp=2,pp=2,dp=2,mb=1,gb=8", "tp=1,pp=4,dp=2,mb=1,gb=16",
                                 "tp=4,pp=1,dp=2,mb=2,gb=8,zero=1",
                                 "tp=2,pp=2,dp=2,mb=1,gb=8,recompute=full",
                                 "tp=2,pp=2,dp=2,mb=1,gb=8,sp=1",
                                 "tp=1,pp=8,dp=1,mb=1,gb=3"])
def test_replay_equals_simulate_iteration(par):
    p = parse_parallel(par)
    cc = CollectiveCoster(TOP, algorithms=["ring", "direct", "binomial_tree"], bounds=False)
    want = simulate_iteration(MODEL, p, TOP, DEV, coster=cc, overlap_dp=False).iteration_s
    got = replay(iteration_graph(MODEL, p, DEV), cc).makespan_s
    assert got == pytest.approx(want, rel=1e-12)


def test_graph_shape_and_refusals():
    g = iteration_graph(MODEL, parse_parallel("tp=2,pp=2,dp=2,mb=1,gb=8"), DEV)
    r0 = [n for n in g.nodes if n.rank == 0]
    # stage 0 of 2 layers... 4 blocks: 4 micro-batches x 4 blocks x 2 passes x 2 all-reduces
    assert sum(n.kind == "coll" and n.name.startswith("tp") for n in r0) == 4 * 4 * 2 * 2
    assert sum(n.kind == "send" for n in r0) == 4 and sum(n.kind == "recv" for n in r0) == 4
    assert [n.name for n in r0 if n.kind == "coll" and n.name.startswith("dp")] == [
        "dp allreduce"]
    with pytest.raises(InputError):
        iteration_graph(MODEL, parse_parallel("tp=2,pp=2,dp=2,interleave=2,gb=8"), DEV)


def test_export_astra_and_replay_in_compatibility_mode(tmp_path):
    pytest.importorskip("chakra")
    from typer.testing import CliRunner

    from topocoll.cli import app

    runner = CliRunner()
    out = tmp_path / "astra"
    r = runner.invoke(app, ["export", "astra", "-o", str(out), "-m",
                            "transformer:hidden=1024,ffn=4096,heads=16,layers=4,seq=512,"
                            "vocab=32000", "-p", "tp=4,pp=2,dp=2,gb=4",
                            "-t", "hier:ring(4)x switch(4)", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["ranks"] == 16 and (out / "network.yml").is_file()
    groups = json.loads((out / "workload.comm_groups.json").read_text())
    assert sorted(map(len, groups.values())) == [2] * 8 + [4] * 4     # DP pairs, TP quads
    r = runner.invoke(app, ["import", "chakra", str(out), "--astra-network",
                            str(out / "network.yml"), "--astra-system",
                            str(out / "system.json"), "--json"])
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)
    assert rec["collectives"] > 0 and rec["transfers"] == 8 * 2 * 2  # pipelines x mb x 2
    assert rec["iteration_s"] > rec["compute_s"] > 0
    r = runner.invoke(app, ["export", "astra", "-o", str(out), "-p", "tp=8,pp=8,dp=1",
                            "-t", "fattree:k=4"])
    assert r.exit_code == 2 and "Traceback" not in r.output
