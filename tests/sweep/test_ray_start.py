"""Starting the local Ray cluster: an attempt that times out (Ray's fixed 30 s raylet
wait on a loaded machine) is cleaned up and tried again; when every attempt fails the
user gets one line naming ``--backend``, not a traceback. A stand-in for the ``ray``
module makes the failure happen on demand."""

from __future__ import annotations

import subprocess
import sys
import time
import types

import pytest

from topocoll.cli.runner import run_argv
from topocoll.errors import InputError
from topocoll.sweep import SweepStore, parse_sweep, run_sweep
from topocoll.sweep.run import LOCAL_RAY_ATTEMPTS

SPEC = {"command": "compare", "grid": {"topology": ["ring:4"], "size": ["1KiB", "1MiB"]},
        "fixed": {"collective": "allreduce", "algorithm": "ring"}}


class _Ref:
    def __init__(self, value):
        self.value = value


def _fake_ray(fail_times: int, started: list):
    """A ``ray`` whose ``init`` leaves a child process behind (as a half-started GCS does)
    and raises Ray's bare timeout ``Exception`` the first ``fail_times`` calls; tasks run
    eagerly in this process."""
    m = types.ModuleType("ray")
    state = {"up": False, "calls": 0}

    def init(**kw):
        state["calls"] += 1
        if state["calls"] <= fail_times:
            started.append(subprocess.Popen([sys.executable, "-c",
                                             "import time; time.sleep(120)"]))
            raise Exception("The current node timed out during startup.")
        state["up"] = True

    def remote(**kw):
        def wrap(fn):
            return types.SimpleNamespace(remote=lambda *a: _Ref(fn(*a)))
        return wrap

    m.init = init
    m.is_initialized = lambda: state["up"]
    m.shutdown = lambda: state.update(up=False)
    m.remote = remote
    m.wait = lambda refs, num_returns=1: (refs[:num_returns], refs[num_returns:])
    m.get = lambda ref: ref.value
    m.cluster_resources = lambda: {"CPU": 2}
    m.state = state
    return m


def _gone(p: subprocess.Popen, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return p.poll() is not None


def test_failed_start_is_cleaned_up_and_retried(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE", str(tmp_path / "cache"))
    started: list = []
    fake = _fake_ray(LOCAL_RAY_ATTEMPTS - 1, started)
    monkeypatch.setitem(sys.modules, "ray", fake)
    store = SweepStore(tmp_path / "r.duckdb")
    s = run_sweep(parse_sweep(SPEC), store, run_argv, workers=2, backend="ray")
    store.close()
    assert (s.total, s.ran, s.failed) == (2, 2, 0)
    assert fake.state["calls"] == LOCAL_RAY_ATTEMPTS
    assert len(started) == LOCAL_RAY_ATTEMPTS - 1
    assert all(_gone(p) for p in started), "a failed attempt's processes were left running"
    assert all(p.returncode == -9 for p in started)


def test_every_attempt_failing_names_the_backend(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE", str(tmp_path / "cache"))
    started: list = []
    fake = _fake_ray(LOCAL_RAY_ATTEMPTS, started)
    monkeypatch.setitem(sys.modules, "ray", fake)
    store = SweepStore(tmp_path / "r.duckdb")
    with pytest.raises(InputError) as e:
        run_sweep(parse_sweep(SPEC), store, run_argv, workers=2, backend="ray")
    store.close()
    assert e.value.item == "backend"
    assert f"{LOCAL_RAY_ATTEMPTS} attempts" in str(e.value)
    assert "timed out during startup" in str(e.value)
    assert all(_gone(p) for p in started)
