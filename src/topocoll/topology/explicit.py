"""Explicit topologies: from a bandwidth matrix or from a list of edges.

Both accept what users type or load from files; :func:`from_edges` (and the file reader
in :mod:`topocoll.topology.io`, which shares its edge parser) also accepts quantities as
strings with units (``"400Gbps"``, ``"100ns"``), parsed by :mod:`topocoll.units`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import TopologyError
from ._common import (
    DEFAULT_BANDWIDTH,
    DEFAULT_LATENCY,
    check_count,
    check_time,
    rate_field,
    time_field,
)
from .core import ROUTINGS, Link, Topology

__all__ = ["from_matrix", "from_edges", "parse_links"]

_EDGE_KEYS = ("src", "dst", "bandwidth", "latency", "dim")


def from_matrix(bandwidth: Any, *, latency: Any = DEFAULT_LATENCY,
                name: str | None = None) -> Topology:
    """Return the topology whose link ``i -> j`` has bandwidth ``bandwidth[i][j]``.

    Parameters
    ----------
    bandwidth : array_like, shape (n, n)
        Bytes/s. **Row = source, column = destination** (``bandwidth[i][j]`` is the link
        ``i -> j``), unlike MSCCL's destination-first matrices. 0 means no link; the
        diagonal must be 0. All nodes are ranks.
    latency : float or array_like, shape (n, n)
        Seconds: one value for all links or a matrix indexed like ``bandwidth`` (entries
        where there is no link are ignored).
    name : str, optional
        Default ``"matrix:<n>"``.

    Returns
    -------
    Topology
        Links in row-major order.

    Raises
    ------
    TopologyError
        ``item="field 'bandwidth'"`` (or ``'latency'``) for a non-square or mis-shaped
        matrix; ``item="link i->j"`` for a negative, infinite or NaN entry or a non-zero
        diagonal; ``item="rank r"`` if the result is disconnected.

    Examples
    --------
    >>> t = from_matrix([[0, 2e9], [1e9, 0]], latency=1e-6)
    >>> [(lk.src, lk.dst, lk.bandwidth) for lk in t.links]
    [(0, 1, 2000000000.0), (1, 0, 1000000000.0)]
    """
    try:
        bw = np.asarray(bandwidth, dtype=np.float64)
    except (TypeError, ValueError):
        raise TopologyError("bandwidth must be a square matrix of numbers",
                            item="field 'bandwidth'") from None
    if bw.ndim != 2 or bw.shape[0] != bw.shape[1]:
        raise TopologyError(f"bandwidth must be a square matrix, got shape {bw.shape}",
                            item="field 'bandwidth'")
    n = check_count(bw.shape[0], "num_ranks")
    if np.ndim(latency) == 0:
        lat = np.full(bw.shape, check_time(latency))
    else:
        try:
            lat = np.asarray(latency, dtype=np.float64)
        except (TypeError, ValueError):
            raise TopologyError("latency must be a number or a matrix of numbers",
                                item="field 'latency'") from None
        if lat.shape != bw.shape:
            raise TopologyError(f"latency has shape {lat.shape}, bandwidth {bw.shape}",
                                item="field 'latency'")
    bad = ~(np.isfinite(bw) & (bw >= 0))
    bad |= np.eye(n, dtype=bool) & (bw != 0)
    bad |= (bw > 0) & ~(np.isfinite(lat) & (lat >= 0))
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        raise TopologyError(f"link {i}->{j}: bandwidth {bw[i, j]!r} and latency {lat[i, j]!r} "
                            "(need bandwidth >= 0, 0 on the diagonal, latency >= 0, finite)",
                            item=f"link {i}->{j}")
    links = tuple(Link(int(i), int(j), float(bw[i, j]), float(lat[i, j]))
                  for i, j in np.argwhere(bw > 0))
    return Topology(name or f"matrix:{n}", n, 0, links)


def from_edges(edges: Iterable[Any], *, num_ranks: int, num_switches: int = 0,
               bidirectional: bool = False, bandwidth: float | str = DEFAULT_BANDWIDTH,
               latency: float | str = DEFAULT_LATENCY, node_latency: Sequence[Any] = (),
               routing: str = "shortest", name: str | None = None) -> Topology:
    """Return the topology with the given links.

    Parameters
    ----------
    edges : iterable
        Each edge is a tuple ``(src, dst)``, ``(src, dst, bandwidth)`` or
        ``(src, dst, bandwidth, latency)``, or a mapping with keys ``src``, ``dst`` and
        optionally ``bandwidth``, ``latency`` and ``dim``. Bandwidths are bytes/s or rate
        strings (``"400Gbps"``), latencies seconds or time strings (``"100ns"``).
    num_ranks, num_switches : int
        Ranks are nodes ``0 .. num_ranks - 1``, switches the next ``num_switches`` ids.
    bidirectional : bool
        If True, every edge is a cable: links ``src -> dst`` and ``dst -> src``.
    bandwidth, latency : float or str
        Used for edges that do not give their own.
    node_latency : sequence, optional
        Forwarding latency of every node (seconds or time strings).
    routing : {'shortest', 'ecmp', 'spray'}
        Default routing policy.

    Returns
    -------
    Topology
        Links in edge order (for a cable: ``src -> dst`` first).

    Raises
    ------
    TopologyError
        ``item="edge k"`` for a malformed edge, ``item="link i->j"`` for a bad bandwidth or
        latency, a dangling endpoint or a self-loop; ``item="rank r"`` if disconnected.

    Examples
    --------
    >>> t = from_edges([(0, 1, "100Gbps"), (1, 2, 25e9, "500ns")], num_ranks=3,
    ...                bidirectional=True)
    >>> len(t.links), t.links[0].bandwidth, t.links[2].latency
    (4, 12500000000.0, 5e-07)
    """
    n = check_count(num_ranks, "num_ranks", minimum=1)
    s = check_count(num_switches, "num_switches", minimum=0)
    default_bw = rate_field(bandwidth, "field 'bandwidth'")
    default_lat = time_field(latency, "field 'latency'")
    links = parse_links(edges, default_bw, default_lat, bidirectional=bidirectional)
    fwd = tuple(time_field(x, f"node {i}") for i, x in enumerate(node_latency))
    if routing not in ROUTINGS:
        raise TopologyError(f"routing must be one of {ROUTINGS}, got {routing!r}",
                            item="field 'routing'")
    return Topology(name or f"edges:{n}", n, s, tuple(links), node_latency=fwd, routing=routing)


def parse_links(edges: Iterable[Any], bandwidth: float | None, latency: float, *,
                bidirectional: bool = False, field: str = "edges",
                item: str = "edge {k}") -> list[Link]:
    """Turn edge tuples or mappings into links (two per edge if ``bidirectional``).

    ``bandwidth=None`` makes a bandwidth mandatory in every edge. ``field`` names the
    whole list and ``item`` (formatted with the index ``k``) one malformed entry in errors.
    """
    if isinstance(edges, (str, bytes, Mapping)) or not isinstance(edges, Iterable):
        raise TopologyError(f"{field} must be a list, got {type(edges).__name__}",
                            item=f"field '{field}'")
    links: list[Link] = []
    for k, e in enumerate(edges):
        src, dst, bw, lat, dim = _edge_fields(e, item.format(k=k))
        tag = f"link {src}->{dst}"
        bw = rate_field(bw, tag) if bw is not None else bandwidth
        if bw is None:
            raise TopologyError(f"{tag}: missing bandwidth", item=tag)
        lat = time_field(lat, tag) if lat is not None else latency
        links.append(Link(src, dst, bw, lat, dim))
        if bidirectional:
            links.append(Link(dst, src, bw, lat, dim))
    return links


def _edge_fields(e: Any, tag: str) -> tuple:
    if isinstance(e, Mapping):
        unknown = sorted(set(e) - set(_EDGE_KEYS), key=str)
        if unknown:
            raise TopologyError(f"{tag}: unknown key {unknown[0]!r} (valid: "
                                f"{', '.join(_EDGE_KEYS)})", item=tag)
        missing = [x for x in ("src", "dst") if x not in e]
        if missing:
            raise TopologyError(f"{tag}: missing key {missing[0]!r}", item=tag)
        fields = (e["src"], e["dst"], e.get("bandwidth"), e.get("latency"), e.get("dim"))
    elif isinstance(e, Sequence) and not isinstance(e, (str, bytes)) and 2 <= len(e) <= 4:
        fields = (*e, *(None,) * (5 - len(e)))
    else:
        raise TopologyError(f"{tag}: expected (src, dst[, bandwidth[, latency]]) or a mapping, "
                            f"got {e!r}", item=tag)
    src, dst, bw, lat, dim = fields
    for v in (src, dst) + ((dim,) if dim is not None else ()):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TopologyError(f"{tag}: node ids and dim must be integers, got {v!r}", item=tag)
    return int(src), int(dst), bw, lat, None if dim is None else int(dim)
