"""CLI tests with typer's CliRunner: outputs, --json and one-line errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topocoll.cli import app

runner = CliRunner()


def run(*args, code=0):
    r = runner.invoke(app, list(args))
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    return r


def test_topology_show_json():
    d = json.loads(run("topology", "show", "torus:4x4,bw=400Gbps,lat=100ns", "--json").stdout)
    assert d["ranks"] == 16 and d["links"] == 64 and d["bandwidth_min_Bps"] == 50e9


def test_topology_show_table():
    assert "hypercube:3" in run("topology", "show", "hypercube:3").stdout


@pytest.mark.parametrize("spec,item", [("nosuch:4", "nosuch"), ("ring:4,bw=fast", "bw"),
                                       ("torus:4x", "torus")])
def test_bad_spec_is_one_line_and_nonzero(spec, item):
    r = run("topology", "show", spec, code=2)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and item in lines[0]
    assert "Traceback" not in r.stderr + r.stdout


def test_validate_file(tmp_path):
    good = tmp_path / "t.yaml"
    good.write_text("type: topocoll.topology\nversion: 1\nname: pair\nnum_ranks: 2\n"
                    "num_switches: 0\nlinks:\n"
                    "- {src: 0, dst: 1, bandwidth: 100Gbps, latency: 1us}\n"
                    "- {src: 1, dst: 0, bandwidth: 100Gbps, latency: 1us}\n")
    assert "valid" in run("topology", "validate", str(good)).stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("bandwidth: 100Gbps, latency: 1us}\n-",
                                            "bandwidth: -5, latency: 1us}\n-", 1))
    r = run("topology", "validate", str(bad), code=2)
    assert "link 0->1" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run("topology", "validate", str(tmp_path / "missing.yaml"), code=2)
    assert r.stderr.startswith("error:")


def test_compare_json_fields_and_order():
    r = run("compare", "--topology", "ring:8", "--collective", "allreduce", "--size", "1MiB",
            "--size", "64MiB", "--json")
    rows = json.loads(r.stdout)
    need = {"algorithm", "collective", "size_bytes", "time_s", "algbw_Bps", "busbw_Bps",
            "bound_fraction", "verified"}
    assert rows and all(need <= set(x) for x in rows)
    assert {x["size_bytes"] for x in rows} == {2.0**20, 2.0**26}
    algos = {x["algorithm"] for x in rows}
    assert {"ring", "bidirectional_ring", "recursive_doubling", "rabenseifner",
            "double_binary_tree"} <= algos
    for n in (2.0**20, 2.0**26):
        times = [x["time_s"] for x in rows if x["size_bytes"] == n]
        assert times == sorted(times)
    ring64 = next(x for x in rows if x["algorithm"] == "ring" and x["size_bytes"] == 2.0**26)
    assert ring64["verified"] and ring64["busbw_Bps"] == pytest.approx(
        ring64["algbw_Bps"] * 2 * 7 / 8)


def test_compare_table_and_unknown_algorithm():
    assert "ring" in run("compare", "-t", "torus:4x4", "-s", "1MiB").stdout
    r = run("compare", "-t", "ring:4", "-a", "nosuch", code=2)
    assert "nosuch" in r.stderr


def test_compare_reports_the_nccl_models_validated_error():
    """NCCL-model rows carry the study's error over the published cases of their regime
    (one box or across boxes, the algorithm NCCL ran); schedule rows carry none."""
    rows = json.loads(run("compare", "-t", "dgx-h100:1", "-s", "4GiB", "-a", "nccl_ring",
                          "-a", "nccl", "-a", "ring", "--json").stdout)
    by = {x["algorithm"]: x for x in rows}
    assert "validated" not in by["ring"]
    v = by["nccl_ring"]["validated"]
    assert v["regime"] == "one box, ring" and v["cases"] == 12
    assert v["min_error"] <= 0 < v["max_error"] < 0.05
    assert by["nccl"]["validated"]["regime"] == "one box, nvls"
    across = json.loads(run("compare", "-t", "dgx-h100:2", "-s", "4GiB", "-a", "nccl_ring",
                            "--json").stdout)
    assert across[0]["validated"]["regime"] == "across boxes, ring"
    text = " ".join(run("compare", "-t", "dgx-h100:2", "-s", "4GiB", "-a", "nccl").stdout.split())
    assert ("(across boxes, nvls_tree): the NCCL model's error on the published case of this "
            "regime is +11.4%") in text


def test_synth_verify_cost_round_trip(tmp_path):
    f = tmp_path / "s.json"
    run("synth", "-t", "ring:6", "-c", "allgather", "-a", "ring", "-o", str(f))
    assert json.loads(f.read_text())["type"] == "topocoll.schedule"
    assert "ok" in run("verify", str(f), "-t", "ring:6").stdout
    out = json.loads(run("verify", str(f), "--json").stdout)
    assert out["ok"] and out["method"] == "exact"
    c = json.loads(run("cost", str(f), "-t", "ring:6", "-s", "6MiB", "--json").stdout)
    assert c[0]["time_s"] > 0 and 0 < c[0]["bound_fraction"] <= 1
    # a schedule for 6 ranks on a 4-rank topology fails verification with exit 1
    r = run("verify", str(f), "-t", "ring:4", code=1)
    assert "bad_rank" in r.stderr


def test_verify_notes_idle_ranks(tmp_path):
    f = tmp_path / "s.json"
    run("synth", "-t", "ring:8", "-c", "allreduce", "-a", "ring", "-o", str(f))
    r = run("verify", str(f), "-t", "ring:9")          # valid, but rank 8 takes no part
    assert "ok" in r.stdout and "covers 8 of the 9 ranks" in r.stderr and "8" in r.stderr
    assert json.loads(run("verify", str(f), "-t", "ring:9", "--json").stdout)["idle_ranks"] == [8]
    assert "note" not in run("verify", str(f), "-t", "ring:8").stderr


def test_verify_rejects_broken_file(tmp_path):
    f = tmp_path / "s.json"
    run("synth", "-t", "ring:4", "-c", "allreduce", "-o", str(f))
    d = json.loads(f.read_text())
    d["steps"][0][0]["op"] = "copy"
    f.write_text(json.dumps(d))
    r = run("verify", str(f), code=1)
    assert "missing_contributions" in r.stderr
    f.write_text("{not json")
    assert run("verify", str(f), code=2).stderr.startswith("error:")


def test_every_command_takes_json():
    """The README's promise: every command takes --json (export workload and report did
    not, issue 28)."""
    from _commands import leaf_commands

    missing = [" ".join(words) for words, c in leaf_commands()
               if "--json" not in {o for p in c.params if p.param_type_name == "option"
                                   for o in p.opts}]
    assert not missing, missing


def test_study_outside_a_checkout_names_the_output(tmp_path, monkeypatch):
    """Issue 28: `study validation` run anywhere wrote into ./docs/studies; now it asks for
    --output unless it runs at a checkout's root."""
    from typer.testing import CliRunner

    from topocoll.cli import app as _app

    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(_app, ["study", "validation", "--rows", "1"])
    assert r.exit_code == 2 and "--output" in r.stderr
    assert not (tmp_path / "docs").exists()


def test_study_swing_odd_writes_its_page(tmp_path):
    """`topocoll study swing-odd`: the odd tori verified and costed, both files written,
    the page naming its command; the same bytes as the committed page."""
    from pathlib import Path

    r = CliRunner().invoke(app, ["study", "swing-odd", "-o", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    written = json.loads(r.stdout)["written"]
    assert sorted(Path(p).name for p in written) == ["swing-odd.json", "swing-odd.md"]
    page = (tmp_path / "swing-odd.md").read_text()
    assert page.startswith("<!-- written by `topocoll study swing-odd`")
    committed = Path(__file__).resolve().parents[2] / "docs" / "studies" / "swing-odd.md"
    assert page == committed.read_text()
