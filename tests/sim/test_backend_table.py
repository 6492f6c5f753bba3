"""One table of backends: adding one is one register_backend call, and every command that
takes --backend, `topocoll list` and the workload layer see it (issue 29)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.cost import AlphaBeta
from topocoll.sim.backends import BACKEND_TABLE, Backend, backend_names, register_backend

runner = CliRunner()


@dataclass(frozen=True)
class _Slow:
    """A new cost model: the alpha-beta model's time doubled (only ``name`` and
    ``evaluate``, the CostModel protocol)."""

    alpha: float = 0.0
    routing: str | None = None
    name: str = "slow2x"

    def evaluate(self, schedule, topology, message_bytes):
        import dataclasses

        r = AlphaBeta(alpha=self.alpha, routing=self.routing).evaluate(schedule, topology,
                                                                      message_bytes)
        return dataclasses.replace(r, time=2 * r.time, step_times=2 * r.step_times)


@pytest.fixture
def toy():
    b = register_backend(Backend("slow2x", "alpha-beta, every time doubled (a test)",
                                 _Slow))
    yield b
    del BACKEND_TABLE["slow2x"]


def test_a_registered_backend_reaches_every_command(toy):
    assert "slow2x" in backend_names(workload=True)
    assert "slow2x" not in backend_names(run=True)
    r = runner.invoke(app, ["list", "backends", "--json"])
    assert r.exit_code == 0 and "slow2x" in r.stdout
    base = runner.invoke(app, ["compare", "-t", "ring:4", "-a", "ring", "-s", "1MiB", "--json"])
    r = runner.invoke(app, ["compare", "-t", "ring:4", "-a", "ring", "-s", "1MiB", "-b",
                            "slow2x", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["time_s"] == pytest.approx(
        2 * json.loads(base.stdout)[0]["time_s"], rel=1e-12)
    r = runner.invoke(app, ["train", "-m", "resnet50", "-t", "dgx:1", "-b", "slow2x",
                            "-a", "ring", "--json"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["simulate", "x.json", "-t", "ring:4", "-b", "slow2x"])
    assert r.exit_code == 2 and "--backend" in r.stderr      # no run(): not for simulate


def test_a_name_is_registered_once():
    from topocoll.errors import NotSupportedError

    with pytest.raises(NotSupportedError, match="already"):
        register_backend(Backend("flow", "again", AlphaBeta))


def test_options_are_checked_against_the_row():
    from topocoll.errors import NotSupportedError
    from topocoll.sim.backends import cost_model

    assert cost_model("flow", reduce_bandwidth=1e9).name == "flow"
    with pytest.raises(NotSupportedError, match="takes no option mtu"):
        cost_model("flow", mtu=1500)
    with pytest.raises(NotSupportedError, match="takes no option"):
        cost_model("analytical", mtu=1500)
