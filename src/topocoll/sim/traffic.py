"""Background traffic: Poisson flow arrivals with published flow-size distributions.

Flow sizes are drawn from piecewise-linear CDFs (inverse-transform sampling between the
published points). Arrivals are Poisson with the rate that loads every rank's link to
the network at ``load`` on average: ``rate = load * num_ranks * injection_bw /
mean_size``. Source and destination are uniform over distinct ranks.

The two distributions, as the (size in 1460-byte packets, CDF) tables distributed with
the pFabric simulations [1]_:

``websearch``
    Web search cluster measured for DCTCP [2]_; mean about 1.7 MB.
``datamining``
    Data-mining cluster measured for VL2 [3]_; mean about 7.4 MB, very heavy tailed.

References
----------
.. [1] Alizadeh et al., "pFabric: Minimal Near-Optimal Datacenter Transport",
   SIGCOMM 2013.
.. [2] Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010.
.. [3] Greenberg et al., "VL2: A Scalable and Flexible Data Center Network",
   SIGCOMM 2009.

Examples
--------
>>> from topocoll.topology import star
>>> bg = poisson_traffic(star(8, bandwidth=12.5e9), load=0.3, duration=1e-3, seed=1)
>>> len(bg) > 0, bool((bg.src != bg.dst).all()), bool((bg.arrival < 1e-3).all())
(True, True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NotSupportedError

__all__ = ["BackgroundTraffic", "poisson_traffic", "FLOW_SIZE_CDFS", "mean_flow_size"]

_PKT = 1460
#: (bytes, cumulative probability) points of each distribution.
FLOW_SIZE_CDFS: dict[str, tuple[tuple[float, float], ...]] = {
    "websearch": tuple((p * _PKT, c) for p, c in (
        (1, 0.0), (6, 0.15), (13, 0.2), (19, 0.3), (33, 0.4), (53, 0.53), (133, 0.6),
        (667, 0.7), (1333, 0.8), (3333, 0.9), (6667, 0.97), (20000, 1.0))),
    "datamining": tuple((p * _PKT, c) for p, c in (
        (1, 0.0), (1, 0.5), (2, 0.6), (3, 0.7), (7, 0.8), (267, 0.9), (2107, 0.95),
        (66667, 0.99), (666667, 1.0))),
}


@dataclass(frozen=True, eq=False)
class BackgroundTraffic:
    """Flows that are not part of the schedule: ``src``, ``dst`` (rank ids), ``size``
    (bytes) and ``arrival`` (seconds), sorted by arrival."""

    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    arrival: np.ndarray

    def __len__(self) -> int:
        return len(self.src)


def _cdf(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name not in FLOW_SIZE_CDFS:
        raise NotSupportedError(f"unknown flow-size distribution {name!r}; choose one of "
                                f"{', '.join(FLOW_SIZE_CDFS)}")
    pts = np.array(FLOW_SIZE_CDFS[name])
    return pts[:, 0], pts[:, 1]


def mean_flow_size(distribution: str) -> float:
    """Mean of a distribution in bytes (exact for the piecewise-linear CDF).

    >>> round(mean_flow_size("websearch") / 1e6, 2)
    1.67
    """
    x, c = _cdf(distribution)
    return float(np.sum(np.diff(c) * (x[1:] + x[:-1]) / 2))


def poisson_traffic(topology, load: float, duration: float, *,
                    distribution: str = "websearch", seed: int = 0) -> BackgroundTraffic:
    """Poisson background flows between random distinct ranks.

    Parameters
    ----------
    topology : Topology
    load : float
        Offered load as a fraction (0, 1] of each rank's injection bandwidth (the summed
        bandwidth of its outgoing links).
    duration : float
        Arrivals are drawn in ``[0, duration)`` seconds.
    distribution : {'websearch', 'datamining'}
    seed : int

    Returns
    -------
    BackgroundTraffic

    Raises
    ------
    ValueError
        If ``load`` is not in (0, 1] or ``duration`` is not positive.
    NotSupportedError
        For an unknown distribution or a topology with fewer than two ranks.
    """
    if not 0 < load <= 1:
        raise ValueError(f"load must be in (0, 1], got {load!r}")
    if not duration > 0:
        raise ValueError(f"duration must be > 0, got {duration!r}")
    n = topology.num_ranks
    if n < 2:
        raise NotSupportedError("background traffic needs at least two ranks")
    x, c = _cdf(distribution)
    inj = float(np.mean(topology.egress_bandwidth()[:n]))
    rate = load * n * inj / mean_flow_size(distribution)
    rng = np.random.default_rng(seed)
    k = rng.poisson(rate * duration)
    arrival = np.sort(rng.uniform(0.0, duration, k))
    src = rng.integers(0, n, k)
    dst = (src + rng.integers(1, n, k)) % n
    size = np.maximum(1.0, np.round(np.interp(rng.uniform(0.0, 1.0, k), c, x)))
    return BackgroundTraffic(src.astype(np.int64), dst.astype(np.int64), size, arrival)
