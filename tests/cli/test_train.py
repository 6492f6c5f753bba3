"""``topocoll train``: the record it prints and the timeline it writes."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from topocoll.cli import app

runner = CliRunner()
TINY = "transformer:hidden=1024,ffn=4096,heads=16,layers=8,seq=512,vocab=32000"


def test_train_json_record_and_trace(tmp_path):
    tr = tmp_path / "it.json"
    r = runner.invoke(app, ["train", "-m", TINY, "-p", "tp=2,pp=2", "-t", "dgx:2",
                            "--global-batch", "16", "-a", "ring,direct", "--trace", str(tr),
                            "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    for key in ("iteration_s", "compute_s", "exposed_comm_s", "bubble_s", "mfu",
                "tflops_per_gpu", "memory_gib", "breakdown"):
        assert key in d
    assert d["parallel"].startswith("tp=2,pp=2,dp=4") and d["topology"] == "dgx:2"
    assert d["iteration_s"] >= d["compute_s"] + d["exposed_comm_s"] - 1e-12
    ev = json.loads(tr.read_text())["traceEvents"]
    spans = [e for e in ev if e["ph"] == "X"]
    # 16 sequences over dp=4: 4 micro-batches; 2 stages x 4 x (forward, backward), and a
    # data-parallel and an optimizer span per stage
    assert len(spans) == 2 * 4 * 2 + 2 * 2
    assert max(e["ts"] + e["dur"] for e in spans) == \
        __import__("pytest").approx(d["iteration_s"] * 1e6)


def test_train_table_names_model_fabric_and_collectives():
    r = runner.invoke(app, ["train", "-m", TINY, "-p", "tp=4,pp=1", "-t", "dgx:1",
                            "-a", "ring", "--seq", "256"])
    assert r.exit_code == 0, r.output
    assert "seq=256" in r.stdout and "dgx:1" in r.stdout and "tp allreduce: ring" in r.stdout
    assert "MFU" in r.stdout


def test_train_without_bounds_and_with_the_flow_backend():
    r = runner.invoke(app, ["train", "-m", TINY, "-p", "tp=4,pp=1", "-t", "dgx:1",
                            "-a", "ring", "--no-bounds"])
    assert r.exit_code == 0, r.output
    assert "tp allreduce: ring" in r.stdout and "of bound" not in r.stdout
    a = json.loads(runner.invoke(app, ["train", "-m", TINY, "-p", "tp=4,pp=1", "-t", "dgx:1",
                                       "-a", "ring", "--json"]).stdout)
    f = json.loads(runner.invoke(app, ["train", "-m", TINY, "-p", "tp=4,pp=1", "-t", "dgx:1",
                                       "-a", "ring", "-b", "flow", "--json"]).stdout)
    # one ring in one box: the flow level and alpha-beta agree without contention
    assert f["iteration_s"] == __import__("pytest").approx(a["iteration_s"], rel=0.02)


def test_train_with_the_packet_backend_on_a_small_case():
    import pytest

    args = ["train", "-m", TINY, "-p", "tp=2,pp=1,dp=4", "-t", "dgx:1", "-a", "ring",
            "--no-bounds", "--json"]
    a = json.loads(runner.invoke(app, args).stdout)
    r = runner.invoke(app, [*args, "-b", "packet"])
    assert r.exit_code == 0, r.output
    p = json.loads(r.stdout)
    # packets (headers, serialization per hop) never beat the fluid alpha-beta time
    assert p["iteration_s"] >= a["iteration_s"] * (1 - 1e-9)
    assert p["iteration_s"] == pytest.approx(a["iteration_s"], rel=0.2)


def test_layered_models_take_the_global_batch():
    """Issue 28: resnet50 on 16 GPUs with --global-batch 512 trains 32 samples per GPU (it
    ran 16 in all before, silently)."""
    import json as _json

    from typer.testing import CliRunner

    from topocoll.cli import app

    r = CliRunner().invoke(app, ["train", "-m", "resnet50", "-t", "dgx:2", "--global-batch",
                                 "512", "--json"])
    assert r.exit_code == 0, r.output
    assert _json.loads(r.stdout)["parallel"] == "dp=16,mb=32,gb=512"
    r1 = CliRunner().invoke(app, ["train", "-m", "resnet50", "-t", "dgx:2", "--micro-batch",
                                  "32", "--json"])
    assert _json.loads(r1.stdout)["iteration_s"] == _json.loads(r.stdout)["iteration_s"]


def test_search_skips_what_cannot_win_and_exhaustive_costs_it():
    args = ["train", "-m", TINY, "-t", "dgx:2", "--search", "--global-batch", "32",
            "-a", "ring,direct", "--top", "100"]
    d = json.loads(runner.invoke(app, args + ["--json"]).stdout)
    e = json.loads(runner.invoke(app, args + ["--exhaustive", "--json"]).stdout)
    assert d["skipped"] and not e["skipped"]
    assert d["evaluated"] + len(d["skipped"]) == e["evaluated"] == len(e["ranked"])
    assert d["ranked"][0] == e["ranked"][0]
    best = d["ranked"][0]["iteration_s"]
    assert all(s["lower_bound_s"] > best for s in d["skipped"])
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert f"{len(d['skipped'])} more fit but cannot beat the best" in r.stdout
    assert f"{d['evaluated']} costed" in r.stdout
