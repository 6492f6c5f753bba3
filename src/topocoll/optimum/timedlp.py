"""Step-indexed ("timed") spanning-tree LP for allgather, solved by column generation.

A *timed tree* of root ``r`` gives every other member ``v`` a parent ``p(v)`` and a step
``s(v)`` in ``1..H`` with ``s(v) > s(p(v))`` (``s(r) = 0``): in step ``s(v)`` the arc
``p(v) -> v`` carries the tree's share of ``r``'s block along a path through the fabric
(switches and non-member ranks only forward). A vertex may hold data and forward it
later. With ``x_T`` the share of its root's block on tree ``T``, ``b`` the block size
and ``tau_s`` the length of step ``s``, the LP is

.. math:: \\min \\sum_s \\tau_s \\quad \\text{s.t.} \\quad \\sum_{T \\ni r} x_T = 1,
   \\qquad b \\sum_T x_T\\, n_{T,l,s} \\le c_l \\tau_s,
   \\qquad b \\sum_{T,s} x_T\\, n_{T,l,s} \\le c_l T^* + \\sigma,

``n_{T,l,s}`` the number of ``T``'s step-``s`` paths over link ``l`` (parallel links are
one bundle of summed bandwidth ``c_l``, as in the cost model), ``T^*`` the exact cut
bound and ``sigma >= 0`` an elastic slack with a large cost (the third family, optional
and off by default, keeps each link's total load at the bound). Steps are barriers,
exactly as in :class:`~topocoll.cost.AlphaBeta`, so ``sum_s tau_s`` is the schedule's
bandwidth time (before per-step latency), and ``T^* <= sum_s tau_s`` always. Given the
block size (``block=``), each (link, step) row also leaves room for ``alpha`` plus the
link's least route latency, and ``b sum_s tau_s`` is the time with latency: the LP then
trades steps against bandwidth as the cost model does.

**Symmetry.** The LP is invariant under the fabric's automorphisms
(:mod:`~topocoll.topology.symmetry`), so it has an invariant optimum: one root per member
orbit needs columns. :func:`invariant_lp` solves the invariant LP itself, one row per
*link orbit* and step (tens of rows instead of thousands: seconds at 64 ranks);
:func:`timed_lp` then solves the per-link LP over transversal images of trees, started
from the invariant solution's trees under many automorphisms fixing their root, whose
mixture spreads the load as the group average does (phase 2 stops once it matches).

Columns are generated: the master LP (HiGHS primal simplex, warm-started) gives duals
``mu_r`` (root rows) and ``y_{l,s}, z_l >= 0``; a tree enters if
``sum_v d_{s(v)}(p(v), v) < mu_r`` with ``d_s`` shortest paths under link lengths
``(y_{l,s} + z_l) / c_l``. That pricing problem is a directed Steiner tree in the
time-expanded graph (NP-hard), so it is solved by a **heuristic**: a Prim-like growth
from ``(r, 0)`` that attaches the cheapest unreached member at its cheapest allowed step
(holding data is free), then re-parent / re-time passes over single vertices, and a
search over the time labels alone (every member takes its cheapest earlier-labelled
parent). Pricing runs at Wentges-smoothed duals first. The LP objective is therefore an
upper bound on the true timed-tree optimum, and ``T^*`` a lower bound; ``value / T^* -
1`` is reported as the *timed gap*. :mod:`~topocoll.optimum.timedbound` prices exactly
(a MIP) to certify lower bounds.

References
----------
.. [1] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461, 2023 (time-expanded view of tree pipelines).
.. [2] Gilmore and Gomory, Operations Research 9(6), 1961 (column generation);
   Takahashi and Matsuyama, "An approximate solution for the Steiner problem in graphs",
   Math. Japonica 24, 1980 (the shortest-path growth heuristic used for pricing).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InfeasibleError, NotSupportedError, TopologyError
from ..topology.symmetry import rank_symmetry
from .highs import quiet_highs
from .maxflow import allgather_optimum
from .timedprice import Net, TimedTree, price_root, seed_trees, suffix_min
from .treelp import add_columns, solve_master

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["TimedLP", "TimedTree", "timed_lp", "invariant_lp", "MAX_RANKS", "MAX_STEPS",
           "LinkOrbits", "setup_lp", "generate_columns", "link_orbits"]

#: Largest group the timed LP is built for (pricing is ``O(N^3 H)`` per round).
MAX_RANKS = 64
#: Largest horizon ``H``.
MAX_STEPS = 64
#: Cost of the elastic slack on the per-link total rows (in units of the objective).
_SLACK_COST = 1e3
_TOL = 1e-9
#: Iterations over which the tail-off rule of :func:`timed_lp` measures progress.
_TAIL = 25


@dataclass(frozen=True)
class TimedLP:
    """Result of :func:`timed_lp`.

    Attributes
    ----------
    members : tuple of int
        The ranks.
    steps : int
        The horizon ``H``.
    trees : tuple of TimedTree
        The trees with a positive share.
    share : numpy.ndarray
        ``x_T`` per tree (the shares of each root sum to 1).
    step_time : numpy.ndarray
        ``tau_s`` per step, seconds per byte of one block.
    value : float
        ``sum_s tau_s`` (seconds per block byte).
    bound : float
        The exact cut bound ``T^*`` (seconds per block byte).
    excess : float
        Slack ``sigma`` (seconds per block byte) by which some link's total load exceeds
        the bound (0 unless no generated column set could keep every total at it).
    iterations, columns : int
        Master solves and columns generated.
    seconds : float
        Wall time.
    """

    members: tuple[int, ...]
    steps: int
    trees: tuple[TimedTree, ...]
    share: np.ndarray
    step_time: np.ndarray
    value: float
    bound: float
    excess: float
    iterations: int
    columns: int
    seconds: float

    @property
    def gap(self) -> float:
        """The timed gap ``value / T^* - 1`` (>= 0 up to rounding)."""
        return self.value / self.bound - 1.0


class _Master:
    """``min sum tau + K sigma`` over the columns so far (HiGHS, warm-started)."""

    def __init__(self, N: int, H: int, L: int, total: float | None,
                 offset: np.ndarray | None = None) -> None:
        import highspy

        inf = highspy.kHighsInf
        h = quiet_highs()
        h.setOptionValue("presolve", "off")          # warm starts from the last basis
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("simplex_strategy", 4)
        self.N, self.H, self.L = N, H, L
        rows_lo = np.concatenate([np.ones(N), np.full(H * L, -inf),
                                  np.full(L if total is not None else 0, -inf)])
        room = np.zeros(H * L) if offset is None else -np.tile(offset, H)
        rows_hi = np.concatenate([np.ones(N), room,
                                  np.full(L if total is not None else 0, total or 0.0)])
        z = np.zeros(0, np.int32)
        h.addRows(len(rows_lo), rows_lo, rows_hi, 0, z, z, np.zeros(0))
        # tau_s: -1 in every (l, s) row
        idx = (N + np.arange(H * L)).astype(np.int32)
        h.addCols(H, np.ones(H), np.zeros(H), np.full(H, inf), H * L,
                  (np.arange(H) * L).astype(np.int32), idx, -np.ones(H * L))
        if total is not None:                          # sigma: -1 in every total row
            h.addCols(1, np.array([_SLACK_COST]), np.zeros(1), np.full(1, inf), L,
                      np.zeros(1, np.int32), (N + H * L + np.arange(L)).astype(np.int32),
                      -np.ones(L))
        self.fixed = H + (total is not None)
        self.total = total is not None
        self.h = h

    def add(self, cols: list[tuple[np.ndarray, np.ndarray]]) -> None:
        add_columns(self.h, np.zeros(len(cols)), cols)

    def solve(self):
        sol = solve_master(self.h, "timed master LP")
        col = np.array(sol.col_value)
        dual = np.array(sol.row_dual)
        N, H, L = self.N, self.H, self.L
        mu = dual[:N]
        y = np.maximum(-dual[N:N + H * L], 0.0).reshape(H, L)
        zl = np.maximum(-dual[N + H * L:], 0.0) if self.total else np.zeros(L)
        return col, mu, y, zl


def link_orbits(net: Net, sym) -> np.ndarray:
    """Orbit index of every link bundle under the group's generators: the connected
    components of the graph joining each bundle to its image under every generator,
    numbered in the order of their smallest bundle.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> net = SimpleNamespace(num_links=4, n=4, src=np.array([0, 1, 2, 3]),
    ...                       dst=np.array([1, 2, 3, 0]))
    >>> link_orbits(net, SimpleNamespace(generators=[np.array([1, 2, 3, 0])])).tolist()
    [0, 0, 0, 0]
    >>> link_orbits(net, SimpleNamespace(generators=[np.array([2, 3, 0, 1])])).tolist()
    [0, 1, 0, 1]
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    L, n = net.num_links, net.n
    src, dst = np.asarray(net.src, np.int64), np.asarray(net.dst, np.int64)
    keys = src * n + dst
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    a, b = [np.arange(L)], [np.arange(L)]
    for g in sym.generators:
        g = np.asarray(g, np.int64)
        image = g[src] * n + g[dst]
        pos = np.searchsorted(sorted_keys, image)
        if (pos >= L).any() or (sorted_keys[np.minimum(pos, L - 1)] != image).any():
            raise ValueError("a generator maps a link bundle onto no bundle")
        a.append(np.arange(L))
        b.append(order[pos])
    a, b = np.concatenate(a), np.concatenate(b)
    graph = coo_matrix((np.ones(len(a), np.int8), (a, b)), shape=(L, L)).tocsr()
    _, label = connected_components(graph, directed=False)
    first = np.full(label.max() + 1, L, np.int64)
    np.minimum.at(first, label, np.arange(L))          # smallest bundle of each orbit
    rank = np.empty_like(first)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[label].astype(np.int64)


class LinkOrbits:
    """One root per member orbit: column images and pulled-back dual lengths.

    ``rows="links"``: a rep tree's column holds the loads of its images under the
    transversal (one per member of the orbit) on every link. ``rows="orbits"``: the
    loads of its average over the whole group, equal on every link of a link orbit, so
    one row per link orbit (the exact optimum of the group-invariant LP, far smaller;
    see :func:`timed_lp`). Either way link ``l`` of a rep tree contributes ``w[k][j, l]``
    to row ``img[k][j, l]`` for ``j`` over the images."""

    def __init__(self, net: Net, sym, rows: str = "links") -> None:
        self.net, self.sym = net, sym
        self.reps = sym.reps
        self.row = {r: k for k, r in enumerate(sym.reps)}
        self.orbits = [sym.orbit(r) for r in sym.reps]
        if rows == "orbits":
            lo = link_orbits(net, sym)
            size = np.bincount(lo)
            self.num_rows = int(lo.max()) + 1
            self.link_row = lo
            self.img = [lo[None, :] for _ in self.orbits]
            self.w = [(len(o) / size[lo])[None, :] for o in self.orbits]
        else:
            # img[k][j, l]: the bundle that link l maps to under the j-th member's map
            self.num_rows = net.num_links
            self.link_row = np.arange(net.num_links)
            self.img = [np.array([[net.index[int(sym.maps[m][a]), int(sym.maps[m][b])]
                                   for a, b in zip(net.src, net.dst, strict=True)]
                                  for m in orbit], np.int64) for orbit in self.orbits]
            self.w = [np.ones(p.shape) for p in self.img]

    def row_min(self, v: np.ndarray) -> np.ndarray:
        """Per master row the least ``v`` (per link bundle) of the links it stands for."""
        out = np.full(self.num_rows, np.inf)
        np.minimum.at(out, self.link_row, v)
        return out

    def pull(self, k: int, W: np.ndarray) -> np.ndarray:
        """``W'[s, l] = sum_j w_j W[s, img_j(l)]``: a rep tree's cost under ``W'`` is the
        cost of its column under the row duals ``W``."""
        return (W[:, self.img[k]] * self.w[k][None]).sum(axis=1)

    def column(self, tree: TimedTree, H: int, total: bool) -> tuple[np.ndarray, np.ndarray]:
        """Master column of ``tree`` and all its images: (row indices, coefficients)."""
        net, k = self.net, self.row[tree.root]
        K, L = len(self.reps), self.num_rows
        lk, st, co = [], [], []
        for _, _, s, pieces in tree.arcs:
            for path, f in pieces:
                h = net.hops(path)
                lk += h
                st += [s] * len(h)
                co += [f] * len(h)
        lk = np.array(lk, np.int64)
        m = self.img[k].shape[0]
        rl = self.img[k][:, lk].ravel()                              # every image
        st = np.tile(np.array(st, np.int64), m)
        co = (np.array(co) * net.inv_c[lk])[None, :] * self.w[k][:, lk]
        co = co.ravel()
        rows = [np.array([k]), K + (st - 1) * L + rl]
        vals = [np.ones(1), co]
        if total:
            rows.append(K + H * L + rl)
            vals.append(co)
        r, inv = np.unique(np.concatenate(rows), return_inverse=True)
        return r, np.bincount(inv, weights=np.concatenate(vals))

    def cost(self, tree: TimedTree, W: np.ndarray) -> float:
        """Cost of ``tree`` and its images under dual lengths ``W`` (H, L)."""
        Wp = self.pull(self.row[tree.root], W) * self.net.inv_c[None, :]
        return float(sum(f * Wp[s - 1, self.net.hops(p)].sum()
                         for _, _, s, pcs in tree.arcs for p, f in pcs))

    def expand(self, trees: list[TimedTree], share: np.ndarray
               ) -> tuple[tuple[TimedTree, ...], np.ndarray]:
        """Every rep tree's images on its orbit, each with the tree's share."""
        out, sh = [], []
        for t, x in zip(trees, share.tolist(), strict=True):
            for m in self.orbits[self.row[t.root]]:
                out.append(_image(t, self.sym.maps[m]))
                sh.append(x)
        return tuple(out), np.array(sh)


def timed_lp(topology: Topology, ranks: Sequence[int] | None = None, *, steps: int,
             reverse: bool = False, seeds: Sequence[TimedTree] = (),
             cap_total: bool = False, max_iterations: int = 200, hops: int | None = None,
             per_root: int | None = None, stop: float = 1e-5, tail: float = 1e-4,
             symmetry: bool = True,
             stabilize: float = 0.5, rows: str = "auto",
             invariant: TimedLP | None = None, block: float | None = None,
             alpha: float = 0.0) -> TimedLP:
    """The timed-tree allgather LP with horizon ``steps`` (column generation).

    Parameters
    ----------
    topology : Topology
        Any topology.
    ranks : sequence of int, optional
        The members (default every rank).
    steps : int
        Horizon ``H`` (1 .. :data:`MAX_STEPS`).
    reverse : bool
        Use the reversed graph (reduce-scatter is this LP's allgather run backwards).
    seeds : sequence of TimedTree
        Extra starting columns (e.g. a tree packing's trees at step = depth, shifted);
        trees deeper than ``steps`` are ignored. A direct star per root and the pricer's
        trees under uniform lengths are always added.
    cap_total : bool
        Add the per-link total rows ``sum_s load_{l,s} <= c_l T^* + sigma`` (off by
        default: they cannot lower ``sum_s tau_s``, which is what the cost model charges,
        and where the optimum is above the bound they raise it: mi250:2 at 8 steps,
        1.104 of the bound with them, 1.053 without).
    max_iterations : int
        Cap on pricing rounds.
    hops : int, optional
        Longest path (links) an arc may take (default: the fewest that connect every
        member pair).
    per_root : int, optional
        Most columns added per priced root and round (default ``2 N / K`` for ``K``
        priced roots, between 2 and 16: fewer roots priced, more columns from each).
    stop, tail : float
        Stop when the value is within ``stop`` of the bound, or improved by at most
        ``tail`` (relative) over the last 25 rounds.
    stabilize : float
        Wentges smoothing weight in ``[0, 1)`` (0: price at the master's duals only).
    symmetry : bool
        Price one root per orbit of the fabric's automorphisms
        (:func:`~topocoll.topology.symmetry.rank_symmetry`), each column standing for
        its image under one automorphism per member of the orbit (same optimum, far
        fewer columns and pricing calls on symmetric fabrics); ``False`` prices every
        root.
    rows : {'auto', 'links', 'orbits'}
        ``'auto'``: on a symmetric fabric first solve the group-invariant LP
        (:func:`invariant_lp`: one row per link orbit, the same optimum), then the
        per-link LP from its trees mapped by automorphisms that fix their root, stopping
        as soon as it matches; ``'links'``: the per-link LP only; ``'orbits'``: the
        invariant LP only (its value; the trees are transversal images and do not
        realize it).
    invariant : TimedLP, optional
        A precomputed :func:`invariant_lp` of the same arguments (``rows='auto'``).
    block : float, optional
        Bytes per block. Given, the LP charges per-step overheads as the cost model
        does: every (link, step) row leaves room for ``alpha`` plus the least route
        latency of a member-to-member path over the link
        (:meth:`~topocoll.optimum.timedprice.Net.latency_floor`), so ``b sum_s tau_s``
        is the schedule's time with latency (from below on each link; the rounded plan
        is costed exactly) and horizons are compared by the LP itself. Default:
        bandwidth only (the LP does not depend on the size).
    alpha : float
        Per-step overhead in seconds (with ``block``).

    Returns
    -------
    TimedLP

    Raises
    ------
    NotSupportedError
        ``steps`` out of range or more than :data:`MAX_RANKS` members.
    TopologyError
        A member cannot reach another.

    Examples
    --------
    A ring of 4 reaches the cut bound ``3 b / (2 B)`` in 2 steps (every rank sends
    half its block each way at step 1, the neighbours forward at step 2):

    >>> from topocoll.topology import ring
    >>> lp = timed_lp(ring(4, bandwidth=1.0), steps=2)
    >>> round(lp.bound, 9), round(lp.value, 9)
    (1.5, 1.5)
    """
    t0 = time.perf_counter()
    net, sym, H, hops, bound, seeds = setup_lp(topology, ranks, steps, reverse, hops, seeds,
                                             symmetry)
    N = len(net.members)
    opts = dict(cap_total=cap_total, max_iterations=max_iterations, stop=stop, tail=tail,
                per_root=per_root, stabilize=stabilize, t0=t0,
                block=block, alpha=alpha)
    if rows not in ("auto", "links", "orbits"):
        raise NotSupportedError(f"rows must be 'auto', 'links' or 'orbits', got {rows!r}")
    links = LinkOrbits(net, sym, "orbits" if rows == "orbits" else "links")
    its = ncols = 0
    if rows == "auto" and sym.generators and len(sym.reps) < N:
        # phase 1: the group-invariant LP (one row per link orbit) finds the optimum and
        # its tree shapes in a few rounds; phase 2 restarts the per-link LP from those
        # trees under many automorphisms fixing their root, whose mixture spreads the
        # load over each link orbit as the invariant solution does
        ph1 = invariant if invariant is not None else generate_columns(
            net, LinkOrbits(net, sym, "orbits"), H, hops, bound, seeds, **opts)
        its, ncols = ph1.iterations, ph1.columns
        per = int(np.clip(_SEED_COLUMNS // max(1, len(ph1.trees)), 16, _STAB_IMAGES))
        stab = {r: sym.stabilizer_elements(r, per) for r in sym.reps}
        seeds = [_image(t, h) for t in ph1.trees for h in stab[t.root]] + seeds
        opts["target"] = ph1.value              # the optimum: nothing left to find
    res = generate_columns(net, links, H, hops, bound, seeds, **opts)
    out, share = links.expand(list(res.trees), res.share)
    return TimedLP(net.members, H, out, share, res.step_time, res.value, bound, res.excess,
                   its + res.iterations, ncols + res.columns, time.perf_counter() - t0)


def invariant_lp(topology: Topology, ranks: Sequence[int] | None = None, *, steps: int,
                 reverse: bool = False, seeds: Sequence[TimedTree] = (),
                 hops: int | None = None, max_iterations: int = 300,
                 cap_total: bool = False,
                 block: float | None = None, alpha: float = 0.0) -> TimedLP:
    """The group-invariant timed LP alone (phase 1 of :func:`timed_lp`): one row per
    link orbit and step, one root per member orbit. Its value is the optimum of
    :func:`timed_lp` (up to the heuristic pricing) at a fraction of the cost, so
    horizons are compared with it; ``trees`` holds one representative tree per column
    (the solution is their average over the whole automorphism group, which no single
    transversal image realizes: pass the result to :func:`timed_lp` as ``invariant``).

    Examples
    --------
    >>> from topocoll.topology import hypercube
    >>> lp = invariant_lp(hypercube(4, bandwidth=1.0), steps=4)
    >>> round(lp.value / lp.bound, 9), {t.root for t in lp.trees}
    (1.0, {0})
    """
    t0 = time.perf_counter()
    net, sym, H, hops, bound, seeds = setup_lp(topology, ranks, steps, reverse, hops, seeds,
                                             True)
    return generate_columns(net, LinkOrbits(net, sym, "orbits"), H, hops, bound, seeds,
                     cap_total=cap_total, max_iterations=max_iterations, stop=1e-5, tail=1e-4,
                     per_root=None, stabilize=0.5, t0=t0,
                     block=block, alpha=alpha)


def setup_lp(topology, ranks, steps, reverse, hops, seeds, symmetry):
    if not isinstance(steps, int | np.integer) or not 1 <= steps <= MAX_STEPS:
        raise NotSupportedError(f"steps must be an integer in 1..{MAX_STEPS}, got {steps!r}")
    net = Net(topology, ranks, reverse)
    N, H = len(net.members), int(steps)
    if N > MAX_RANKS:
        raise NotSupportedError(f"the timed tree LP is built for at most {MAX_RANKS} ranks, "
                                f"got {N}")
    if N < 2:
        raise TopologyError("a timed tree LP needs at least two ranks", item="ranks")
    bound = float(allgather_optimum(topology, net.members, reverse=reverse).value)
    sym = rank_symmetry(topology, net.members, enabled=symmetry)
    hops = net.hop_limits()[-1] if hops is None else int(hops)
    seeds = [t for t in seeds if t.root in sym.reps
             and all(len(p) - 1 <= hops for *_, pcs in t.arcs for p, _ in pcs)]
    seeds += seed_trees(net, H, hops, roots=sym.reps)
    return net, sym, H, hops, bound, seeds


#: Phase 2 of :func:`timed_lp` stops within this fraction of the invariant optimum.
_MATCH = 2e-4
#: Most phase-2 seed columns (phase-1 trees times their stabilizer images).
_SEED_COLUMNS = 4096
#: Automorphisms fixing the root under which phase 2 of :func:`timed_lp` restarts
#: each phase-1 tree.
_STAB_IMAGES = 512


def _image(t: TimedTree, g: np.ndarray) -> TimedTree:
    """The tree ``t`` mapped by the node permutation ``g``."""
    return TimedTree(int(g[t.root]), tuple(
        (int(g[a]), int(g[b]), s, tuple((tuple(int(g[v]) for v in p), f) for p, f in pcs))
        for a, b, s, pcs in t.arcs))


def generate_columns(net: Net, orb: LinkOrbits, H: int, hops: int, bound: float,
                     seeds: Sequence[TimedTree], *, cap_total: bool, max_iterations: int,
                     stop: float, tail: float, per_root: int | None, stabilize: float,
                     t0: float, target: float = 0.0, duals: dict | None = None,
                     block: float | None = None, alpha: float = 0.0) -> TimedLP:
    """Column generation over rep-root trees (the workhorse of :func:`timed_lp` and
    :func:`invariant_lp`); the result holds the rep trees.

    Stops after ``max_iterations`` pricing rounds, within ``stop`` of the bound (or
    of ``target``), or when the value improved by at most ``tail`` (relative) over the
    last rounds: every stopping rule counts work, so the result does not depend on the
    machine. ``t0`` is only used to report the wall time."""
    if block is not None and not (np.isfinite(block) and block > 0):
        raise NotSupportedError(f"block must be a positive number of bytes, got {block!r}")
    if not (np.isfinite(alpha) and alpha >= 0):
        raise NotSupportedError(f"alpha must be a non-negative number of seconds, got "
                                f"{alpha!r}")
    N = len(net.members)
    scale = net.bw_max                     # LP time unit: 1 / bw_max seconds per byte
    K = len(orb.reps)
    per_root = int(np.clip(2 * N // K, 2, 16)) if per_root is None else int(per_root)
    offset = None
    if block is not None:                  # links no path of <= hops links uses: none
        over = np.where(net.usable(hops), alpha + net.latency_floor(), 0.0)
        offset = orb.row_min(over) * scale / block
    master = _Master(K, H, orb.num_rows, bound * scale * (1 + 1e-9) if cap_total else None,
                     offset)
    trees: list[TimedTree] = []
    keys: set = set()

    def take(found: Sequence[TimedTree]) -> int:
        new = [t for t in found if t.key() not in keys and t.depth() <= H]
        for t in new:
            keys.add(t.key())
        trees.extend(new)
        if new:
            master.add([orb.column(t, H, cap_total) for t in new])
        return len(new)

    take(seeds)
    missing = set(orb.reps) - {t.root for t in trees}
    if missing:
        r = min(missing)
        raise InfeasibleError(f"no timed tree of rank {r} reaches every member in {H} steps "
                              f"with paths of at most {hops} links")
    total = bound * scale * (1 + 1e-9) if cap_total else 0.0

    def price(W: np.ndarray, basic: dict) -> tuple[list, float]:
        """Candidates ``(orbit, cost, tree)`` under lengths ``W`` and the (heuristic)
        Lagrangian value ``sum_k min cost_k`` before the total rows' term."""
        out, lb = [], 0.0
        for k, rep in enumerate(orb.reps):
            D, pred = net.distances(orb.pull(k, W), hops)
            SM, AS = suffix_min(D)
            cands = price_root(net, D, SM, AS, pred, net.members.index(rep),
                               basic.get(rep, ()), keep=per_root)
            lb += min((c for c, _ in cands), default=0.0)
            out += [(k, c, t) for c, t in cands]
        return out, lb

    it = 0
    history: list[float] = []
    center, center_z, center_lb = None, 0.0, -np.inf
    while True:
        col, mu, y, zl = master.solve()
        it += 1
        history.append(float(col[:H].sum()))
        if it >= max_iterations:
            break
        if len(history) > _TAIL and history[-_TAIL - 1] - history[-1] <= tail * history[-1]:
            break                              # tailing off: too little progress lately
        if col[:H].sum() <= max(bound * (1 + stop), target * (1 + _MATCH)) * scale:
            break                  # at the cut bound (or phase 1's optimum): nothing to gain
        x = col[master.fixed:]
        basic: dict[int, list[TimedTree]] = {}
        for k in np.flatnonzero(x > 1e-12):
            basic.setdefault(trees[k].root, []).append(trees[k])
        W = y + zl[None, :]
        found: list[TimedTree] = []
        if center is not None and stabilize > 0:
            # Wentges smoothing: price between the best dual point so far and the
            # master's (damps the oscillation of this very degenerate master); keep what
            # improves at the master's duals, else price at those exactly
            Ws = stabilize * center + (1 - stabilize) * W
            cands, lb = price(Ws, basic)
            lb -= total * float(stabilize * center_z + (1 - stabilize) * zl.sum())
            if lb > center_lb:
                center, center_z, center_lb = Ws, stabilize * center_z + (
                    1 - stabilize) * float(zl.sum()), lb
            found = [t for k, _, t in cands
                     if orb.cost(t, W) < mu[k] - _TOL * max(1.0, abs(mu[k]))]
        if not found:
            cands, lb = price(W, basic)
            lb -= total * float(zl.sum())
            if lb > center_lb:
                center, center_z, center_lb = W, float(zl.sum()), lb
            found = [t for k, c, t in cands if c < mu[k] - _TOL * max(1.0, abs(mu[k]))]
        if not take(found):
            break
    x = col[master.fixed:]
    keep = np.flatnonzero(x > 1e-12)
    tau = col[:H] / scale
    res = TimedLP(net.members, H, tuple(trees[i] for i in keep), x[keep], tau,
                  float(tau.sum()), bound,
                  float(col[H] / scale) if cap_total else 0.0, it, len(trees),
                  time.perf_counter() - t0)
    if duals is not None:
        duals.update(mu=mu, y=y, scale=scale)
    return res
