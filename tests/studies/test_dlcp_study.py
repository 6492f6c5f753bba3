"""DLCP's convergence study: the loss patterns, a short real training run, time to
accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.errors import InputError
from topocoll.studies.dlcp import steps_to
from topocoll.studies.dlcp_convergence import drop_mask, train_with_loss

pytest.importorskip("torch")
pytest.importorskip("sklearn")


def test_drop_patterns_respect_the_budget_and_choose_small_gradients():
    rng = np.random.default_rng(0)
    g = rng.normal(size=6400) * np.repeat(rng.lognormal(size=100), 64)
    m = drop_mask(g, block=64, eps=0.05, pattern="dlcp", rng=None)
    assert m.sum() == 5 * 64                                      # exactly 5% of blocks
    kept = np.abs(g[~m]).reshape(-1, 64).mean(1)
    lost = np.abs(g[m]).reshape(-1, 64).mean(1)
    assert lost.max() <= kept.min()                               # the smallest blocks
    r = drop_mask(g, block=64, eps=0.05, pattern="random", rng=np.random.default_rng(1))
    assert 0 < r.sum() < 0.15 * len(g) and (r.reshape(-1, 64).all(1)
                                            | ~r.reshape(-1, 64).any(1)).all()
    assert not drop_mask(g, block=64, eps=0.05, pattern="none", rng=None).any()
    # at the same budget, the magnitude rule loses far less of the gradient's energy
    d = drop_mask(g, block=64, eps=0.5, pattern="dlcp", rng=None)
    r = drop_mask(g, block=64, eps=0.5, pattern="random", rng=np.random.default_rng(2))
    assert np.sum(g[d] ** 2) < 0.2 * np.sum(g[r] ** 2)
    with pytest.raises(InputError):
        drop_mask(g, block=64, eps=0.05, pattern="burst", rng=None)


def test_training_learns_reproducibly_and_loss_changes_the_run():
    none = train_with_loss("none", 0.0, seed=0, epochs=4)
    assert none[-1] > 0.6 and none == train_with_loss("none", 0.0, seed=0, epochs=4)
    dl = train_with_loss("dlcp", 0.3, seed=0, epochs=4)
    assert dl != none and dl[-1] > 0.4
    assert steps_to([0.5, 0.96, 0.97], 0.95, 10) == 20.0
    assert steps_to([0.5], 0.95, 10) == float("inf")


def test_study_pipeline_runs_the_larger_fabrics_and_writes_its_artifacts(tmp_path):
    """The whole study on toy sizes: the main fabric, one larger fabric with a subset of
    the schemes (the same records as running the engine directly), the convergence grid,
    time to accuracy, and the artifacts without wall times."""
    import json

    from topocoll.studies.dlcp import run_dlcp_study, write_dlcp_study
    from topocoll.studies.dlcp_scenario import run_dlcp
    from topocoll.topology.spec import parse_spec
    from topocoll.workload import LAYERED

    big = "leafspine:leaves=2,spines=2,hosts=4,bw=10Gbps"
    res = run_dlcp_study(workers=4, iterations=1, epochs=2, seeds=(0,), target=0.5,
                         topology="leafspine:leaves=2,spines=2,hosts=2,bw=10Gbps",
                         scale=((8, big),), scale_iterations=1,
                         scale_schemes=("baseline", "dlcp"), eps_values=(0.1,),
                         gradient_scale=0.02, low_background_iterations=1,
                         dctcp_iterations=1, payloads=(9000, 64 * 1024))
    assert [r["scheme"] for r in res["scale"][0]["schemes"]] == ["baseline", "dlcp"]
    assert [(s["workers"], s["payload"]) for s in res["scale"]] == [(8, 9000), (8, 65536)]
    direct = run_dlcp(parse_spec(big), LAYERED["resnet50"], workers=8, iterations=1,
                      seed=1, schemes=("baseline", "dlcp"), scale=0.02, payload=9000,
                      window=14)
    for got, want in zip(res["scale"][0]["schemes"], direct, strict=True):
        assert got["p50_s"] == want["p50_s"] and got["drops"] == want["drops"]
        assert "loss_profile" not in got and "lossy_messages" in got
    assert {t["scheme"] for t in res["time_to_accuracy"]} >= {"baseline", "dlcp"}
    low = res["low_background"]                # drop-tail schemes ignore the class
    assert low["background_class"] == 7 and len(low["schemes"]) == len(res["schemes"]) - 2
    size = res["sizes"][0]
    assert size["payload"] == 65536 and size["window"] == 2
    assert [r["scheme"] for r in size["schemes"]] == [r["scheme"] for r in res["schemes"]]
    assert res["wall_s"]["simulation"] >= 0
    paths = write_dlcp_study(tmp_path, res)
    assert sorted(p.name for p in paths) == ["dlcp-convergence.png", "dlcp-results.json",
                                             "dlcp-scale.png", "dlcp-tables.md"]
    tables = (tmp_path / "dlcp-tables.md").read_text()
    assert "### 8 workers on" in tables and "| dlcp |" in tables
    cc = {r["scheme"]: r for r in res["dctcp_everywhere"]["schemes"]}
    assert "dctcp" not in cc and len(cc) == len(res["schemes"]) - 1    # = its baseline
    assert "### DCTCP and ECN marks" in tables
    saved = json.loads((tmp_path / "dlcp-results.json").read_text())
    assert "wall_s" not in saved and saved["scale"][0]["workers"] == 8
