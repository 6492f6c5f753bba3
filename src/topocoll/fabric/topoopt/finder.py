"""TopoOpt's TopologyFinder: a direct-connect topology for a job's traffic.

Wang et al., "TopoOpt" (NSDI 2023), section 4 (``../shared/reference/algorithms.md``
section 1.3). Each of ``n`` servers has ``d`` ports of bandwidth ``B``. The ports are split
between the all-reduce traffic and the model-parallel (MP) traffic in proportion to their
volumes (the paper's rule; the released code gives every port to all-reduce, available as
``split="all-reduce"``):

- all-reduce ports go to ring permutations (TotientPerms, :mod:`topocoll.topology.totient`)
  per group size, in proportion to each size's traffic, two ports per bidirectional ring;
  when no group spans every server, one jump-1 ring over all of them keeps the topology
  connected (as the released code does);
- MP ports are ``d_MP`` rounds of maximum-weight perfect matching on the MP demand
  (rustworkx's blossom algorithm), each matched pair's remaining demand multiplied by
  ``c / (c + 1)`` after its ``c``-th link (diminishing returns).

Examples
--------
>>> import numpy as np
>>> mp = np.zeros((8, 8)); mp[0, 1] = mp[1, 0] = 5e9
>>> r = topology_finder(8, 4, allreduce={8: 1e9}, mp=mp, bandwidth=12.5e9)
>>> r.degree_allreduce, r.degree_mp, r.topology.describe()["rank_out_degree_max"]
(2, 2, 4)
>>> (0, 1) in r.matchings[0]
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ...topology import Link, Topology
from ...topology.totient import totient_jumps

__all__ = ["FinderResult", "topology_finder", "split_degree", "mp_matchings"]


@dataclass(frozen=True)
class FinderResult:
    """The topology and how its ports were used."""

    topology: Topology
    degree_allreduce: int
    degree_mp: int
    jumps: dict
    matchings: tuple[tuple[tuple[int, int], ...], ...]


def split_degree(d: int, allreduce_bytes: float, mp_bytes: float) -> tuple[int, int]:
    """(all-reduce ports, MP ports): proportional to the volumes, the all-reduce share
    even (two ports per bidirectional ring) and at least 2 when there is all-reduce
    traffic (the rings keep the topology connected)."""
    total = allreduce_bytes + mp_bytes
    if total <= 0 or mp_bytes <= 0:
        return d - d % 2, d % 2
    if allreduce_bytes <= 0:
        return 0, d
    da = 2 * round(d * allreduce_bytes / total / 2)
    da = min(max(da, 2), d - d % 2)
    return da, d - da


def _ring_ports(da: int, allreduce: Mapping[int, float], n: int) -> dict[int, int]:
    """Bidirectional rings (pairs of ports) per group size."""
    rings = da // 2
    sizes = sorted(allreduce, key=lambda g: (-allreduce[g], g))
    total = sum(allreduce.values())
    share = {g: max(1, round(rings * allreduce[g] / total)) for g in sizes}
    while sum(share.values()) > rings:            # too many: take from the lightest
        g = next(g for g in reversed(sizes) if share[g] > 0)
        share[g] -= 1
    while sum(share.values()) < rings:            # too few: give to the heaviest
        share[sizes[0]] += 1
    if n not in share or share.get(n, 0) == 0:
        # no ring spans every server: the last group gives one ring to a jump-1 ring
        donor = next((g for g in reversed(sizes) if share[g] > 0), None)
        if donor is not None:
            share[donor] -= 1
            share[n] = share.get(n, 0) + 1
    return {g: k for g, k in share.items() if k > 0}


def topology_finder(n: int, d: int, *, allreduce: Mapping[int, float],
                    mp: np.ndarray | None = None, bandwidth: float = 12.5e9,
                    latency: float = 1e-6, split: str = "proportional",
                    allreduce_ports: int | None = None,
                    matchings: list[tuple[tuple[int, int], ...]] | None = None) \
        -> FinderResult:
    """The direct-connect topology for ``allreduce`` traffic (bytes per iteration per group
    size; groups are strided cosets) and an ``n x n`` MP demand matrix ``mp`` (bytes).

    ``allreduce_ports`` (even) overrides the split; ``matchings`` reuses rounds computed
    by :func:`mp_matchings` for the same demand (its first ``d_MP`` are taken: the greedy
    rounds do not depend on how many follow).

    Raises
    ------
    InputError
        Naming the bad argument (odd ``n`` with MP ports: no perfect matching; a group
        size that does not divide ``n``; more rings than a group has).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 3:
        raise InputError(f"servers must be an integer >= 3, got {n!r}", item="servers")
    if isinstance(d, bool) or not isinstance(d, int) or d < 2:
        raise InputError(f"degree must be an integer >= 2, got {d!r}", item="degree")
    for g in allreduce:
        if n % g or g < 2:
            raise InputError(f"all-reduce group size {g} must divide {n} servers",
                             item=f"group {g}")
    M = np.zeros((n, n)) if mp is None else np.array(mp, float)
    if M.shape != (n, n) or (M < 0).any():
        raise InputError(f"the MP demand must be a non-negative {n} x {n} matrix",
                         item="mp")
    M = (M + M.T) / 2
    np.fill_diagonal(M, 0)
    ta, tm = float(sum(allreduce.values())), float(M.sum() / 2)
    if split == "proportional":
        da, dm = split_degree(d, ta, tm)
    elif split == "all-reduce":
        da, dm = d - d % 2, d % 2
    else:
        raise InputError(f"split must be proportional or all-reduce, got {split!r}",
                         item="split")
    if allreduce_ports is not None:
        if allreduce_ports % 2 or not 0 <= allreduce_ports <= d:
            raise InputError(f"all-reduce ports must be even and 0..{d}, got "
                             f"{allreduce_ports}", item="allreduce_ports")
        da, dm = allreduce_ports, d - allreduce_ports
    if ta <= 0:
        da, dm = 0, d
    if dm and n % 2:
        raise InputError(f"{dm} MP ports need an even number of servers (perfect matchings), "
                         f"got {n}", item="servers")
    links: list[Link] = []
    jumps: dict[int, list[int]] = {}
    if da:
        for g, k in sorted(_ring_ports(da, allreduce or {n: 1.0}, n).items()):
            js = totient_jumps(n, g, k)
            jumps[g] = js
            for j in js:
                for r in range(n):
                    links.append(Link(r, (r + j) % n, bandwidth, latency))
                    back = (r - j) % n if (2 * j) % n else (r + j) % n
                    links.append(Link(r, back, bandwidth, latency))
    rounds: list[tuple[tuple[int, int], ...]] = []
    if dm:
        rounds = list(matchings[:dm]) if matchings is not None and len(matchings) >= dm \
            else mp_matchings(M, dm)
        for pairs in rounds:
            for a, b in pairs:
                links.append(Link(a, b, bandwidth, latency))
                links.append(Link(b, a, bandwidth, latency))
    if not links:
        raise InputError("no traffic and no ports used", item="degree")
    name = f"topoopt:{n},d={d},B={bandwidth / 1e9:g}GB/s"
    meta = {"jumps": {str(g): js for g, js in jumps.items()}, "degree_allreduce": da,
            "degree_mp": dm}
    t = Topology(name, n, 0, tuple(links), meta=meta)
    if da == 0 and not _connected(t):
        raise InputError("the matchings alone do not connect the servers; give all-reduce "
                         "traffic or use split='all-reduce'", item="split")
    return FinderResult(t, da, dm, jumps, tuple(rounds))


def mp_matchings(mp: np.ndarray, rounds: int) -> list[tuple[tuple[int, int], ...]]:
    """``rounds`` maximum-weight perfect matchings on the symmetric demand ``mp``
    (rustworkx's blossom algorithm, exact on integer weights: each pair's demand in units
    of ``2^-40`` of the largest, plus one so that every pair stays eligible), each matched
    pair's demand multiplied by ``c / (c + 1)`` after its ``c``-th link."""
    import rustworkx as rx

    M = np.array(mp, float)
    n = len(M)
    count = np.zeros((n, n))
    demand = (M + M.T) / 2
    np.fill_diagonal(demand, 0.0)
    scale = demand.max() or 1.0
    iu, ju = np.triu_indices(n, 1)
    out = []
    for _ in range(rounds):
        w = 1 + np.rint(demand[iu, ju] / scale * 2.0**40).astype(np.int64)
        g = rx.PyGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from(list(zip(iu.tolist(), ju.tolist(), w.tolist(), strict=True)))
        m = rx.max_weight_matching(g, max_cardinality=True, weight_fn=int)
        pairs = tuple(sorted((min(a, b), max(a, b)) for a, b in m))
        out.append(pairs)
        for a, b in pairs:
            count[a, b] += 1
            c = count[a, b]
            demand[a, b] = demand[b, a] = demand[a, b] * c / (c + 1)
    return out


def _connected(t: Topology) -> bool:
    from scipy.sparse.csgraph import connected_components

    return connected_components(t.adjacency(), directed=True, connection="strong")[0] == 1
