"""Link loads of traffic matrices routed over shortest paths (single path or ECMP).

The fast fabric model behind TopoOpt's search (``../shared/reference/algorithms.md``
section 1.5): for bulk traffic of a training phase, the time to move a demand matrix ``D``
(bytes between ranks) is bounded below by the busiest link, ``max_l load_l(D) / cap_l``,
and a fluid schedule that keeps every link of the bottleneck busy reaches it. Loads are
linear in ``D``, so a search that scores thousands of strategies routes a few traffic
*patterns* once per topology (:meth:`LinkLoads.route`) and combines them with weights.

Routing:

- ``"ecmp"`` (default): at every node the flow towards a destination splits equally over
  the neighbours one hop closer (per-hop equal-cost multipath); the fluid version of
  TopoOpt's k-shortest-path splitting.
- ``"shortest"``: one shortest path per pair, the lowest-numbered next hop (TopoOpt's
  released simulator uses one BFS path with random tie-breaks).

Parallel links between the same two nodes are merged into one link of the summed
bandwidth (as TopoOpt's packet simulator does).

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
from ..topology import Topology

__all__ = ["LinkLoads", "LINKLOAD_ROUTINGS"]

LINKLOAD_ROUTINGS = ("ecmp", "shortest")


class LinkLoads:
    """Merged directed links of ``topology`` with hop distances between its ranks.

    Attributes
    ----------
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
        self.out: list[list[int]] = [[] for _ in range(self.nodes)]
        for a, b in self.keys:
            self.out[a].append(b)
        src = np.array([a for a, _ in self.keys])
        dst = np.array([b for _, b in self.keys])
        rev = csr_matrix((np.ones(len(src)), (dst, src)), shape=(self.nodes, self.nodes))
        dist = shortest_path(rev, unweighted=True, indices=np.arange(self.n))
        if np.isinf(dist[:, :self.n]).any():
            t, u = np.argwhere(np.isinf(dist[:, :self.n]))[0]
            raise InputError(f"{topology.name}: rank {u} cannot reach rank {t}",
                             item=f"rank {u}")
        self.dist = dist
        self._level_cache: dict[int, list] = {}
        self.diameter = int(dist[:, :self.n].max())

    def next_hops(self, u: int, t: int) -> list[int]:
        """Neighbours of node ``u`` one hop closer to rank ``t`` (all, or the first one
        for ``"shortest"`` routing)."""
        d = self.dist[t]
        hops = [v for v in self.out[u] if d[v] == d[u] - 1]
        return hops[:1] if self.routing == "shortest" else hops

    def route(self, demands: np.ndarray) -> np.ndarray:
        """Loads (bytes) on every merged link, one column per demand matrix: ``demands``
        has shape ``(m, n, n)`` with ``demands[p, s, t]`` bytes from rank ``s`` to rank
        ``t`` in pattern ``p``; the result has shape ``(links, m)``."""
        D = np.asarray(demands, float)
        if D.ndim != 3 or D.shape[1:] != (self.n, self.n):
            raise InputError(f"demands must have shape (m, {self.n}, {self.n}), got {D.shape}",
                             item="demands")
        m = D.shape[0]
        loads = np.zeros((len(self.keys), m))
        for t in range(self.n):
            Q = np.zeros((self.nodes, m))
            Q[:self.n] = D[:, :, t].T
            Q[t] = 0.0
            # the links one hop closer to t, level by level from the farthest, each
            # level's sources in increasing order (the same additions in the same order
            # as walking node by node)
            for links, src, dst, w in self._levels(t):
                share = Q[src] / w[:, None]
                loads[links] += share
                np.add.at(Q, dst, share)
        return loads

    def flow_routes(self, pairs: np.ndarray, *, hashed: bool = False, seed: int = 0
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Routes of the flows ``pairs`` (rows ``(s, t)`` of ranks) in CSR form ``(ptr,
        link, frac)`` over the merged links: the share of the flow's rate on each link.
        By default the split of :meth:`route` (every hop's share divided equally over the
        next hops, ``"shortest"``: the first); with ``hashed`` each flow takes one shortest
        path, each hop drawn uniformly among the next hops (ECMP hashing a flow onto one
        path; seeded, flows drawn in order).

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
        per: list[tuple[np.ndarray, np.ndarray]] = [None] * len(pq)    # type: ignore
        if hashed:
            rng = np.random.default_rng(seed)
            for f, (s, t) in enumerate(pq.tolist()):
                hops, u = [], s
                while u != t:
                    nxt = self.next_hops(u, t)
                    v = nxt[int(rng.integers(len(nxt)))] if len(nxt) > 1 else nxt[0]
                    hops.append(self.index[(u, v)])
                    u = v
                per[f] = (np.asarray(hops, np.int64), np.ones(len(hops)))
        else:
            for t in np.unique(pq[:, 1]).tolist():
                flows = np.flatnonzero(pq[:, 1] == t)
                Q = np.zeros((self.nodes, len(flows)))
                Q[pq[flows, 0], np.arange(len(flows))] = 1.0
                share = np.zeros((len(self.keys), len(flows)))
                for links, src, dst, w in self._levels(t):
                    part = Q[src] / w[:, None]
                    share[links] += part
                    np.add.at(Q, dst, part)
                for j, f in enumerate(flows.tolist()):
                    on = np.flatnonzero(share[:, j] > 0)
                    per[f] = (on, share[on, j])
        ptr = np.zeros(len(pq) + 1, np.int64)
        ptr[1:] = np.cumsum([len(a) for a, _ in per])
        link = np.concatenate([a for a, _ in per]) if per else np.zeros(0, np.int64)
        frac = np.concatenate([b for _, b in per]) if per else np.zeros(0)
        return ptr, link.astype(np.int64), frac

    def _levels(self, t: int) -> list:
        """Per distance from rank ``t`` (farthest first): the merged links one hop closer
        to ``t`` leaving nodes at that distance, their sources, destinations and the
        number of hops their source splits over (``"shortest"``: the first hop only),
        sorted by source."""
        cache = self._level_cache
        if t in cache:
            return cache[t]
        d = self.dist[t]
        ks = np.asarray(self.keys, dtype=np.int64).reshape(-1, 2)
        src, dst = ks[:, 0], ks[:, 1]
        on = np.isfinite(d[src]) & (d[src] > 0) & (d[dst] == d[src] - 1)
        idx = np.flatnonzero(on)                    # keys are sorted: by source, then hop
        if self.routing == "shortest":
            first = np.ones(len(idx), bool)
            first[1:] = src[idx[1:]] != src[idx[:-1]]
            idx = idx[first]
        deg = np.bincount(src[idx], minlength=self.nodes)
        out = []
        lev = d[src[idx]]
        for level in sorted(set(lev.tolist()), reverse=True):
            e = idx[lev == level]
            out.append((e, src[e], dst[e], deg[src[e]].astype(float)))
        cache[t] = out
        return out
