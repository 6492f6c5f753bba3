"""Adding an algorithm is its module plus one register_synthesizer call: every command that
names algorithms sees it (issue 29, "where to add an algorithm")."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.errors import InputError
from topocoll.selection import algorithms_for, choose, find_algorithm
from topocoll.synth import Synthesizer, register_synthesizer, unregister_synthesizer
from topocoll.synth.ring import ring_allgather
from topocoll.topology import ring

runner = CliRunner()


def _ring_twice(topology, *, ranks=None):
    """A new allgather: the ring allgather (a stand-in for a new module's function)."""
    return ring_allgather(topology, ranks=ranks)


@pytest.fixture
def toy():
    s = register_synthesizer(Synthesizer("ring_copy", "allgather", _ring_twice))
    yield s
    unregister_synthesizer("ring_copy", "allgather")


def test_a_registered_algorithm_reaches_every_command(toy, tmp_path):
    assert find_algorithm("ring_copy", "allgather") is not None
    assert "ring_copy" in [a.name for a in algorithms_for("allgather")]
    r = runner.invoke(app, ["list", "algorithms", "--json"])
    assert "ring_copy" in json.loads(r.stdout)["algorithms"]["allgather"]
    out = {}
    for name in ("ring", "ring_copy"):
        r = runner.invoke(app, ["compare", "-t", "ring:6", "-c", "allgather", "-a", name,
                                "-s", "1MiB", "--json"])
        assert r.exit_code == 0, r.output
        out[name] = json.loads(r.stdout)[0]
    assert out["ring_copy"]["time_s"] == out["ring"]["time_s"]
    assert out["ring_copy"]["verified"]
    r = runner.invoke(app, ["synth", "-t", "ring:6", "-c", "allgather", "-a", "ring_copy",
                            "-o", str(tmp_path / "s.json")])
    assert r.exit_code == 0, r.output
    c = choose("allgather", ring(6), 2**20, candidates=["ring_copy"])
    assert c.best.algorithm == "ring_copy"


def test_unregistered_and_refused():
    with pytest.raises(InputError, match="registered already"):
        register_synthesizer(Synthesizer("ring", "allgather", _ring_twice))
    with pytest.raises(InputError, match="unknown collective kind"):
        register_synthesizer(Synthesizer("x", "allscatter", _ring_twice))
    assert "ring_copy" not in [a.name for a in algorithms_for("allgather")]
