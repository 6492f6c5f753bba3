"""``topocoll libra``: the record, LIBRA's own files, the Pareto curve."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topocoll.cli import app

runner = CliRunner()


def test_libra_json_and_pareto(tmp_path):
    png = tmp_path / "p.png"
    r = runner.invoke(app, ["libra", "-c", "B0 + B1 + B2 + B3 == 500", "--pareto", str(png),
                            "--points", "6", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["status"] == "optimal" and len(d["bandwidth_GBps"]) == 4
    assert sum(d["bandwidth_GBps"]) == pytest.approx(500, rel=1e-6)
    assert d["time_s"] <= d["equal_split_time_s"]
    assert png.stat().st_size > 0 and len(d["pareto"]) == 6
    times = [p["time_s"] for p in d["pareto"]]
    assert times == sorted(times, reverse=True)          # more money, never slower
    assert d["topology"].startswith("hier:ring(4,")


def test_libra_reads_libra_files(tmp_path):
    (tmp_path / "net.yml").write_text(
        "Topology: [Ring, FullyConnected, Switch]\nNpusCount: [16, 8, 32]\n"
        "CostDimension: [InterPackage, InterNode, InterPod]\n")
    (tmp_path / "comm.yml").write_text(
        "Forward: [16, -1, -1]\nInputGrad: [16, -1, -1]\nWeightGrad: [-1, 8, 32]\n")
    (tmp_path / "w.txt").write_text(
        "l0 -1 1000 ALLREDUCE 1000000 1000 ALLREDUCE 1000000 1000 ALLREDUCE 8000000 0\n")
    r = runner.invoke(app, ["libra", "--network", str(tmp_path / "net.yml"), "--workload",
                            str(tmp_path / "w.txt"), "--communicator",
                            str(tmp_path / "comm.yml"), "-c", "B0 + B1 + B2 == 300"])
    assert r.exit_code == 0, r.output
    assert "InterPod" in r.stdout and "speedup" in r.stdout
