"""Phases of the two-level schedule and the program that overlaps them.

:mod:`~topocoll.synth.two_level` sends every block along *rails* between groups and then
inside each group. This module holds the pieces: the transfer pairs of every phase
(:class:`Frame`), their per-link cost, and the linear program over per-step amounts
(:func:`overlap_lp`) with its whole-unit rounding (:class:`Plan`).

In-group phases come in one of two shapes:

direct (every group)
    ``(r, i)`` sends what it holds of rail ``i`` (the ``R - 1`` received blocks, stream
    ``y``, and its own, stream ``z``) to every other member, over the in-group fabric
    (paths may cross other members: cut-through relays).
relayed (groups whose members are not all one hop apart, like an MI250 box)
    *hop 1*: ``(r, i)`` sends to the members it reaches without crossing another member;
    *hop 2*: each of those forwards, in a later step, to the members ``(r, i)`` does not
    reach directly (a store-and-forward tree of depth two per source). A relayed
    destination may have several possible parents (an MI250 GCD's cross neighbour is
    reached through its twin's package link or through the source's twin's fabric link);
    each choice is a *variant* of hop 2, and the program splits every step's hop-2
    amount among them. A cut-through relay uses the first link once per destination
    behind it; the tree uses it once, which is what keeps the thin links of such boxes
    from binding.

Streams and their order: rail ``x``; received ``y`` (after ``x``), then ``y2`` (after
``y``); own ``z``, then ``z2`` (after ``z``). The program: per step ``s`` the amounts of
every phase (fractions of a block, or whole units), the step as long as its busiest link
(``sum_phase rate[phase, l] amount <= t_s``), each stream's cumulative amount up to step
``s`` at most its predecessor's before step ``s``, every stream complete; minimize
``sum_s t_s``.

References
----------
.. [1] Shah et al., "TACCL: Guiding collective algorithm synthesis using communication
   sketches", NSDI 2023 (rails and intra-node phases).
"""

from __future__ import annotations

import math

import numpy as np

from ..cost.kernel import step_loads
from ..numeric import matmul
from ..schedule import Op, Schedule, ScheduleBuilder
from ..topology import Topology
from ._common import require

__all__ = ["Frame", "Plan", "overlap_lp", "coarsest_units", "relay_parents", "MAX_STEPS",
           "UNIT_CHOICES", "ENTRY_BUDGET", "ROUNDING_SLACK", "ILP_NODE_LIMIT", "MAX_PERIOD",
           "inside_fabric", "shared_switches"]

#: Most rail steps the default search tries.
MAX_STEPS = 36
#: Unit counts per block the default search tries (coarsest first).
UNIT_CHOICES = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: Most chunk entries (chunk ids over all transfers) one allgather part may hold.
ENTRY_BUDGET = 4_000_000
#: The unit search stops at the first count whose rounded plan is within this fraction
#: of the unrounded LP time.
ROUNDING_SLACK = 3e-4
#: Branch-and-bound nodes of one whole-unit program (the best plan found by then is
#: used): a work limit, so that the plan does not depend on the machine's load.
ILP_NODE_LIMIT = 1000
#: Largest spread period (pieces per unit that cover a pair's equal-cost paths).
MAX_PERIOD = 16
#: Most hop-2 variants (parent choices per relayed pair).
MAX_VARIANTS = 2

#: Stream of each phase kind and the stream it must follow.
_AFTER = {"x": None, "y": "x", "z": None, "y2": "y", "z2": "z"}


def shared_switches(topology: Topology, groups: list[list[int]]) -> set[int]:
    """Switches that ranks of different groups (or non-participants) share: the NIC
    fabric of a multi-GPU cluster, the spines of a two-tier one."""
    where = {r: k for k, g in enumerate(groups) for r in g}
    seen: dict[int, set] = {}
    for lk in topology.links:
        for a, b in ((lk.src, lk.dst), (lk.dst, lk.src)):
            if topology.is_switch(a) and not topology.is_switch(b):
                seen.setdefault(a, set()).add(where.get(b, -1))
    return {sw for sw, ks in seen.items() if len(ks) > 1}


def inside_fabric(topology: Topology, shared: set[int], src: np.ndarray, dst: np.ndarray
                  ) -> Topology:
    """The fabric the in-group exchange may use: without the ``shared`` switches, so
    that it leaves the NICs and the uplinks to the rails (a DGX box talks over its
    NVSwitch, not over the NIC fabric). The whole topology if that would cut some pair
    ``src -> dst`` apart. Paths found on it are paths of ``topology``."""
    from ..topology import Link
    from ..topology.routing import spread_paths

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


def _direct_reach(topology: Topology, members: list[int], avoid: set[int]
                  ) -> dict[int, set[int]]:
    """Per member, the members it reaches without crossing another member or a node of
    ``avoid``."""
    out: dict[int, list[int]] = {}
    for lk in topology.links:
        if lk.dst not in avoid:
            out.setdefault(lk.src, []).append(lk.dst)
    mset = set(members)
    reach: dict[int, set[int]] = {}
    for a in members:
        seen, stack, found = {a}, [a], set()
        while stack:
            v = stack.pop()
            for w in out.get(v, []):
                if w in seen:
                    continue
                seen.add(w)
                if w in mset:
                    found.add(w)                 # a member: reached, not crossed
                else:
                    stack.append(w)
        reach[a] = found - {a}
    return reach


def _bandwidth(topology: Topology, a: int, b: int) -> float:
    return sum(lk.bandwidth for lk in topology.links if lk.src == a and lk.dst == b)


def relay_parents(topology: Topology, groups: list[list[int]], avoid: set[int] = frozenset()
                  ) -> dict[tuple[int, int], list[int]] | None:
    """For every ordered pair of a group that is not one hop apart (no path without
    another member, or a switch of ``avoid``, in between), the members that can relay
    (reached directly by the source, reaching the destination directly), the fattest
    last link first. ``{}`` if every pair is one hop apart; None if some pair needs more
    than one relay.

    Examples
    --------
    An MI250 GCD reaches its cross neighbours through two parents:

    >>> from topocoll.topology.scenarios import mi250
    >>> t = mi250(1)
    >>> relay_parents(t, [list(range(8))], avoid={8})[0, 3]  # 3's twin (package), 0's twin
    [2, 1]
    """
    out: dict[tuple[int, int], list[int]] = {}
    for g in groups:
        reach = _direct_reach(topology, g, set(avoid))
        for a in g:
            for b in g:
                if a == b or b in reach[a]:
                    continue
                ps = [p for p in g if p in reach[a] and b in reach[p]]
                if not ps:
                    return None
                out[a, b] = sorted(ps, key=lambda p: (-_bandwidth(topology, p, b), p))
    return out


class Frame:
    """Pairs and blocks of every phase on one topology (allgather direction).

    ``relay``: use the relayed in-group shape (:func:`relay_parents`) where some pair of
    a group is not one hop apart; otherwise (or if that needs deeper trees) the direct
    shape. ``self.relayed`` tells which was built.

    ``rotate``: pieces are not cut to cover every pair's equal-cost paths (``period``
    1); piece ``m`` of pair ``k`` takes path choice ``k + m`` instead, so that the pairs
    that share a link spread over its paths together (far fewer chunks where many pairs
    share each link, as on a fat-tree; the rates tell how even it is)."""

    def __init__(self, topology: Topology, group: tuple[int, ...], groups: list[list[int]],
                 relay: bool = False, rotate: bool = False):
        from .direct import spread_period

        self.topology, self.group = topology, group
        blk = {r: b for b, r in enumerate(group)}
        G = np.array([[blk[r] for r in g] for g in groups], dtype=np.int64)   # (R, h) blocks
        R, h = G.shape
        self.R, self.h = R, h
        gr = np.asarray(group, dtype=np.int64)
        where = {int(r): (k, i) for k, g in enumerate(groups) for i, r in enumerate(g)}
        others = np.array([[x for x in range(R) if x != r] for r in range(R)],
                          dtype=np.int64).reshape(R, R - 1)
        # rail pairs (r1, i) -> (r2, i)
        r1, r2 = np.nonzero(~np.eye(R, dtype=bool))
        ii = np.arange(h)
        a_src = G[r1[:, None], ii[None, :]].reshape(-1)
        a_dst = G[r2[:, None], ii[None, :]].reshape(-1)
        shared = shared_switches(topology, groups)
        parents = relay_parents(topology, groups, shared) if relay else None
        self.relayed = bool(parents)
        # in-group pair sets: (source block, destination block, origin block)
        if self.relayed:
            hop1 = [(a, b, a) for g in groups for a in g for b in g
                    if a != b and (a, b) not in parents]
            V = min(MAX_VARIANTS, max(len(p) for p in parents.values()))
            hop2 = [[(ps[v % len(ps)], b, a) for (a, b), ps in sorted(parents.items())]
                    for v in range(V)]
        else:
            hop1 = [(a, b, a) for g in groups for a in g for b in g if a != b]
            hop2 = []
        sets = [np.array([[blk[a], blk[b], blk[o]] for a, b, o in ps], dtype=np.int64)
                .reshape(-1, 3) for ps in [hop1, *hop2]]
        srcs, dsts = [a_src], [a_dst]
        self.pairsets = [(0, len(a_src))]
        self.rail_block = a_src
        self.y_blocks, self.z_block = [None], [None]
        off = len(a_src)
        for arr in sets:
            srcs.append(arr[:, 0])
            dsts.append(arr[:, 1])
            self.pairsets.append((off, len(arr)))
            off += len(arr)
            loc = [where[int(group[o])] for o in arr[:, 2]]
            rr = np.array([k for k, _ in loc], dtype=np.int64)
            io = np.array([i for _, i in loc], dtype=np.int64)
            self.y_blocks.append(G[others[rr], io[:, None]] if R > 1 else
                                 np.zeros((len(arr), 0), np.int64))
            self.z_block.append(arr[:, 2])
        self.src = gr[np.concatenate(srcs)]
        self.dst = gr[np.concatenate(dsts)]
        self.nA = len(a_src)
        # phases: (stream, pair set); hop-2 variants share their stream
        V = len(hop2)
        self.phases = ([("x", 0), ("y", 1), ("z", 1)] + [("y2", 2 + v) for v in range(V)]
                       + [("z2", 2 + v) for v in range(V)])
        local = self.src[self.nA:], self.dst[self.nA:]
        self.inside = inside_fabric(topology, shared, *local)
        self.rotate = rotate
        self.period = 1 if rotate else math.lcm(
            spread_period(topology, self.src[:self.nA], self.dst[:self.nA], MAX_PERIOD),
            spread_period(self.inside, *local, MAX_PERIOD))

    @property
    def streams(self) -> tuple[str, ...]:
        return tuple(k for k in _AFTER if any(s == k for s, _ in self.phases))

    def entries_per_piece(self) -> int:
        """Chunk entries one piece of every block adds over all phases (at most)."""
        n = 0
        for stream, ps in self.phases:
            cnt = self.pairsets[ps][1]
            n += cnt * (self.R - 1 if stream in ("y", "y2") else 1)
        return n

    def _entries(self, ranges: list[tuple[int, int]], Q: int):
        """``(k, m, chunk)`` of one step: phase ``j`` moves pieces ``ranges[j]``."""
        ks, ms, cs = [], [], []
        for (stream, ps), (a, b) in zip(self.phases, ranges, strict=True):
            if b <= a:
                continue
            off, cnt = self.pairsets[ps]
            p = np.arange(a, b)
            if stream == "x":
                blocks = self.rail_block[:, None]
            elif stream in ("y", "y2"):
                blocks = self.y_blocks[ps]
            else:
                blocks = self.z_block[ps][:, None]
            w = blocks.shape[1]
            if not w:
                continue
            ks.append(np.repeat(off + np.arange(cnt), w * len(p)))
            ms.append(np.tile(p, cnt * w))
            cs.append(np.repeat(blocks.reshape(-1), len(p)) * Q + ms[-1])
        if not ks:
            return (np.zeros(0, np.int64),) * 3
        return np.concatenate(ks), np.concatenate(ms), np.concatenate(cs)

    def ranges(self, cum: np.ndarray, s: int) -> list[tuple[int, int]]:
        """Piece ranges of every phase in step ``s`` from cumulative per-phase amounts
        ``cum`` (phases, steps + 1): hop-2 variants take consecutive pieces of their
        stream."""
        out = []
        for j, (stream, _) in enumerate(self.phases):
            same = [k for k, (st, _) in enumerate(self.phases) if st == stream]
            pos = int(sum(cum[k, s] for k in same))
            pos += int(sum(cum[k, s + 1] - cum[k, s] for k in same if k < j))
            out.append((pos, pos + int(cum[j, s + 1] - cum[j, s])))
        return out

    def schedule(self, cum: np.ndarray, Q: int, name: str, meta: dict) -> Schedule:
        """The allgather whose step ``s`` moves, per phase ``j``, the pieces between
        the cumulative counts ``cum[j, s]`` and ``cum[j, s + 1]`` (in pieces)."""
        from ..collective import allgather
        from .direct import spread_transfers

        b = ScheduleBuilder(allgather(self.group, split=Q))
        for s in range(cum.shape[1] - 1):
            k, m, ch = self._entries(self.ranges(cum, s), Q)
            if not len(k):
                continue
            parts = []
            for topo, sel in ((self.topology, k < self.nA), (self.inside, k >= self.nA)):
                if sel.any():
                    parts.append(spread_transfers(
                        topo, self.src, self.dst, k[sel], m[sel], ch[sel], Q,
                        choice=k[sel] + m[sel] if self.rotate else None))
            src = np.concatenate([x[0] for x in parts])
            dst = np.concatenate([x[1] for x in parts])
            ids = np.concatenate([x[2][1] for x in parts])
            ptr = np.concatenate([[0], np.cumsum(np.concatenate(
                [np.diff(x[2][0]) for x in parts]))])
            b.new_step().add_many(src, dst, (ptr, ids), Op.COPY,
                                  [path for x in parts for path in x[3]])
        return b.build(name=name, meta=meta)

    def unit_rates(self) -> tuple[np.ndarray, float]:
        """Per phase and link, seconds per block byte of the whole phase (shape
        ``(phases, links)``), and the longest route latency of any phase."""
        q = self.period
        P = len(self.phases)
        rates = np.zeros((P, len(self.topology.links)))
        lat = 0.0
        N = len(self.group)
        for j in range(P):
            cum = np.zeros((P, 2), np.int64)
            cum[j, 1] = q
            s = self.schedule(cum, q, "", {})
            if not s.num_steps:
                continue
            load, la = step_loads(s, self.topology, float(N))      # 1 byte per block
            rates[j] = load.sum(axis=0) / self.topology.link_bandwidth
            lat = max(lat, float(la.max()))
        return rates, lat


def overlap_lp(rates: np.ndarray, S: int, U: int | None = None,
        phases: list[tuple[str, int]] | None = None,
        start: np.ndarray | None = None) -> tuple[float, np.ndarray] | None:
    """The fastest overlap in ``S`` steps: minimal sum over steps of the busiest link's
    seconds per block byte, and the cumulative amounts ``(phases, S + 1)`` (fractions of
    a block, or with ``U`` whole units out of ``U``: then a small integer program,
    solved by HiGHS within :data:`ILP_NODE_LIMIT` nodes, started from ``start``, the
    fractional plan's cumulative amounts rounded down). ``phases`` as
    :attr:`Frame.phases` (default: rail, received, own). None if there is no
    solution."""
    import highspy
    from scipy.sparse import csc_matrix

    from ..optimum.highs import quiet_highs

    if phases is None:
        phases = [("x", 0), ("y", 1), ("z", 1)]
    P = len(phases)
    scale = float(rates.max())                   # HiGHS drops coefficients below 1e-9
    rows = np.unique(rates.T[rates.any(axis=0)], axis=0) / scale   # (u, P)
    total = 1.0 if U is None else float(U)
    n = (P + 1) * S                                               # amounts, then t
    A_idx = [np.arange(S) + j * S for j in range(P)]
    T = np.arange(S) + P * S
    by_stream: dict[str, list[int]] = {}
    for j, (st, _) in enumerate(phases):
        by_stream.setdefault(st, []).append(j)
    A, lo, hi = [], [], []
    inf = highspy.kHighsInf
    for s in range(S):
        for row in rows:
            r = np.zeros(n)
            for j in range(P):
                r[A_idx[j][s]] = row[j]
            r[T[s]] = -total
            A.append(r)
            lo.append(-inf)
            hi.append(0.0)
        for st, js in by_stream.items():         # a stream only moves what came before
            after = _AFTER[st]
            if after is None:
                continue
            r = np.zeros(n)
            for j in js:
                r[A_idx[j][:s + 1]] = 1.0
            for j in by_stream[after]:
                r[A_idx[j][:s]] = -1.0
            A.append(r)
            lo.append(-inf)
            hi.append(0.0)
    for js in by_stream.values():
        r = np.zeros(n)
        for j in js:
            r[A_idx[j]] = 1.0
        A.append(r)
        lo.append(total)
        hi.append(total)
    ub = np.full(n, total)
    ub[T] = inf
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
        lp.integrality_ = ([highspy.HighsVarType.kInteger] * (P * S)
                           + [highspy.HighsVarType.kContinuous] * S)
    h = quiet_highs()
    h.setOptionValue("mip_max_nodes", ILP_NODE_LIMIT)
    h.passModel(lp)
    if U is not None and start is not None:
        # incumbent: cumulative fractions rounded down (monotone, so every stream still
        # follows its predecessor), the rest in the last step
        ci = np.floor(start * U + 1e-9)
        ci[:, -1] = U
        for js in by_stream.values():             # a stream's variants: total U at the end
            ci[js[1:], -1] = ci[js[1:], -2]
            ci[js[0], -1] = U - ci[js[1:], -1].sum()
        amt = np.diff(ci, axis=1)
        t0 = matmul(rows, amt).max(axis=0) / total if len(rows) else np.zeros(S)
        x0 = np.concatenate([amt.reshape(-1), np.maximum(t0, 0.0) * total])
        inc = highspy.HighsSolution()
        inc.col_value = x0.tolist()
        h.setSolution(inc)
    h.run()
    sol = h.getSolution()
    if not sol.value_valid:
        return None
    x = np.asarray(sol.col_value)
    res_fun = float(x[T].sum())
    amounts = np.clip(x[:P * S].reshape(P, S), 0.0, total)
    if U is not None:
        amounts = np.rint(amounts)
    cum = np.zeros((P, S + 1))
    cum[:, 1:] = np.cumsum(amounts, axis=1)
    return res_fun * scale, cum


def coarsest_units(choices: list[int], solve, lp_t: float):
    """``(time, units, cum)`` of the fewest units per block among ``choices`` (ascending)
    whose whole-unit plan is within :data:`ROUNDING_SLACK` of the LP time ``lp_t``, by
    bisection (the rounding loss shrinks as units grow); the finest feasible plan if
    none is. ``solve(U)`` is the whole-unit program (None: infeasible)."""
    def good(sol) -> bool:
        return sol is not None and sol[0] <= lp_t * (1 + ROUNDING_SLACK)

    sols: dict[int, tuple | None] = {}
    hi = None
    for i in range(len(choices) - 1, -1, -1):     # the finest feasible one first
        sols[i] = solve(choices[i])
        if sols[i] is not None:
            hi = i
            break
    if hi is None:
        return None
    if good(sols[hi]):
        lo = -1                                   # choices[lo] fails, choices[hi] is good
        while hi - lo > 1:
            mid = (lo + hi) // 2
            sols[mid] = solve(choices[mid])
            if good(sols[mid]):
                hi = mid
            else:
                lo = mid
    sol = sols[hi]
    return sol[0], choices[hi], sol[1].astype(np.int64)


class Plan:
    """Steps and units of one allgather-shaped part."""

    def __init__(self, frame: Frame, message_bytes: float, alpha: float, steps: int | None,
                 units: int | None):
        rates, lat = frame.unit_rates()
        N = len(frame.group)
        block = message_bytes / N
        depth = 2 if frame.relayed else 1
        best = None
        tries = range(depth + 1, MAX_STEPS + 1) if steps is None else (steps + depth,)
        # the LP's value does not grow with S (a step may stay empty), so none of more
        # than S steps beats ``best`` once the longest horizon's value plus S + 1 step
        # costs does not
        last = overlap_lp(rates, MAX_STEPS, phases=frame.phases) if steps is None else None
        for S in tries:
            sol = overlap_lp(rates, S, phases=frame.phases)
            if sol is not None and (best is None
                                    or block * sol[0] + S * (alpha + lat) < best[0]):
                best = (block * sol[0] + S * (alpha + lat), S, sol[0])
            if best is not None and last is not None and \
                    block * last[0] + (S + 1) * (alpha + lat) >= best[0]:
                break
        require(best is not None, "the two-level overlap LP found no plan")
        _, S, lp_t = best
        cap = max(1, ENTRY_BUDGET // max(1, frame.entries_per_piece() * frame.period))
        choices = [u for u in UNIT_CHOICES if u <= cap]
        if not choices or (cap < 2 * choices[-1] and cap not in choices):
            choices.append(cap)                   # the finest the budget allows
        if units is not None:
            require(isinstance(units, int) and units >= 1,
                    f"units must be an integer >= 1, got {units!r}")
            choices = [units]
        frac = overlap_lp(rates, S, phases=frame.phases)[1]
        pick = coarsest_units(choices, lambda U: overlap_lp(rates, S, U, phases=frame.phases,
                                                 start=frac), lp_t)
        require(pick is not None, "the two-level overlap found no whole-unit plan")
        self.lp_time = block * lp_t
        self.rounded_time, self.units, self.cum = block * pick[0], pick[1], pick[2]
        self.steps = S
        self.latency = lat
        self.depth = depth

    def time(self, alpha: float) -> float:
        """Model time of the rounded plan (bandwidth plus per-step latency)."""
        return self.rounded_time + self.steps * (alpha + self.latency)
