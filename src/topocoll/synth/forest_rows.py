"""From a tree packing to pipelined transfers: the rows of a forest schedule.

One row per (tree arc, switch path) of every tree class (:class:`Rows`), with its depth,
first chunk and chunk count; :func:`choose_batches` picks the number of equal batches from
the exact per-step alpha-beta cost of the pipeline; :func:`build_rows` lays the rows out over
the batches (steps as barriers: the arc into depth ``d`` carries batch ``s - d + 1`` in
step ``s``) and :func:`build_fluid` over per-step unit counts from the fluid program of
:mod:`~topocoll.synth.pipeline`. Used by :mod:`~topocoll.synth.forest` (the ``optimal``
synthesizer), :mod:`~topocoll.synth.adaptive` and :mod:`~topocoll.synth.free_partition`.

References
----------
.. [1] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461, 2023.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..collective import Collective
from ..cost.kernel import barrier_time
from ..errors import OverBudgetError
from ..optimum.packing import Packing
from ..schedule import Schedule, ScheduleBuilder
from ..topology import Topology
from .pipeline import pipeline_time

__all__ = ["Rows", "CHUNK_BUDGET", "TRANSFER_BUDGET", "quantum", "loopless", "tree_rows",
           "arc_units", "arc_latency", "bundle_bandwidth", "row_entries", "batches_time",
           "choose_batches", "build_rows", "build_fluid"]

#: Largest number of (transfer, chunk) entries a schedule with default batches may hold
#: (or ``20 * budget`` if larger).
CHUNK_BUDGET = 2_000_000
#: Default largest number of transfers (rows x steps) when batches are chosen; pass
#: ``budget=`` for longer pipelines (better at large sizes on deep trees).
TRANSFER_BUDGET = 3_000

@dataclass(frozen=True)
class Rows:
    """One row per (tree arc, switch path) of every class: the pipeline's transfers."""

    src: np.ndarray
    dst: np.ndarray
    depth: np.ndarray       # depth of dst in its tree (>= 1)
    start: np.ndarray       # first chunk id of batch 0
    count: np.ndarray       # chunks per batch
    paths: list             # explicit path or None
    Q: int                  # chunks per batch per root

    @property
    def D(self) -> int:
        return int(self.depth.max()) if len(self.depth) else 0


def quantum(p: Packing) -> int:
    """Smallest ``Q`` with every class and piece an integer share of ``Q`` chunks."""
    q = 1
    for tc in p.classes():
        K = p.per_root[tc.root]
        g = math.gcd(K, tc.mult)
        for _, _, pieces in tc.arcs:
            for _, c in pieces:
                g = math.gcd(g, c)
        q = math.lcm(q, K // g)
    return q


def loopless(path: tuple[int, ...]) -> tuple[int, ...]:
    """``path`` with every cycle cut out (edge splitting can route an arc through the
    same switch twice). Only links leave the path, so no load grows and the bandwidth
    term stays the bound; the latency shrinks.

    >>> loopless((0, 18, 26, 18, 27, 18, 8))
    (0, 18, 8)
    """
    out: list[int] = []
    seen: dict[int, int] = {}
    for v in path:
        if v in seen:
            for u in out[seen[v] + 1:]:
                del seen[u]
            del out[seen[v] + 1:]
        else:
            seen[v] = len(out)
            out.append(v)
    return tuple(out)


def tree_rows(p: Packing, base: dict[int, int], Q: int, P: int) -> Rows:
    """The rows of packing ``p``: root ``r``'s chunks start at ``base[r]``; each tree class
    takes its share of ``Q`` chunks per batch (``P`` batches).

    Raises
    ------
    OverBudgetError
        When one batch alone would need more than :data:`CHUNK_BUDGET` chunks: the
        exact forests' quantum ``Q`` is the least common multiple of the tree
        multiplicities, large when the link capacities are not small multiples of one
        unit (a link of a third of another's bandwidth read to 12 digits).
    """
    roots = len(p.per_root)
    if Q * roots > CHUNK_BUDGET:
        raise OverBudgetError(
            f"the exact forests split each root's data into {Q:,} chunks ({Q * roots:,} a "
            f"batch; budget {CHUNK_BUDGET:,}): the link capacities are not small multiples "
            f"of one unit; round the bandwidths, or use another algorithm (for "
            f"topology_adaptive, partition='free')")
    src, dst, depth, start, count, paths = [], [], [], [], [], []
    offset = dict.fromkeys(p.per_root, 0)
    for tc in p.classes():
        K = p.per_root[tc.root]
        per = tc.mult * Q // K
        first = base[tc.root] + offset[tc.root]
        offset[tc.root] += per
        dep = tc.depth()
        for x, y, pieces in tc.arcs:
            off = 0
            for path, c in pieces:
                n = c * Q // K
                src.append(x)
                dst.append(y)
                depth.append(dep[y])
                start.append(first + off)
                count.append(n)
                path = loopless(path)
                paths.append(path if len(path) > 2 else None)
                off += n
    i64 = np.int64
    return Rows(np.array(src, i64), np.array(dst, i64), np.array(depth, i64),
                 np.array(start, i64), np.array(count, i64), paths, Q)


def arc_units(p: Packing) -> tuple[np.ndarray, np.ndarray]:
    """Per row of :func:`tree_rows` its tree arc (all pieces of one arc share it), and per
    arc the arc into its tail (-1 at the root); parents come first."""
    unit, parent = [], []
    for tc in p.classes():
        into: dict[int, int] = {}
        for x, y, pieces in tc.arcs:
            into[y] = len(parent)
            parent.append(into.get(x, -1))
            unit.extend([into[y]] * len(pieces))
    return np.array(unit, np.int64), np.array(parent, np.int64)


def _pair_tables(topology: Topology) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every ordered node pair with a link (as ``src * num_nodes + dst``, sorted), the
    summed bandwidth of its parallel links (a running sum in link order) and the smallest
    of their latencies; kept with the topology."""
    def compute():
        n = topology.num_nodes
        pairs, inv = np.unique(topology.link_src * n + topology.link_dst, return_inverse=True)
        bw = np.zeros(len(pairs))
        np.add.at(bw, inv, topology.link_bandwidth)
        lat = np.full(len(pairs), math.inf)
        np.minimum.at(lat, inv, topology.link_latency)
        return pairs, bw, lat

    return topology.memo("forest_rows.pair_tables", compute)


def _pair_dict(topology: Topology, values: np.ndarray) -> dict[tuple[int, int], float]:
    pairs = _pair_tables(topology)[0]
    n = topology.num_nodes
    return {(int(k) // n, int(k) % n): float(v) for k, v in zip(pairs, values, strict=True)}


def arc_latency(topology: Topology) -> dict[tuple[int, int], float]:
    """Per ordered node pair with a link, the smallest latency of its parallel links."""
    return _pair_dict(topology, _pair_tables(topology)[2])


def bundle_bandwidth(topology: Topology) -> dict[tuple[int, int], float]:
    """Per ordered node pair with a link, the summed bandwidth of its parallel links."""
    return _pair_dict(topology, _pair_tables(topology)[1])


def row_entries(rows: Rows, topology: Topology, reverse_graph: bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int]:
    """Sparse per-batch link busy time of every row: ``(row, link, seconds per chunk)``
    entries, the longest row latency and the number of distinct links.

    Entries come row by row, each row's hops in path order; links are numbered in order of
    first appearance (the LPs built on them see their columns in that order). A hop's
    bandwidth is the summed bandwidth of the parallel links of its node pair, its latency
    the smallest of theirs; a row's latency is its hops' plus its interior nodes'.
    """
    n = topology.num_nodes
    pairs, bw, lat = _pair_tables(topology)
    R = len(rows.src)
    routed = [i for i, path in enumerate(rows.paths) if path]
    if routed:
        hops = np.ones(R, np.int64)
        hops[routed] = [len(rows.paths[i]) - 1 for i in routed]
        ptr = np.concatenate([[0], np.cumsum(hops)])
        hs, hd = np.empty(ptr[-1], np.int64), np.empty(ptr[-1], np.int64)
        hs[ptr[:-1]], hd[ptr[:-1]] = rows.src, rows.dst
        for i in routed:
            path = rows.paths[i]
            hs[ptr[i]:ptr[i + 1]], hd[ptr[i]:ptr[i + 1]] = path[:-1], path[1:]
        ent_row = np.repeat(np.arange(R, dtype=np.int64), hops)
    else:
        hs, hd = np.asarray(rows.src, np.int64), np.asarray(rows.dst, np.int64)
        ent_row = np.arange(R, dtype=np.int64)
    if reverse_graph:
        hs, hd = hd, hs
    key = hs * n + hd
    at = np.minimum(np.searchsorted(pairs, key), max(len(pairs) - 1, 0))
    if len(key) and not np.array_equal(pairs[at], key):
        bad = int(np.flatnonzero(pairs[at] != key)[0])
        raise KeyError((int(hs[bad]), int(hd[bad])))
    ent_w = rows.count[ent_row] / bw[at]
    # the longest row latency: a one-hop row's is its hop's; a routed row's its hops'
    # summed in path order, then its interior nodes' forwarding latency
    first_hop = ptr[:-1] if routed else np.arange(R)
    single = np.ones(R, bool)
    single[routed] = False
    ell = float(lat[at[first_hop[single]]].max()) if single.any() else 0.0
    fl = topology.node_latency
    for i in routed:
        path, t = rows.paths[i], sum(lat[at[ptr[i]:ptr[i + 1]]].tolist())
        if fl:
            t += sum(fl[v] for v in path[1:-1])
        ell = max(ell, t)
    first_seen, link_of = np.unique(at, return_index=True, return_inverse=True)[1:]
    rank = np.empty(len(first_seen), np.int64)
    rank[np.argsort(first_seen, kind="stable")] = np.arange(len(first_seen))
    return ent_row, rank[link_of], ent_w, max(ell, 0.0), len(first_seen)


def batches_time(topology: Topology, rows: Rows, P: int, units, per_root_bytes: float,
                 alpha: float, reverse_graph: bool) -> float:
    """Per-step alpha-beta time of a batches pipeline of ``rows`` (longest row latency in
    every step: an upper bound on the cost model's time)."""
    if not len(rows.src):
        return 0.0
    ent_row, ent_link, ent_w, ell, nlinks = row_entries(rows, topology, reverse_graph)
    L = np.zeros((rows.D, nlinks))
    np.add.at(L, (rows.depth[ent_row] - 1, ent_link), ent_w * per_root_bytes / rows.Q)
    return pipeline_time(L, np.ones(P) if units is None else np.asarray(units), alpha + ell)


def choose_batches(rows: Rows, topology: Topology, chunk_bytes_per_batch: float, *,
                   alpha: float = 0.0, reverse_graph: bool = False,
                   budget: int = TRANSFER_BUDGET) -> int:
    """The number of batches ``P`` minimizing the pipeline's alpha-beta time.

    ``chunk_bytes_per_batch`` is the chunk size when ``P = 1`` (it shrinks as ``1/P``).
    Per step: ``alpha + ℓ + max_e load_e / bandwidth_e`` over the arcs of active depths.
    ``P`` is a power of two with at most ``budget`` transfers in the schedule.
    """
    if not len(rows.src):
        return 1
    ent_row, ent_link, ent_w, ell, nlinks = row_entries(rows, topology, reverse_graph)
    D = rows.D
    L = np.zeros((D + 1, nlinks))
    np.add.at(L, (rows.depth[ent_row], ent_link), ent_w)
    C = np.cumsum(L, axis=0)
    per_batch = int(rows.count.sum())
    chunk_limit = max(CHUNK_BUDGET, 20 * budget)
    pmax = max(1, min(1 << 14, chunk_limit // max(per_batch, 1),
                      budget // max(len(rows.src), 1)))
    best, best_p = math.inf, 1
    P = 1
    while P <= pmax:
        busy, reps = [], []
        steps = P + D - 1
        s = 0
        while s < steps:
            lo, hi = max(1, s - P + 2), min(D, s + 1)
            # the full pipeline is P - D + 1 equal steps: one entry, repeated
            reps.append(P - 1 - s + 1 if lo == 1 and hi == D and s < P - 1 else 1)
            busy.append(float((C[hi] - C[lo - 1]).max()) * chunk_bytes_per_batch / P)
            s += reps[-1]
        total = barrier_time(np.array(busy), ell, alpha, repeat=np.array(reps))
        if total < best * (1 - 1e-12):
            best, best_p = total, P
        P *= 2
    return best_p


def _add_units(b: ScheduleBuilder, rows: Rows, sel: np.ndarray, u0: np.ndarray,
               nu: np.ndarray, any_path: bool) -> None:
    """Add rows ``sel`` to the current step, row ``i`` carrying units ``u0 .. u0 + nu``
    of each of its ``Q``-slots (chunk ``start + u Q + j``)."""
    cnt = rows.count[sel]
    tot = cnt * nu
    ptr = np.concatenate([[0], np.cumsum(tot)])
    local = np.arange(ptr[-1]) - np.repeat(ptr[:-1], tot)
    c = np.repeat(cnt, tot)
    ids = np.repeat(rows.start[sel] + u0 * rows.Q, tot) + (local // c) * rows.Q + local % c
    paths = [rows.paths[i] for i in sel] if any_path else None
    b.add_many(rows.src[sel], rows.dst[sel], (ptr, ids), paths=paths)


def build_rows(coll: Collective, rows: Rows, P: int, *, lead: int = 0,
               flip: bool = False, units: np.ndarray | None = None) -> Schedule:
    """Pipeline ``rows`` over ``P`` batches after ``lead`` empty steps (batches in
    reverse order if ``flip``). Batch ``b`` holds ``units[b]`` chunks per ``Q``-slot
    (default 1; chunk ``start + u Q + j`` for unit ``u`` of the batch), so the collective's
    split is ``Q * sum(units)``."""
    b = ScheduleBuilder(coll)
    for _ in range(lead):
        b.new_step()
    cum = np.arange(P + 1) if units is None else np.concatenate([[0], np.cumsum(units)])
    D = rows.D
    any_path = any(p is not None for p in rows.paths)
    for s in range(P + D - 1):
        sel = np.flatnonzero((rows.depth - 1 <= s) & (s - (rows.depth - 1) < P))
        b.new_step()
        if not len(sel):
            continue
        batch = s - (rows.depth[sel] - 1)
        if flip:
            batch = P - 1 - batch
        u0, nu = cum[batch], cum[batch + 1] - cum[batch]
        keep = nu > 0
        sel, u0, nu = sel[keep], u0[keep], nu[keep]
        if not len(sel):
            continue
        _add_units(b, rows, sel, u0, nu, any_path)
    return b.build()


def build_fluid(coll: Collective, rows: Rows, unit: np.ndarray, K: np.ndarray) -> Schedule:
    """Row ``i`` sends units ``K[unit[i], s]`` to ``K[unit[i], s + 1]`` (each ``Q``-slot's
    chunk ``start + u Q + j``) in step ``s``; the split is ``Q * K[:, -1].max()``."""
    b = ScheduleBuilder(coll)
    any_path = any(p is not None for p in rows.paths)
    for s in range(K.shape[1] - 1):
        b.new_step()
        u0 = K[unit, s]
        nu = K[unit, s + 1] - u0
        sel = np.flatnonzero(nu > 0)
        if not len(sel):
            continue
        _add_units(b, rows, sel, u0[sel], nu[sel], any_path)
    return b.build()
