"""DLCP with the engine in the training loop, on a tiny setup: the runs, their
determinism, the loss mapped into the update, the files written."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from topocoll.errors import InputError  # noqa: E402
from topocoll.studies.dlcp_loop import mlp, run_loop, train_in_loop, write_loop  # noqa: E402

TINY = dict(topology="leafspine:leaves=2,spines=2,hosts=2,bw=10Gbps", workers=4,
            hidden=(256, 256), epochs=1, batch_per_worker=32, bucket=8192, window=16,
            buffer=20_000, background_load=0.5)


def test_tiny_loop_runs_and_is_seeded():
    a = train_in_loop("dlcp", eps=0.05, **TINY)
    steps = 1437 // (4 * 32)
    assert len(a["accuracy"]) == len(a["iteration_s"]) == len(a["zero_fraction"]) == steps
    assert all(t > 0 for t in a["iteration_s"]) and all(0 <= x <= 1 for x in a["accuracy"])
    # the dlcp scheme loses within its budget (per push), so never more than eps overall
    assert all(0 <= z <= 0.05 for z in a["zero_fraction"]) and max(a["zero_fraction"]) > 0
    assert train_in_loop("dlcp", eps=0.05, **TINY) == a
    b = train_in_loop("baseline", **TINY)
    assert b["zero_fraction"] == [0.0] * steps
    assert a["accuracy"][-1] > 0.3 and b["accuracy"][-1] > 0.3     # it learns


def test_run_loop_summary_and_files(tmp_path):
    cases = (("baseline", "baseline", "gradients", 0.02),
             ("dlcp", "dlcp", "lognormal", 0.05))
    res = run_loop(cases, seeds=(0,), target=0.2, **TINY)
    assert [c["case"] for c in res["summary"]] == ["baseline", "dlcp"]
    for c, r in zip(res["summary"], res["runs"], strict=True):
        assert c["p50_iteration_s"] == pytest.approx(np.median(r["iteration_s"]))
        if r["steps_to_target"] is not None:
            k = r["steps_to_target"]
            assert r["accuracy"][k - 1] >= 0.2 > max([0.0, *r["accuracy"][:k - 1]])
            assert r["time_to_target_s"] == pytest.approx(sum(r["iteration_s"][:k]))
    assert res["setup"]["workers"] == 4 and res["setup"]["hidden"] == [256, 256]
    pj, pm = write_loop(tmp_path, res)
    assert json.loads(pj.read_text())["summary"][0]["case"] == "baseline"
    assert "| dlcp | 5% |" in pm.read_text()


def test_mlp_layers_and_bad_widths():
    model, layered = mlp((8, 4))
    assert [ly.params for ly in layered.layers] == [64 * 8 + 8, 8 * 4 + 4, 4 * 10 + 10]
    assert layered.parameters == sum(p.numel() for p in model.parameters())
    with pytest.raises(InputError) as e:
        mlp((0,))
    assert e.value.item == "hidden"


def test_energy_lost_is_the_missing_elements_share_of_the_squared_gradient(monkeypatch):
    """With a stand-in engine that loses the first element of worker 0's gradient, the
    step records that element's share of the elements and of the squared gradient."""
    import topocoll.studies.dlcp_loop as mod
    from topocoll.studies.dlcp_scenario import GradientExchange

    seen = []

    def fake(topo, layered, scheme, grads, **kw):
        miss = np.zeros(grads.shape, bool)
        miss[0, 0] = True
        seen.append(grads.copy())
        return GradientExchange(1e-3, miss, 4, 4 * grads.size, 1, 0)

    monkeypatch.setattr(mod, "exchange_gradients", fake)
    r = mod.train_in_loop("dlcp", **{**TINY, "hidden": (8,)})
    g = seen[0].astype(np.float64)
    assert r["energy_lost"][0] == pytest.approx(g[0, 0] ** 2 / (g ** 2).sum())
    assert r["zero_fraction"][0] == pytest.approx(1 / g.size)
    assert r["iteration_s"] == [1e-3] * len(seen)
