"""Background traffic: Poisson flow arrivals with published flow-size distributions.

Flow sizes are drawn from piecewise-linear CDFs (inverse-transform sampling between the
published points). Arrivals are Poisson with the rate that loads every rank's link to
the network at ``load`` on average: ``rate = load * num_ranks * injection_bw /
mean_size``. Source and destination are uniform over distinct ranks.

The tables are the (size in bytes, CDF) points of the files ``DCTCP_CDF`` and
``VL2_CDF`` of the empirical traffic generator of the DCTCP/pFabric authors [1]_
(``datacenter/empirical-traffic-gen`` on GitHub); the web-search table is also, point for
point, ``traffic_gen/WebSearch_distribution.txt`` of the HPCC simulator [4]_
(``alibaba-edu/High-Precision-Congestion-Control``):

``websearch``
    Web search cluster measured for DCTCP [2]_; 12 points from 0 to 30 MB, median
    73 kB, mean 1.711 MB.
``datamining``
    Data-mining cluster measured for VL2 [3]_; 13 points from 0 to 1 GB, half the flows
    at most 1.1 kB, 80% at most 10 kB, mean 12.66 MB (the 2% of flows above 100 MB carry
    most bytes).

The pFabric ns-2 scripts ship the same two workloads in 1460-byte packets
(``CDF_search.tcl``, ``CDF_vl2.tcl``); their data-mining table is coarser (9 points up to
666,667 packets, mean 5,117 packets = 7.47 MB), so means quoted from pFabric-derived
work differ from the ones here.

References
----------
.. [1] Alizadeh et al., "pFabric: Minimal Near-Optimal Datacenter Transport",
   SIGCOMM 2013 (and its traffic generator, github.com/datacenter/empirical-traffic-gen).
.. [2] Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010.
.. [3] Greenberg et al., "VL2: A Scalable and Flexible Data Center Network",
   SIGCOMM 2009.
.. [4] Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019.

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

from ..errors import InputError, NotSupportedError

__all__ = ["BackgroundTraffic", "poisson_traffic", "FLOW_SIZE_CDFS", "mean_flow_size"]

#: (bytes, cumulative probability) points of each distribution (see the module notes).
FLOW_SIZE_CDFS: dict[str, tuple[tuple[float, float], ...]] = {
    "websearch": (
        (0.0, 0.0), (1e4, 0.15), (2e4, 0.2), (3e4, 0.3), (5e4, 0.4), (8e4, 0.53),
        (2e5, 0.6), (1e6, 0.7), (2e6, 0.8), (5e6, 0.9), (1e7, 0.97), (3e7, 1.0)),
    "datamining": (
        (0.0, 0.0), (180.0, 0.1), (216.0, 0.2), (560.0, 0.3), (900.0, 0.4), (1100.0, 0.5),
        (1870.0, 0.6), (3160.0, 0.7), (1e4, 0.8), (4e5, 0.9), (3.16e6, 0.95), (1e8, 0.98),
        (1e9, 1.0)),
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

    >>> round(mean_flow_size("websearch") / 1e6, 3)
    1.711
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
        raise InputError(f"load must be in (0, 1], got {load!r}", item="load")
    if not duration > 0:
        raise InputError(f"duration must be > 0, got {duration!r}", item="duration")
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
