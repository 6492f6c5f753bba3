"""The Ray backend: a local cluster on this machine gives the same rows as the process
pool; killed with -9 it leaves no process behind and resumes without loss or duplicates;
the reaper that guarantees the former."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from topocoll.cli.runner import run_argv
from topocoll.errors import InputError
from topocoll.sweep import SweepStore, parse_sweep, run_sweep
from topocoll.sweep.reaper import process_tree

ray = pytest.importorskip("ray")

SPEC = {"command": "compare",
        "grid": {"topology": ["ring:4", "torus:2x3"], "size": ["1KiB", "1MiB"]},
        "fixed": {"collective": "allreduce", "algorithm": ["ring", "direct"]}}


def _rows(db):
    s = SweepStore(db, read_only=True)
    _, rows = s.query("SELECT point_id, status, params, metrics FROM points ORDER BY 1")
    s.close()
    return rows


def test_ray_rows_equal_local_rows(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE", str(tmp_path / "cache"))
    spec = parse_sweep(SPEC)
    for backend in ("ray", "local"):
        store = SweepStore(tmp_path / f"{backend}.duckdb")
        s = run_sweep(spec, store, run_argv, workers=2, backend=backend)
        store.close()
        assert (s.total, s.ran, s.failed) == (4, 4, 0)
    assert _rows(tmp_path / "ray.duckdb") == _rows(tmp_path / "local.duckdb")
    with pytest.raises(InputError) as e:
        run_sweep(spec, SweepStore(tmp_path / "x.duckdb"), run_argv, backend="dask")
    assert e.value.item == "backend"


def test_killed_ray_sweep_leaves_nothing_and_resumes(tmp_path):
    doc = {"command": "compare",
           "grid": {"topology": [f"ring:{n}" for n in range(4, 10)],
                    "size": [f"{2 ** k}B" for k in range(10, 14)]},
           "fixed": {"collective": "allreduce", "algorithm": "ring"}}
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(doc))
    db = tmp_path / "r.duckdb"
    cmd = [sys.executable, "-m", "topocoll", "sweep", "run", str(spec), "--db", str(db),
           "--backend", "ray", "--workers", "2", "--flush-every", "4", "--json"]
    env = dict(os.environ, TOPOCOLL_CACHE=str(tmp_path / "cache"))
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    tree: dict = {}
    for line in p.stdout:
        rec = json.loads(line)
        tree.update(process_tree(p.pid))        # the Ray cluster under the driver, as seen
        if rec.get("recorded", 0) >= 8:        # at any progress line (a loaded machine
            break                               # may start workers late)
    tree.update(process_tree(p.pid))
    assert tree, "no Ray processes were seen under the driver"
    assert rec.get("done", 24) < 24, "the sweep finished before it could be killed"
    os.kill(p.pid, signal.SIGKILL)              # only the driver
    p.wait()
    deadline = time.monotonic() + 60
    left = tree
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = {pid for pid in tree if os.path.exists(f"/proc/{pid}")
                and not open(f"/proc/{pid}/stat").read().split(") ")[1].startswith("Z")}
    assert not left, f"left behind: {left}"
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    last = json.loads(r.stdout.strip().splitlines()[-1])
    assert last["total"] == 24 and last["failed"] == 0 and last["skipped"] >= 8
    rows = _rows(db)
    assert len(rows) == 24 and len({r[0] for r in rows}) == 24


def test_reaper_kills_the_tree_of_a_dead_driver(tmp_path):
    code = ("import subprocess, sys, time\n"
            "from topocoll.sweep.reaper import start_reaper\n"
            "start_reaper()\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
            " start_new_session=True)\n"
            "print(c.pid, flush=True)\n"
            "time.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(p.stdout.readline())
    time.sleep(1.0)                              # the reaper has seen the child
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    deadline = time.monotonic() + 20
    while os.path.exists(f"/proc/{child}") and time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            pass
    stat = open(f"/proc/{child}/stat").read() if os.path.exists(f"/proc/{child}") else ""
    assert not stat or stat.split(") ")[1].startswith("Z")


def test_a_design_space_on_ray_gives_one_row_per_design(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE", str(tmp_path / "cache"))
    small = "transformer:hidden=2048,ffn=8192,heads=16,layers=8,seq=2048,vocab=32000"
    spec = parse_sweep({"command": "design",
                        "grid": {"budget": ["2e5", "4e5"], "oversubscription": ["3"]},
                        "fixed": {"model": small, "gpus": 32, "global-batch": 64,
                                  "families": "rail,topoopt", "no-bounds": True,
                                  "no-recheck": True}})
    rows = {}
    for backend in ("ray", "local"):
        store = SweepStore(tmp_path / f"{backend}.duckdb")
        s = run_sweep(spec, store, run_argv, workers=2, backend=backend)
        assert (s.total, s.ran, s.failed) == (2, 2, 0)
        rows[backend] = sorted((r["param_budget"], r["param_oversubscription"], r["family"],
                                r["cost_usd"], r["iteration_s"]) for r in store.rows())
        store.close()
    assert rows["ray"] == rows["local"]
    assert len(rows["ray"]) == 4                 # 2 points x 2 families
    for budget, _, _, cost, _ in rows["ray"]:
        assert cost == pytest.approx(float(budget), rel=1e-9)
