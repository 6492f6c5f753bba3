"""Background-traffic flow sizes against the published tables they come from."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.errors import NotSupportedError
from topocoll.sim.traffic import FLOW_SIZE_CDFS, mean_flow_size, poisson_traffic
from topocoll.topology import star

# The published points (bytes, CDF): DCTCP_CDF and VL2_CDF of
# github.com/datacenter/empirical-traffic-gen; the first is also HPCC's
# traffic_gen/WebSearch_distribution.txt (CDF there in percent).
PUBLISHED = {
    "websearch": [(0, 0), (10000, 15), (20000, 20), (30000, 30), (50000, 40), (80000, 53),
                  (200000, 60), (1000000, 70), (2000000, 80), (5000000, 90),
                  (10000000, 97), (30000000, 100)],
    "datamining": [(0, 0), (180, 10), (216, 20), (560, 30), (900, 40), (1100, 50),
                   (1870, 60), (3160, 70), (10000, 80), (400000, 90), (3160000, 95),
                   (100000000, 98), (1000000000, 100)],
}
# means of the piecewise-linear CDFs, worked out by hand from the points above
MEANS = {"websearch": 1_711_250.0, "datamining": 12_658_198.6}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_tables_are_the_published_ones(name):
    got = np.array(FLOW_SIZE_CDFS[name])
    want = np.array(PUBLISHED[name], dtype=float)
    want[:, 1] /= 100
    np.testing.assert_array_equal(got, want)
    assert mean_flow_size(name) == pytest.approx(MEANS[name], rel=1e-12)


# quantiles inside segments of the tables (linear interpolation between the points)
@pytest.mark.parametrize("name, quantiles", [
    ("websearch", {0.1: 10000 * 0.1 / 0.15, 0.5: 50000 + 30000 * 0.1 / 0.13,
                   0.85: 2e6 + 3e6 * 0.5}),
    ("datamining", {0.45: 1000, 0.75: 3160 + 6840 * 0.5, 0.85: 10000 + 390000 * 0.5}),
])
def test_sampled_sizes_follow_the_table(name, quantiles):
    t = star(8, bandwidth=12.5e9)
    duration = 6e6 * 400_000 / (8 * 12.5e9) * MEANS[name] / 6e6
    bg = poisson_traffic(t, 1.0, duration, distribution=name, seed=5)
    # Poisson count: about load * ranks * bandwidth * duration / mean = 400,000 flows
    assert abs(len(bg) - 400_000) < 5 * np.sqrt(400_000)
    for q, x in quantiles.items():
        assert np.quantile(bg.size, q) == pytest.approx(x, rel=0.03), (name, q)
    # the sample mean converges to the table's mean (slowly for the heavy data-mining tail)
    tol = 0.01 if name == "websearch" else 0.05
    assert bg.size.mean() == pytest.approx(MEANS[name], rel=tol)
    assert bg.size.min() >= 1 and bg.size.max() <= FLOW_SIZE_CDFS[name][-1][0]


def test_unknown_distribution():
    with pytest.raises(NotSupportedError, match="websearch"):
        poisson_traffic(star(4), 0.5, 1e-3, distribution="hadoop")
