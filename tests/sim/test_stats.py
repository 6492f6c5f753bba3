"""Order-statistic confidence intervals for quantiles: exact coverage, checked by drawing."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.errors import InputError
from topocoll.sim.stats import quantile_ci


@pytest.mark.parametrize("n,q", [(30, 0.5), (30, 0.9), (12, 0.5), (100, 0.99)])
def test_coverage_is_what_drawing_finds(n, q):
    """The stated coverage is the fraction of samples whose interval holds the true
    quantile (uniform samples: the q-quantile is q), within four standard errors. The
    interval of samples 1..n names its order statistics; 4,000 drawn samples use them."""
    ci = quantile_ci(np.arange(1.0, n + 1), q)
    rng = np.random.default_rng(7)
    x = np.sort(rng.random((4000, n)), axis=1)
    lo = x[:, int(ci.low) - 1] if ci.low is not None else np.full(len(x), -np.inf)
    hi = x[:, int(ci.high) - 1] if ci.high is not None else np.full(len(x), np.inf)
    hit = np.mean((lo <= q) & (q <= hi))
    se = np.sqrt(ci.coverage * (1 - ci.coverage) / len(x))
    assert abs(hit - ci.coverage) <= 4 * se + 1e-9
    assert ci.coverage >= 0.95


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
