"""Link, Dim and Topology: what the network is.

A topology is a directed multigraph. Vertices ``0 .. num_ranks - 1`` are *ranks*
(endpoints that hold data); vertices ``num_ranks .. num_nodes - 1`` are *switches*
(they forward but hold no data). Each :class:`Link` is one directed edge with a
bandwidth in bytes/s and a latency in seconds; a bidirectional cable is two links.
Parallel links are allowed: links between the same ordered pair of nodes form a
*bundle* whose capacity is the sum of its members.

A topology is immutable and always valid: construction checks every link and that
every rank can reach every other rank, and raises :class:`~topocoll.errors.TopologyError`
naming the offending item otherwise.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..digest import content_digest
from ..errors import InputTypeError, TopologyError
from ..units import UnitError, parse_rate, parse_time
from .routing import ROUTINGS, routes, shortest_path_nodes

__all__ = ["Link", "Dim", "Topology", "ROUTINGS", "DIM_KINDS", "MAX_LINKS", "MAX_NODES",
           "LINK_BYTES", "check_size", "max_links", "DESCRIBE_EXACT_NODES",
           "HOP_TABLE_NODES"]

#: Default bound on a topology's links (about 150 bytes each in memory); raise it with
#: ``$TOPOCOLL_MAX_LINKS``.
MAX_LINKS = 4_000_000
#: Bound on a topology's nodes (ranks and switches).
MAX_NODES = 4_000_000
#: Bytes one link takes in memory (the Link object and its share of the link arrays).
LINK_BYTES = 150
#: Largest node count for which :meth:`Topology.hop_distances` builds its ``n^2`` table.
HOP_TABLE_NODES = 20_000
#: Largest node count for which :meth:`Topology.describe` computes the exact rank
#: diameter from all-pairs hop distances (``n^2`` floats); beyond, a double sweep of
#: breadth-first searches gives a lower bound.
DESCRIBE_EXACT_NODES = 4096

#: Dimension kinds of hierarchical topologies (ASTRA-sim's three plus torus/mesh lines).
DIM_KINDS = ("ring", "line", "fully_connected", "switch")


@dataclass(frozen=True, slots=True)
class Link:
    """One directed link.

    Parameters
    ----------
    src, dst : int
        Node ids (ranks are ``< num_ranks``, switches ``>= num_ranks``).
    bandwidth : float
        Bytes per second, > 0.
    latency : float
        Seconds, >= 0.
    dim : int or None
        The dimension the link belongs to in a multi-dimensional topology.

    Examples
    --------
    >>> Link(0, 1, 50e9, 1e-7)
    Link(src=0, dst=1, bandwidth=50000000000.0, latency=1e-07, dim=None)
    """

    src: int
    dst: int
    bandwidth: float
    latency: float = 0.0
    dim: int | None = None

    def __post_init__(self) -> None:
        name = f"link {self.src}->{self.dst}"
        if isinstance(self.src, bool) or isinstance(self.dst, bool):
            raise TopologyError(f"{name}: endpoints must be integers", item=name)
        if self.src == self.dst:
            raise TopologyError(f"{name}: a link must join two different nodes", item=name)
        for field_name, parse in (("bandwidth", parse_rate), ("latency", parse_time)):
            v = getattr(self, field_name)
            if isinstance(v, str):                    # "400Gbps", "100ns"
                try:
                    v = parse(v)
                except UnitError as e:
                    raise TopologyError(f"{name}: {field_name}: {e}", item=name) from None
                object.__setattr__(self, field_name, v)
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise InputTypeError(f"{name}: {field_name} must be a number, got "
                                     f"{type(v).__name__} {v!r}", item=name)
        if not (math.isfinite(self.bandwidth) and self.bandwidth > 0):
            raise TopologyError(
                f"{name}: bandwidth must be > 0 and finite (got {self.bandwidth!r})", item=name)
        if not (isinstance(self.latency, (int, float)) and math.isfinite(self.latency)
                and self.latency >= 0):
            raise TopologyError(f"{name}: latency must be >= 0 and finite (got {self.latency!r})",
                                item=name)


@dataclass(frozen=True, slots=True)
class Dim:
    """One dimension of a multi-dimensional (torus or hierarchical) topology.

    Ranks are laid out in mixed radix with dimension 0 varying fastest (the ASTRA-sim
    convention): ``rank = x0 + size0 * (x1 + size1 * (x2 + ...))``.

    Parameters
    ----------
    kind : {'ring', 'line', 'fully_connected', 'switch'}
        How the ``size`` ranks that differ only in this coordinate are connected.
    size : int
        Number of ranks along the dimension (> 1).
    bandwidth : float
        Bytes/s per link per direction.
    latency : float
        Seconds per link.
    """

    kind: str
    size: int
    bandwidth: float
    latency: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in DIM_KINDS:
            raise TopologyError(f"dim kind must be one of {DIM_KINDS}, got {self.kind!r}",
                                item=f"dim kind {self.kind!r}")
        if not isinstance(self.size, int) or self.size < 2:
            raise TopologyError(f"dim size must be an integer >= 2, got {self.size!r}",
                                item=f"dim size {self.size!r}")
        if not self.bandwidth > 0 or not math.isfinite(self.bandwidth):
            raise TopologyError(f"dim bandwidth must be > 0, got {self.bandwidth!r}",
                                item="dim bandwidth")
        if not self.latency >= 0:
            raise TopologyError(f"dim latency must be >= 0, got {self.latency!r}",
                                item="dim latency")


@dataclass(frozen=True, eq=False)
class Topology:
    """An immutable, validated network of ranks, switches and directed links.

    Parameters
    ----------
    name : str
        A label, usually the generator spec (``"torus:4x4"``).
    num_ranks : int
        Ranks are nodes ``0 .. num_ranks - 1``.
    num_switches : int
        Switches are nodes ``num_ranks .. num_ranks + num_switches - 1``.
    links : tuple of Link
        Directed links; parallel links allowed.
    node_latency : tuple of float, optional
        Forwarding latency (s) of each node, charged when a transfer passes *through*
        it (not at its endpoints). Empty means zero everywhere.
    dims : tuple of Dim, optional
        Per-dimension description when the topology is a torus, mesh or hierarchical
        network; empty otherwise. The product of sizes equals ``num_ranks``.
    routing : {'shortest', 'ecmp', 'spray'}
        Default routing policy (see :mod:`topocoll.topology.routing`).
    meta : mapping, optional
        Free-form, JSON-serializable extras (e.g. ``ring_order``, ``groups``).

    Raises
    ------
    TopologyError
        On a dangling link (an endpoint that is not a node), a rank that cannot reach
        every other rank, a switch no rank can use, a bad ``node_latency`` or ``dims``.

    Examples
    --------
    >>> t = Topology("pair", 2, 0, (Link(0, 1, 1e9), Link(1, 0, 1e9)))
    >>> t.num_nodes, len(t.links)
    (2, 2)
    """

    name: str
    num_ranks: int
    num_switches: int
    links: tuple[Link, ...]
    node_latency: tuple[float, ...] = ()
    dims: tuple[Dim, ...] = ()
    routing: str = "shortest"
    meta: Mapping[str, Any] = field(default_factory=dict)
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "links", tuple(self.links))
        object.__setattr__(self, "node_latency", tuple(float(x) for x in self.node_latency))
        object.__setattr__(self, "dims", tuple(self.dims))
        _validate(self)

    # ----------------------------------------------------------------- basics
    @property
    def num_nodes(self) -> int:
        """Ranks plus switches."""
        return self.num_ranks + self.num_switches

    @property
    def ranks(self) -> range:
        """The rank ids ``0 .. num_ranks - 1``."""
        return range(self.num_ranks)

    @property
    def switches(self) -> range:
        """The switch ids ``num_ranks .. num_nodes - 1``."""
        return range(self.num_ranks, self.num_nodes)

    def is_switch(self, node: int) -> bool:
        """True if ``node`` is a switch."""
        return self.num_ranks <= node < self.num_nodes

    def __repr__(self) -> str:
        return (f"Topology({self.name!r}, ranks={self.num_ranks}, switches={self.num_switches}, "
                f"links={len(self.links)})")

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()``, computed once per topology and key (a topology is immutable, so
        anything derived from it can be kept with it). The cache dies with the topology.

        Examples
        --------
        >>> from topocoll.topology.generators import ring
        >>> t = ring(4)
        >>> t.memo("answer", lambda: 42), t.memo("answer", lambda: 0)
        (42, 42)
        """
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def fingerprint(self) -> str:
        """A stable content hash (64 hex digits) of everything that determines how this
        topology behaves: node counts, every link (endpoints, bandwidth, latency,
        dimension, in order: routing breaks ties by link order), forwarding latencies,
        dimensions, routing policy and ``meta``. The name is left out (two topologies
        that differ only in name route, bound and cost alike). Numbers are hashed by
        value (:func:`~topocoll.digest.content_digest`), so neither dict order nor float
        formatting changes it, and it is the same on every machine and run.

        Examples
        --------
        >>> from topocoll.topology.generators import ring
        >>> ring(4).fingerprint() == ring(4).fingerprint()
        True
        >>> ring(4).fingerprint() == ring(4, bandwidth=25e9).fingerprint()
        False
        """
        return self.memo("fingerprint", lambda: content_digest(
            "topocoll.Topology/1", self.num_ranks, self.num_switches, self.link_src,
            self.link_dst, self.link_bandwidth, self.link_latency,
            np.array([-1 if lk.dim is None else lk.dim for lk in self.links], np.int64),
            list(self.node_latency), [(d.kind, d.size, d.bandwidth, d.latency) for d in self.dims],
            self.routing, dict(self.meta or {})))

    # ------------------------------------------------------------- link arrays
    def _arrays(self) -> dict[str, np.ndarray]:
        a = self._cache.get("arrays")
        if a is None:
            n = len(self.links)
            a = {
                "src": np.fromiter((lk.src for lk in self.links), np.int64, n),
                "dst": np.fromiter((lk.dst for lk in self.links), np.int64, n),
                "bandwidth": np.fromiter((lk.bandwidth for lk in self.links), np.float64, n),
                "latency": np.fromiter((lk.latency for lk in self.links), np.float64, n),
            }
            for v in a.values():
                v.flags.writeable = False
            self._cache["arrays"] = a
        return a

    @property
    def link_src(self) -> np.ndarray:
        """Source node of every link (read-only int64 array)."""
        return self._arrays()["src"]

    @property
    def link_dst(self) -> np.ndarray:
        """Destination node of every link (read-only int64 array)."""
        return self._arrays()["dst"]

    @property
    def link_bandwidth(self) -> np.ndarray:
        """Bandwidth of every link in bytes/s (read-only float64 array)."""
        return self._arrays()["bandwidth"]

    @property
    def link_latency(self) -> np.ndarray:
        """Latency of every link in s (read-only float64 array)."""
        return self._arrays()["latency"]

    @property
    def forwarding_latency(self) -> np.ndarray:
        """Per-node forwarding latency in s (zeros if none was given)."""
        f = self._cache.get("fwd")
        if f is None:
            f = (np.asarray(self.node_latency, dtype=np.float64) if self.node_latency
                 else np.zeros(self.num_nodes))
            f.flags.writeable = False
            self._cache["fwd"] = f
        return f

    def egress_bandwidth(self) -> np.ndarray:
        """Total bandwidth leaving each node (bytes/s), indexed by node id."""
        return np.bincount(self.link_src, weights=self.link_bandwidth, minlength=self.num_nodes)

    def ingress_bandwidth(self) -> np.ndarray:
        """Total bandwidth entering each node (bytes/s), indexed by node id."""
        return np.bincount(self.link_dst, weights=self.link_bandwidth, minlength=self.num_nodes)

    def links_between(self, src: int, dst: int) -> list[int]:
        """Indices of all links ``src -> dst`` (the bundle), possibly empty."""
        bundles = self._cache.get("bundles")
        if bundles is None:
            bundles = {}
            for i, lk in enumerate(self.links):
                bundles.setdefault((lk.src, lk.dst), []).append(i)
            self._cache["bundles"] = bundles
        return list(bundles.get((src, dst), ()))

    # ------------------------------------------------------------ coordinates
    def coords(self, rank: int) -> tuple[int, ...]:
        """Mixed-radix coordinates of ``rank`` (dimension 0 fastest); needs ``dims``.

        Examples
        --------
        >>> from topocoll.topology.generators import torus
        >>> torus((4, 2)).coords(5)
        (1, 1)
        """
        if not self.dims:
            raise TopologyError(f"topology {self.name!r} has no dimensions", item="dims")
        out = []
        for d in self.dims:
            out.append(rank % d.size)
            rank //= d.size
        return tuple(out)

    def rank_of(self, coords: Sequence[int]) -> int:
        """Inverse of :meth:`coords`."""
        r = 0
        for d, x in zip(reversed(self.dims), reversed(tuple(coords)), strict=True):
            r = r * d.size + int(x) % d.size
        return r

    # ---------------------------------------------------------------- routing
    def path(self, src: int, dst: int) -> tuple[int, ...]:
        """The deterministic shortest path from ``src`` to ``dst`` as a node tuple.

        Minimum hop count; among equal-length paths, each hop takes the neighbour reached by
        the lowest-index link. Generators emit dimension-0 links first, so on tori this is
        dimension-order routing.

        Examples
        --------
        >>> from topocoll.topology.generators import ring
        >>> ring(6).path(0, 2)
        (0, 1, 2)
        """
        return shortest_path_nodes(self, src, dst)

    def routes(self, pairs: np.ndarray, routing: str | None = None):
        """Route many ``(src, dst)`` pairs at once; see :func:`topocoll.topology.routing.routes`."""
        return routes(self, pairs, routing or self.routing)

    def hop_distances(self) -> np.ndarray:
        """All-pairs hop distances between nodes (float array, ``inf`` where unreachable).

        Raises
        ------
        TopologyError
            ``item="size"`` above :data:`HOP_TABLE_NODES` nodes (the table is ``n^2``
            floats: 3.2 GB at 20,000 nodes).
        """
        d = self._cache.get("hops")
        if d is None and self.num_nodes > HOP_TABLE_NODES:
            from ..units import format_size

            raise TopologyError(
                f"{self.name}: the all-pairs hop table of {self.num_nodes:,} nodes needs "
                f"{format_size(8.0 * self.num_nodes ** 2, 3)}; it is built for at most "
                f"{HOP_TABLE_NODES:,} nodes", item="size")
        if d is None:
            from scipy.sparse.csgraph import shortest_path

            d = shortest_path(self.adjacency(), unweighted=True, directed=True)
            d.flags.writeable = False
            self._cache["hops"] = d
        return d

    def adjacency(self):
        """Sparse (CSR) node adjacency with summed bandwidth as weights."""
        from scipy.sparse import csr_matrix

        a = self._cache.get("adj")
        if a is None:
            n = self.num_nodes
            a = csr_matrix((self.link_bandwidth, (self.link_src, self.link_dst)), shape=(n, n))
            a.sum_duplicates()
            self._cache["adj"] = a
        return a

    def to_networkx(self):
        """A ``networkx.MultiDiGraph``: node attr ``kind`` ('rank'/'switch'), edge attrs
        ``bandwidth``, ``latency``, ``dim``; the edge key is the link index.

        Examples
        --------
        >>> from topocoll.topology.generators import ring
        >>> g = ring(4).to_networkx()
        >>> g.number_of_nodes(), g.number_of_edges()
        (4, 8)
        """
        import networkx as nx

        g = nx.MultiDiGraph(name=self.name)
        for v in range(self.num_nodes):
            g.add_node(v, kind="rank" if v < self.num_ranks else "switch")
        for i, lk in enumerate(self.links):
            g.add_edge(lk.src, lk.dst, key=i, bandwidth=lk.bandwidth, latency=lk.latency,
                       dim=lk.dim)
        return g

    def _rank_diameter(self) -> tuple[int, bool]:
        """The largest hop distance between ranks: exact from the all-pairs table up to
        :data:`DESCRIBE_EXACT_NODES` nodes, else a lower bound from a double sweep (BFS from
        rank 0 to the farthest rank, then from there and back)."""
        if self.num_ranks < 2:
            return 0, True
        if self.num_nodes <= DESCRIBE_EXACT_NODES:
            return int(self.hop_distances()[: self.num_ranks, : self.num_ranks].max()), True
        from scipy.sparse.csgraph import shortest_path

        best, src = 0, 0
        for _ in range(2):
            for graph in (self.adjacency(), self.adjacency().T.tocsr()):
                d = shortest_path(graph, unweighted=True, directed=True, indices=[src])[0]
                d = d[: self.num_ranks]
                far = int(np.argmax(np.where(np.isfinite(d), d, -1)))
                best = max(best, int(d[far]))
            src = far
        return best, False

    def describe(self) -> dict[str, Any]:
        """Summary statistics used by ``topocoll topology show``."""
        bw = self.link_bandwidth
        diameter, exact = self._rank_diameter()
        deg = np.bincount(self.link_src[self.link_src < self.num_ranks], minlength=self.num_ranks)
        return {
            "name": self.name,
            "ranks": self.num_ranks,
            "switches": self.num_switches,
            "links": len(self.links),
            "bandwidth_min_Bps": float(bw.min()) if len(bw) else 0.0,
            "bandwidth_max_Bps": float(bw.max()) if len(bw) else 0.0,
            "latency_max_s": float(self.link_latency.max()) if len(bw) else 0.0,
            "rank_diameter_hops": diameter,
            "rank_diameter_exact": exact,
            "rank_out_degree_min": int(deg.min()) if self.num_ranks else 0,
            "rank_out_degree_max": int(deg.max()) if self.num_ranks else 0,
            "rank_egress_Bps_max": float(self.egress_bandwidth()[: self.num_ranks].max()),
            "dims": [f"{d.kind}({d.size})" for d in self.dims],
            "routing": self.routing,
            # the generator's own parameters (short values only: no per-rank tables)
            "meta": {k: v for k, v in self.meta.items()
                     if isinstance(v, (int, float, str, bool)) or (
                         isinstance(v, (list, tuple)) and len(v) <= 32
                         and all(isinstance(x, (int, float, str)) for x in v))},
        }


def max_links() -> int:
    """The most links a topology may have: :data:`MAX_LINKS`, or ``$TOPOCOLL_MAX_LINKS``."""
    text = os.environ.get("TOPOCOLL_MAX_LINKS", "")
    return int(text) if text.strip().isdigit() else MAX_LINKS


def check_size(what: str, nodes: int, links: int) -> None:
    """Refuse, before anything is built, a fabric of more than :func:`max_links` links or
    :data:`MAX_NODES` nodes, saying the estimate and how to go on.

    Raises
    ------
    TopologyError
        ``item="size"``.

    Examples
    --------
    >>> check_size("ring:8", 8, 16)
    >>> try:
    ...     check_size("torus:100000x100000", 10**10, 4 * 10**10)
    ... except TopologyError as e:
    ...     print(e.item, str(e)[:60])
    size torus:100000x100000 would have 10,000,000,000 nodes and 40,0
    """
    limit = max_links()
    if links <= limit and nodes <= MAX_NODES:
        return
    from ..units import format_size

    raise TopologyError(
        f"{what} would have {nodes:,} nodes and {links:,} links (about "
        f"{format_size(links * LINK_BYTES, 2)}); topocoll builds at most {limit:,} links and "
        f"{MAX_NODES:,} nodes (about {format_size(limit * LINK_BYTES, 3)}): set "
        f"TOPOCOLL_MAX_LINKS to raise the link limit, or describe a smaller fabric",
        item="size")


def _validate(t: Topology) -> None:
    for field_name in ("num_ranks", "num_switches"):
        v = getattr(t, field_name)
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise InputTypeError(f"{field_name} must be an integer, got {type(v).__name__} "
                                 f"{v!r}", item=field_name)
    if t.num_ranks < 1:
        raise TopologyError(f"num_ranks must be a positive integer, got {t.num_ranks!r}",
                            item="field 'num_ranks'")
    if t.num_switches < 0:
        raise TopologyError(f"num_switches must be a non-negative integer, got {t.num_switches!r}",
                            item="field 'num_switches'")
    check_size(f"a topology of {t.num_ranks:,} ranks and {t.num_switches:,} switches",
               t.num_ranks + t.num_switches, len(t.links))
    if t.routing not in ROUTINGS:
        raise TopologyError(f"routing must be one of {ROUTINGS}, got {t.routing!r}",
                            item="field 'routing'")
    n = t.num_ranks + t.num_switches
    for lk in t.links:
        if not isinstance(lk, Link):
            raise InputTypeError(f"links must be Link objects, got {type(lk).__name__} {lk!r}",
                                 item="field 'links'")
        for end in (lk.src, lk.dst):
            if not 0 <= end < n:
                raise TopologyError(
                    f"link {lk.src}->{lk.dst}: node {end} does not exist "
                    f"(ranks 0..{t.num_ranks - 1}, switches {t.num_ranks}..{n - 1})",
                    item=f"link {lk.src}->{lk.dst}")
    if t.node_latency and len(t.node_latency) != n:
        raise TopologyError(f"node_latency has {len(t.node_latency)} entries, expected {n}",
                            item="field 'node_latency'")
    if any(not (x >= 0 and math.isfinite(x)) for x in t.node_latency):
        bad = next(i for i, x in enumerate(t.node_latency) if not (x >= 0 and math.isfinite(x)))
        raise TopologyError(f"node {bad}: forwarding latency must be >= 0", item=f"node {bad}")
    if t.dims and math.prod(d.size for d in t.dims) != t.num_ranks:
        raise TopologyError(
            f"dims {[d.size for d in t.dims]} multiply to {math.prod(d.size for d in t.dims)}, "
            f"but the topology has {t.num_ranks} ranks", item="field 'dims'")
    if t.num_ranks == 1:
        return
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    src = np.fromiter((lk.src for lk in t.links), np.int64, len(t.links))
    dst = np.fromiter((lk.dst for lk in t.links), np.int64, len(t.links))
    adj = csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    _, label = connected_components(adj, directed=True, connection="strong")
    main = label[0]
    bad_ranks = np.flatnonzero(label[: t.num_ranks] != main)
    if len(bad_ranks):
        r = int(bad_ranks[0])
        raise TopologyError(
            f"topology is disconnected: rank {r} and rank 0 cannot reach each other in both "
            f"directions ({len(bad_ranks)} rank(s) affected)", item=f"rank {r}")
    bad_sw = np.flatnonzero(label[t.num_ranks:] != main)
    if len(bad_sw):
        s = int(bad_sw[0]) + t.num_ranks
        raise TopologyError(
            f"switch {s} is not connected to the ranks in both directions "
            f"({len(bad_sw)} switch(es) affected)", item=f"switch {s}")
