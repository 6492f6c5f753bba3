"""Relay-stock lower bound: how close *any* barrier-step allgather can get to the cut bound.

The cut bound ``T*`` holds for every schedule, but with steps as barriers
(:class:`~topocoll.cost.AlphaBeta`) a rank can only send data it held at the start of a
step. When a rank's own cut is tight, every in-link must bring it new data in every step,
and what a neighbour ``x`` can send it is ``x``'s block plus what reached ``x`` in
*earlier* steps. On a fabric where a fat link is fed by thinner ones (the package link of
an MI250 GCD pair, fed by Infinity Fabric links and a NIC), that stock runs dry unless
steps shrink geometrically, and every step costs latency. This module turns the argument
into a small linear program whose optimum, minimised over the number of steps, is a
**certified lower bound** on the AlphaBeta time of every allgather schedule on every rank
(reduce-scatter: the same on the reversed graph, since a reduce-scatter run backwards is
an allgather there, with the same loads per step).

The relaxation, for a schedule with ``S`` steps that move data (step ``s`` takes
``t_s = alpha + l_min + u_s``, ``l_min`` the smallest route latency, so every link
carries at most ``c_l u_s`` in it):

- ``D[x, b, s]``: bytes new to rank ``b`` that reach it in step ``s`` on transfers from
  source ``x`` (each new byte counted once), routed as a flow from ``x`` over any paths
  (relays through ranks and switches included);
- capacity: the flows of all sources on link ``l`` fit ``c_l u_s``; a link that only
  routes of latency ``lambda_l > l_min`` cross (the NIC of a switched fabric) carries
  nothing or at most ``c_l (u_s - (lambda_l - l_min))`` (a variable ``z`` in ``[0, 1]``
  per link orbit and step; binary with ``integer=True``, a little tighter and far slower);
- totals: every rank receives ``N - 1`` blocks; ``sum_s u_s >= T*``;
- stock: ``sum_{q<=s} D[x, b, q] <= m + sum_{q<s} sum_{x' != b} D[x', x, q]`` (what ``x``
  sends ``b`` up to step ``s`` is its block or came to it, from others than ``b``,
  before step ``s``).

Every real schedule gives a feasible point (its transfers are the flows), and so does its
average over the fabric's automorphisms (:mod:`~topocoll.topology.symmetry`), whose
per-step time is the same; the program is therefore written for group-invariant points:
one source per rank orbit, the others its images under the transversal.

The bound is never above the truth, and may be below it. On ``mi250:2`` at 1 GiB it
proves that no barrier-step allgather comes within 1.18% of ``T*`` (our schedules:
1.7-2.3%), so a 1% target is out of reach there; see ``docs/design-optimal.md``.

References
----------
.. [1] Zhao and Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
   Communication", arXiv 2305.18461, 2023 (time-expanded view of tree pipelines).
.. [2] Margot, "Symmetry in integer linear programming", in *50 Years of Integer
   Programming*, Springer 2010 (restricting a symmetric program to invariant points).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import NotSupportedError
from ..topology.symmetry import rank_symmetry
from .maxflow import allgather_optimum
from .timedprice import Net

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["StockBound", "stock_lower_bound", "barrier_setup",
           "scan_steps", "milp_lower", "MAX_VARIABLES", "MIP_NODES"]

#: Largest program (variables per step count) built.
MAX_VARIABLES = 2_000_000
#: Branch-and-bound nodes per mixed-integer program (``integer=True``); a program
#: stopped there contributes its proven dual bound.
MIP_NODES = 20_000
#: Schedules whose bandwidth time exceeds this multiple of ``T*`` are not modelled (the
#: binaries' big-M); the bound reported is at most that, so it stays valid for them.
_BIG = 10.0


@dataclass(frozen=True)
class StockBound:
    """Certified lower bound on the AlphaBeta time of every allgather (seconds).

    Attributes
    ----------
    time : float
        ``min_S`` of the per-``S`` bounds (seconds): no schedule, with any number of
        steps, is faster.
    steps : int
        The ``S`` attaining the minimum.
    cut : float
        The cut bound ``T*`` (seconds) at this size.
    per_steps : tuple of (int, float)
        ``(S, bound in seconds)`` for every ``S`` solved; larger ``S`` are covered by
        ``cut + S * step_floor``.
    step_floor : float
        ``alpha + l_min``: what every step costs at least.
    exact : bool
        Every program was solved to optimality (else its proven dual bound is used).
    seconds : float
        Wall time.
    """

    time: float
    steps: int
    cut: float
    per_steps: tuple[tuple[int, float], ...]
    step_floor: float
    exact: bool
    seconds: float

    @property
    def ratio(self) -> float:
        """``time / cut``: how far above the cut bound every schedule must be."""
        return self.time / self.cut


def stock_lower_bound(topology: Topology, message_bytes: float, *, alpha: float = 0.0,
                      reverse: bool = False, symmetry: bool = True,
                      max_steps: int = 200, integer: bool = False,
                      node_limit: int = MIP_NODES) -> StockBound:
    """Certified lower bound on the :class:`~topocoll.cost.AlphaBeta` time of any
    allgather of ``message_bytes`` bytes over every rank (see the module).

    Parameters
    ----------
    topology : Topology
        Any topology; ranks hold data, switches only forward.
    message_bytes : float
        Gathered bytes ``M`` (each rank contributes ``M / N``).
    alpha : float
        The model's per-transfer overhead (every step pays it).
    reverse : bool
        Use the reversed graph: the bound for reduce-scatter.
    symmetry : bool
        Aggregate over link orbits of the automorphism group (smaller, same value).
    max_steps : int
        Largest number of steps solved; beyond the point where ``T* + S (alpha +
        l_min)`` passes the best bound found, more steps cannot be faster (so the bound
        covers every step count unless ``max_steps`` stops the scan first, which raises).
    integer : bool
        Make the slow-link indicators binary (a mixed-integer program: tighter by a few
        hundredths of a percent, seconds to minutes per step count instead of
        milliseconds).
    node_limit : int
        Branch-and-bound nodes per mixed-integer program (work, not seconds: the same
        bound on any machine); one stopped early contributes its proven dual bound.

    Raises
    ------
    NotSupportedError
        ``message_bytes`` not positive, fewer than two ranks, a program too large (more than
        :data:`MAX_VARIABLES` variables: few symmetries and many ranks), or the scan
        stopped by ``max_steps``.

    Examples
    --------
    On a ring of 4 the bound is the cut bound plus one latency per step of the best
    step count (here the 2-step schedule, which attains it):

    >>> from topocoll.topology import ring
    >>> b = stock_lower_bound(ring(4, bandwidth=1e9, latency=1e-6), 4e6)
    >>> b.steps, round(b.time * 1e6, 3), round((b.cut + 2e-6) * 1e6, 3)
    (2, 1502.0, 1502.0)
    """
    t0 = time.perf_counter()
    net, block, cut, lam, lmin, floor = barrier_setup(topology, message_bytes, alpha, reverse)
    if floor <= 0:                               # no per-step cost: the cut bound is all
        return StockBound(cut, 0, cut, (), 0.0, True, time.perf_counter() - t0)
    prog = _Program(net, rank_symmetry(topology, enabled=symmetry), lam - lmin, block, cut)
    best, best_s, per, exact = scan_steps(lambda S: prog.solve(S, node_limit, integer),
                                          cut, floor, max_steps)
    return StockBound(float(best), best_s, cut, tuple(per), floor, bool(exact),
                      time.perf_counter() - t0)


def barrier_setup(topology: Topology, message_bytes: float, alpha: float, reverse: bool):
    """``(net, block, cut, lambda, l_min, step floor)`` shared by the barrier-step
    certificates: the fabric, the block size, the cut bound (seconds), the per-link
    route latency floors, the smallest, and ``alpha + l_min``."""
    if not message_bytes > 0:
        raise NotSupportedError(f"message_bytes must be positive, got {message_bytes!r}")
    net = Net(topology, None, reverse)
    if len(net.members) < 2:
        raise NotSupportedError("a barrier-step certificate needs at least two ranks")
    block = float(message_bytes) / len(net.members)
    cut = float(allgather_optimum(topology, reverse=reverse).value) * block
    lam = net.latency_floor()
    lmin = float(lam.min())
    return net, block, cut, lam, lmin, float(alpha) + lmin


def scan_steps(solve, cut: float, floor: float, max_steps: int):
    """``min_S max(solve(S), cut) + S floor`` over ``S = 1, 2, ...`` until ``cut + S
    floor`` passes the best (more steps are provably slower); ``solve(S)`` returns a
    proven lower bound on the bandwidth time and whether it closed. Returns ``(best,
    its S, [(S, value)], every program closed)``."""
    best, best_s, per, exact = np.inf, 0, [], True
    for S in range(1, max_steps + 1):
        if cut + S * floor >= best:
            return best, best_s, per, exact
        lower, ok = solve(S)
        exact &= ok
        val = max(lower, cut) + S * floor
        per.append((S, val))
        if val < best:
            best, best_s = val, S
    raise NotSupportedError(f"max_steps={max_steps} stops the scan before more steps are "
                            "provably slower; raise it")


def milp_lower(res, big: float) -> tuple[float, bool]:
    """A proven lower bound (LP units) from a scipy/HiGHS ``milp`` result, and whether
    it closed: the optimum, else the dual bound of a run stopped by its time limit;
    ``big`` if infeasible (the program's big-M cap). A relative 1e-7 is kept below the
    solver's value for its tolerances."""
    if res.status == 2:
        return big, True
    if res.status not in (0, 1):                 # pragma: no cover - solver failure
        raise RuntimeError(f"barrier-step certificate program failed: {res.message}")
    lower = getattr(res, "mip_dual_bound", None)
    if lower is None or not np.isfinite(lower):
        lower = res.fun if res.status == 0 else 0.0
    if res.status == 0:
        lower = max(float(lower), float(res.fun) * (1 - 1e-9))
    return max(0.0, float(lower) * (1 - 1e-7)), res.status == 0


class _Program:
    """The per-``S`` program (data in blocks, time in ``block / c_max``), restricted to
    group-invariant points: one source per rank orbit, its flows and deliveries mapped to
    the orbit's other ranks by the transversal."""

    def __init__(self, net: Net, sym, delta: np.ndarray, block: float, cut: float) -> None:
        from .timedlp import link_orbits

        self.net = net
        L = net.num_links
        N = len(net.members)
        midx = {v: i for i, v in enumerate(net.members)}
        self.reps = list(sym.reps)
        self.unit = block / net.bw_max
        self.c = net.bw / net.bw_max
        orbit = link_orbits(net, sym) if sym.generators else np.arange(L)
        slow = np.flatnonzero(delta > 1e-15)
        self.slow_orbits = sorted({int(orbit[l]) for l in slow})
        self.orbit = orbit
        self.delta = delta / self.unit
        self.N, self.L, self.cut = N, L, cut / self.unit
        # source x = g_x(rep): its flow on link l is rep's on g_x^-1(l), its delivery to
        # member b is rep's to g_x^-1(b)
        self.src_of: list[tuple[int, np.ndarray, np.ndarray]] = []
        for x in net.members:
            g = np.asarray(sym.maps[x], np.int64)
            ginv = np.empty_like(g)
            ginv[g] = np.arange(len(g))
            lmap = np.array([net.index[int(ginv[a]), int(ginv[b])]
                             for a, b in zip(net.src, net.dst, strict=True)], np.int64)
            mmap = np.array([midx[int(ginv[b])] for b in net.members], np.int64)
            self.src_of.append((self.reps.index(int(sym.rep_of[x])), lmap, mmap))
        self.midx = midx

    def solve(self, S: int, node_limit: int, integer: bool) -> tuple[float, bool]:
        """Proven lower bound on the bandwidth time (seconds) of an ``S``-step schedule
        and whether the program closed."""
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import coo_matrix

        net, N, L = self.net, self.N, self.L
        R = len(self.reps)
        nz = len(self.slow_orbits)
        zpos = {o: j for j, o in enumerate(self.slow_orbits)}
        # per step: u, then per rep: flows (L), deliveries (N), deliveries so far (N) and
        # everything the rep has received so far (1), then z
        W = L + 2 * N + 1
        per = 1 + R * W + nz
        f0 = [1 + k * W for k in range(R)]
        d0 = [1 + k * W + L for k in range(R)]
        c0 = [1 + k * W + L + N for k in range(R)]
        t0 = [1 + k * W + L + 2 * N for k in range(R)]
        z0 = 1 + R * W
        nv = S * per
        if nv > MAX_VARIABLES:
            raise NotSupportedError(
                f"the relay-stock program at {S} steps has {nv} variables (limit "
                f"{MAX_VARIABLES}): too many ranks for the fabric's symmetry")
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        lo: list[float] = []
        hi: list[float] = []

        def add(c_, v_, lb, ub):
            rows.append(np.full(len(c_), len(lo)))
            cols.append(np.asarray(c_, np.int64))
            vals.append(np.asarray(v_, float))
            lo.append(lb)
            hi.append(ub)

        big = _BIG * self.cut
        fixed_zero = []
        for s in range(S):
            b = s * per
            for k, rep in enumerate(self.reps):       # flow conservation of rep's data
                r = self.midx[rep]
                fixed_zero.append(b + d0[k] + r)
                for v in range(net.n):
                    ins = np.flatnonzero(net.dst == v)
                    outs = np.flatnonzero(net.src == v)
                    c_ = list(b + f0[k] + ins) + list(b + f0[k] + outs)
                    v_ = [1.0] * len(ins) + [-1.0] * len(outs)
                    if v == rep:                      # out - in = everything delivered
                        c_ += [b + d0[k] + j for j in range(N) if j != r]
                        v_ += [1.0] * (N - 1)
                    elif v in self.midx:
                        c_.append(b + d0[k] + self.midx[v])
                        v_.append(-1.0)
                    add(c_, v_, 0.0, 0.0)
            for l in range(L):                        # link capacity, every source
                c_ = [b + f0[k] + lmap[l] for k, lmap, _ in self.src_of]
                v_ = [1.0] * len(c_)
                cap = self.c[l]
                add(c_ + [b], v_ + [-cap], -np.inf, 0.0)
                o = int(self.orbit[l])
                if o in zpos:                         # only slow routes: (u - delta)^+
                    z = b + z0 + zpos[o]
                    add(c_ + [b, z], v_ + [-cap, cap * self.delta[l]], -np.inf, 0.0)
                    add(c_ + [z], v_ + [-cap * big], -np.inf, 0.0)
        for k, rep in enumerate(self.reps):
            r = self.midx[rep]
            # C[x', rep] for every source x' = rep-of-x' delivering to g_x'^-1(rep)
            into_rep = [(kk, int(mmap[r]), xi) for xi, (kk, _, mmap) in enumerate(self.src_of)
                        if xi != r]
            for s in range(S):
                b = s * per
                for j in range(N):                    # C_s = C_(s-1) + D_s
                    prev = [((s - 1) * per + c0[k] + j, -1.0)] if s else []
                    add([b + c0[k] + j, b + d0[k] + j] + [c for c, _ in prev],
                        [1.0, -1.0] + [v for _, v in prev], 0.0, 0.0)
                # T_s = everything rep received so far, from every source
                add([b + t0[k]] + [b + c0[kk] + j for kk, j, _ in into_rep],
                    [1.0] + [-1.0] * len(into_rep), 0.0, 0.0)
            from_src = {xi: (kk, j) for kk, j, xi in into_rep}
            for bj in range(N):                       # stock of rep towards member bj:
                if bj == r:                           # its block + what it received before
                    continue                          # from others than bj
                for s in range(S):
                    c_, v_ = [s * per + c0[k] + bj], [1.0]
                    if s:
                        c_.append((s - 1) * per + t0[k])
                        v_.append(-1.0)
                        if bj in from_src:
                            kk, j = from_src[bj]
                            c_.append((s - 1) * per + c0[kk] + j)
                            v_.append(1.0)
                    add(c_, v_, -np.inf, 1.0)
        for bj in range(N):                           # every member receives N - 1 blocks
            c_ = [(S - 1) * per + c0[kk] + int(mmap[bj])
                  for xi, (kk, _, mmap) in enumerate(self.src_of) if xi != bj]
            add(c_, [1.0] * len(c_), N - 1.0, N - 1.0)
        add([s * per for s in range(S)], [1.0] * S, self.cut, big)
        A = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                       shape=(len(lo), nv)).tocsr()
        cost = np.zeros(nv)
        cost[::per] = 1.0
        integ = np.zeros(nv)
        ub = np.full(nv, np.inf)
        ub[fixed_zero] = 0.0
        for s in range(S):
            zs = s * per + z0 + np.arange(nz)
            integ[zs] = 1 if integer else 0
            ub[zs] = 1.0
        res = milp(cost, constraints=LinearConstraint(A, lo, hi), integrality=integ,
                   bounds=Bounds(np.zeros(nv), ub),
                   options={"node_limit": int(node_limit), "mip_rel_gap": 1e-9})
        lower, closed = milp_lower(res, big)
        return lower * self.unit, closed
