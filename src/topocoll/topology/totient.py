"""TotientPerms: direct-connect optical topologies built from ring permutations.

Wang et al., "TopoOpt: Co-optimizing Network Topology and Parallelization Strategy for
Distributed Training Jobs" (NSDI 2023), section 4 (``../shared/reference/algorithms.md``
section 1.4). On ``n`` servers, ``x -> x + k (mod n)`` is one Hamiltonian ring iff
``gcd(k, n) = 1``; a group of ``g`` servers placed with stride ``n/g`` gets the rings of
jumps ``(n/g) k`` with ``gcd(k, g) = 1``. A server with ``d`` bidirectional ports takes
``d/2`` jumps (each gives ``+j`` and ``-j``), chosen roughly geometrically between the
smallest and the largest candidate so that the circulant has a small diameter
(Chord-like spacing 1, r, r^2, ...).

When the group is smaller than ``n`` its rings do not connect the cosets; one jump-1 ring
(two ports) then joins everything, as TopoOpt's released code does.

Examples
--------
>>> totient_jumps(128, 128, 2), totient_jumps(128, 128, 4)
([1, 13], [1, 5, 13, 39])
>>> t = totient(128, 4)
>>> t.name, t.meta["jumps"], t.describe()["rank_out_degree_max"]
('totient:128,d=4', [1, 13], 4)
"""

from __future__ import annotations

import math

from ..errors import TopologyError
from ._common import DEFAULT_BANDWIDTH, DEFAULT_LATENCY, check_count, check_rate, check_time
from .core import Link, Topology

__all__ = ["totient_jumps", "totient"]


def totient_jumps(n: int, group: int, m: int) -> list[int]:
    """``m`` ring jumps for a group of ``group`` servers (stride ``n / group``) among
    ``n``: candidates ``(n/group) k`` with ``gcd(k, group) = 1`` and ``(n/group) k <= n/2``
    (a jump and its negative are the same bidirectional ring), picked at targets
    ``c_min r^i`` with ``r = (c_max / c_min)^(1/m)``, each the first unused candidate at
    or above its target (the released code's ``choose_n_geo``)."""
    if n % group:
        raise TopologyError(f"group {group} does not divide {n}", item="field 'group'")
    base = n // group
    cands = sorted({min(base * k, n - base * k) for k in range(1, group + 1)
                    if math.gcd(k, group) == 1})
    if m > len(cands):
        raise TopologyError(f"a group of {group} has only {len(cands)} distinct rings, "
                            f"{m} asked ({2 * m} ports)", item="field 'd'")
    if m == 1:
        return [cands[0]]
    hi = max(base * k for k in range(1, group + 1) if math.gcd(k, group) == 1)
    r = (hi / cands[0]) ** (1 / m)
    out: list[int] = []
    target = float(cands[0])
    for _ in range(m):
        pick = next((c for c in cands if c >= target - 1e-9 and c not in out), None)
        if pick is None:                                  # ran past the end: take the largest left
            pick = max(c for c in cands if c not in out)
        out.append(pick)
        target *= r
    return sorted(out)


def totient(n: int, degree: int, *, group: int | None = None,
            bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY,
            name: str | None = None) -> Topology:
    """``n`` servers with ``degree`` bidirectional ports each, wired as TotientPerms rings.

    Parameters
    ----------
    n : int
        Servers (ranks), at least 3.
    degree : int
        Ports per server; even (each ring uses two).
    group : int, optional
        Size of the group whose all-reduce the rings serve (a divisor of ``n``; default
        ``n``). Smaller groups keep two ports for one jump-1 ring over everything.
    bandwidth, latency : float
        Per port (bytes/s per direction, seconds).

    Returns
    -------
    Topology
        Links jump by jump (``+j`` then ``-j`` per server); ``meta["jumps"]`` (every jump
        used), ``meta["group"]``, ``meta["ring_order"]`` (from the first jump coprime to
        ``n``).

    Raises
    ------
    TopologyError
        Naming the field: an odd degree, a group that does not divide ``n``, more rings
        asked than exist.
    """
    n = check_count(n, "n")
    if n < 3:
        raise TopologyError(f"totient needs at least 3 servers, got {n}", item="field 'n'")
    bw, lat = check_rate(bandwidth), check_time(latency)
    if isinstance(degree, bool) or not isinstance(degree, int) or degree < 2 or degree % 2:
        raise TopologyError(f"degree must be an even integer >= 2 (two ports per ring), "
                            f"got {degree!r}", item="field 'd'")
    g = n if group is None else group
    if isinstance(g, bool) or not isinstance(g, int) or not 2 <= g <= n or n % g:
        raise TopologyError(f"group must divide n={n} and be at least 2, got {group!r}",
                            item="field 'group'")
    m = degree // 2
    if g == n:
        jumps = totient_jumps(n, n, m)
    else:
        jumps = [1] + (totient_jumps(n, g, m - 1) if m > 1 else [])
        if len(set(jumps)) != len(jumps):
            raise TopologyError("the group's rings repeat the joining jump-1 ring; use a "
                                "larger degree or group", item="field 'group'")
    links: list[Link] = []
    for j in jumps:
        for r in range(n):
            links.append(Link(r, (r + j) % n, bw, lat))
            if (2 * j) % n:
                links.append(Link(r, (r - j) % n, bw, lat))
            else:                       # j = n/2: the two directions are one cable; double it
                links.append(Link(r, (r + j) % n, bw, lat))
    step = next(j for j in jumps if math.gcd(j, n) == 1)
    meta = {"jumps": list(jumps), "group": g, "ring_order": [(i * step) % n for i in range(n)]}
    label = name or (f"totient:{n},d={degree}" + (f",group={g}" if g != n else ""))
    return Topology(label, n, 0, tuple(links), meta=meta)
