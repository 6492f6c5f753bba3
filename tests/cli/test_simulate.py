"""CLI: `topocoll simulate` and `--backend` on cost and compare."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from topocoll.cli import app

runner = CliRunner()


def _schedule(tmp_path, topo="ring:8", algo="ring"):
    path = tmp_path / "s.json"
    r = runner.invoke(app, ["synth", "-t", topo, "-a", algo, "-o", str(path)])
    assert r.exit_code == 0, r.output
    return path


def test_simulate_json_trace_heatmap(tmp_path):
    s = _schedule(tmp_path)
    trace, heat, csv = tmp_path / "t.json", tmp_path / "h.png", tmp_path / "u.csv"
    r = runner.invoke(app, ["simulate", str(s), "-t", "ring:8", "--backend", "flow",
                            "--trace", str(trace), "--heatmap", str(heat), "-s", "8MiB",
                            "--utilization", str(csv), "--json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.output)
    assert info["model"] == "flow" and info["transfers"] == 112 and info["steps"] == 14
    assert info["time_s"] == info["last_finish_s"] > 0
    assert info["busiest_links"] and 0 < info["busiest_links"][0]["mean_utilization"] <= 1
    ev = json.loads(trace.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in ev) == 112
    assert heat.read_bytes()[:4] == b"\x89PNG"
    lines = csv.read_text().splitlines()
    assert len(lines) == 101 and lines[0].startswith("t_start_s,t_end_s,0->1#")
    rows = np.loadtxt(csv, delimiter=",", skiprows=1)
    assert rows.shape == (100, 2 + 16) and rows[:, 2:].max() <= 1 + 1e-9
    assert rows[:, 2:].mean(axis=0).max() == pytest.approx(
        info["busiest_links"][0]["mean_utilization"], rel=1e-5)


def test_simulate_table_and_errors(tmp_path):
    s = _schedule(tmp_path)
    r = runner.invoke(app, ["simulate", str(s), "-t", "ring:8", "--alpha", "1us",
                            "--reduce-bandwidth", "100GB/s"])
    assert r.exit_code == 0 and "(flow)" in r.output
    r = runner.invoke(app, ["simulate", str(s), "-t", "ring:8", "--backend", "packet", "-s",
                            "4MiB"])
    assert r.exit_code == 0 and "(packet)" in r.output and "packets, 0 drops" in r.output
    r = runner.invoke(app, ["simulate", str(s), "-t", "ring:8", "--backend", "packet", "-s",
                            "4MiB", "--json"])
    assert json.loads(r.output)["model"] == "packet"
    r = runner.invoke(app, ["simulate", str(s), "-t", "ring:8", "--backend", "packet", "-s",
                            "16MiB", "--background-load", "0.5", "--seed", "2"])
    assert r.exit_code == 0 and "background flows" in r.output, r.output
    for args, text in ((["--background-load", "0.5"], "needs --backend packet"),
                       (["--backend", "packet", "--background-load", "2"],
                        "must be a fraction in [0, 1]"),
                       (["--backend", "packet", "--background-load", "0.2",
                         "--background-dist", "video"], "--background-dist must be one of"),
                       (["--backend", "analytical"], "simulate supports"),
                       (["--alpha", "soon"], "cannot parse time"),
                       (["-t", "ring:4"], "not in topology")):
        cmd = ["simulate", str(s), "-t", "ring:8", *args]
        r = runner.invoke(app, cmd)
        assert r.exit_code == 2, (args, r.output)
        assert text in r.output and "Traceback" not in r.output
        assert len(r.output.strip().splitlines()) == 1


def test_cost_and_compare_backends_agree_without_contention(tmp_path):
    s = _schedule(tmp_path)
    times = {}
    for b in ("analytical", "flow", "packet"):
        r = runner.invoke(app, ["cost", str(s), "-t", "ring:8", "-s", "1MiB", "--backend", b,
                                "--json"])
        assert r.exit_code == 0, r.output
        times[b] = json.loads(r.output)[0]["time_s"]
    assert abs(times["flow"] - times["analytical"]) <= 1e-12 * times["analytical"]
    assert times["flow"] < times["packet"] < 1.05 * times["flow"]
    r = runner.invoke(app, ["compare", "-t", "ring:8", "-a", "ring", "--backend", "flow",
                            "--json"])
    assert r.exit_code == 0, r.output
    row = json.loads(r.output)[0]
    assert row["model"] == "flow" and row["verified"]
    r = runner.invoke(app, ["cost", str(s), "-t", "ring:8", "--backend", "warp"])
    assert r.exit_code == 2 and "--backend must be one of" in r.output and "'warp'" in r.output
