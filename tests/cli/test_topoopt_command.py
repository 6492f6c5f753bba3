"""``topocoll topoopt``: the record the issue names, reproducibility, the table."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from topocoll.cli import app

runner = CliRunner()
ARGS = ["topoopt", "--model", "dlrm", "--servers", "16", "--degree", "4", "--port-bw",
        "100Gbps", "--rounds", "2", "--steps", "200", "--seed", "3"]


def test_json_record_and_reproducibility():
    r = runner.invoke(app, [*ARGS, "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    for key in ("jumps", "matchings", "diameter", "strategy", "iteration_s", "cost_usd",
                "fattree_iteration_s", "fattree_bandwidth"):
        assert key in d, key
    ports = d["degree_allreduce"] + d["degree_mp"]
    assert ports == 4 and len(d["matchings"]) == d["degree_mp"]
    assert sum(len(js) for js in d["jumps"].values()) * 2 == d["degree_allreduce"]
    assert d["iteration_s"] > d["compute_s"] > 0
    assert d["speedup_vs_fattree"] == d["fattree_iteration_s"] / d["iteration_s"]
    assert set(d["baselines"]) == {"fattree", "fattree_2to1", "ideal_switch", "expander", "ocs"}
    assert d["strategy"]["counts"]["pipeline"] in (1, 2, 4, 8)
    again = runner.invoke(app, [*ARGS, "--json"])
    assert again.stdout == r.stdout                      # same seed, same bytes


def test_table_and_released_code_split():
    r = runner.invoke(app, [*ARGS, "--split", "all-reduce", "--no-baselines"])
    assert r.exit_code == 0, r.output
    assert "TopoOpt" in r.stdout and "4 to rings" in r.stdout
