"""Link loads of traffic matrices routed over shortest paths (single path or ECMP).

The fast fabric model behind TopoOpt's search (``../shared/reference/algorithms.md``
section 1.5): for bulk traffic of a training phase, the time to move a demand matrix ``D``
(bytes between ranks) is bounded below by the busiest link, ``max_l load_l(D) / cap_l``,
and a fluid schedule that keeps every link of the bottleneck busy reaches it. Loads are
linear in ``D``, so a search that scores thousands of strategies routes a few traffic
*patterns* once per topology (:meth:`LinkLoads.route`) and combines them with weights.

Parallel links between the same two nodes are merged into one link of the summed
bandwidth (as TopoOpt's packet simulator does): :attr:`LinkLoads.fabric` is that merged
topology, and every route is :func:`topocoll.topology.routing.routes` on it, so the two
policies are the routing layer's:

- ``"ecmp"`` (default): at every node the flow towards a destination splits equally over
  the neighbours one hop closer (per-hop equal-cost multipath; one merged link per
  neighbour); the fluid version of TopoOpt's k-shortest-path splitting.
- ``"shortest"``: one shortest path per pair, the lowest-numbered next hop (TopoOpt's
  released simulator uses one BFS path with random tie-breaks).

Examples
--------
>>> import numpy as np
>>> from topocoll.topology.spec import parse_spec
>>> ll = LinkLoads(parse_spec("ring:4,bw=1GB/s"))
>>> d = np.zeros((1, 4, 4)); d[0, 0, 2] = 2e9          # two hops, two equal paths
>>> loads = ll.route(d)[:, 0]
>>> loads[loads > 0].tolist(), ll.diameter
([1000000000.0, 1000000000.0, 1000000000.0, 1000000000.0], 2)
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..topology import Link, Topology
from ..topology.routing import routes

__all__ = ["LinkLoads", "LINKLOAD_ROUTINGS"]

LINKLOAD_ROUTINGS = ("ecmp", "shortest")
#: Demand entries (pairs x patterns) moved per batch of :meth:`LinkLoads.route`.
BATCH_ENTRIES = 1 << 22


class LinkLoads:
    """Merged directed links of ``topology`` with hop distances between its ranks.

    Attributes
    ----------
    fabric : Topology
        ``topology`` with parallel links merged (summed bandwidth, least latency), its
        links in ``(src, dst)`` order: link ``i`` is ``keys[i]``. Every route is taken
        on it.
    keys : list of (src, dst)
        The merged links, in sorted order; row ``i`` of :meth:`route` is ``keys[i]``.
    capacity : ndarray
        Bytes/s of each merged link.
    latency : ndarray
        Seconds of each merged link (the smallest of the merged ones).
    dist : ndarray
        ``dist[t, u]``: hops from node ``u`` to rank ``t``.
    diameter : int
        Largest hop count between two ranks.

    Raises
    ------
    InputError
        If ``routing`` is unknown or some rank cannot reach another.
    """

    def __init__(self, topology: Topology, routing: str = "ecmp") -> None:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import shortest_path

        if routing not in LINKLOAD_ROUTINGS:
            raise InputError(f"routing must be one of {', '.join(LINKLOAD_ROUTINGS)}, got "
                             f"{routing!r}", item="routing")
        self.routing = routing
        self.n = topology.num_ranks
        self.nodes = topology.num_ranks + topology.num_switches
        cap: dict[tuple[int, int], float] = {}
        lat: dict[tuple[int, int], float] = {}
        for lk in topology.links:
            key = (lk.src, lk.dst)
            cap[key] = cap.get(key, 0.0) + lk.bandwidth
            lat[key] = min(lat.get(key, lk.latency), lk.latency)
        self.keys = sorted(cap)
        self.index = {k: i for i, k in enumerate(self.keys)}
        self.capacity = np.array([cap[k] for k in self.keys])
        self.latency = np.array([lat[k] for k in self.keys])
        self.fabric = Topology(topology.name, topology.num_ranks, topology.num_switches,
                               tuple(Link(a, b, cap[a, b], lat[a, b]) for a, b in self.keys))
        src = np.array([a for a, _ in self.keys])
        dst = np.array([b for _, b in self.keys])
        rev = csr_matrix((np.ones(len(src)), (dst, src)), shape=(self.nodes, self.nodes))
        dist = shortest_path(rev, unweighted=True, indices=np.arange(self.n))
        if np.isinf(dist[:, :self.n]).any():
            t, u = np.argwhere(np.isinf(dist[:, :self.n]))[0]
            raise InputError(f"{topology.name}: rank {u} cannot reach rank {t}",
                             item=f"rank {u}")
        self.dist = dist
        self.diameter = int(dist[:, :self.n].max())

    def route(self, demands: np.ndarray) -> np.ndarray:
        """Loads (bytes) on every merged link, one column per demand matrix: ``demands``
        has shape ``(m, n, n)`` with ``demands[p, s, t]`` bytes from rank ``s`` to rank
        ``t`` in pattern ``p``; the result has shape ``(links, m)``. The pairs with
        demand are routed (:func:`~topocoll.topology.routing.routes`) in batches and
        their routes' fractions applied to every pattern at once (a sparse product)."""
        from scipy.sparse import csr_matrix

        D = np.asarray(demands, float)
        if D.ndim != 3 or D.shape[1:] != (self.n, self.n):
            raise InputError(f"demands must have shape (m, {self.n}, {self.n}), got {D.shape}",
                             item="demands")
        m, nl = D.shape[0], len(self.keys)
        used = (D != 0).any(axis=0)
        np.fill_diagonal(used, False)
        pairs = np.argwhere(used)
        loads = np.zeros((nl, m))
        step = max(1, BATCH_ENTRIES // max(m, 1))
        for a in range(0, len(pairs), step):
            pq = pairs[a:a + step]
            r = routes(self.fabric, pq, self.routing)
            pair = np.repeat(np.arange(len(pq)), np.diff(r.ptr))
            A = csr_matrix((r.frac, (r.link, pair)), shape=(nl, len(pq)))
            loads += A @ D[:, pq[:, 0], pq[:, 1]].T         # exact: sparse CSR, no BLAS
        return loads

    def flow_routes(self, pairs: np.ndarray, *, hashed: bool = False, seed: int = 0
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Routes of the flows ``pairs`` (rows ``(s, t)`` of ranks) in CSR form ``(ptr,
        link, frac)`` over the merged links, each flow's links in increasing order: the
        share of the flow's rate on each link. By default the split of :meth:`route`;
        with ``hashed`` each flow takes one shortest path, each hop drawn uniformly among
        the next hops of its ``"ecmp"`` route (ECMP hashing a flow onto one path; seeded,
        flows drawn in order; ``"shortest"`` routing has one next hop).

        >>> from topocoll.topology.spec import parse_spec
        >>> ll = LinkLoads(parse_spec("ring:4,bw=1GB/s"))
        >>> ptr, link, frac = ll.flow_routes(np.array([[0, 2]]))
        >>> np.diff(ptr).tolist(), frac.tolist()
        ([4], [0.5, 0.5, 0.5, 0.5])
        >>> ptr, link, frac = ll.flow_routes(np.array([[0, 2]]), hashed=True)
        >>> np.diff(ptr).tolist(), frac.tolist()
        ([2], [1.0, 1.0])
        """
        pq = np.asarray(pairs, np.int64).reshape(-1, 2)
        if len(pq) and (pq.min() < 0 or pq.max() >= self.n or (pq[:, 0] == pq[:, 1]).any()):
            raise InputError("flows must join two different ranks", item="pairs")
        r = routes(self.fabric, pq, self.routing)
        flow = np.repeat(np.arange(len(pq)), np.diff(r.ptr))
        order = np.lexsort((r.link, flow))
        link, frac = r.link[order], r.frac[order]
        if not hashed:
            return r.ptr.copy(), link, frac
        # each flow's links sorted by id are sorted by (source, destination): the next
        # hops out of a node are one contiguous run, in increasing neighbour order
        rng = np.random.default_rng(seed)
        src = self.fabric.link_src
        dst = self.fabric.link_dst
        per: list[np.ndarray] = []
        for f, (s, t) in enumerate(pq.tolist()):
            mine = link[r.ptr[f]:r.ptr[f + 1]]
            starts = np.searchsorted(src[mine], np.arange(self.nodes + 1))
            hops, u = [], s
            while u != t:
                nxt = mine[starts[u]:starts[u + 1]]
                lk = int(nxt[int(rng.integers(len(nxt)))]) if len(nxt) > 1 else int(nxt[0])
                hops.append(lk)
                u = int(dst[lk])
            per.append(np.asarray(hops, np.int64))
        ptr = np.zeros(len(pq) + 1, np.int64)
        ptr[1:] = np.cumsum([len(a) for a in per])
        out = np.concatenate(per) if per else np.zeros(0, np.int64)
        return ptr, out, np.ones(len(out))
