"""Two-level pipelined direct collectives: rails between groups, overlapped with the
exchange inside each group.

A *group* is a set of ranks behind one switch or in one box: a rack under its top-of-rack
switch, the hosts of a leaf, a pod, a multi-GPU box (``topology.meta["groups"]``, else
the ranks whose every link goes to the same switch). With ``R`` groups of ``h`` ranks,
member ``i`` of group ``r`` written ``(r, i)``, the allgather has two phases [1]_:

rail phase
    ``(r, i)`` sends its block to ``(r', i)`` for every ``r' != r``. Each group's
    uplinks carry every outside block exactly once: the optimum of the group cut, which
    on an oversubscribed fabric is the one that binds.
local phase
    ``(r, i)`` sends the ``R`` blocks of rail ``i`` it then holds to ``(r, i')`` for
    every ``i' != i``. With the rail phase, every rank's downlink carries every other
    block exactly once: the optimum of the single-rank cut.

Both phases are one-step direct exchanges whose pieces are sprayed over the equal-cost
shortest paths (:func:`~topocoll.synth.direct.spread_transfers`). Run one after the
other, their times add; the point of this module is to overlap them. Every block is cut
into ``units`` equal units. In step ``s`` the rail phase moves a fraction ``x_s`` of
every block, the local phase a fraction ``y_s`` of the received blocks (only units whose
rail transfer finished in an earlier step) and ``z_s`` of the rank's own block (no
prerequisite). A linear program over these fractions, with one constraint per link and
step (the step lasts as long as its busiest link), gives the fastest overlap for a given
number of steps; the same program with whole unit counts (a HiGHS MIP of ``3 S``
integers) rounds it exactly. On a two-tier fabric with oversubscription the first steps
carry mostly rail traffic with the own block's local exchange alongside, later steps
mostly local traffic, and the total reaches the cut bound within a few steps.

The reduce-scatter is the time-reverse of the allgather built on the reversed graph;
the allreduce is the reduce-scatter followed by the allgather.

References
----------
.. [1] Shah et al., "TACCL: Guiding collective algorithm synthesis using communication
   sketches", NSDI 2023: inter-node phases between same-index GPUs ("rails") with
   intra-node phases, there chosen by a human sketch and a MILP; here fixed, with only
   the overlap of the two phases optimized, by a program small enough to solve exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..collective import allgather, allreduce, reduce_scatter
from ..errors import NotSupportedError, TopologyError
from ..schedule import Op, Schedule, ScheduleBuilder
from ..topology import Link, Topology
from ._common import gather_parts, require, resolve_group, step_loads

__all__ = ["two_level_groups", "two_level_groupings", "two_level_unsupported_reason",
           "two_level_allgather",
           "two_level_reduce_scatter", "two_level_allreduce", "DEFAULT_SIZE"]

#: Message size (bytes) the default step fractions and unit count are chosen for.
DEFAULT_SIZE = 2.0**30
#: Most rail steps (``steps``) the default search tries.
MAX_STEPS = 12
#: Unit counts per block the default search tries (coarsest first).
UNIT_CHOICES = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: Most chunk entries (chunk ids over all transfers) one allgather part may hold.
ENTRY_BUDGET = 4_000_000
#: The unit search stops at the first count whose rounded plan is within this fraction
#: of the unrounded LP time.
ROUNDING_SLACK = 1e-3
#: Time limit (s) of one whole-unit program (the best plan found by then is used).
ILP_TIME_LIMIT = 2.0
#: Largest spread period (pieces per unit that cover a pair's equal-cost paths).
MAX_PERIOD = 16


#: Where the groups come from (``groups=`` option): ``meta`` (``topology.meta["groups"]``:
#: boxes, pods, leaves), ``switch`` (ranks whose every link goes to one switch: racks,
#: edge switches); ``auto`` plans every one that applies and keeps the fastest.
GROUPINGS = ("auto", "meta", "switch")


def _meta_groups(topology: Topology, members: list[int]) -> list[list[int]] | str:
    meta = topology.meta.get("groups") if topology.meta else None
    if not meta:
        return "the topology names no groups"
    where = {r: k for k, g in enumerate(meta) for r in g}
    missing = [r for r in members if r not in where]
    if missing:
        return f"rank {missing[0]} is in none of the topology's groups"
    by: dict[int, list[int]] = {}
    for r in members:
        by.setdefault(where[r], []).append(r)
    return list(by.values())


def _switch_groups(topology: Topology, members: list[int]) -> list[list[int]] | str:
    touch: dict[int, set[int]] = {r: set() for r in members}
    for lk in topology.links:
        if lk.src in touch:
            touch[lk.src].add(lk.dst)
        if lk.dst in touch:
            touch[lk.dst].add(lk.src)
    by: dict[int, list[int]] = {}
    for r in members:
        t = touch[r]
        if len(t) != 1 or not topology.is_switch(next(iter(t))):
            return f"rank {r} is not attached to exactly one switch"
        by.setdefault(next(iter(t)), []).append(r)
    return list(by.values())


def _check_groups(groups: list[list[int]]) -> list[list[int]] | str:
    if len(groups) < 2:
        return "the ranks form a single group (use direct)"
    sizes = sorted({len(g) for g in groups})
    if len(sizes) > 1:
        return f"groups of unequal size {sizes} (rails need equal groups)"
    if sizes[0] < 2:
        return "groups of one rank (use direct)"
    return groups


def two_level_groupings(topology: Topology, group: Sequence[int], by: str = "auto"
                        ) -> dict[str, list[list[int]] | str]:
    """Per source of groups (``meta``, ``switch``; only ``by`` unless ``auto``) the
    groups of ``group`` (each in ``group`` order, groups by first member) or why that
    source gives none. The scheme needs at least two groups, of equal size at least two.

    Examples
    --------
    >>> from topocoll.topology import fat_tree
    >>> g = two_level_groupings(fat_tree(4), range(16))
    >>> g["meta"][1], g["switch"][1]            # pods of 4 hosts, edge switches of 2
    ([4, 5, 6, 7], [2, 3])
    """
    require(by in GROUPINGS, f"groups must be one of {GROUPINGS} or a list of rank lists, "
            f"got {by!r}")
    members = [int(r) for r in group]
    out: dict[str, list[list[int]] | str] = {}
    for name, find in (("meta", _meta_groups), ("switch", _switch_groups)):
        if by in ("auto", name):
            g = find(topology, members)
            out[name] = g if isinstance(g, str) else _check_groups(g)
    return out


def two_level_groups(topology: Topology, group: Sequence[int], by: str = "auto"
                     ) -> list[list[int]] | str:
    """The first groups :func:`two_level_groupings` finds (``meta`` before ``switch``),
    or why there are none.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> from topocoll.topology.scenarios import two_tier
    >>> two_level_groups(two_tier(2, 3), range(6))
    [[0, 1, 2], [3, 4, 5]]
    >>> two_level_groups(ring(4), range(4))
    'the topology names no groups; rank 0 is not attached to exactly one switch'
    """
    found = two_level_groupings(topology, group, by)
    for g in found.values():
        if not isinstance(g, str):
            return g
    return "; ".join(found.values())


def two_level_unsupported_reason(topology: Topology, group: Sequence[int]) -> str | None:
    """None if the two-level scheme applies to ``group``, else why not."""
    g = two_level_groups(topology, group)
    return g if isinstance(g, str) else None


def _reversed(topology: Topology) -> Topology:
    """The topology with every link turned around (for the reduce-scatter)."""
    return Topology(topology.name + " (reversed)", topology.num_ranks, topology.num_switches,
                    tuple(Link(lk.dst, lk.src, lk.bandwidth, lk.latency, lk.dim)
                          for lk in topology.links), topology.node_latency,
                    routing=topology.routing, meta=dict(topology.meta))


def _inside(topology: Topology, group: tuple[int, ...], groups: list[list[int]],
            src: np.ndarray, dst: np.ndarray) -> Topology:
    """The fabric the in-group exchange may use: without the switches that ranks of
    different groups (or non-participants) share, so that it leaves the NICs and the
    uplinks to the rails (a DGX box talks over its NVSwitch, not over the NIC fabric).
    The whole topology if that would cut some pair of a group apart. Paths found on it
    are paths of ``topology``."""
    from ..topology.routing import spread_paths

    where = {r: k for k, g in enumerate(groups) for r in g}
    seen: dict[int, set] = {}
    for lk in topology.links:
        for a, b in ((lk.src, lk.dst), (lk.dst, lk.src)):
            if topology.is_switch(a) and not topology.is_switch(b):
                seen.setdefault(a, set()).add(where.get(b, -1))
    shared = {sw for sw, ks in seen.items() if len(ks) > 1}
    if not shared:
        return topology
    # every link at a shared switch becomes a chain of three (two dummy switches after
    # the real nodes), so that minimum-hop paths inside a group avoid it where they can;
    # the topology stays connected and every real node keeps its id
    links, extra = [], 0
    n = topology.num_nodes
    for lk in topology.links:
        if lk.src in shared or lk.dst in shared:
            a, b = n + extra, n + extra + 1
            extra += 2
            links += [Link(lk.src, a, lk.bandwidth, lk.latency), Link(a, b, lk.bandwidth, 0.0),
                      Link(b, lk.dst, lk.bandwidth, 0.0)]
        else:
            links.append(lk)
    inside = Topology(topology.name + " (in-group)", topology.num_ranks,
                      topology.num_switches + extra, tuple(links),
                      tuple(topology.node_latency) + (0.0,) * extra if topology.node_latency
                      else (), routing=topology.routing)
    _, nodes = spread_paths(inside, np.stack([src, dst], axis=1),
                            np.zeros(len(src), np.int64))
    if (nodes >= n).any():                 # a group is joined only through a shared switch
        return topology
    return inside


class _Frame:
    """Pairs and blocks of the two phases on one topology (allgather direction)."""

    def __init__(self, topology: Topology, group: tuple[int, ...], groups: list[list[int]]):
        from .direct import spread_period

        self.topology, self.group = topology, group
        blk = {r: b for b, r in enumerate(group)}
        G = np.array([[blk[r] for r in g] for g in groups], dtype=np.int64)   # (R, h) blocks
        R, h = G.shape
        self.R, self.h = R, h
        gr = np.asarray(group, dtype=np.int64)
        r1, r2 = np.nonzero(~np.eye(R, dtype=bool))
        i1, i2 = np.nonzero(~np.eye(h, dtype=bool))
        ii = np.arange(h)
        # rail pairs (r1, i) -> (r2, i); local pairs (r, i1) -> (r, i2)
        a_src = G[r1[:, None], ii[None, :]].reshape(-1)
        a_dst = G[r2[:, None], ii[None, :]].reshape(-1)
        rr = np.arange(R)
        b_src = G[rr[:, None], i1[None, :]].reshape(-1)
        b_dst = G[rr[:, None], i2[None, :]].reshape(-1)
        self.src = gr[np.concatenate([a_src, b_src])]
        self.dst = gr[np.concatenate([a_dst, b_dst])]
        self.nA = len(a_src)
        self.a_block = a_src
        # remote blocks of each local pair: rail i of the other groups
        b_r = np.repeat(rr, len(i1))
        b_i = np.tile(i1, R)
        others = np.array([[x for x in range(R) if x != r] for r in range(R)],
                          dtype=np.int64).reshape(R, R - 1)
        self.b_remote = G[others[b_r], b_i[:, None]]             # (nB, R - 1) blocks
        self.b_own = b_src
        self.inside = _inside(topology, group, groups, self.src[self.nA:], self.dst[self.nA:])
        self.period = math.lcm(
            spread_period(topology, self.src[:self.nA], self.dst[:self.nA], MAX_PERIOD),
            spread_period(self.inside, self.src[self.nA:], self.dst[self.nA:], MAX_PERIOD))

    def entries(self, a: tuple[int, int], b: tuple[int, int], c: tuple[int, int], Q: int):
        """``(k, m, chunk)`` of one step: rail pieces ``a[0]:a[1]``, received pieces
        ``b[0]:b[1]`` and own pieces ``c[0]:c[1]`` (chunk ``block Q + piece``)."""
        ks, ms, cs = [], [], []
        nA, nB = self.nA, len(self.b_own)
        if a[1] > a[0]:
            p = np.arange(*a)
            ks.append(np.repeat(np.arange(nA), len(p)))
            ms.append(np.tile(p, nA))
            cs.append(np.repeat(self.a_block, len(p)) * Q + ms[-1])
        if b[1] > b[0] and self.R > 1:
            p = np.arange(*b)
            w = self.R - 1
            ks.append(np.repeat(nA + np.arange(nB), w * len(p)))
            ms.append(np.tile(p, nB * w))
            cs.append(np.repeat(self.b_remote.reshape(-1), len(p)) * Q + ms[-1])
        if c[1] > c[0]:
            p = np.arange(*c)
            ks.append(np.repeat(nA + np.arange(nB), len(p)))
            ms.append(np.tile(p, nB))
            cs.append(np.repeat(self.b_own, len(p)) * Q + ms[-1])
        return np.concatenate(ks), np.concatenate(ms), np.concatenate(cs)

    def schedule(self, cx, cy, cz, Q: int, name: str, meta: dict) -> Schedule:
        """The allgather whose step ``s`` moves pieces ``cx[s]:cx[s+1]`` (rail),
        ``cy[s]:cy[s+1]`` (received) and ``cz[s]:cz[s+1]`` (own); cumulative piece
        counts."""
        from .direct import spread_transfers

        b = ScheduleBuilder(allgather(self.group, split=Q))
        for s in range(len(cx) - 1):
            rng = [(int(v[s]), int(v[s + 1])) for v in (cx, cy, cz)]
            if all(x == y for x, y in rng):
                continue
            k, m, ch = self.entries(*rng, Q)
            parts = []
            for topo, sel in ((self.topology, k < self.nA), (self.inside, k >= self.nA)):
                if sel.any():
                    parts.append(spread_transfers(topo, self.src, self.dst, k[sel], m[sel],
                                                  ch[sel], Q))
            src = np.concatenate([x[0] for x in parts])
            dst = np.concatenate([x[1] for x in parts])
            ids = np.concatenate([x[2][1] for x in parts])
            ptr = np.concatenate([[0], np.cumsum(np.concatenate(
                [np.diff(x[2][0]) for x in parts]))])
            b.new_step().add_many(src, dst, (ptr, ids), Op.COPY,
                                  [path for x in parts for path in x[3]])
        return b.build(name=name, meta=meta)

    def unit_rates(self) -> tuple[np.ndarray, float]:
        """Per link, seconds per block byte of the whole rail phase, the received part of
        the local phase and the own part (shape ``(3, links)``), and the longest route
        latency of either phase."""
        q = self.period
        full = np.array([0, q])
        none = np.array([0, 0])
        parts = [self.schedule(full, none, none, q, "", {}),
                 self.schedule(none, full, none, q, "", {}),
                 self.schedule(none, none, full, q, "", {})]
        rates = np.zeros((3, len(self.topology.links)))
        lat = 0.0
        N = len(self.group)
        for j, s in enumerate(parts):
            if not s.num_steps:
                continue
            load, la = step_loads(s, self.topology, float(N))      # 1 byte per block
            rates[j] = load.sum(axis=0) / self.topology.link_bandwidth
            lat = max(lat, float(la.max()))
        return rates, lat


def _lp(rates: np.ndarray, S: int, U: int | None = None
        ) -> tuple[float, np.ndarray] | None:
    """The fastest overlap in ``S`` steps: minimal sum over steps of the busiest link's
    seconds per block byte, and the cumulative amounts ``(3, S + 1)`` (rail, received,
    own; fractions of a block, or with ``U`` whole units out of ``U``: then a small
    integer program, solved exactly by HiGHS). None if there is no solution."""
    import highspy
    from scipy.sparse import csc_matrix

    from ..topology._highs import quiet_highs

    scale = float(rates.max())                   # HiGHS drops coefficients below 1e-9
    rows = np.unique(rates.T[rates.any(axis=0)], axis=0) / scale   # (u, 3)
    total = 1.0 if U is None else float(U)
    n = 4 * S                                                     # x, y, z, t
    X, Y, Z, T = (np.arange(S) + j * S for j in range(4))
    A, lo, hi = [], [], []
    inf = highspy.kHighsInf
    for s in range(S):
        for a, b, c in rows:
            r = np.zeros(n)
            r[X[s]], r[Y[s]], r[Z[s]], r[T[s]] = a, b, c, -total
            A.append(r)
            lo.append(-inf)
            hi.append(0.0)
        r = np.zeros(n)                      # received so far <= railed before step s
        r[Y[:s + 1]] = 1.0
        r[X[:s]] = -1.0
        A.append(r)
        lo.append(-inf)
        hi.append(0.0)
    for idx in (X, Y, Z):
        r = np.zeros(n)
        r[idx] = 1.0
        A.append(r)
        lo.append(total)
        hi.append(total)
    ub = np.full(n, total)
    ub[T] = inf
    ub[X[-1]] = ub[Y[0]] = 0.0
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, len(A)
    lp.col_cost_ = np.where(np.isin(np.arange(n), T), 1.0, 0.0)
    lp.col_lower_, lp.col_upper_ = np.zeros(n), ub
    lp.row_lower_, lp.row_upper_ = np.array(lo), np.array(hi)
    mat = csc_matrix(np.array(A))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = (
        mat.indptr, mat.indices, mat.data)
    if U is not None:
        lp.integrality_ = ([highspy.HighsVarType.kInteger] * (3 * S)
                           + [highspy.HighsVarType.kContinuous] * S)
    h = quiet_highs()
    h.setOptionValue("time_limit", ILP_TIME_LIMIT)
    h.passModel(lp)
    h.run()
    sol = h.getSolution()
    if not sol.value_valid:
        return None
    x = np.asarray(sol.col_value)
    res_fun = float(x[T].sum())
    amounts = np.clip(x[:3 * S].reshape(3, S), 0.0, total)
    if U is not None:
        amounts = np.rint(amounts)
    cum = np.zeros((3, S + 1))
    cum[:, 1:] = np.cumsum(amounts, axis=1)
    return res_fun * scale, cum


class _Plan:
    """Steps and units of one allgather-shaped part."""

    def __init__(self, frame: _Frame, size: float, alpha: float, steps: int | None,
                 units: int | None):
        rates, lat = frame.unit_rates()
        N = len(frame.group)
        block = size / N
        best = None
        tries = range(2, MAX_STEPS + 1) if steps is None else (steps + 1,)
        for S in tries:
            sol = _lp(rates, S)
            if sol is not None and (best is None
                                    or block * sol[0] + S * (alpha + lat) < best[0]):
                best = (block * sol[0] + S * (alpha + lat), S, sol[0])
        require(best is not None, "the two-level overlap LP found no plan")
        _, S, lp_t = best
        per_unit = frame.nA + len(frame.b_own) * frame.R           # entries per piece
        cap = max(1, ENTRY_BUDGET // max(1, per_unit * frame.period))
        choices = [u for u in UNIT_CHOICES if u <= cap] or [cap]
        if units is not None:
            require(isinstance(units, int) and units >= 1,
                    f"units must be an integer >= 1, got {units!r}")
            choices = [units]
        pick = None
        for U in choices:
            sol = _lp(rates, S, U)
            if sol is None:
                continue
            if pick is None or sol[0] < pick[0] - 1e-15:
                pick = (sol[0], U, sol[1].astype(np.int64))
            if sol[0] <= lp_t * (1 + ROUNDING_SLACK):
                break
        require(pick is not None, "the two-level overlap found no whole-unit plan")
        self.lp_time = block * lp_t
        self.rounded_time, self.units, self.cum = block * pick[0], pick[1], pick[2]
        self.steps = S
        self.latency = lat


def _part(topology: Topology, group: tuple[int, ...], groups, size: float, alpha: float,
          steps: int | None, units: int | None, reverse: bool):
    """``(frame, plan)`` of the allgather (``reverse=False``) or of the allgather on the
    reversed graph whose time-reverse is the reduce-scatter."""
    frame = _Frame(_reversed(topology) if reverse else topology, group, groups)
    return frame, _Plan(frame, size, alpha, steps, units)


def _meta(frame: _Frame, plan: _Plan, suffix: str = "") -> dict[str, str]:
    return {f"groups{suffix}": f"{frame.R}x{frame.h}", f"steps{suffix}": str(plan.steps),
            f"units{suffix}": str(plan.units), f"period{suffix}": str(frame.period),
            f"lp_time_s{suffix}": f"{plan.lp_time:.6e}"}


def _explicit_groups(group: tuple[int, ...], groups) -> list[list[int]]:
    """User-given groups, checked against the participants."""
    try:
        out = [[int(r) for r in g] for g in groups]
    except (TypeError, ValueError):
        raise NotSupportedError(f"groups must be one of {GROUPINGS} or a list of rank "
                                f"lists, got {groups!r}") from None
    seen: dict[int, int] = {}
    for k, g in enumerate(out):
        for r in g:
            if r not in group:
                raise TopologyError(f"rank {r} of group {k} is not a participant",
                                    item=f"rank {r}")
            if r in seen:
                raise TopologyError(f"rank {r} is in groups {seen[r]} and {k}",
                                    item=f"rank {r}")
            seen[r] = k
    missing = [r for r in group if r not in seen]
    if missing:
        raise TopologyError(f"rank {missing[0]} is in no group", item=f"rank {missing[0]}")
    pos = {r: i for i, r in enumerate(group)}
    return [sorted(g, key=pos.__getitem__) for g in out]


def _build(topology: Topology, ranks, kind: str, size: float, alpha: float,
           steps: int | None, units: int | None, groups="auto") -> Schedule:
    from ..schedule import concat, reverse

    group = resolve_group(topology, ranks)
    require(size > 0 and alpha >= 0, "size must be > 0 and alpha >= 0")
    require(steps is None or (isinstance(steps, int) and 1 <= steps),
            f"steps must be an integer >= 1, got {steps!r}")
    if isinstance(groups, str):
        found = two_level_groupings(topology, group, groups)
    else:
        g = _check_groups(_explicit_groups(group, groups))
        found = {"given": g}
    options = {k: g for k, g in found.items() if not isinstance(g, str)}
    if not options:
        raise NotSupportedError("two_level does not apply: " + "; ".join(found.values()))
    revs = gather_parts(kind)
    best = None
    for label, gs in options.items():
        parts = {rev: _part(topology, group, gs, size, alpha, steps, units, rev)
                 for rev in revs}
        if kind == "allreduce":                   # one chunk size for both halves
            U = max(p.units for _, p in parts.values())
            q = math.lcm(*(f.period for f, _ in parts.values()))
            for rev, (f, p) in parts.items():
                f.period = q
                if p.units != U:
                    parts[rev] = (f, _Plan(f, size, alpha, p.steps - 1, U))
        t = sum(p.rounded_time + p.steps * (alpha + p.latency) for _, p in parts.values())
        if best is None or t < best[0]:
            best = (t, label, parts)
    _, label, parts = best
    out, meta = [], {"grouping": label}
    for rev, (f, p) in parts.items():
        Q = p.units * f.period
        s = f.schedule(p.cum[0] * f.period, p.cum[1] * f.period, p.cum[2] * f.period, Q,
                       "two_level", {})
        if rev:
            s = reverse(s, reduce_scatter(group, split=Q))
        out.append(s)
        meta.update(_meta(f, p, "_rs" if rev and kind == "allreduce" else ""))
    if kind == "allreduce":
        Q = parts[False][1].units * parts[False][0].period
        return concat(out, allreduce(group, split=len(group) * Q), name="two_level", meta=meta)
    return out[0].replace(name="two_level", meta=meta)


_PARAMS = """
    Parameters
    ----------
    topology : Topology
        A fabric whose ranks form groups of equal size (:func:`two_level_groups`):
        two-tier and leaf-spine fabrics, fat-tree pods, multi-GPU boxes.
    ranks : sequence of int, optional
        The participants (default all ranks); ``ranks[i]`` owns block ``i``.
    size, alpha : float
        Message size (bytes) and per-step overhead (s) the overlap is planned for.
    steps : int, optional
        Steps that carry rail traffic (the schedule has one more); default: the
        fastest of 1 to :data:`MAX_STEPS` - 1 at ``size`` and ``alpha``.
    units : int, optional
        Units per block the step fractions are rounded to; default: the coarsest of
        :data:`UNIT_CHOICES` within :data:`ROUNDING_SLACK` of the LP (and
        :data:`ENTRY_BUDGET`). Each unit is cut into ``meta["period"]`` pieces that
        cover the equal-cost paths.
    groups : {'auto', 'meta', 'switch'} or list of lists of int
        Where the groups come from (:data:`GROUPINGS`, :func:`two_level_groupings`):
        'auto' (default) plans every source that applies (boxes, pods or leaves named
        by the topology; ranks behind one switch) and keeps the fastest
        (``meta["grouping"]``); or the groups themselves, as ranks.

    Raises
    ------
    NotSupportedError
        If the ranks do not form equal groups of at least two, or on a bad option.
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one, or given
        ``groups`` miss, repeat or add a rank.
"""


def two_level_allgather(topology: Topology, *, ranks: Sequence[int] | None = None,
                        size: float = DEFAULT_SIZE, alpha: float = 0.0,
                        steps: int | None = None, units: int | None = None,
                        groups: str | Sequence[Sequence[int]] = "auto") -> Schedule:
    """Return the two-level pipelined allgather: rails between groups overlapped with
    the direct exchange inside each group (module docstring).
    {params}
    Returns
    -------
    Schedule
        ``steps + 1`` steps or fewer; ``split = units * period`` chunks per block.

    Examples
    --------
    An oversubscribed two-tier fabric: the rack uplinks bind a one-shot direct
    allgather at 3.75x the bound; the two-level schedule overlaps rails and racks:

    >>> from topocoll.topology.scenarios import two_tier
    >>> t = two_tier(4, 4, oversubscription=4)
    >>> s = two_level_allgather(t)
    >>> s.meta["groups"], s.num_steps <= 8
    ('4x4', True)
    """
    return _build(topology, ranks, "allgather", size, alpha, steps, units, groups)


def two_level_reduce_scatter(topology: Topology, *, ranks: Sequence[int] | None = None,
                             size: float = DEFAULT_SIZE, alpha: float = 0.0,
                             steps: int | None = None, units: int | None = None,
                             groups: str | Sequence[Sequence[int]] = "auto") -> Schedule:
    """Return the two-level pipelined reduce-scatter: the time-reverse of the two-level
    allgather planned on the reversed graph (parameters as
    :func:`two_level_allgather`).

    Examples
    --------
    >>> from topocoll.topology.scenarios import two_tier
    >>> s = two_level_reduce_scatter(two_tier(2, 2))
    >>> s.collective.kind, s.step(0)[0].op.name
    ('reduce_scatter', 'REDUCE')
    """
    return _build(topology, ranks, "reduce_scatter", size, alpha, steps, units, groups)


def two_level_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                        size: float = DEFAULT_SIZE, alpha: float = 0.0,
                        steps: int | None = None, units: int | None = None,
                        groups: str | Sequence[Sequence[int]] = "auto") -> Schedule:
    """Return the two-level pipelined allreduce: :func:`two_level_reduce_scatter` then
    :func:`two_level_allgather` on ``p`` shards (parameters as
    :func:`two_level_allgather`; both halves use the same units).

    Examples
    --------
    >>> from topocoll.topology.scenarios import two_tier
    >>> s = two_level_allreduce(two_tier(2, 2))
    >>> s.collective.kind, s.meta["groups"], s.meta["groups_rs"]
    ('allreduce', '2x2', '2x2')
    """
    return _build(topology, ranks, "allreduce", size, alpha, steps, units, groups)


two_level_allgather.__doc__ = two_level_allgather.__doc__.format(params=_PARAMS)
