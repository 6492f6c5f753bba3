"""The studies shipped as sweep specs parse against the real commands, and one point of
each runs and records."""

from __future__ import annotations

from pathlib import Path

import pytest

from topocoll.cli import app
from topocoll.cli.runner import run_argv
from topocoll.sweep import SweepStore, load_sweep, run_sweep

SPECS = sorted((Path(__file__).parents[2] / "docs" / "studies" / "sweeps").glob("*.yaml"))
KNOWN = ({c.name for c in app.registered_commands if c.name}
         | {c.callback.__name__ for c in app.registered_commands if not c.name})


def test_there_are_study_sweeps():
    assert {p.stem for p in SPECS} >= {"topoopt", "libra", "swing"}


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_study_sweep_runs_a_point(path, tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE", str(tmp_path / "cache"))
    spec = load_sweep(path, KNOWN)
    pts = spec.points()
    assert len(pts) >= 6 and len({p.point_id for p in pts}) == len(pts)
    cheap = min(pts, key=lambda p: len(" ".join(p.argv())))

    class One(type(spec)):
        def points(self):
            return [cheap]

    if spec.command == "topoopt":          # one design at a fraction of the study's budget
        opts = dict(cheap.options, servers=16, steps=20, rounds=1)
        cheap = type(cheap)(cheap.command, opts, cheap.repeat)
    store = SweepStore(tmp_path / "s.duckdb")
    s = run_sweep(One(spec.command, spec.grid, spec.fixed, spec.sample, spec.repeat), store,
                  run_argv, workers=1)
    _, rows = store.query("SELECT status, error FROM points")
    store.close()
    assert s.ran == 1 and rows[0][0] == "ok", rows
