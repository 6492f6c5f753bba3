"""Optimal bandwidth per dimension for a LIBRA workload: ``perf``, ``perf-per-cost`` and
``min-cost``, exact and licence-free.

Every term of the time model (:mod:`.libra_time`, LIBRA's or the richer one) is
``a + f / B_i``: convex in ``B``; maxima (pipelined phases), sums (sequential phases, the
no-overlap loop) and the overlap loop's ``g_l = max(e_l, g_{l+1}) + t_l`` recursion keep
convexity. So ``perf`` (minimize time) and ``min-cost`` (minimize cost under a time
target) are second-order cone programs (:class:`~.libra_conic.Conic`), solved by Clarabel
with the status checked (an inaccurate solution is refused) and the duality gap reported
as the certificate of global optimality. Bandwidths are scaled by the largest per-NPU
traffic so that the solver sees numbers near 1.

``perf-per-cost`` (minimize time x cost) is not convex; it is solved as a one-dimensional
problem over the cost level ``C``: ``T*(C) = min {T(B) : cost(B) <= C}`` is convex and
non-increasing in ``C``; an interval proved to contain the minimum of ``C T*(C)`` is
searched on a grid of ``log C`` and refined by golden section to ``rtol``, each point a
convex solve (exact when the product is unimodal in the interval; otherwise within the
grid's resolution of the best local minimum).

With ``choose`` as a dimension's algorithm the time model depends on which algorithm wins
at the answer's bandwidths; the solve is repeated with the algorithms chosen at the last
answer until they no longer change (a fixed point, reported as ``rounds``).

Examples
--------
>>> from topocoll.fabric.libra import LibraCollective, LibraWorkload, parse_network
>>> net = parse_network("hier:ring(4)x fc(8)x ring(4)x switch(32)")
>>> w = LibraWorkload((LibraCollective("allreduce", 1e9, (4, 8, 4, 32)),), compute_s=0.0)
>>> r = solve(net, w, constraints=["B0 + B1 + B2 + B3 == 500"])
>>> r.status, round(sum(r.bandwidth_GBps), 6), r.gap < 1e-6
('optimal', 500.0, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import InfeasibleError, InputError
from .conic import Conic
from .model import (
    OBJECTIVES,
    LibraNetwork,
    LibraWorkload,
    LibraWorkloadMix,
    check_workload,
    cost,
    equal_split,
    parse_constraint,
    workload_parts,
)
from .timing import (
    LIBRA_MODEL,
    TimeModel,
    choose_algorithms,
    collective_terms,
    distinct_collectives,
    iteration_time,
)

__all__ = ["LibraResult", "solve", "pareto", "conflicting", "slowdown_mix"]

#: Relative margin above the cheapest feasible cost where cost-constrained searches start.
_EDGE = 1e-4
#: Cost levels of the perf-per-cost grid before the golden-section refinement.
_GRID = 16
#: Rounds of the ``choose`` fixed point.
_ROUNDS = 8


@dataclass(frozen=True)
class LibraResult:
    """An allocation and what it gives."""

    objective: str
    status: str
    bandwidth_GBps: tuple[float, ...]
    time_s: float
    cost_usd: float
    equal_split_time_s: float
    equal_split_cost_usd: float
    spec: str
    solves: int = 1
    gap: float = 0.0
    model: TimeModel = LIBRA_MODEL
    algorithms: tuple = ()
    rounds: int = 1
    #: Of a mix: per workload its name, weight, time at this allocation and at the equal
    #: split, and its own optimum (the same objective and limits for it alone).
    workloads: tuple[dict, ...] = ()

    def to_dict(self) -> dict:
        return {"objective": self.objective, "status": self.status,
                "bandwidth_GBps": list(self.bandwidth_GBps), "time_s": self.time_s,
                "cost_usd": self.cost_usd, "equal_split_time_s": self.equal_split_time_s,
                "equal_split_cost_usd": self.equal_split_cost_usd,
                "speedup_over_equal_split": self.equal_split_time_s / self.time_s
                if self.time_s else None, "topology": self.spec, "solves": self.solves,
                "duality_gap": self.gap, "model": self.model.to_dict(),
                "algorithms": [{"kind": k[0], "size_bytes": k[1], "comm": list(k[2]),
                                "dimension": i, "phase": ph, "algorithm": a}
                               for (k, i, ph), a in self.algorithms],
                "choose_rounds": self.rounds, "workloads": [dict(x) for x in self.workloads]}


class _Program:
    """The cone program of one solve (see the module docstring)."""

    def __init__(self, net: LibraNetwork, w: LibraWorkload | LibraWorkloadMix, model: TimeModel,
                 chosen: dict, constraints: Sequence[str], *, min_bw: float, max_cost: float | None,
                 max_time: float | None, minimize: str) -> None:
        D = len(net.dims)
        p = self.p = Conic()
        colls = {(c.kind, float(c.size), tuple(c.comm)): c for c in distinct_collectives(w)}
        terms = {k: collective_terms(net, c, model, chosen) for k, c in colls.items()}
        # the cheapest allocation without a time target needs no time terms (leaving them
        # in adds variables that nothing bounds above, which the solver handles poorly)
        timed = minimize == "time" or max_time is not None
        # scales: b = B / beta (beta a bandwidth the constraints suggest) and times in
        # units of tau (the largest term's time at beta), so the solver sees numbers
        # near 1 (unscaled, Clarabel stops short of its tolerances on LIBRA's cases)
        self.beta = beta = _bandwidth_scale(net, constraints, max_cost)
        fmax = max((f for ts in terms.values() for _, _, f in ts), default=0.0)
        self.tau = tau = fmax / beta if fmax > 0 else 1.0
        self.b = b = [p.var() for _ in range(D)]
        kap = net.npus * net.kappa() * beta          # dollars per unit of b
        for i in range(D):
            p.linear({b[i]: 1.0}, ">=", min_bw / beta)
        u = {}
        for k, ts in terms.items():
            if not ts or not timed:
                continue
            u[k] = p.var()
            if model.phases == "pipelined":
                for i, a, f in ts:
                    p.hyperbolic({u[k]: 1.0}, -a / tau, b[i], f / (beta * tau))
            else:
                parts = []
                for i, a, f in ts:
                    v = p.var()
                    p.hyperbolic({v: 1.0}, -a / tau, b[i], f / (beta * tau))
                    parts.append(v)
                p.linear({u[k]: 1.0, **{v: -1.0 for v in parts}}, ">=", 0.0)

        def total(cs) -> tuple[dict, float]:
            row: dict = {}
            for c in cs:
                k = (c.kind, float(c.size), tuple(c.comm))
                if k in u:
                    row[u[k]] = row.get(u[k], 0.0) + c.count
            return row

        # T is the time beyond the compute (the exposed communication), so that a
        # compute-dominated iteration does not drown the terms the solver trades; of a
        # mix, the weighted sum of its workloads' (LIBRA's multi-workload objective)
        self.T = T = p.var()
        self.offset = w.compute_s
        p.linear({T: 1.0, **{self._exposed(part, model, total, tau): -x
                             for part, x in workload_parts(w)}}, "==", 0.0)
        for text in constraints:        # each row scaled to a largest coefficient of 1
            a, c, op, rhs = parse_constraint(text, D)
            row = (a * beta + c * kap)
            norm = float(np.max(np.abs(row))) or 1.0
            p.linear({b[i]: row[i] / norm for i in range(D)}, op, rhs / norm)
        if max_cost is not None:
            norm = float(kap.max())
            p.linear({b[i]: kap[i] / norm for i in range(D)}, "<=", max_cost / norm)
        if max_time is not None:
            p.linear({T: 1.0}, "<=", (max_time - self.offset) / tau)
        self._limits = (net, list(constraints), max_cost, max_time, min_bw)
        if minimize == "time":
            self.objective = {T: 1.0}
        else:                           # cost, normalized by its value at b = 1
            self.objective = {b[i]: kap[i] / float(kap.sum()) for i in range(D)}

    def _exposed(self, w: LibraWorkload, model: TimeModel, total, tau: float) -> int:
        """A variable bounding the communication ``w`` exposes beyond its compute (in
        units of ``tau``) under ``model``'s loop."""
        p = self.p
        E = p.var()
        if model.loop == "no_overlap":
            p.linear({E: 1.0, **{v: -x for v, x in total(w.collectives).items()}}, "==", 0.0)
            return E
        if not w.layers:
            raise InputError("the overlap loop needs a per-layer workload (a LIBRA text "
                             "workload or a model)", item="loop")
        # e (backward compute end) and g (last weight-gradient collective's end) are
        # kept relative to the compute done by then, K: e' = e - K, g' = g - K
        F = p.var()
        row = total(x for ly in w.layers for x in ly.fwd)
        p.linear({F: 1.0, **{v: -x for v, x in row.items()}}, "==", 0.0)
        e = g = F
        for ly in reversed(w.layers):
            step = ly.ig_s + ly.wg_s                 # K grows by this
            e2 = p.var()
            p.linear({e2: 1.0, e: -1.0, **{v: -x for v, x in total(ly.ig).items()}}, "==",
                     0.0)
            wg = total(ly.wg)
            if wg:
                g2 = p.var()
                neg = {v: -x for v, x in wg.items()}
                p.linear({g2: 1.0, e2: -1.0, **neg}, ">=", 0.0)
                p.linear({g2: 1.0, g: -1.0, **neg}, ">=", -step / tau)
                g = g2
            elif g != e:
                g2 = p.var()                         # g' falls behind by the compute
                p.linear({g2: 1.0, g: -1.0}, ">=", -step / tau)
                p.linear({g2: 1.0, e2: -1.0}, ">=", 0.0)
                g = g2
            else:
                g = e2
            e = e2
        p.linear({E: 1.0, e: -1.0}, ">=", 0.0)
        p.linear({E: 1.0, g: -1.0}, ">=", 0.0)
        return E

    def solve(self, constraints: Sequence[str]) -> tuple[np.ndarray, float]:
        try:
            sol = self.p.minimize(self.objective)
        except InfeasibleError as e:
            if "no allocation" in str(e):
                raise InfeasibleError("no allocation satisfies these constraints together: "
                                      + "; ".join(conflicting(*self._limits))) from None
            raise
        B = np.maximum(sol.x[self.b] * self.beta, 0.0)
        if float(np.max(B)) > 1e7:                   # 10 PB/s per NPU: runaway
            raise InputError("the problem is unbounded: constrain the total bandwidth or "
                             "the cost (e.g. constraint 'B0 + B1 + B2 == 500')",
                             item="constraint")
        return B, sol.gap


def _bandwidth_scale(net: LibraNetwork, constraints: Sequence[str],
                     max_cost: float | None) -> float:
    """The largest per-NPU bandwidth (GB/s) a single dimension could get under the
    tightest constraint: ``rhs / min |a_i|`` over constraints with a positive right-hand
    side, ``max_cost / min kappa`` for a cost limit (1 when neither exists). Scaled by
    it, the bandwidths the solver sees lie in [0, 1]."""
    D = len(net.dims)
    kap = net.npus * net.kappa()
    out = []
    for text in constraints:
        a, c, _, rhs = parse_constraint(text, D)
        row = np.abs(a + c * kap)
        if rhs > 0 and row.max() > 0:
            out.append(rhs / row[row > 0].min())
    if max_cost is not None and max_cost > 0:
        out.append(max_cost / kap.min())
    return float(min(out)) if out else 1.0


def conflicting(net: LibraNetwork, constraints: Sequence[str], max_cost: float | None,
                max_time: float | None, min_bw: float) -> list[str]:
    """A smallest set of the linear limits (constraints and the cost limit; the bounds
    ``B_i >= min_bw`` always hold) that no allocation satisfies together, found by the
    deletion filter (drop each limit in turn; keep it out if the rest stay infeasible),
    one LP per limit. When the linear limits are satisfiable the time target is to blame
    with them.

    Examples
    --------
    >>> from topocoll.fabric.libra import parse_network
    >>> conflicting(parse_network("hier:ring(4)x fc(4)x switch(4)"),
    ...             ["B0 >= 400", "B2 <= 50", "B0 + B1 + B2 == 300"], None, None, 1e-3)
    ['B0 >= 400', 'B0 + B1 + B2 == 300']
    """
    from scipy.optimize import linprog

    D = len(net.dims)
    kap = net.npus * net.kappa()
    rows = []                                  # (label, row, op, rhs)
    for text in constraints:
        a, c, op, rhs = parse_constraint(text, D)
        rows.append((text, a + c * kap, op, rhs))
    if max_cost is not None:
        rows.append((f"cost <= {max_cost:g}", kap, "<=", max_cost))

    def feasible(keep) -> bool:
        A_ub, b_ub, A_eq, b_eq = [], [], [], []
        for _, row, op, rhs in keep:
            if op == "==":
                A_eq.append(row)
                b_eq.append(rhs)
            else:
                sign = 1.0 if op == "<=" else -1.0
                A_ub.append(sign * row)
                b_ub.append(sign * rhs)
        r = linprog(np.zeros(D), A_ub=np.array(A_ub) if A_ub else None, b_ub=b_ub or None,
                    A_eq=np.array(A_eq) if A_eq else None, b_eq=b_eq or None,
                    bounds=[(min_bw, None)] * D, method="highs")
        return r.status == 0

    if feasible(rows):
        time = [f"time <= {max_time:g} s"] if max_time is not None else []
        return [*time, *(r[0] for r in rows)]
    keep = list(rows)
    for r in rows:
        trial = [x for x in keep if x is not r]
        if not feasible(trial):
            keep = trial
    return [r[0] for r in keep]


def _check_bounded(net: LibraNetwork, w: LibraWorkload, cons: Sequence[str],
                   budget: float | None) -> None:
    """Refuse, naming the dimension, a problem in which a dimension that carries traffic
    can grow without limit (the fastest allocation would not exist): one LP per such
    dimension, maximizing its bandwidth under the linear constraints."""
    from scipy.optimize import linprog

    D = len(net.dims)
    kap = net.npus * net.kappa()
    A_ub, b_ub, A_eq, b_eq = [], [], [], []
    for text in cons:
        a, c, op, rhs = parse_constraint(text, D)
        row = a + c * kap
        if op == "<=":
            A_ub.append(row)
            b_ub.append(rhs)
        elif op == ">=":
            A_ub.append(-row)
            b_ub.append(-rhs)
        else:
            A_eq.append(row)
            b_eq.append(rhs)
    if budget is not None:
        A_ub.append(kap)
        b_ub.append(budget)
    used = np.flatnonzero(check_workload(net, w) > 0)
    for i in used:
        obj = np.zeros(D)
        obj[i] = -1.0
        r = linprog(obj, A_ub=np.array(A_ub) if A_ub else None, b_ub=b_ub or None,
                    A_eq=np.array(A_eq) if A_eq else None, b_eq=b_eq or None,
                    bounds=[(0, None)] * D, method="highs")
        if r.status == 3:
            raise InputError(f"nothing limits B{i}: constrain the bandwidth or the cost "
                             f"(e.g. constraint 'B0 + ... == 500' or budget)",
                             item="constraint, budget")


class _Search:
    """Solves of one problem (network, workload, model, algorithms, constraints)."""

    def __init__(self, net, w, model, chosen, cons, budget, min_bw) -> None:
        self.net, self.w, self.model, self.chosen = net, w, model, chosen
        self.cons, self.budget, self.min_bw = cons, budget, min_bw
        self.solves = 0
        self.gap = 0.0

    def run(self, *, max_cost=None, max_time=None, minimize="time") -> np.ndarray:
        if max_cost is None:
            max_cost = self.budget
        elif self.budget is not None:
            max_cost = min(max_cost, self.budget)
        prog = _Program(self.net, self.w, self.model, self.chosen, self.cons,
                        min_bw=self.min_bw, max_cost=max_cost, max_time=max_time,
                        minimize=minimize)
        b, gap = prog.solve(self.cons)
        self.solves += 1
        self.gap = max(self.gap, gap)
        return b

    def time(self, b) -> float:
        return iteration_time(self.net, self.w, b, self.model, self.chosen)

    def compute_floor(self) -> float:
        """The time at infinite bandwidth (compute and latencies)."""
        return iteration_time(self.net, self.w, np.full(len(self.net.dims), 1e12),
                              self.model, self.chosen)

    def range(self, slow: float) -> tuple[float, float, float]:
        """(cheapest cost, cost of the cheapest allocation whose communication is at
        most ``slow`` times the fastest's, cost of the fastest)."""
        cheapest = cost(self.net, self.run(minimize="cost"))
        fast = self.run()
        t_fast, c_fast = self.time(fast), cost(self.net, fast)
        floor = self.compute_floor()
        c_slow = cost(self.net, self.run(max_time=floor + slow * (t_fast - floor),
                                         minimize="cost"))
        return cheapest, c_slow, max(c_fast, c_slow * (1 + _EDGE))

    def perf_per_cost(self, rtol: float) -> np.ndarray:
        """The minimum of ``C * T*(C)`` over cost levels ``C`` (see the module docstring).

        The search interval is proved to hold the minimum: below the cost ``c_slow`` of the
        cheapest allocation whose communication is ``K`` times the fastest's, every product
        is at least ``cheapest * K * comm_fast``; ``K`` grows tenfold until that exceeds
        the fastest allocation's product. In the interval: a grid of ``GRID`` log-spaced
        levels, then golden-section refinement around the best of them to ``rtol`` in
        ``log C``."""
        def at(C: float) -> tuple[float, np.ndarray]:
            b = self.run(max_cost=C)
            return cost(self.net, b) * self.time(b), b

        floor = self.compute_floor()
        K = 100.0
        while True:
            cheapest, lo, hi = self.range(K)
            f_fast = at(hi)
            comm_fast = f_fast[0] / hi - floor
            if cheapest * (floor + K * comm_fast) >= f_fast[0] or K >= 1e6:
                break
            K *= 10
        grid = np.geomspace(lo, hi, _GRID)
        vals = [at(float(C)) for C in grid]
        i = int(np.argmin([v[0] for v in vals]))
        a = math.log(grid[max(i - 1, 0)])
        z = math.log(grid[min(i + 1, len(grid) - 1)])
        g = (math.sqrt(5) - 1) / 2
        x1, x2 = z - g * (z - a), a + g * (z - a)
        f1, f2 = at(math.exp(x1)), at(math.exp(x2))
        while z - a > rtol:
            if f1[0] <= f2[0]:
                z, x2, f2 = x2, x1, f1
                x1 = z - g * (z - a)
                f1 = at(math.exp(x1))
            else:
                a, x1, f1 = x1, x2, f2
                x2 = a + g * (z - a)
                f2 = at(math.exp(x2))
        return min([*vals, f1, f2, f_fast], key=lambda x: x[0])[1]


def solve(net: LibraNetwork, workload: LibraWorkload | LibraWorkloadMix, *, objective: str = "perf",
          constraints: Sequence[str] = (), budget: float | None = None,
          time_target: float | None = None, min_bw: float = 1e-3,
          rtol: float = 1e-6, model: TimeModel = LIBRA_MODEL) -> LibraResult:
    """The optimal allocation for ``objective`` (``perf``, ``perf-per-cost`` or
    ``min-cost``) under ``constraints`` (strings, see
    :func:`~topocoll.fabric.libra.parse_constraint`), a dollar ``budget`` and, for
    ``min-cost``, ``time_target`` seconds, with the time of ``model`` (LIBRA's by default).
    For a :class:`~topocoll.fabric.libra.LibraWorkloadMix` the time is the weighted mean
    iteration (``min-cost``'s target applies to it), and the result's ``workloads`` say
    what each workload gets and what its own optimum would give it.

    Raises
    ------
    InfeasibleError
        Naming the constraints when nothing satisfies them, or when the solver does not
        report an optimal solution.
    InputError
        For an unknown objective, a problem without a bound on some used dimension, or a
        model that does not fit the network.
    """
    if objective not in OBJECTIVES:
        raise InputError(f"objective must be one of {', '.join(OBJECTIVES)}, got "
                         f"{objective!r}", item="objective")
    model.check(net)
    check_workload(net, workload)
    cons = list(constraints)
    if objective != "min-cost":
        _check_bounded(net, workload, cons, budget)
    elif time_target is None:
        raise InputError("min-cost needs a time target (time_target)", item="time_target")
    chosen: dict = {}
    seen: list = []
    solves = 0
    gap = 0.0
    rounds = 0
    while rounds < _ROUNDS:                 # one round unless some dimension chooses
        rounds += 1
        s = _Search(net, workload, model, chosen, cons, budget, min_bw)
        if objective == "perf":
            b = s.run()
        elif objective == "min-cost":
            b = s.run(max_time=time_target, minimize="cost")
        else:
            b = s.perf_per_cost(rtol)
        solves += s.solves
        gap = max(gap, s.gap)
        new = choose_algorithms(net, workload, model, b)
        if new == chosen or new in seen:
            break
        seen.append(chosen)
        chosen = new
    T = iteration_time(net, workload, b, model, chosen)
    eq = equal_split(net, float(np.sum(b)))
    eq_chosen = choose_algorithms(net, workload, model, eq)
    parts = workload_parts(workload)
    per = []
    if isinstance(workload, LibraWorkloadMix):
        for p, x in parts:
            row = {"name": p.name, "weight": x,
                   "time_s": iteration_time(net, p, b, model, chosen),
                   "equal_split_time_s": iteration_time(net, p, eq, model, eq_chosen),
                   "own_optimum_time_s": None, "own_optimum_cost_usd": None,
                   "own_optimum_bandwidth_GBps": None}
            try:
                own = solve(net, p, objective=objective, constraints=cons, budget=budget,
                            time_target=time_target, min_bw=min_bw, rtol=rtol, model=model)
            except InfeasibleError as e:         # the mix's time target, for it alone
                row["own_optimum_note"] = str(e)
            else:
                solves += own.solves
                row.update(own_optimum_time_s=own.time_s, own_optimum_cost_usd=own.cost_usd,
                           own_optimum_bandwidth_GBps=list(own.bandwidth_GBps))
            per.append(row)
    return LibraResult(objective, "optimal", tuple(float(x) for x in b), T, cost(net, b),
                       iteration_time(net, workload, eq, model, eq_chosen),
                       cost(net, eq), net.spec(b), solves, gap, model,
                       tuple(sorted(chosen.items(), key=repr)), rounds, tuple(per))


def slowdown_mix(net: LibraNetwork, mix: LibraWorkloadMix, **kwargs) -> LibraWorkloadMix:
    """``mix`` reweighted so that each workload's weight is divided by the time of its own
    optimum (``solve`` with ``kwargs`` for it alone): the weighted mean time of the new mix
    is the weighted mean *slowdown* against each workload's own best fabric, so a short
    job counts as much as a long one.

    Examples
    --------
    >>> from topocoll.fabric.libra import LibraCollective, LibraWorkload, parse_network
    >>> net = parse_network("hier:ring(4)x switch(8)")
    >>> a = LibraWorkload((LibraCollective("allreduce", 1e9, (4, -1)),), compute_s=1.0, name="a")
    >>> b = LibraWorkload((LibraCollective("allreduce", 1e9, (-1, 8)),), compute_s=0.01, name="b")
    >>> mix = LibraWorkloadMix(((a, 1.0), (b, 1.0)))
    >>> m = slowdown_mix(net, mix, constraints=["B0 + B1 == 100"])
    >>> [round(x, 3) for _, x in m.parts]      # 1 / 1.015 s and 1 / 0.0275 s, normalized
    [0.026, 0.974]
    """
    own = [solve(net, p, **kwargs).time_s for p, _ in mix.parts]
    return LibraWorkloadMix(tuple((p, x / t) for (p, x), t in zip(mix.parts, own, strict=True)),
                       name=f"slowdown of {mix.name}")


def pareto(net: LibraNetwork, workload: LibraWorkload | LibraWorkloadMix, *, points: int = 50,
           constraints: Sequence[str] = (), min_bw: float = 1e-3,
           slowest: float = 10.0, model: TimeModel = LIBRA_MODEL
           ) -> list[tuple[float, float, tuple]]:
    """``points`` optimal (cost, time, bandwidths), cost levels spaced evenly on a log
    scale from the cheapest allocation whose communication takes ``slowest`` times the
    fastest's to the fastest allocation; each is a convex solve (with ``choose``, the
    algorithms of the fastest allocation's fixed point)."""
    cons = list(constraints)
    model.check(net)
    _check_bounded(net, workload, cons, None)
    chosen = {}
    if model.algorithms and "choose" in model.algorithms:
        chosen = dict(solve(net, workload, constraints=cons, min_bw=min_bw,
                            model=model).algorithms)
    s = _Search(net, workload, model, chosen, cons, None, min_bw)
    _, lo, hi = s.range(slowest)
    out = []
    for C in np.geomspace(lo, hi, points):
        b = s.run(max_cost=float(C))
        out.append((cost(net, b), s.time(b), tuple(b)))
    return out

