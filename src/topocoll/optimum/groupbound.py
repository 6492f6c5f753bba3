"""Group-drain lower bound: how close any barrier-step allgather can get to the cut bound
when a group of ranks (a box, a rack) and its members are both nearly tight.

Data from outside a group ``A`` (a DGX box, the hosts under an edge switch) must cross the
group's cut; a byte that crosses it in step ``s`` reaches one member (transfers are
unicast), and the other members can only get it from that member in a later step, over
the group's inside links. When the cut is (nearly) tight, every outside byte may cross it
only once, so whatever enters in the last step is useful to one member only, and what
enters in step ``s`` must be spread inside in step ``s + 1``: the steps must shrink
geometrically at the end, and every step costs latency. :mod:`~topocoll.optimum.stockbound`
does not see this (its per-source stocks cannot tell that two members hold the same
data); this program does, for one group at a time, with aggregate quantities only:

- ``R_s``: distinct outside data held in ``A`` after step ``s`` (at most ``N - g``
  blocks); ``H_s``: the same counted once per member holding it (``<= g R_s``; ``g (N -
  g)`` at the end);
- per step, deliveries of outside data new to their member: ``W`` (not in ``A`` at the
  start of the step: it crosses the cut now, one byte per member served), ``D`` (in ``A``
  already, sent in from outside again), ``F`` (in ``A`` already, sent inside:
  ``F + D <= g R_(s-1) - H_(s-1)``), and of the members' own blocks ``L_in`` (inside) and
  ``L_out`` (through the cut): ``g (g - 1)`` blocks in all;
- capacities, with ``u_s = t_s - alpha - l_min``: the cut ``W + D + L_out <= C_cut u_s``
  (at most ``C_cut (u_s - delta)`` in a step that uses it, ``delta`` = the cut's route
  latency above ``l_min``: a binary per step), the members' in-links
  ``W + F + D + L_in + L_out <= C_rank u_s``, those from inside the group
  ``F + L_in <= C_inside u_s``; ``sum_s u_s >= T*``.

Every schedule gives a feasible point; the bound is the minimum over the number of steps
of ``max(LP_S, T*) + S (alpha + l_min)``, the maximum over the groups tried (the
topology's ``meta["groups"]`` and the ranks behind each switch). On dgx-h100:8 at 1 GiB
it proves 1.018 (our schedules: 1.0185-1.0206).

References
----------
.. [1] Shah et al., "TACCL", NSDI 2023 (the box / rail structure of GPU clusters).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import TopologyError
from .stockbound import MIP_NODES, barrier_setup, milp_lower, scan_steps

if TYPE_CHECKING:
    from ..topology import Topology
    from .timedprice import Net

__all__ = ["GroupBound", "group_lower_bound", "candidate_groups"]

#: Bandwidth times above this multiple of ``T*`` are not modelled (big-M of the binaries).
_BIG = 10.0


@dataclass(frozen=True)
class GroupBound:
    """Certified lower bound (seconds) from the group-drain program.

    ``group`` is the group that gives it (empty: none beat the cut bound plus one
    latency), ``steps`` the best step count, ``per_steps`` ``(S, seconds)`` for that
    group."""

    time: float
    steps: int
    cut: float
    group: tuple[int, ...]
    per_steps: tuple[tuple[int, float], ...]
    step_floor: float
    seconds: float

    @property
    def ratio(self) -> float:
        return self.time / self.cut


def candidate_groups(topology: Topology) -> list[list[int]]:
    """Groups worth trying: ``meta["groups"]`` and the ranks behind each switch (every
    link of the rank to that switch), of at least two ranks and not every rank.

    >>> from topocoll.topology import dgx_h100
    >>> candidate_groups(dgx_h100(2))[1]
    [8, 9, 10, 11, 12, 13, 14, 15]
    """
    n = topology.num_ranks
    out: list[list[int]] = []
    for g in (topology.meta or {}).get("groups") or []:
        out.append(sorted(int(r) for r in g))
    touch: dict[int, set[int]] = {r: set() for r in range(n)}
    for lk in topology.links:
        for a, b in ((lk.src, lk.dst), (lk.dst, lk.src)):
            if a < n:
                touch[a].add(b)
    by: dict[int, list[int]] = {}
    for r, t in touch.items():
        if len(t) == 1 and topology.is_switch(next(iter(t))):
            by.setdefault(next(iter(t)), []).append(r)
    out += [sorted(g) for g in by.values()]
    seen, keep = set(), []
    for g in out:
        k = tuple(g)
        if 2 <= len(g) < n and k not in seen:
            seen.add(k)
            keep.append(g)
    return keep


def _shape(net: Net, group: Sequence[int], n_ranks: int, lam: np.ndarray, lmin: float
           ) -> tuple[float, float, float, float]:
    """``(C_cut, C_rank, C_inside, delta)`` of a group: capacities of the links entering
    its inside nodes (members and the switches only members touch), into its members,
    into its members from inside; the cut's route latency above ``l_min``."""
    A = set(int(r) for r in group)
    nbr: dict[int, set[int]] = {}
    for a, b in zip(net.src.tolist(), net.dst.tolist(), strict=True):
        nbr.setdefault(a, set()).add(b)
        nbr.setdefault(b, set()).add(a)
    inside = set(A)
    for v, ns in nbr.items():
        if v >= n_ranks:
            rk = {w for w in ns if w < n_ranks}
            if rk and rk <= A:
                inside.add(v)
    src_in = np.array([s in inside for s in net.src.tolist()])
    dst_in = np.array([d in inside for d in net.dst.tolist()])
    dst_m = np.array([d in A for d in net.dst.tolist()])
    cut = ~src_in & dst_in
    c_cut = float(net.bw[cut].sum())
    c_rank = float(net.bw[dst_m].sum())
    c_inside = float(net.bw[dst_m & src_in].sum())
    delta = float(lam[cut].min()) - lmin if cut.any() else 0.0
    return c_cut, c_rank, c_inside, max(0.0, delta)


def group_lower_bound(topology: Topology, message_bytes: float, *, alpha: float = 0.0,
                      reverse: bool = False, groups: Sequence[Sequence[int]] | None = None,
                      max_steps: int = 400, integer: bool = False,
                      node_limit: int = MIP_NODES) -> GroupBound:
    """Certified lower bound on the :class:`~topocoll.cost.AlphaBeta` time of any
    allgather of ``message_bytes`` bytes over every rank (reduce-scatter with ``reverse``), by
    the group-drain program (module docstring), the best over ``groups`` (default
    :func:`candidate_groups`).

    ``integer=True`` makes the per-step indicator of the cut's slower routes binary (a
    small MIP per step count; tighter where the cut's routes are longer than the
    shortest, seconds to minutes); by default it is relaxed to ``[0, 1]``. A MIP stopped
    by ``node_limit`` branch-and-bound nodes contributes its proven dual bound.

    Raises
    ------
    NotSupportedError
        ``message_bytes`` not positive, or the scan stopped by ``max_steps``.
    TopologyError
        A group names a rank outside the topology.

    Examples
    --------
    A 64-GPU DGX-H100 cluster: no barrier-step allgather of 1 GiB is within 1.8% of
    the cut bound (the boxes' NICs and the GPUs' links are both nearly tight):

    >>> from topocoll.topology import dgx_h100
    >>> b = group_lower_bound(dgx_h100(8), 2**30)
    >>> round(b.ratio, 3), len(b.group), b.steps
    (1.018, 8, 17)
    """
    t0 = time.perf_counter()
    net, block, cut, lam, lmin, floor = barrier_setup(topology, message_bytes, alpha, reverse)
    N = len(net.members)
    gs = candidate_groups(topology) if groups is None else [list(g) for g in groups]
    for g in gs:
        for r in g:
            if not 0 <= int(r) < topology.num_ranks:
                raise TopologyError(f"rank {r} of a group is not a rank of the topology",
                                    item=f"rank {r}")
    best = GroupBound(cut + floor, 1, cut, (), (), floor, 0.0)
    seen: dict[tuple, tuple] = {}
    for g in gs:
        key = (len(g),) + _shape(net, g, topology.num_ranks, lam, lmin)
        if key not in seen:
            seen[key] = _scan(key, N, block, cut, floor, max_steps, node_limit, integer)
        val, S, per = seen[key]
        if val > best.time:
            best = GroupBound(val, S, cut, tuple(int(r) for r in g), per, floor, 0.0)
    return GroupBound(best.time, best.steps, cut, best.group, best.per_steps, floor,
                      time.perf_counter() - t0)


def _scan(key, N: int, block: float, cut: float, floor: float, max_steps: int,
          node_limit: int, integer: bool) -> tuple[float, int, tuple]:
    if floor <= 0:
        return cut, 0, ()
    g, c_cut, c_rank, c_in, delta = key
    best, best_s, per, _ = scan_steps(
        lambda S: (_program(S, g, N, c_cut, c_rank, c_in, delta, block, cut, node_limit,
                            integer), True), cut, floor, max_steps)
    return best, best_s, tuple(per)


def _program(S: int, g: int, N: int, c_cut: float, c_rank: float, c_in: float,
             delta: float, block: float, cut: float, node_limit: int,
             integer: bool) -> float:
    """Proven lower bound on the bandwidth time (seconds) of an ``S``-step schedule."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    cmax = max(c_cut, c_rank, c_in, 1.0)
    unit = block / cmax                               # seconds per LP time unit
    cc, cr, ci = c_cut / cmax, c_rank / cmax, c_in / cmax
    dl = delta / unit
    big = _BIG * cut / unit
    rem = float(N - g)
    names = ("u", "W", "F", "D", "Li", "Lo", "R", "H", "z")
    K = len(names)
    ix = {nm: k for k, nm in enumerate(names)}

    def v(nm: str, s: int) -> int:
        return s * K + ix[nm]

    rows, cols, vals, lo, hi = [], [], [], [], []

    def add(entries, lb, ub):
        for c_, x in entries:
            rows.append(len(lo))
            cols.append(c_)
            vals.append(x)
        lo.append(lb)
        hi.append(ub)

    inf = np.inf
    for s in range(S):
        through = [(v("W", s), 1.0), (v("D", s), 1.0), (v("Lo", s), 1.0)]
        add(through + [(v("u", s), -cc)], -inf, 0.0)
        if delta > 0:                                 # the cut's routes are slower
            add(through + [(v("u", s), -cc), (v("z", s), cc * dl)], -inf, 0.0)
            add(through + [(v("z", s), -cc * big)], -inf, 0.0)
        add(through + [(v("F", s), 1.0), (v("Li", s), 1.0), (v("u", s), -cr)], -inf, 0.0)
        add([(v("F", s), 1.0), (v("Li", s), 1.0), (v("u", s), -ci)], -inf, 0.0)
        prev = [(v("R", s - 1), -1.0)] if s else []
        add([(v("R", s), 1.0), (v("W", s), -1.0)] + prev, -inf, 0.0)
        add([(v("H", s), 1.0), (v("R", s), -float(g))], -inf, 0.0)
        hp = [(v("H", s - 1), -1.0)] if s else []
        add([(v("H", s), 1.0), (v("W", s), -1.0), (v("F", s), -1.0), (v("D", s), -1.0)]
            + hp, 0.0, 0.0)
        fd = [(v("F", s), 1.0), (v("D", s), 1.0)]
        if s:
            fd += [(v("R", s - 1), -float(g)), (v("H", s - 1), 1.0)]
        add(fd, -inf, 0.0)
    add([(v("H", S - 1), 1.0)], g * rem, g * rem)
    add([(v(nm, s), 1.0) for s in range(S) for nm in ("Li", "Lo")], g * (g - 1.0),
        g * (g - 1.0))
    add([(v("u", s), 1.0) for s in range(S)], cut / unit, big)
    A = coo_matrix((vals, (rows, cols)), shape=(len(lo), S * K)).tocsr()
    cost = np.zeros(S * K)
    cost[ix["u"]::K] = 1.0
    ub = np.full(S * K, np.inf)
    ub[ix["R"]::K] = rem
    integ = np.zeros(S * K)
    ub[ix["z"]::K] = 1.0 if delta > 0 else 0.0
    if delta > 0 and integer:
        integ[ix["z"]::K] = 1
    res = milp(cost, constraints=LinearConstraint(A, lo, hi), integrality=integ,
               bounds=Bounds(np.zeros(S * K), ub),
               options={"node_limit": int(node_limit), "mip_rel_gap": 1e-9})
    return milp_lower(res, big)[0] * unit
