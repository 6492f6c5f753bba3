"""The alpha-beta cost model with link congestion (steps as barriers).

References
----------
.. [1] Hockney, "The communication challenge for MPP: Intel Paragon and Meiko CS-2",
   Parallel Computing 20(3), 1994 (the alpha-beta model).
.. [2] De Sensi et al., "Swing: Short-cutting Rings for Higher Bandwidth Allreduce",
   NSDI 2024 (alpha-beta with congestion on shared links).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..errors import ScheduleError
from ..optimum.bounds import lower_bound
from ..topology.routing import Routes, path_routes, routes
from ._lines import distinct_pairs, one_link_lines_table, one_link_step_times, step_envelope
from .base import CostModelBase, SimResult, check_inputs, check_model_options
from .kernel import step_charges
from .pairs import routed_pairs, step_repeats

if TYPE_CHECKING:
    from ..schedule import Schedule
    from ..topology import Topology

__all__ = ["AlphaBeta", "transfer_routes"]

#: Transfers evaluated together (bounds temporary memory; a step is never split unless it
#: alone exceeds this).
TRANSFERS_PER_BATCH = 1 << 20
#: Route entries (transfer, link) evaluated together.
ENTRIES_PER_BATCH = 1 << 21
#: (steps x links) cells of one batch's load table.
LOAD_CELLS_PER_BATCH = 1 << 23
#: Largest ``num_nodes ** 2`` for which (src, dst) pairs are numbered with a dense table.
DENSE_PAIR_TABLE = 1 << 26


@dataclass(frozen=True)
class AlphaBeta(CostModelBase):
    """Alpha-beta cost with congestion: each step costs its slowest transfer.

    Parameters
    ----------
    alpha : float
        Per-transfer software overhead in seconds (>= 0), charged once per transfer.
    routing : {'shortest', 'ecmp', 'spray'}, optional
        Routing policy for transfers without an explicit path; defaults to the
        topology's own ``routing``.
    bound : bool
        If True, attach :func:`topocoll.optimum.bounds.lower_bound` (with the same ``alpha``)
        to the result.

    Notes
    -----
    How a schedule becomes time:

    - Every transfer is routed: along its explicit path if it has one (each hop uses its
      whole bundle of parallel links, split by bandwidth), else by the routing policy
      (:mod:`topocoll.topology.routing`).
    - Steps are barriers: step ``s + 1`` starts when every transfer of step ``s`` is done.
      The total time is the sum of the step times; an empty step costs 0.
    - Within a step the bytes of all transfers that cross a directed link add up:
      ``load_l = sum_t bytes_t * frac_{t,l}``, with ``bytes_t`` = number of chunks times
      ``collective.chunk_bytes(message_bytes)``.
    - A transfer ``t`` finishes at ``alpha + latency_t + max_l load_l / bandwidth_l`` over
      the links it uses, where ``latency_t`` is its route latency (link latencies plus
      forwarding latency at intermediate nodes). Latency and serialization add once
      (cut-through), not once per hop. A transfer from a node to itself crosses no link and
      costs ``alpha``.
    - A step takes the time of its slowest transfer.

    Not modelled: per-hop store-and-forward, overlap between steps, rate sharing over
    time inside a step (every transfer of a step is charged the full load of its most
    loaded link, which is exact for a step of equal transfers and pessimistic otherwise),
    compute time of reductions, and limits on ports or injection beyond link bandwidth.

    Cost: ``O(transfers + route entries)`` numpy work, evaluated in batches of about
    :data:`TRANSFERS_PER_BATCH` transfers; every distinct ``(src, dst)`` pair is routed
    once.

    References
    ----------
    .. [1] Hockney, Parallel Computing 20(3), 1994.
    .. [2] De Sensi et al., NSDI 2024.

    Examples
    --------
    Ring allreduce on a 4-rank ring (50 GB/s, 1 us links) costs
    ``2(p - 1)(alpha + latency + n / (p B))``:

    >>> from topocoll.topology import ring
    >>> from topocoll.synth.ring import ring_allreduce
    >>> t = ring(4)
    >>> r = AlphaBeta(alpha=1e-6).evaluate(ring_allreduce(t), t, 4e9)
    >>> round(r.time, 9), round(2 * 3 * (1e-6 + 1e-6 + 1e9 / 50e9), 9)
    (0.120012, 0.120012)
    >>> r.step_times.shape, r.bound_fraction < 1
    ((6,), True)
    """

    alpha: float = 0.0
    routing: str | None = None
    bound: bool = True
    name: ClassVar[str] = "alphabeta"

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", check_model_options(self.alpha, self.routing))

    def _routed(self, schedule: Schedule, topology: Topology):
        """Check the schedule's nodes and route its distinct (source, destination) pairs:
        ``(routes, pair id per transfer, explicit paths)``."""
        _check_nodes(schedule, topology)
        explicit = _explicit(schedule)
        pairs, pair_id = _pair_index(schedule, topology.num_nodes, explicit)
        return routes(topology, pairs, self.routing or topology.routing), pair_id, explicit

    def evaluate(self, schedule: Schedule, topology: Topology,
                 message_bytes: float) -> SimResult:
        """Return the alpha-beta time of ``schedule`` on ``topology``.

        Parameters
        ----------
        schedule : Schedule
            Any schedule whose node ids exist in ``topology``.
        topology : Topology
            The network.
        message_bytes : float
            The nccl-tests size ``S`` of the collective (>= 0).

        Returns
        -------
        SimResult
            ``time``, per-step times, bytes per link over the whole schedule and, if
            ``bound`` is set, the lower bound.

        Raises
        ------
        ScheduleError
            If a transfer names a node that is not in ``topology`` or an explicit path
            does not run from the transfer's source to its destination.
        TopologyError
            If a pair has no path or an explicit path uses a missing link.
        """
        message_bytes = check_inputs(schedule, topology, message_bytes)
        rt, pair_id, explicit = self._routed(schedule, topology)
        ev = _Evaluator(schedule, topology, rt, pair_id, explicit,
                        schedule.collective.chunk_bytes(message_bytes))
        step_times = np.zeros(schedule.num_steps)
        has = np.diff(schedule.step_ptr) > 0
        for s0, s1 in _batches(schedule.step_ptr, len(topology.links), ev.max_route_len):
            step_times[s0:s1] = ev.batch(s0, s1)
        step_times = step_charges(step_times, 0.0, self.alpha, used=has)
        bound = None
        if self.bound:
            bound = lower_bound(schedule.collective, topology, message_bytes,
                                alpha=self.alpha).time
        return SimResult(float(step_times.sum()), step_times, ev.link_load, self.name,
                         float(message_bytes), schedule.collective.kind,
                         schedule.collective.num_ranks, bound)

    def evaluate_sizes(self, schedule: Schedule, topology: Topology,
                       sizes) -> list[SimResult]:
        """Return :meth:`evaluate` for many message sizes from one routing and load pass.

        A schedule does not depend on the message size, and under this model a transfer
        ``t`` finishes at ``alpha + latency_t + chunk_bytes * slope_t`` with ``slope_t`` the
        largest ``chunks on link / bandwidth`` over its links. So every step's time is
        the upper envelope of a few lines in ``chunk_bytes``; the envelope (lines that no
        other line of the step dominates) is kept per step and evaluated at every size.

        Parameters
        ----------
        schedule, topology
            As for :meth:`evaluate`.
        sizes : sequence of float
            Message sizes in bytes (each finite and >= 0).

        Returns
        -------
        list of SimResult
            One per size, equal to ``evaluate(schedule, topology, size)`` up to rounding.

        Examples
        --------
        >>> from topocoll.topology import torus
        >>> from topocoll.synth.ring import ring_allreduce
        >>> t = torus((4, 4))
        >>> s = ring_allreduce(t)
        >>> many = AlphaBeta().evaluate_sizes(s, t, [1e3, 1e6])
        >>> [round(r.time / AlphaBeta().evaluate(s, t, n).time, 12) for r, n in
        ...  zip(many, [1e3, 1e6])]
        [1.0, 1.0]
        """
        sizes = [check_inputs(schedule, topology, x) for x in sizes]
        rt, pair_id, explicit = self._routed(schedule, topology)
        ev = _Evaluator(schedule, topology, rt, pair_id, explicit, 1.0)
        cbs = np.array([schedule.collective.chunk_bytes(n) for n in sizes])
        times = np.zeros((schedule.num_steps, len(sizes)))
        for s0, s1 in _batches(schedule.step_ptr, len(topology.links), ev.max_route_len):
            times[s0:s1] = ev.envelope(s0, s1, cbs)
        has = np.diff(schedule.step_ptr) > 0
        out = []
        for i, n in enumerate(sizes):
            times[:, i] = step_charges(times[:, i], 0.0, self.alpha, used=has)
            bound = lower_bound(schedule.collective, topology, n, alpha=self.alpha).time \
                if self.bound else None
            out.append(SimResult(float(times[:, i].sum()), times[:, i], ev.link_load * cbs[i],
                                 self.name, n, schedule.collective.kind,
                                 schedule.collective.num_ranks, bound))
        return out


# ------------------------------------------------------------------ preparation
def _check_nodes(schedule: Schedule, topology: Topology) -> None:
    n = topology.num_nodes
    for col in (schedule.src, schedule.dst):
        if len(col) and (col.min() < 0 or col.max() >= n):
            t = int(np.flatnonzero((col < 0) | (col >= n))[0])
            raise ScheduleError(
                f"step {schedule.step_of(t)}, transfer {schedule.src[t]}->{schedule.dst[t]}: "
                f"node {col[t]} is not in topology {topology.name!r} (nodes 0..{n - 1})",
                kind="not_in_topology", step=schedule.step_of(t), transfer=t)


def _explicit(schedule: Schedule) -> np.ndarray | None:
    """Mask of transfers that carry an explicit path (None if there are none), after
    checking that each such path runs from the transfer's source to its destination."""
    if not schedule.has_paths:
        return None
    pp = schedule.path_ptr
    mask = np.diff(pp) > 0
    t = np.flatnonzero(mask)
    first, last = schedule.path_nodes[pp[t]], schedule.path_nodes[pp[t + 1] - 1]
    bad = (first != schedule.src[t]) | (last != schedule.dst[t])
    if bad.any():
        i = int(t[bad][0])
        raise ScheduleError(
            f"step {schedule.step_of(i)}, transfer {schedule.src[i]}->{schedule.dst[i]}: "
            f"explicit path runs {schedule.path_nodes[pp[i]]}->{schedule.path_nodes[pp[i+1]-1]}",
            kind="path", step=schedule.step_of(i), transfer=i)
    return mask


def _keys(schedule: Schedule, n: int, a: int, b: int) -> np.ndarray:
    return schedule.src[a:b].astype(np.int64) * n + schedule.dst[a:b]


@dataclass(frozen=True, eq=False)
class _PairIndex:
    """Row of each routed ``(src, dst)`` pair key ``src * n + dst``: a dense table over
    all keys when it fits (:data:`DENSE_PAIR_TABLE`), else a search in the sorted keys."""

    ukeys: np.ndarray
    table: np.ndarray | None
    n: int

    def __call__(self, k: np.ndarray) -> np.ndarray:
        return self.table[k] if self.table is not None else np.searchsorted(self.ukeys, k)

    @cached_property
    def by_source(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ptr, dst)``: the rows of source ``u`` are ``ptr[u]:ptr[u+1]``, their
        destinations ``dst`` in increasing order (the keys are sorted)."""
        ptr = np.searchsorted(self.ukeys // self.n, np.arange(self.n + 1)).astype(np.int64)
        return ptr, (self.ukeys % self.n).astype(np.int32)


def _pair_index(schedule: Schedule, n: int, explicit: np.ndarray | None
                ) -> tuple[np.ndarray, _PairIndex]:
    """The distinct routed ``(src, dst)`` pairs and a map from pair keys to their row."""
    ukeys = routed_pairs(schedule, n) if explicit is None or not explicit.any() else \
        distinct_pairs(schedule.src, schedule.dst, n, explicit)
    table = None
    if n * n <= DENSE_PAIR_TABLE:
        table = np.empty(n * n, dtype=np.int32)  # only the keys found are ever looked up
        table[ukeys] = np.arange(len(ukeys), dtype=np.int32)
    return np.stack([ukeys // n, ukeys % n], axis=1), _PairIndex(ukeys, table, n)


def _batches(step_ptr: np.ndarray, num_links: int, max_route_len: int
             ) -> Iterator[tuple[int, int]]:
    """Ranges of whole steps that respect the batch limits (a step that alone exceeds
    them forms its own batch)."""
    S = len(step_ptr) - 1
    per_batch = max(1, min(TRANSFERS_PER_BATCH, ENTRIES_PER_BATCH // max(1, max_route_len)))
    max_steps = max(1, LOAD_CELLS_PER_BATCH // max(1, num_links))
    s0 = 0
    while s0 < S:
        s1 = int(np.searchsorted(step_ptr, step_ptr[s0] + per_batch, side="right")) - 1
        s1 = min(max(s1, s0 + 1), s0 + max_steps, S)
        yield s0, s1
        s0 = s1


def _segments(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    return np.repeat(starts - (np.cumsum(counts) - counts), counts) + \
        np.arange(int(counts.sum()), dtype=np.int64)


# ------------------------------------------------------------------- evaluation
class _Evaluator:
    """Turns batches of steps into step times (without alpha) and accumulates link loads."""

    def __init__(self, schedule: Schedule, topology: Topology, rt: Routes,
                 pair_id: _PairIndex, explicit: np.ndarray | None,
                 chunk_bytes: float) -> None:
        self.s, self.topology, self.rt, self.pair_id = schedule, topology, rt, pair_id
        self.explicit, self.chunk_bytes = explicit, chunk_bytes
        self.n = topology.num_nodes
        self.bw = topology.link_bandwidth
        self.num_links = len(self.bw)
        lens = np.diff(rt.ptr)
        self.one_link = bool(len(lens) == 0 or (lens.min() == 1 and lens.max() == 1))
        self.max_route_len = int(lens.max()) if len(lens) else 1
        if explicit is not None:  # a path hop may use a whole bundle of parallel links
            key = topology.link_src * self.n + topology.link_dst
            bundle = int(np.unique(key, return_counts=True)[1].max()) if len(key) else 1
            hops = int(np.diff(schedule.path_ptr).max())
            self.max_route_len = max(self.max_route_len, hops * bundle)
        self.link_load = np.zeros(self.num_links)
        self.unit_chunks = schedule.unit_chunks
        if self.one_link and explicit is None:  # one link per pair, fraction 1
            self.pair_link = rt.link[rt.ptr[:-1]]
            self.inv_bw = 1.0 / self.bw

    def _fast_lines(self, s0: int, s1: int):
        """:meth:`lines` when every routed pair uses exactly one link."""
        sp = self.s.step_ptr
        a = int(sp[s0])
        # chunks counted exactly, then scaled (as np.bincount did); the pair lookups inside
        # the compiled loop, among each source's pairs (no n x n table to miss in)
        ptr, dst = self.pair_id.by_source
        lat, slope, batch_load = one_link_lines_table(
            sp, s0, s1, self.s.src, self.s.dst, ptr, dst, self.pair_link, self.rt.latency,
            self.s.compact_chunk_ptr, self.unit_chunks, float(self.chunk_bytes), self.inv_bw,
            self.num_links)
        self.link_load += batch_load
        return lat, slope, sp[s0:s1 + 1] - a

    def envelope(self, s0: int, s1: int, cbs: np.ndarray) -> np.ndarray:
        """Times (without alpha) of steps ``s0:s1`` at each chunk size of ``cbs``: the
        upper envelope of :meth:`lines`, in one compiled pass where every routed pair
        uses one link (the same bits either way)."""
        sp = self.s.step_ptr
        big = s1 - s0 == 1 and int(sp[s1] - sp[s0]) > TRANSFERS_PER_BATCH
        if self.one_link and self.explicit is None and not big \
                and len(cbs) <= DIRECT_ENVELOPE_SIZES:
            ptr, dst = self.pair_id.by_source
            out, batch_load = one_link_step_times(
                sp, s0, s1, self.s.src, self.s.dst, ptr, dst, self.pair_link,
                self.rt.latency, self.s.compact_chunk_ptr, self.unit_chunks,
                float(self.chunk_bytes), self.inv_bw, self.num_links,
                np.asarray(cbs, dtype=np.float64), step_repeats(self.s))
            self.link_load += batch_load
            return out
        return _envelope(*self.lines(s0, s1), cbs)

    def _entries(self, a: int, b: int):
        """Route entries of transfers ``a:b``: (owner offset, link, frac) sorted by owner,
        and the latency of each transfer."""
        k = _keys(self.s, self.n, a, b)
        lat = np.zeros(b - a)
        routed = np.arange(b - a) if self.explicit is None else \
            np.flatnonzero(~self.explicit[a:b])
        pid = self.pair_id(k[routed])
        rt = self.rt
        lat[routed] = rt.latency[pid]
        cnt = rt.ptr[pid + 1] - rt.ptr[pid]
        e = _segments(rt.ptr[pid], cnt)
        owner, link, frac = np.repeat(routed, cnt), rt.link[e], rt.frac[e]
        if self.explicit is not None and self.explicit[a:b].any():
            ex = np.flatnonzero(self.explicit[a:b])
            pr = path_routes(self.topology, self.s.path_ptr, self.s.path_nodes, ex + a)
            lat[ex] = pr.latency
            owner = np.concatenate([owner, np.repeat(ex, np.diff(pr.ptr))])
            link = np.concatenate([link, pr.link])
            frac = np.concatenate([frac, pr.frac])
            order = np.argsort(owner, kind="stable")
            owner, link, frac = owner[order], link[order], frac[order]
        return owner, link, frac, lat

    def _bytes(self, a: int, b: int) -> np.ndarray:
        if self.unit_chunks:
            return np.ones(b - a, dtype=np.int64) * self.chunk_bytes
        return np.diff(self.s.chunk_ptr[a:b + 1]) * self.chunk_bytes

    def batch(self, s0: int, s1: int) -> np.ndarray:
        """Times (without alpha) of steps ``s0:s1``."""
        sp = self.s.step_ptr
        a, b = int(sp[s0]), int(sp[s1])
        if s1 - s0 == 1 and b - a > TRANSFERS_PER_BATCH:
            return np.array([self._big_step(a, b)])
        lat, slope, ptr = self.lines(s0, s1)
        return _step_max(lat + slope, ptr)

    def lines(self, s0: int, s1: int):
        """``(lat, slope, ptr)`` of steps ``s0:s1``: entry ``i`` of step ``k``
        (``ptr[k] <= i < ptr[k+1]``) finishes at ``lat[i] + slope[i]`` (times
        ``chunk_bytes`` already in ``slope``); loads are added to :attr:`link_load`."""
        sp = self.s.step_ptr
        a, b = int(sp[s0]), int(sp[s1])
        if s1 - s0 == 1 and b - a > TRANSFERS_PER_BATCH:
            return self._big_lines(a, b)
        if self.one_link and self.explicit is None:
            return self._fast_lines(s0, s1)
        owner, link, frac, lat = self._entries(a, b)
        nsteps, L = s1 - s0, self.num_links
        tstep = np.repeat(np.arange(nsteps, dtype=np.int64), np.diff(sp[s0:s1 + 1]))
        step_e = tstep[owner]
        key = step_e * L + link
        load = np.bincount(key, weights=self._bytes(a, b)[owner] * frac, minlength=nsteps * L)
        self.link_load += load.reshape(nsteps, L).sum(axis=0)
        who, lat_t, slope_t = _per_transfer(owner, lat, load[key] / self.bw[link])
        ptr = np.zeros(nsteps + 1, dtype=np.int64)
        np.cumsum(np.bincount(tstep[who], minlength=nsteps), out=ptr[1:])
        return lat_t, slope_t, ptr

    def _big_load(self, a: int, b: int) -> tuple[list[tuple[int, int]], np.ndarray]:
        """Link loads of one step with more transfers than a batch, accumulated batch by
        batch (and added to :attr:`link_load`); returns the batch ranges and the loads."""
        load = np.zeros(self.num_links)
        ranges = [(x, min(x + TRANSFERS_PER_BATCH, b)) for x in range(a, b, TRANSFERS_PER_BATCH)]
        for x, y in ranges:
            owner, link, frac, _ = self._entries(x, y)
            load += np.bincount(link, weights=self._bytes(x, y)[owner] * frac,
                                minlength=self.num_links)
        self.link_load += load
        return ranges, load

    def _big_step(self, a: int, b: int) -> float:
        """One step with more transfers than a batch: loads first, then the maximum."""
        ranges, load = self._big_load(a, b)
        worst = 0.0
        for x, y in ranges:
            owner, link, _, lat = self._entries(x, y)
            if len(link):
                worst = max(worst, float((lat[owner] + load[link] / self.bw[link]).max()))
        return worst

    def _big_lines(self, a: int, b: int):
        """:meth:`lines` of one step with more transfers than a batch (loads first, then
        per-transfer lines), reduced to its upper envelope."""
        ranges, load = self._big_load(a, b)
        lats, slopes = [], []
        for x, y in ranges:
            owner, link, _, lat = self._entries(x, y)
            _, la, sl = _per_transfer(owner, lat, load[link] / self.bw[link])
            la, sl, _ = _pareto(la, sl, np.array([0, len(la)]))
            lats.append(la)
            slopes.append(sl)
        lat, slope = np.concatenate(lats), np.concatenate(slopes)
        return lat, slope, np.array([0, len(lat)])


def _per_transfer(owner: np.ndarray, lat: np.ndarray, slope_e: np.ndarray):
    """Route entries sorted by ``owner`` -> ``(owners, latency, largest slope)`` per
    transfer that has entries (a transfer's finish time is its latency plus the slope of
    its most loaded link)."""
    if not len(owner):
        return owner, np.zeros(0), np.zeros(0)
    first = np.ones(len(owner), dtype=bool)
    first[1:] = owner[1:] != owner[:-1]
    starts = np.flatnonzero(first)
    who = owner[starts]
    return who, lat[who], np.maximum.reduceat(slope_e, starts)


def _pareto(lat: np.ndarray, slope: np.ndarray, ptr: np.ndarray):
    """Per segment, drop lines ``lat + c * slope`` that another line of the segment
    dominates for every ``c >= 0``; returns ``(lat, slope, ptr)`` of the rest."""
    nseg = len(ptr) - 1
    seg = np.repeat(np.arange(nseg), np.diff(ptr))
    if not len(seg):
        return lat, slope, ptr
    order = np.lexsort((-lat, -slope, seg))       # per segment: slope, then lat, descending
    lat, slope, seg = lat[order], slope[order], seg[order]
    # shift segment k by k * span so that one running maximum serves all segments
    span = 2.0 * float(lat.max() - lat.min()) + 1e-12
    shifted = lat + seg * span
    prev = np.maximum.accumulate(shifted)
    keep = np.ones(len(lat), dtype=bool)
    first = np.ones(len(lat), dtype=bool)
    first[1:] = seg[1:] != seg[:-1]
    keep[1:] = (shifted[1:] > prev[:-1]) | first[1:]
    lat, slope, seg = lat[keep], slope[keep], seg[keep]
    out = np.zeros(nseg + 1, dtype=np.int64)
    np.cumsum(np.bincount(seg, minlength=nseg), out=out[1:])
    return lat, slope, out


#: Up to this many sizes, :func:`_envelope` evaluates every line at every size in one
#: compiled pass; beyond it, dominated lines are dropped first (a sort).
DIRECT_ENVELOPE_SIZES = 16


def _envelope(lat: np.ndarray, slope: np.ndarray, ptr: np.ndarray,
              cbs: np.ndarray) -> np.ndarray:
    """``out[k, i] = max over segment k of lat + cbs[i] * slope`` (0 for empty segments)."""
    if len(cbs) <= DIRECT_ENVELOPE_SIZES:
        return step_envelope(lat, slope, ptr, np.asarray(cbs, dtype=np.float64))
    lat, slope, ptr = _pareto(lat, slope, ptr)
    out = np.zeros((len(ptr) - 1, len(cbs)))
    nz = ptr[1:] > ptr[:-1]
    if nz.any():
        val = lat[:, None] + slope[:, None] * cbs[None, :]
        out[nz] = np.maximum.reduceat(val, ptr[:-1][nz], axis=0)
    return np.maximum(out, 0.0)


def _step_max(val: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Per segment ``ptr[i]:ptr[i+1]`` of ``val``, its maximum (0 for empty segments)."""
    out = np.zeros(len(ptr) - 1)
    nz = ptr[1:] > ptr[:-1]
    if nz.any():
        out[nz] = np.maximum.reduceat(val, ptr[:-1][nz])
    return np.maximum(out, 0.0)


# ------------------------------------------------------------------ shared routing
def transfer_routes(schedule: Schedule, topology: Topology, routing: str,
                    chunk_bytes: float):
    """Route every transfer exactly as :class:`~topocoll.cost.AlphaBeta` does.

    Returns ``(ptr, link, frac, latency, nbytes)``: the CSR route of each transfer
    (explicit paths honoured, otherwise ``routing``), its route latency and its bytes.

    Raises
    ------
    ScheduleError, TopologyError
        As :meth:`AlphaBeta.evaluate`.
    """
    _check_nodes(schedule, topology)
    explicit = _explicit(schedule)
    pairs, pair_id = _pair_index(schedule, topology.num_nodes, explicit)
    rt = routes(topology, pairs, routing)
    ev = _Evaluator(schedule, topology, rt, pair_id, explicit, chunk_bytes)
    T = schedule.num_transfers
    owner, link, frac, lat = ev._entries(0, T)
    ptr = np.zeros(T + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=T), out=ptr[1:])
    return (ptr, np.ascontiguousarray(link, dtype=np.int64),
            np.ascontiguousarray(frac, dtype=np.float64), np.asarray(lat, dtype=np.float64),
            ev._bytes(0, T).astype(np.float64))
