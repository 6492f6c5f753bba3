"""Lint is part of the test suite: `ruff check` (rules in pyproject.toml) must be clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    pytest.importorskip("ruff")
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests",
                        "benchmarks"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
