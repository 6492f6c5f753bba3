"""Confidence intervals for what repeated simulation runs measure.

:func:`quantile_ci` is the distribution-free interval for a quantile from order
statistics: with ``n`` independent samples, the number of samples below the true
``q``-quantile is Binomial(``n``, ``q``), so ``[x_(l), x_(u)]`` covers it with
probability ``P(l <= B < u)`` whatever the distribution (Conover, *Practical
Nonparametric Statistics*, 3rd ed., section 3.2). No resampling, so no seed: the same
samples give the same interval on every machine. Where ``n`` is too small for the level
(a p99 from 30 samples), the missing side is reported as unbounded (None) and the
coverage actually reached is given.

Examples
--------
>>> ci = quantile_ci(list(range(1, 31)), 0.5)
>>> ci.low, ci.high, round(ci.coverage, 3)      # the 10th and 21st of 30 samples
(10.0, 21.0, 0.957)
>>> ci = quantile_ci(list(range(1, 31)), 0.99)
>>> ci.low, ci.high                              # 30 samples cannot bound a p99 above
(28.0, None)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

__all__ = ["QuantileCI", "quantile_ci"]


@dataclass(frozen=True)
class QuantileCI:
    """``low``/``high``: sample values bounding the quantile (None: unbounded on that
    side); ``coverage``: the exact probability that the interval covers it."""

    low: float | None
    high: float | None
    coverage: float

    def as_list(self) -> list:
        return [self.low, self.high]


def quantile_ci(samples: Sequence[float], q: float, level: float = 0.95) -> QuantileCI:
    """The order-statistic interval for the ``q``-quantile of ``samples`` at ``level``
    (equal tails of ``(1 - level) / 2``; see the module docstring)."""
    from scipy.stats import binom

    if not 0 < q < 1 or not 0 < level < 1:
        raise InputError(f"need 0 < q < 1 and 0 < level < 1, got q={q}, level={level}",
                         item="q")
    x = np.sort(np.asarray(samples, float), kind="stable")
    n = len(x)
    if n == 0:
        raise InputError("no samples for a confidence interval", item="samples")
    tail = (1 - level) / 2
    # B ~ Bin(n, q) samples lie below the quantile; x_(j) (1-based) is below it iff B >= j
    lo = int(binom.ppf(tail, n, q))          # largest j with P(B < j) <= tail, or so
    while lo > 0 and binom.cdf(lo - 1, n, q) > tail:
        lo -= 1
    hi = int(binom.ppf(1 - tail, n, q)) + 1
    while hi - 1 > 0 and binom.cdf(hi - 2, n, q) >= 1 - tail:
        hi -= 1
    low = float(x[lo - 1]) if lo >= 1 else None
    high = float(x[hi - 1]) if hi <= n else None
    p_lo = binom.cdf(lo - 1, n, q) if lo >= 1 else 0.0
    p_hi = binom.cdf(hi - 1, n, q) if hi <= n else 1.0
    return QuantileCI(low, high, float(p_hi - p_lo))
