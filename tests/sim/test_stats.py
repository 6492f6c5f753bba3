"""Order-statistic confidence intervals for quantiles: exact coverage, checked by drawing."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.errors import InputError
from topocoll.sim.stats import quantile_ci


@pytest.mark.parametrize("n,q", [(30, 0.5), (30, 0.9), (12, 0.5), (100, 0.99)])
def test_coverage_is_what_drawing_finds(n, q):
    """The stated coverage is the fraction of samples whose interval holds the true
    quantile (uniform samples: the q-quantile is q), within four standard errors."""
    rng = np.random.default_rng(7)
    trials = 4000
    ci0 = quantile_ci(rng.random(n), q)
    hit = 0
    for _ in range(trials):
        ci = quantile_ci(rng.random(n), q)
        lo = -np.inf if ci.low is None else ci.low
        hi = np.inf if ci.high is None else ci.high
        hit += lo <= q <= hi
    se = np.sqrt(ci0.coverage * (1 - ci0.coverage) / trials)
    assert abs(hit / trials - ci0.coverage) <= 4 * se + 1e-9
    assert ci0.coverage >= 0.95


def test_order_statistics_and_unbounded_sides():
    x = list(range(30, 0, -1))                     # any order: sorted inside
    ci = quantile_ci(x, 0.5)
    assert (ci.low, ci.high) == (10.0, 21.0)
    assert quantile_ci(x, 0.99).high is None       # 30 samples cannot bound a p99 above
    few = quantile_ci([1.0, 2.0, 3.0], 0.5)
    assert few.as_list() == [None, None] and few.coverage == 1.0


def test_bad_input():
    with pytest.raises(InputError):
        quantile_ci([], 0.5)
    with pytest.raises(InputError):
        quantile_ci([1.0], 1.5)
