"""Golden numbers: every number that ``compare``, ``bound``, ``cost`` and ``simulate``
print for the cases of ``tests/golden/cases.py`` equals the captured ones.

Floats are compared to a relative 1e-9 (summation order may move the last bits);
wall-clock fields (:data:`cases.TIMING_KEYS`) are skipped.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN))

from capture import run_case  # noqa: E402
from cases import CASES, TIMING_KEYS  # noqa: E402

EXPECTED = json.loads((GOLDEN / "golden.json").read_text())


def _diff(want, got, where: str = "") -> list[str]:
    """Where ``got`` differs from ``want`` (numbers to a relative 1e-9)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{where}: expected an object, got {got!r}"]
        keys = (set(want) | set(got)) - TIMING_KEYS
        out = []
        for k in sorted(keys):
            if k not in got or k not in want:
                out.append(f"{where}.{k}: {'missing' if k not in got else 'unexpected'}")
            else:
                out += _diff(want[k], got[k], f"{where}.{k}")
        return out
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{where}: expected {len(want)} items, got {got!r:.200}"]
        return [d for i, (a, b) in enumerate(zip(want, got, strict=True))
                for d in _diff(a, b, f"{where}[{i}]")]
    if isinstance(want, float) or isinstance(got, float):
        if isinstance(want, bool) or isinstance(got, bool) or want is None or got is None:
            return [] if want == got else [f"{where}: {want!r} != {got!r}"]
        if math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-300):
            return []
        return [f"{where}: {want!r} != {got!r}"]
    return [] if want == got else [f"{where}: {want!r} != {got!r}"]


def test_diff_finds_a_changed_number():
    assert _diff({"a": [1.0, {"b": 2.0}]}, {"a": [1.0, {"b": 2.0 * (1 + 1e-6)}]})
    assert not _diff({"a": 1.0, "wall_s": 3.0}, {"a": 1.0 + 1e-13, "wall_s": 4.0})
    assert _diff({"a": "x"}, {"a": "y"}) and _diff([1, 2], [1])


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE", str(tmp_path / "cache"))
    got = json.loads(json.dumps(run_case(CASES[name])))
    problems = _diff(EXPECTED[name], got, name)
    assert not problems, "\n".join(problems[:20])
