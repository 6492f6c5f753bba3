"""Topology generators: each returns a new validated :class:`Topology`.

Conventions shared by every generator:

- ``bandwidth`` is bytes/s per link per direction and ``latency`` seconds per link;
  defaults are 50 GB/s (400 Gb/s) and 1 us.
- Undirected cables become two directed links; links are emitted dimension by
  dimension (dimension 0 first, ``+`` direction before ``-``) so that the deterministic
  shortest-path rule of :meth:`Topology.path` yields dimension-order routing.
- Ranks are numbered first, switches after them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import TopologyError
from .core import Dim, Link, Topology

__all__ = ["ring", "line", "fully_connected", "star", "torus", "mesh", "hypercube",
           "DEFAULT_BANDWIDTH", "DEFAULT_LATENCY"]

DEFAULT_BANDWIDTH = 50e9
DEFAULT_LATENCY = 1e-6


def _check_count(n: int, what: str = "num_ranks", minimum: int = 2) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < minimum:
        raise TopologyError(f"{what} must be an integer >= {minimum}, got {n!r}",
                            item=f"field '{what}'")
    return n


def _cable(links: list[Link], a: int, b: int, bw: float, lat: float, dim: int | None = None):
    links.append(Link(a, b, bw, lat, dim))
    links.append(Link(b, a, bw, lat, dim))


def ring(num_ranks: int, *, bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY,
         bidirectional: bool = True, name: str | None = None) -> Topology:
    """Return a ring of ``num_ranks`` ranks.

    Parameters
    ----------
    num_ranks : int
        At least 2. A bidirectional ring of 2 ranks has one link each way.
    bidirectional : bool
        If False, only the links ``i -> i+1`` exist (a unidirectional ring).

    Examples
    --------
    >>> t = ring(8)
    >>> len(t.links), t.describe()["rank_diameter_hops"]
    (16, 4)
    >>> len(ring(8, bidirectional=False).links)
    8
    """
    n = _check_count(num_ranks)
    links: list[Link] = []
    for i in range(n):
        j = (i + 1) % n
        links.append(Link(i, j, bandwidth, latency, 0))
    if bidirectional:
        for i in range(n):
            j = (i - 1) % n
            if n > 2:
                links.append(Link(i, j, bandwidth, latency, 0))
            elif i == 1:
                pass  # the single 1->0 link already exists for n == 2
    dims = (Dim("ring", n, bandwidth, latency),) if bidirectional else ()
    return Topology(name or f"ring:{n}" + ("" if bidirectional else ",unidirectional"), n, 0,
                    tuple(links), dims=dims)


def line(num_ranks: int, *, bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY,
         name: str | None = None) -> Topology:
    """Return a line (1-D mesh) ``0 - 1 - ... - n-1`` with bidirectional links.

    Examples
    --------
    >>> line(4).describe()["rank_diameter_hops"]
    3
    """
    return mesh((num_ranks,), bandwidth=bandwidth, latency=latency, name=name or f"line:{num_ranks}")


def fully_connected(num_ranks: int, *, bandwidth: float = DEFAULT_BANDWIDTH,
                    latency: float = DEFAULT_LATENCY, name: str | None = None) -> Topology:
    """Return a full mesh: a link each way between every pair of ranks.

    Examples
    --------
    >>> len(fully_connected(4).links)
    12
    """
    n = _check_count(num_ranks)
    links = [Link(i, j, bandwidth, latency, 0) for i in range(n) for j in range(n) if i != j]
    return Topology(name or f"fully_connected:{n}", n, 0, tuple(links),
                    dims=(Dim("fully_connected", n, bandwidth, latency),))


def star(num_ranks: int, *, bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY,
         switch_latency: float = 0.0, name: str | None = None) -> Topology:
    """Return ``num_ranks`` ranks on one non-blocking switch (node ``num_ranks``).

    Each rank has one link up and one down at ``bandwidth``; a rank-to-rank transfer
    crosses two links and pays ``switch_latency`` once.

    Examples
    --------
    >>> t = star(4)
    >>> t.num_switches, len(t.links), t.path(0, 3)
    (1, 8, (0, 4, 3))
    """
    n = _check_count(num_ranks)
    links: list[Link] = []
    for i in range(n):
        _cable(links, i, n, bandwidth, latency, 0)
    fwd = (0.0,) * n + (switch_latency,) if switch_latency else ()
    return Topology(name or f"star:{n}", n, 1, tuple(links), node_latency=fwd,
                    dims=(Dim("switch", n, bandwidth, latency),))


def _grid(shape: Sequence[int], wrap: bool, bandwidth, latency, name, kind) -> Topology:
    shape = tuple(shape)
    if not shape:
        raise TopologyError("shape must have at least one dimension", item="field 'shape'")
    for d in shape:
        _check_count(d, "dimension size")
    n = math.prod(shape)
    bws = _per_dim(bandwidth, len(shape), "bandwidth")
    lats = _per_dim(latency, len(shape), "latency")
    links: list[Link] = []
    stride = 1
    for k, size in enumerate(shape):
        for r in range(n):
            x = (r // stride) % size
            if x + 1 < size or (wrap and size > 2):
                links.append(Link(r, r + ((x + 1) % size - x) * stride, bws[k], lats[k], k))
            elif wrap and size == 2 and x == 0:
                links.append(Link(r, r + stride, bws[k], lats[k], k))
            if x - 1 >= 0 or (wrap and size > 2):
                links.append(Link(r, r + ((x - 1) % size - x) * stride, bws[k], lats[k], k))
            elif wrap and size == 2 and x == 1:
                links.append(Link(r, r - stride, bws[k], lats[k], k))
        stride *= size
    dims = tuple(Dim(kind, s, bws[k], lats[k]) for k, s in enumerate(shape))
    return Topology(name, n, 0, tuple(links), dims=dims)


def _per_dim(value, ndim: int, what: str) -> tuple[float, ...]:
    if isinstance(value, (int, float)):
        return (float(value),) * ndim
    vals = tuple(float(v) for v in value)
    if len(vals) != ndim:
        raise TopologyError(f"{what} has {len(vals)} values for {ndim} dimensions",
                            item=f"field '{what}'")
    return vals


def torus(shape: Sequence[int], *, bandwidth: float | Sequence[float] = DEFAULT_BANDWIDTH,
          latency: float | Sequence[float] = DEFAULT_LATENCY, name: str | None = None) -> Topology:
    """Return an N-D torus of any shape (wrap-around in every dimension).

    Parameters
    ----------
    shape : sequence of int
        Size of each dimension (each >= 2); dimension 0 varies fastest in rank ids.
        A dimension of size 2 gets a single link each way (no doubled wrap-around).
    bandwidth, latency : float or sequence of float
        One value for all dimensions or one per dimension.

    Examples
    --------
    >>> t = torus((4, 4))
    >>> len(t.links), t.describe()["rank_diameter_hops"]
    (64, 4)
    >>> t.path(0, 5)   # dimension-order: x first, then y
    (0, 1, 5)
    """
    shape = tuple(shape)
    return _grid(shape, True, bandwidth, latency,
                 name or "torus:" + "x".join(map(str, shape)), "ring")


def mesh(shape: Sequence[int], *, bandwidth: float | Sequence[float] = DEFAULT_BANDWIDTH,
         latency: float | Sequence[float] = DEFAULT_LATENCY, name: str | None = None) -> Topology:
    """Return an N-D mesh (a torus without wrap-around links).

    Examples
    --------
    >>> len(mesh((3, 3)).links)
    24
    """
    shape = tuple(shape)
    return _grid(shape, False, bandwidth, latency,
                 name or "mesh:" + "x".join(map(str, shape)), "line")


def hypercube(dimension: int, *, bandwidth: float = DEFAULT_BANDWIDTH,
              latency: float = DEFAULT_LATENCY, name: str | None = None) -> Topology:
    """Return a ``dimension``-dimensional hypercube of ``2**dimension`` ranks.

    Rank ``r`` links to ``r ^ (1 << k)`` for every ``k``; it is the torus ``2 x 2 x ... x 2``.

    Examples
    --------
    >>> t = hypercube(3)
    >>> t.num_ranks, len(t.links), t.describe()["rank_diameter_hops"]
    (8, 24, 3)
    """
    d = _check_count(dimension, "dimension", minimum=1)
    return _grid((2,) * d, True, bandwidth, latency, name or f"hypercube:{d}", "ring")
