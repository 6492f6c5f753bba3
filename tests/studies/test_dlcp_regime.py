"""The DLCP regime map on a tiny grid (gradients scaled down): every cell's schemes, the
comparisons computed from their p50s, the files written."""

from __future__ import annotations

import json

import pytest

from topocoll.studies.dlcp_regime import REGIME_SCHEMES, run_regime, write_regime


def test_regime_cells(tmp_path):
    res = run_regime(loads=(0.25, 0.75), buffers=(1 << 20,), classes=(7,), patterns=("ps",),
                     iterations=1, gradient_scale=0.02)
    assert [(c["load"], c["pattern"]) for c in res["cells"]] == [(0.25, "ps"), (0.75, "ps")]
    for c in res["cells"]:
        p = c["p50_s"]
        assert set(p) == set(REGIME_SCHEMES) and all(v > 0 for v in p.values())
        base = min(p["baseline"], p["dctcp"])
        assert c["best_vs_baselines"] == pytest.approx(
            1 - min(p["layer_priority"], p["dlcp"]) / base)
        assert c["dlcp_vs_layer_priority"] == pytest.approx(1 - p["dlcp"] / p["layer_priority"])
        assert c["loss_fraction"]["baseline"] == 0.0
    # more background never makes the baseline faster here
    assert res["cells"][1]["p50_s"]["baseline"] >= res["cells"][0]["p50_s"]["baseline"]
    paths = write_regime(tmp_path, res)
    assert json.loads(paths[0].read_text())["setup"]["iterations"] == 1
    assert "| ps | 7 | 1024 KiB | 0.25 |" in paths[1].read_text()
