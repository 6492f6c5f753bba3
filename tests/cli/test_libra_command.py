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


def test_libra_richer_model_check_and_compare():
    r = runner.invoke(app, ["libra", "-c", "B0 + B1 + B2 + B3 == 500", "--algorithm", "choose",
                            "--latency", "500ns", "--phases", "sequential", "--loop", "overlap",
                            "--check", "--compare", "125,125,125,125", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["model"] == {"algorithms": ["choose"] * 4, "latency_s": [5e-7] * 4,
                          "phases": "sequential", "loop": "overlap"}
    assert d["duality_gap"] < 1e-6 and d["algorithms"]
    # the sequential model is the hierarchical schedule's: the flow check agrees closely
    assert d["check"]["complete"] and d["check"]["ratio"] == pytest.approx(1.0, abs=0.01)
    assert d["compare"]["time_s"] == pytest.approx(d["equal_split_time_s"])
    assert d["compare"]["speedup"] >= 1.0


def test_libra_layered_model_and_bad_options():
    r = runner.invoke(app, ["libra", "-m", "resnet50", "-c", "B0 + B1 + B2 + B3 == 500",
                            "--batch-per-npu", "16", "--loop", "no-overlap", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["workload"] == "resnet50 dp=4096,mb=16"
    for args, item in ((["--latency", "1us,2us"], "--latency"),
                       (["--algorithm", "ring,foo,ring,ring"], "--algorithm"),
                       (["--phases", "both"], "--phases"),
                       (["--loop", "maybe"], "--loop"),
                       (["--compare", "1,2,x,4"], "--compare"),
                       (["--latency", "fast"], "--latency")):
        r = runner.invoke(app, ["libra", "-c", "B0 + B1 + B2 + B3 == 500", *args])
        assert r.exit_code == 2, (args, r.output)
        assert item in r.output and "Traceback" not in r.output


def test_libra_cost_model_file(tmp_path):
    base = runner.invoke(app, ["libra", "-c", "B0 + B1 + B2 + B3 == 500", "--json"])
    (tmp_path / "cm.yml").write_text(
        "InterChiplet: {Link: 4.0}\nInterPackage: {Link: 8.0, Switch: 26.0}\n"
        "InterNode: {Link: 8.0, Switch: 26.0}\nInterPod: {Link: 15.6, Switch: 36.0, Nic: 63.2}\n")
    r = runner.invoke(app, ["libra", "-c", "B0 + B1 + B2 + B3 == 500", "--cost-model",
                            str(tmp_path / "cm.yml"), "--json"])
    assert r.exit_code == 0, r.output
    a, b = json.loads(base.stdout), json.loads(r.stdout)
    assert b["bandwidth_GBps"] == pytest.approx(a["bandwidth_GBps"], rel=1e-6)  # perf: price-blind
    assert b["cost_usd"] == pytest.approx(2 * a["cost_usd"], rel=1e-6)        # prices doubled
    (tmp_path / "bad.yml").write_text("InterChiplet: {Link: 4.0}\n")
    r = runner.invoke(app, ["libra", "-c", "B0 + B1 + B2 + B3 == 500", "--cost-model",
                            str(tmp_path / "bad.yml")])
    assert r.exit_code == 2 and "InterPackage" in r.output
    (tmp_path / "neg.yml").write_text("InterChiplet: {Link: -1}\n")
    r = runner.invoke(app, ["libra", "-c", "B0 + B1 + B2 + B3 == 500", "--cost-model",
                            str(tmp_path / "neg.yml")])
    assert r.exit_code == 2 and "Link" in r.output


def test_check_that_disagrees_says_so_and_ranks_the_allocations():
    """Issue 28: the optimum is 1.12x faster than the equal split in LIBRA's model but the
    flow check takes 2.39x the modelled time; the record flags it and ranks the optimum,
    the equal split and the user's allocation at flow level."""
    import json as _json

    from typer.testing import CliRunner

    from topocoll.cli import app

    r = CliRunner().invoke(app, ["libra", "-c", "B0 + B1 + B2 + B3 == 500", "--check",
                                 "--compare", "125,125,125,125", "--json"])
    assert r.exit_code == 0, r.output
    c = _json.loads(r.stdout)["check"]
    assert c["ratio"] > 1.1 and c["disagrees"] is True
    assert set(c["checked_s"]) == {"optimum", "equal split", "compare"}
    assert c["best_checked"] == min(c["checked_s"], key=c["checked_s"].get)
    assert c["checked_s"]["optimum"] == c["flow_iteration_s"]
    r = CliRunner().invoke(app, ["libra", "-c", "B0 + B1 + B2 + B3 == 500", "--check"])
    assert r.exit_code == 0 and "warning" in r.output and "disagrees" in r.output


def test_the_readme_s_libra_files_are_shipped_and_run():
    """The README's LIBRA-format example reads files that ship in examples/libra."""
    import json as _json
    from pathlib import Path

    ex = Path(__file__).resolve().parents[2] / "examples" / "libra"
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "examples/libra/4d_network.yml" in readme
    r = runner.invoke(app, ["libra", "--network", str(ex / "4d_network.yml"), "--workload",
                            str(ex / "GPT_3.txt"), "--communicator", str(ex / "GPT_3_4d.yml"),
                            "--objective", "perf", "-c", "B0 + B1 + B2 + B3 == 500", "--json"])
    assert r.exit_code == 0, r.output
    d = _json.loads(r.stdout)
    assert d["status"] == "optimal" and d["workload"] == "GPT_3"
    assert d["time_s"] <= d["equal_split_time_s"]


def test_libra_jobs_make_a_weighted_mix():
    ex = "examples/libra"
    r = runner.invoke(app, ["libra", "--network", f"{ex}/4d_network.yml", "-c",
                            "B0 + B1 + B2 + B3 == 500", "-j", "gpt3-175b:tp=16",
                            "-j", "megatron-1t:tp=128,weight=1",
                            "-j", f"{ex}/GPT_3.txt+{ex}/GPT_3_4d.yml:weight=2", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    jobs = d["workloads"]
    assert [j["weight"] for j in jobs] == [0.25, 0.25, 0.5]
    assert jobs[0]["name"].startswith("gpt3-175b tp=16") and jobs[2]["name"] == "GPT_3"
    assert d["time_s"] == pytest.approx(sum(j["weight"] * j["time_s"] for j in jobs))
    for j in jobs:                       # sharing a fabric never beats a job's own optimum
        assert j["time_s"] >= j["own_optimum_time_s"] * (1 - 1e-6)
    # the same GPT-3 from our model and from its exported LIBRA file: the same optimum
    assert jobs[0]["own_optimum_bandwidth_GBps"] == pytest.approx(
        jobs[2]["own_optimum_bandwidth_GBps"], rel=1e-2)
    one = json.loads(runner.invoke(app, ["libra", "-c", "B0 + B1 + B2 + B3 == 500",
                                         "-m", "megatron-1t", "-p", "tp=128",
                                         "--json"]).stdout)
    assert one["time_s"] == pytest.approx(jobs[1]["own_optimum_time_s"], rel=1e-6)
    t = runner.invoke(app, ["libra", "-c", "B0 + B1 + B2 + B3 == 500", "-j",
                            "gpt3-175b:tp=16,seq=1024", "-j", "resnet50:weight=3"])
    assert t.exit_code == 0, t.output
    assert "own optimum" in t.stdout and "weighted mean iteration" in t.stdout


def test_libra_mix_weighed_by_slowdown_minimizes_the_mean_slowdown():
    base = ["libra", "-c", "B0 + B1 + B2 + B3 == 500", "-j", "gpt3-175b:tp=16", "-j",
            "resnet50", "--json", "--mix-weights"]
    by_time = json.loads(runner.invoke(app, [*base, "time"]).stdout)
    by_slow = json.loads(runner.invoke(app, [*base, "slowdown"]).stdout)
    assert by_slow["mean_slowdown"] < by_time["mean_slowdown"]
    assert by_time["mean_slowdown"] == pytest.approx(
        sum(0.5 * x["time_s"] / x["own_optimum_time_s"] for x in by_time["workloads"]))
    # weighed by slowdown, the short job (ResNet-50, ms iterations) dominates the weights
    assert by_slow["workloads"][1]["weight"] > 0.9
