"""`topocoll bound`: exact optimum with the critical cut; errors exit 2."""

from __future__ import annotations

import json
from fractions import Fraction

from typer.testing import CliRunner

from topocoll.cli import app

runner = CliRunner()


def test_bound_json_torus():
    r = runner.invoke(app, ["bound", "--topology", "torus:4x4x4", "--collective", "allgather",
                            "--size", "1GiB", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    # (N-1)/(2 D B) per block byte with B = 50 GB/s: 63 / 300e9
    assert Fraction(d["exact"]) == Fraction(63, 300 * 10**9)
    assert d["time_s"] == float(Fraction(63, 300 * 10**9) * 2**30 / 64)
    assert d["algbw_Bps"] == 2**30 / d["time_s"] and len(d["critical_cut"]) == 63


def test_bound_allreduce_reports_rs_ag_and_text_output():
    r = runner.invoke(app, ["bound", "-t", "ring:8", "-c", "allreduce", "--json"])
    d = json.loads(r.output)
    assert d["rs_ag_time_s"] >= d["time_s"] > 0
    r = runner.invoke(app, ["bound", "-t", "dgx:2,gpus=4", "-c", "broadcast", "--root", "3"])
    assert r.exit_code == 0 and "critical cut" in r.output


def test_bound_errors_exit_2():
    r = runner.invoke(app, ["bound", "-t", "ring:4", "-c", "alltoall"])
    assert r.exit_code == 2 and "alltoall" in r.output
    r = runner.invoke(app, ["bound", "-t", "ring:4", "-c", "allgather", "--ranks", "0,9"])
    assert r.exit_code == 2 and "rank 9" in r.output


def test_bound_barrier_certifies_the_floor():
    r = runner.invoke(app, ["bound", "-t", "ring:4,bw=8Gbps,lat=1us", "-c", "allgather",
                            "-s", "4MB", "--barrier", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    # two steps reach the cut bound: floor = optimum + two latencies (tests/optimal/
    # test_stockbound.py shows a schedule attaining it)
    assert d["barrier_steps"] == 2 and d["barrier_certificate"] == "relay-stock"
    assert abs(d["barrier_floor_s"] - (d["time_s"] + 2e-6)) < 1e-12
    r = runner.invoke(app, ["bound", "-t", "ring:4", "-c", "allreduce", "--barrier"])
    assert r.exit_code == 0 and "any reduce-scatter followed by an allgather" in r.output
    r = runner.invoke(app, ["bound", "-t", "dgx-h100:8", "--barrier", "--json"])
    d = json.loads(r.output)
    assert d["barrier_certificate"].startswith("group-drain (group of 8)")
    assert d["barrier_floor_s"] > 1.0175 * d["time_s"]
    r = runner.invoke(app, ["bound", "-t", "ring:4", "-c", "broadcast", "--root", "0",
                            "--barrier"])
    assert r.exit_code == 2 and "broadcast" in r.output
    r = runner.invoke(app, ["bound", "-t", "ring:4", "--ranks", "0,1", "--barrier"])
    assert r.exit_code == 2 and "--ranks" in r.output
