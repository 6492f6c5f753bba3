"""Same inputs, same bytes: a schedule synthesized beside a busy loop on every core is the
one synthesized on an idle machine (budgets count work, never seconds; solvers run on one
thread with fixed seeds; schedule files carry no timings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SYNTH = ["synth", "-t", "mi250:2", "-c", "allgather", "-a", "optimal", "--no-cache"]


def _synth(path, env) -> bytes:
    subprocess.run([sys.executable, "-m", "topocoll", *SYNTH, "-o", str(path)], env=env,
                   check=True, capture_output=True, timeout=900)
    return path.read_bytes()


@pytest.mark.slow
def test_identical_bytes_beside_a_busy_loop_on_every_core(tmp_path):
    env = {**os.environ, "TOPOCOLL_CACHE": str(tmp_path / "cache")}
    idle = _synth(tmp_path / "idle.json", env)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
               for _ in range(os.cpu_count() or 2)]
    try:
        busy = _synth(tmp_path / "busy.json", env)
    finally:
        for p in burners:
            p.kill()
            p.wait()
    assert busy == idle
    meta = json.loads(idle)["meta"]
    assert not [k for k in meta if "second" in k], meta        # no wall-clock in files
