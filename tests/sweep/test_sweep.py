"""Sweeps: expansion and ids, the runner and its database, failures recorded, resume after
kill -9 without loss or duplication, queries and the HTML report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.cli.runner import run_argv
from topocoll.errors import InputError
from topocoll.sweep import SweepStore, parse_sweep, run_sweep, to_argv, write_report

runner = CliRunner()
SPEC = {"command": "compare",
        "grid": {"topology": ["ring:4", "torus:2x4"], "size": ["1KiB", "1MiB"]},
        "fixed": {"collective": "allreduce", "algorithm": ["ring", "recursive_doubling"]}}


def test_points_ids_and_argv():
    s = parse_sweep(SPEC)
    pts = s.points()
    assert len(pts) == 4 and len({p.point_id for p in pts}) == 4
    assert pts[0].point_id == parse_sweep(SPEC).points()[0].point_id     # stable
    assert to_argv("compare", {"topology": "ring:4", "algorithm": ["a", "b"], "no_cache": True,
                               "x": False}) == \
        ["compare", "--topology", "ring:4", "--algorithm", "a", "--algorithm", "b",
         "--no-cache", "--json"]
    sampled = parse_sweep({"command": "bound", "grid": {"topology": ["ring:4"]},
                           "sample": {"count": 3, "seed": 7,
                                      "options": {"size": {"choices": ["1KiB", "1MiB"]},
                                                  "alpha": {"low": 1e-7, "high": 1e-5,
                                                            "log": True}}}})
    a, b = sampled.points(), sampled.points()
    assert len(a) == 3 and [p.options for p in a] == [p.options for p in b]
    assert all(1e-7 <= p.options["alpha"] <= 1e-5 for p in a)


@pytest.mark.parametrize("doc, item", [
    ({"grid": {}}, "field 'command'"),
    ({"command": "compare", "grid": {"size": []}}, "field 'grid'"),
    ({"command": "compare", "gird": {}}, "field 'gird'"),
    ({"command": "compare", "repeat": 0}, "field 'repeat'"),
    ({"command": "compare", "grid": {"size": ["1KiB"]}, "fixed": {"size": "1MiB"}},
     "field 'size'"),
    ({"command": "compare", "sample": {"options": {"alpha": {"low": 1}}}},
     "field 'sample.alpha'"),
])
def test_bad_specs_name_the_field(doc, item):
    with pytest.raises(InputError) as e:
        parse_sweep(doc)
    assert e.value.item == item


def test_run_record_resume_and_failures(tmp_path):
    spec = parse_sweep({**SPEC, "grid": {**SPEC["grid"], "topology": ["ring:4", "nope:3"]}})
    store = SweepStore(tmp_path / "s.duckdb")
    s1 = run_sweep(spec, store, run_argv, workers=1)
    assert (s1.total, s1.ran, s1.failed) == (4, 4, 2)
    s2 = run_sweep(spec, store, run_argv, workers=1)          # nothing twice
    assert (s2.skipped, s2.ran) == (4, 0)
    _, rows = store.query("SELECT status, count(*) FROM points GROUP BY 1 ORDER BY 1")
    assert rows == [("error", 2), ("ok", 2)]
    _, errs = store.query("SELECT error FROM points WHERE status = 'error'")
    assert all("nope" in e[0] for e in errs)
    cols, res = store.query("SELECT param_topology, algorithm, size_bytes, time_s FROM results "
                            "ORDER BY algorithm, size_bytes")
    assert len(res) == 4 and {r[1] for r in res} == {"ring", "recursive_doubling"}
    assert all(isinstance(r[3], float) and r[3] > 0 for r in res)
    page = write_report(store, tmp_path / "r.html")
    text = page.read_text()
    assert "<img" in text and "data:image/png;base64" in text and "Failed points" in text
    assert "http" not in text.replace("http-equiv", "")        # self-contained
    store.close()


def test_parallel_workers_give_the_same_rows(tmp_path):
    spec = parse_sweep(SPEC)
    a, b = SweepStore(tmp_path / "a.duckdb"), SweepStore(tmp_path / "b.duckdb")
    run_sweep(spec, a, run_argv, workers=1)
    run_sweep(spec, b, run_argv, workers=2)
    q = "SELECT point_id, metrics FROM points ORDER BY point_id"
    assert a.query(q)[1] == b.query(q)[1]


@pytest.mark.slow
def test_killed_sweep_resumes_without_loss_or_duplicates(tmp_path):
    doc = {"command": "compare",
           "grid": {"topology": [f"ring:{n}" for n in range(3, 11)],
                    "size": ["1KiB", "64KiB", "1MiB"]},
           "fixed": {"collective": "allgather", "algorithm": "ring"}}
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(doc))
    db = tmp_path / "k.duckdb"
    cmd = [sys.executable, "-m", "topocoll", "sweep", "run", str(spec_file), "--db", str(db),
           "--workers", "2"]
    env = dict(os.environ, TOPOCOLL_CACHE=str(tmp_path / "cache"))
    recorded = []
    # kill -9 twice: once `target` points are safely recorded (one per transaction), then
    # once `target` are done while four are written per transaction (some in flight lost)
    for target, flush, key in ((3, "1", "recorded"), (9, "4", "done")):
        p = subprocess.Popen(cmd + ["--json", "--flush-every", flush], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             start_new_session=True)
        for line in p.stdout:           # one JSON line per finished point
            rec = json.loads(line)
            if rec.get(key, 0) >= target:
                os.killpg(p.pid, signal.SIGKILL)
                break
        p.wait()
        recorded.append(rec["recorded"])
    assert recorded[0] >= 3 and 3 <= recorded[1] < 24
    r = subprocess.run(cmd + ["--json"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    last = json.loads(r.stdout.strip().splitlines()[-1])
    assert last["total"] == 24 and last["failed"] == 0 and last["skipped"] >= recorded[1]
    store = SweepStore(db, read_only=True)
    _, rows = store.query("SELECT count(*), count(DISTINCT point_id) FROM points")
    assert rows == [(24, 24)]
    store.close()


def test_query_and_report_commands(tmp_path):
    spec_file = tmp_path / "s.json"
    spec_file.write_text(json.dumps(SPEC))
    db = tmp_path / "c.duckdb"
    r = runner.invoke(app, ["sweep", "run", str(spec_file), "--db", str(db), "--workers", "1"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["query", str(db), "SELECT count(*) AS n FROM results", "--json"])
    assert json.loads(r.stdout) == [{"n": 8}]
    r = runner.invoke(app, ["query", str(db), "SELEC nonsense"])
    assert r.exit_code == 2 and "query failed" in r.output
    r = runner.invoke(app, ["report", str(db), "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 0 and (tmp_path / "r.html").stat().st_size > 10_000
    r = runner.invoke(app, ["query", str(tmp_path / "none.duckdb"), "SELECT 1"])
    assert r.exit_code == 2 and "none.duckdb" in r.output


def test_the_docs_example_spec_is_valid(tmp_path):
    """docs/sweeps.md's example crashed (exit 3: YAML 1.1 read 1e-7 as a string) and sampled
    an option its grid also set; it is checked whole now, as the CLI checks it."""
    import re
    from pathlib import Path

    from topocoll.cli import app
    from topocoll.cli.sweep import _options_of
    from topocoll.sweep import load_sweep

    text = (Path(__file__).resolve().parents[2] / "docs" / "sweeps.md").read_text()
    spec = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    (tmp_path / "s.yaml").write_text(spec)
    known = {c.name for c in app.registered_commands if c.name} | {
        c.callback.__name__ for c in app.registered_commands if not c.name}
    s = load_sweep(tmp_path / "s.yaml", known, _options_of)
    assert len(s.points()) == 16
    alphas = {p.options["alpha"] for p in s.points()}
    assert all(isinstance(a, float) and 1e-7 <= a <= 1e-5 for a in alphas)
