"""One table of backends: adding one is one register_backend call, and every command that
takes --backend, `topocoll list` and the workload layer see it (issue 29)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.cost import AlphaBeta, CostModelBase, Simulator
from topocoll.sim.backends import BACKEND_TABLE, Backend, backend_names, register_backend

runner = CliRunner()


@dataclass(frozen=True)
class _Slow(CostModelBase):
    """A new cost model: the alpha-beta model's time doubled (``name`` and ``evaluate``;
    ``evaluate_sizes`` from :class:`CostModelBase`)."""

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


def test_the_protocols_state_what_the_backends_have():
    """CostModel states evaluate and evaluate_sizes, Simulator adds run; every backend of
    the table with capability run is a Simulator, every one is a CostModel (no hasattr)."""
    from topocoll.cost import CostModel
    from topocoll.sim.backends import cost_model

    for name in backend_names():
        if name == "ns3":
            continue                         # importing ns-3 takes 20-30 s (tests/sim/test_ns3)
        m = cost_model(name)
        assert isinstance(m, CostModel)
        assert isinstance(m, Simulator) == BACKEND_TABLE[name].run, name


def test_a_subclass_that_changes_evaluate_changes_every_size():
    """compare costs every size through evaluate_sizes: a model overriding evaluate alone
    (CostModelBase's evaluate_sizes) is never bypassed."""
    from topocoll.selection import compare_algorithms
    from topocoll.topology import ring

    t = ring(4)
    base = compare_algorithms(t, "allreduce", [1e6, 1e8], algorithms=["ring"])
    slow = compare_algorithms(t, "allreduce", [1e6, 1e8], algorithms=["ring"], model=_Slow())
    assert [r.time_s for r in slow] == pytest.approx([2 * r.time_s for r in base], rel=1e-12)
