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
