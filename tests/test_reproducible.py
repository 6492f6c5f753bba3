"""Same inputs, same bytes, on any machine.

The golden cases and the schedules whose choice rests on an LP or a float tie
(topology-adaptive trees, the optimal portfolio, two-level plans, multiplicative-weights
forests) are run again in a process that looks like another CPU: OpenBLAS forced onto
another kernel and one thread, numpy's SIMD dispatch cut back to the baseline, another
hash seed, and every clock of the time module running 1,000 times fast (budgets count
work, never seconds: a budget in seconds would run out 1,000 times sooner there; this
replaced a busy loop beside the run, which slowed it by at most a factor of two and cost
the suite's other worker a core for two minutes). Everything must come out the same:
every number of every golden case (``tests/test_golden.py``'s comparison) and every
schedule byte for byte.

What makes it hold is in :mod:`topocoll.numeric` (no BLAS, no SIMD transcendentals where a
float decides something, stable sorts); :func:`test_library_avoids_cpu_dependent_calls`
keeps new code from bringing them back.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import topocoll

HERE = Path(__file__).parent
SRC = Path(topocoll.__file__).parent

#: Schedules whose construction takes float decisions (LP vertices, pricing ties,
#: rounding of rates), synthesized in both processes and compared byte for byte.
SCHEDULES = [
    ("dgx-h100:2", "allreduce", "topology_adaptive"),
    ("dgx-h100:2", "allreduce", "two_level"),
    ("mi250:2", "allgather", "optimal"),
    ("fattree:k=4", "allreduce", "topology_adaptive", "0,1,2,3,8,9"),
    ("dgx-a100:2,fabric=switch", "allreduce", "topology_adaptive"),
    ("torus:4x4", "allgather", "optimal"),
]


def _other_cpu_env(tmp: Path) -> dict[str, str]:
    """The environment of a process that computes as another machine would."""
    env = {**os.environ, "TOPOCOLL_CACHE": str(tmp / "cache-other"),
           "PYTHONHASHSEED": "4242", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "NUMBA_NUM_THREADS": "1",
           # an SSE-only kernel exists in every x86-64 OpenBLAS and runs on any x86-64 CPU
           "OPENBLAS_CORETYPE": "Nehalem" if os.uname().machine == "x86_64"
           else os.environ.get("OPENBLAS_CORETYPE", "")}
    found = _simd_above_baseline()
    if found:
        env["NPY_DISABLE_CPU_FEATURES"] = ",".join(found)
    return env


def _simd_above_baseline() -> list[str]:
    """numpy's SIMD targets found on this CPU beyond its build's baseline."""
    from numpy._core._multiarray_umath import (  # numpy 2
        __cpu_baseline__,
        __cpu_dispatch__,
        __cpu_features__,
    )

    return [f for f in __cpu_dispatch__ if __cpu_features__.get(f) and f not in
            __cpu_baseline__]


#: Run first in the "other CPU" process: every clock of ``time`` runs 1,000 times fast from
#: here on, and the rate is printed (measured against a sleep, which the patch leaves alone).
FAST_CLOCKS = """\
import time
def _fast(clock, k=1000):
    t0 = clock()
    return lambda: t0 + k * (clock() - t0)
for _name in ("perf_counter", "monotonic", "time", "process_time", "perf_counter_ns",
              "monotonic_ns", "time_ns", "process_time_ns"):
    setattr(time, _name, _fast(getattr(time, _name)))
_a = time.monotonic(); time.sleep(0.05); _b = time.monotonic()
print("clock rate", (_b - _a) / 0.05, flush=True)
"""


def _digest(spec: str, kind: str, algorithm: str, ranks: str | None, out: Path) -> str:
    from typer.testing import CliRunner

    from topocoll.cli import app

    args = ["synth", "-t", spec, "-c", kind, "-a", algorithm, "-o", str(out), "--no-cache"]
    if ranks:
        args += ["--ranks", ranks]
    res = CliRunner().invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return hashlib.sha256(out.read_bytes()).hexdigest()


def _run_all(out_dir: str) -> dict:
    """Every golden case's outputs and every schedule's digest (run in either process)."""
    sys.path.insert(0, str(HERE / "golden"))
    from capture import run_case
    from cases import CASES

    out = Path(out_dir)
    cases = {name: json.loads(json.dumps(run_case(CASES[name]))) for name in sorted(CASES)}
    digests = {"|".join(s): _digest(*s[:3], s[3] if len(s) > 3 else None,
                                    out / f"s{i}.json") for i, s in enumerate(SCHEDULES)}
    return {"cases": cases, "schedules": digests}


def test_library_avoids_cpu_dependent_calls():
    """No float ``@`` (BLAS), no ``np.exp``/``np.log`` (SIMD variants) and no argsort
    without ``kind="stable"`` in the library; an exact ``@`` (integers, sparse) says so
    with ``# exact`` on its line."""
    bad = []
    for f in sorted(SRC.rglob("*.py")):
        if f.name == "numeric.py":
            continue
        text = f.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            where = f"{f.relative_to(SRC)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                if "# exact" not in lines[node.lineno - 1]:
                    bad.append(f"{where}: '@' (use topocoll.numeric.matmul or mark # exact)")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = node.func.attr
                if name in ("argsort", "argpartition") and not any(
                        k.arg == "kind" and isinstance(k.value, ast.Constant)
                        and k.value.value in ("stable", "mergesort") for k in node.keywords):
                    bad.append(f"{where}: {name} without kind='stable'")
                if (name in ("exp", "log", "log2", "log10", "expm1", "log1p", "power")
                        and isinstance(node.func.value, ast.Name)
                        and node.func.value.id == "np"):
                    bad.append(f"{where}: np.{name} (use topocoll.numeric)")
    assert not bad, "\n".join(bad)


def test_numeric_matches_numpy_to_rounding():
    rng = np.random.default_rng(0)
    from topocoll.numeric import dot, exp, log, matmul

    a, b, v = rng.random((7, 5)), rng.random((5, 3)), rng.random(5)
    assert np.allclose(matmul(a, b), a @ b, rtol=1e-14)
    assert np.allclose(matmul(a, v), a @ v, rtol=1e-14)
    assert np.allclose(matmul(v, b), v @ b, rtol=1e-14)
    assert abs(float(dot(v, v)) - float(v @ v)) <= 1e-14
    assert np.allclose(exp(log(v)), v, rtol=1e-15)
    with pytest.raises(ValueError, match="shapes"):
        matmul(np.zeros((2, 2, 2)), v)


@pytest.mark.slow
def test_every_golden_case_and_schedule_is_the_same_on_another_cpu(tmp_path, monkeypatch):
    from test_golden import EXPECTED, _diff

    env = _other_cpu_env(tmp_path)
    code = (FAST_CLOCKS + f"import json, sys; sys.path.insert(0, {str(HERE)!r}); "
            "from test_reproducible import _run_all; "
            f"print(json.dumps(_run_all({str(tmp_path / 'other')!r})))")
    (tmp_path / "other").mkdir()
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=1200, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    rate, out = res.stdout.strip().splitlines()[0], res.stdout.strip().splitlines()[-1]
    assert float(rate.removeprefix("clock rate ")) > 500, rate   # the clocks did run fast
    other = json.loads(out)
    problems = [d for name in EXPECTED for d in _diff(EXPECTED[name], other["cases"][name],
                                                          name)]
    assert not problems, "\n".join(problems[:20])
    (tmp_path / "here").mkdir()
    monkeypatch.setenv("TOPOCOLL_CACHE", str(tmp_path / "cache-here"))
    here = {"|".join(s): _digest(*s[:3], s[3] if len(s) > 3 else None,
                                 tmp_path / "here" / f"s{i}.json")
            for i, s in enumerate(SCHEDULES)}
    assert other["schedules"] == here
    for f in (tmp_path / "here").glob("s*.json"):               # schedule files carry no
        meta = json.loads(f.read_text())["meta"]                 # wall-clock fields
        assert not [k for k in meta if "second" in k], (f.name, meta)
