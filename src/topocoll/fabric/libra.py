"""LIBRA: bandwidth per dimension of a multi-dimensional training network, solved exactly.

Won et al., "LIBRA: Enabling Workload-aware Multi-dimensional Network Topology Optimization
for Distributed Training of Large AI Models" (ISPASS 2024). A network of ``D`` dimensions
(building block Ring, FullyConnected or Switch; a size; a cost class) gives each NPU a
bandwidth ``B_i`` in every dimension. A workload is a list of collectives, each with the
number of NPUs it spans in every dimension (its *communicator*); LIBRA's time model
(``../shared/reference/algorithms.md`` section 5.3):

- all-reduce of ``m`` bytes: dimension ``i`` carries ``2 m_i (c_i - 1) / c_i`` with
  ``m_{i+1} = m_i / c_i`` (reduce-scatter outward, all-gather back); reduce-scatter the
  half of it; all-gather walks the dimensions in reverse, ``m_i (c_i - 1)``,
  ``m_{i-1} = m_i c_i`` (``m`` the per-NPU shard); all-to-all ``m (c_i - 1) / c_i`` on each;
- a collective takes ``max_i traffic_i / B_i`` (the slowest dimension);
- an iteration is compute plus every collective, without overlap.

Cost is linear: ``N * sum_i kappa_i B_i`` with ``kappa_i`` the link price of the
dimension's cost class, plus NIC and switch prices for a Switch dimension (section 5.4).

Time is convex in ``B`` (each term ``s / B_i`` is convex for ``B_i > 0``; maxima and sums
keep convexity), so ``perf`` (minimize time) and ``min-cost`` (minimize cost under a time
target) are convex programs, solved by cvxpy with Clarabel with the solver status checked.
Collectives with the same kind and communicator share one epigraph variable (their times
are proportional), so the program has one variable per (kind, communicator) class, not per
layer. ``perf-per-cost`` (minimize time x cost) is not convex; it is solved as a one-dimensional
problem over the cost level ``C``: ``T*(C) = min {T(B) : cost(B) <= C}`` is convex and
non-increasing in ``C``; an interval proved to contain the minimum of ``C T*(C)`` is
searched on a grid of ``log C`` and refined by golden section to ``rtol``, each point a
convex solve (exact when the product is unimodal in the interval; otherwise within the
grid's resolution of the best local minimum).

Examples
--------
>>> net = parse_network("hier:ring(4)x fc(8)x ring(4)x switch(32)")
>>> [d.block for d in net.dims], net.npus
(['Ring', 'FullyConnected', 'Ring', 'Switch'], 4096)
>>> w = Workload((LibraCollective("allreduce", 1e9, (4, 8, 4, 32)),), compute_s=0.0)
>>> r = solve(net, w, constraints=["B0 + B1 + B2 + B3 == 500"])
>>> r.status, round(sum(r.bandwidth_GBps), 6)
('optimal', 500.0)
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InfeasibleError, InputError, InputTypeError

__all__ = ["LibraDim", "LibraNetwork", "LibraCollective", "Workload", "LibraResult", "PRICES",
           "COST_CLASSES", "parse_network", "dimension_traffic", "collective_time",
           "iteration_time", "cost", "solve", "pareto", "parse_constraint",
           "equal_split", "OBJECTIVES"]

#: Unit prices in $ per GB/s per NPU-link (LIBRA's cost-model YAML, tie-breakers dropped).
PRICES: dict[str, dict[str, float]] = {
    "InterChiplet": {"Link": 2.0, "Switch": 0.0, "Nic": 0.0},
    "InterPackage": {"Link": 4.0, "Switch": 13.0, "Nic": 0.0},
    "InterNode": {"Link": 4.0, "Switch": 13.0, "Nic": 0.0},
    "InterPod": {"Link": 7.8, "Switch": 18.0, "Nic": 31.6},
}
COST_CLASSES = tuple(PRICES)
OBJECTIVES = ("perf", "perf-per-cost", "min-cost")
_BLOCKS = {"ring": "Ring", "fully_connected": "FullyConnected", "switch": "Switch"}
GB = 1e9
#: Relative margin above the cheapest feasible cost where cost-constrained searches start.
_EDGE = 1e-4
#: Cost levels of the perf-per-cost grid before the golden-section refinement.
_GRID = 16


@dataclass(frozen=True)
class LibraDim:
    """One dimension: building block, size, cost class."""

    block: str
    size: int
    cost_class: str

    def __post_init__(self) -> None:
        if self.block not in _BLOCKS.values():
            raise InputError(f"building block must be Ring, FullyConnected or Switch, got "
                             f"{self.block!r}", item=f"block '{self.block}'")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 2:
            raise InputError(f"dimension size must be an integer >= 2, got {self.size!r}",
                             item="size")
        if self.cost_class not in PRICES:
            raise InputError(f"cost class must be one of {', '.join(COST_CLASSES)}, got "
                             f"{self.cost_class!r}", item=f"cost class '{self.cost_class}'")


@dataclass(frozen=True)
class LibraNetwork:
    """Dimensions, innermost (fastest-varying rank coordinate) first."""

    dims: tuple[LibraDim, ...]
    prices: dict = field(default_factory=lambda: PRICES, compare=False)

    @property
    def npus(self) -> int:
        return math.prod(d.size for d in self.dims)

    def kappa(self) -> np.ndarray:
        """$ per (GB/s of per-NPU bandwidth) per NPU, per dimension."""
        out = []
        for d in self.dims:
            p = self.prices[d.cost_class]
            k = p["Link"] + (p.get("Switch", 0.0) + p.get("Nic", 0.0)
                             if d.block == "Switch" else 0.0)
            out.append(k)
        return np.array(out)

    def spec(self, bandwidth_GBps: Sequence[float] | None = None) -> str:
        """The ``hier:`` spec of this network; with bandwidths, per-link rates that give
        each NPU ``B_i`` in dimension ``i`` (Ring: ``B_i / 2`` per link, FullyConnected:
        ``B_i / (n_i - 1)``, Switch: ``B_i``)."""
        parts = []
        for i, d in enumerate(self.dims):
            kind = {"Ring": "ring", "FullyConnected": "fc", "Switch": "switch"}[d.block]
            if bandwidth_GBps is None:
                parts.append(f"{kind}({d.size})")
                continue
            b = bandwidth_GBps[i]
            links = 2 if d.block == "Ring" and d.size > 2 else (
                d.size - 1 if d.block == "FullyConnected" else 1)
            parts.append(f"{kind}({d.size},{b / links * GB:.6g}B/s)")
        return "hier:" + "x ".join(parts)


def parse_network(text: str, cost_classes: Sequence[str] | None = None) -> LibraNetwork:
    """A network from a ``hier:`` spec (bandwidths ignored) or a LIBRA network YAML file
    (``Topology``, ``NpusCount``, ``CostDimension``).

    Cost classes default to the last ``D`` of InterChiplet, InterPackage, InterNode,
    InterPod (LIBRA's 4-D and 3-D inputs).
    """
    from pathlib import Path

    if not isinstance(text, str):
        raise InputTypeError(f"a network must be a hier: spec or a file, got {text!r}",
                             item="--network")
    if text.strip().lower().startswith("hier:"):
        from ..topology.spec import parse_dims

        dims = parse_dims(text)
        blocks = []
        for kind, size in dims:
            if kind not in _BLOCKS:
                raise InputError(f"LIBRA dimensions are ring, fc or switch, got {kind!r}",
                                 item=f"dimension '{kind}'")
            blocks.append((_BLOCKS[kind], size))
    else:
        from ..topology.io import read_mapping

        p = Path(text)
        doc = read_mapping(p)
        if not isinstance(doc, dict):
            raise InputError(f"{p}: a LIBRA network file is a mapping", item=str(p))
        for key in ("Topology", "NpusCount"):
            if not isinstance(doc.get(key), list):
                raise InputError(f"{p}: field {key!r} must be a list", item=f"field '{key}'")
        if len(doc["Topology"]) != len(doc["NpusCount"]):
            raise InputError(f"{p}: Topology and NpusCount differ in length",
                             item="field 'NpusCount'")
        blocks = [(str(b), n) for b, n in zip(doc["Topology"], doc["NpusCount"], strict=True)]
        if cost_classes is None and isinstance(doc.get("CostDimension"), list):
            cost_classes = [str(c) for c in doc["CostDimension"]]
    D = len(blocks)
    if cost_classes is None:
        if D > len(COST_CLASSES):
            raise InputError(f"{D} dimensions need explicit cost classes", item="cost classes")
        cost_classes = COST_CLASSES[len(COST_CLASSES) - D:]
    if len(cost_classes) != D:
        raise InputError(f"{len(cost_classes)} cost classes for {D} dimensions",
                         item="cost classes")
    return LibraNetwork(tuple(LibraDim(b, n, c) for (b, n), c in
                              zip(blocks, cost_classes, strict=True)))


@dataclass(frozen=True)
class LibraCollective:
    """One collective of a workload: kind, bytes, NPUs used per dimension (``-1`` or 1:
    not used), and how many times it runs per iteration."""

    kind: str
    size: float
    comm: tuple[int, ...]
    count: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in ("allreduce", "reduce_scatter", "allgather", "alltoall"):
            raise InputError(f"collective must be allreduce, reduce_scatter, allgather or "
                             f"alltoall, got {self.kind!r}", item=f"collective '{self.kind}'")


@dataclass(frozen=True)
class Workload:
    """Collectives of one iteration and the compute time they do not overlap with."""

    collectives: tuple[LibraCollective, ...]
    compute_s: float
    name: str = ""


def dimension_traffic(kind: str, size: float, comm: Sequence[int]) -> np.ndarray:
    """Bytes per NPU on each dimension for one collective (section 5.3)."""
    c = [x if x and x > 1 else 1 for x in comm]
    out = np.zeros(len(c))
    if kind in ("allreduce", "reduce_scatter"):
        m = float(size)
        for i, ci in enumerate(c):
            if ci > 1:
                out[i] = (2 if kind == "allreduce" else 1) * m * (ci - 1) / ci
                m /= ci
    elif kind == "allgather":
        m = float(size)
        for i in reversed(range(len(c))):
            if c[i] > 1:
                out[i] = m * (c[i] - 1)
                m *= c[i]
    elif kind == "alltoall":
        for i, ci in enumerate(c):
            if ci > 1:
                out[i] = size * (ci - 1) / ci
    else:
        raise InputError(f"unknown collective {kind!r}", item=f"collective '{kind}'")
    return out


def _classes(net: LibraNetwork, w: Workload) -> np.ndarray:
    """Traffic (GB per NPU) per class of collectives with proportional traffic vectors:
    rows are classes, columns dimensions (their times add as ``max_i row_i / B_i``)."""
    D = len(net.dims)
    acc: dict[tuple, np.ndarray] = {}
    for c in w.collectives:
        if len(c.comm) != D:
            raise InputError(f"communicator {list(c.comm)} has {len(c.comm)} entries for "
                             f"{D} dimensions", item="communicator")
        for i, (x, d) in enumerate(zip(c.comm, net.dims, strict=True)):
            if x > d.size:
                raise InputError(f"communicator uses {x} NPUs of dimension {i} of size "
                                 f"{d.size}", item=f"dimension {i}")
        t = dimension_traffic(c.kind, c.size, c.comm) * c.count / GB
        if not t.any():
            continue
        key = tuple(np.round(t / t.max(), 12))
        acc[key] = acc.get(key, 0) + t
    return np.array(list(acc.values())) if acc else np.zeros((0, D))


def collective_time(kind: str, size: float, comm: Sequence[int],
                    bandwidth_GBps: Sequence[float]) -> float:
    """Seconds: the slowest dimension's traffic over its bandwidth."""
    t = dimension_traffic(kind, size, comm) / GB
    b = np.asarray(bandwidth_GBps, float)
    return float(max((t[i] / b[i] for i in range(len(t)) if t[i] > 0), default=0.0))


def iteration_time(net: LibraNetwork, w: Workload, bandwidth_GBps: Sequence[float]) -> float:
    """Seconds of one iteration (compute plus every collective, no overlap)."""
    b = np.asarray(bandwidth_GBps, float)
    S = _classes(net, w)
    with np.errstate(divide="ignore"):
        comm = sum(float(np.max(np.where(row > 0, row / b, 0.0))) for row in S)
    return w.compute_s + comm


def cost(net: LibraNetwork, bandwidth_GBps: Sequence[float]) -> float:
    """Dollars: ``N * sum_i kappa_i B_i``."""
    return float(net.npus * net.kappa() @ np.asarray(bandwidth_GBps, float))


def equal_split(net: LibraNetwork, total_GBps: float) -> list[float]:
    """The same bandwidth in every dimension, ``total / D`` each."""
    return [total_GBps / len(net.dims)] * len(net.dims)


_TERM = re.compile(r"\s*([+-]?)\s*(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)?\s*\*?\s*(B\d+|cost)?\s*")


def parse_constraint(text: str, dims: int) -> tuple[np.ndarray, float, str, float]:
    """``"B0 + 2*B1 - B3 <= 400"`` or ``"cost <= 3e7"`` as ``(a, c, op, rhs)`` meaning
    ``a @ B + c * cost op rhs`` with ``op`` one of ``<=``, ``>=``, ``==``.

    Raises
    ------
    InputError
        Naming the constraint and what is wrong with it.
    """
    if not isinstance(text, str):
        raise InputTypeError(f"a constraint must be a string, got {text!r}",
                             item="--constraint")
    m = re.fullmatch(r"(.+?)(<=|>=|==)(.+)", text.strip())
    if not m:
        raise InputError(f"constraint {text!r} needs <=, >= or ==", item=f"constraint '{text}'")
    sides = []
    for side in (m.group(1), m.group(3)):
        a = np.zeros(dims)
        c = const = 0.0
        pos = 0
        s = side.strip()
        if not s:
            raise InputError(f"constraint {text!r} has an empty side",
                             item=f"constraint '{text}'")
        while pos < len(s):
            t = _TERM.match(s, pos)
            if not t or t.end() == pos or not (t.group(2) or t.group(3)):
                raise InputError(f"constraint {text!r}: cannot read {s[pos:]!r}",
                                 item=f"constraint '{text}'")
            sign = -1.0 if t.group(1) == "-" else 1.0
            coef = sign * (float(t.group(2)) if t.group(2) else 1.0)
            var = t.group(3)
            if var is None:
                const += coef
            elif var == "cost":
                c += coef
            else:
                i = int(var[1:])
                if i >= dims:
                    raise InputError(f"constraint {text!r}: {var} but the network has {dims} "
                                     f"dimensions (B0..B{dims - 1})", item=f"constraint '{text}'")
                a[i] += coef
            pos = t.end()
            if pos < len(s) and s[pos] not in "+-":
                raise InputError(f"constraint {text!r}: cannot read {s[pos:]!r}",
                                 item=f"constraint '{text}'")
        sides.append((a, c, const))
    (a1, c1, k1), (a2, c2, k2) = sides
    return a1 - a2, c1 - c2, m.group(2), k2 - k1


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

    def to_dict(self) -> dict:
        return {"objective": self.objective, "status": self.status,
                "bandwidth_GBps": list(self.bandwidth_GBps), "time_s": self.time_s,
                "cost_usd": self.cost_usd, "equal_split_time_s": self.equal_split_time_s,
                "equal_split_cost_usd": self.equal_split_cost_usd,
                "speedup_over_equal_split": self.equal_split_time_s / self.time_s
                if self.time_s else None, "topology": self.spec, "solves": self.solves}


def _program(net: LibraNetwork, w: Workload, constraints: Sequence[str], *,
             min_bw: float, max_cost: float | None, max_time: float | None,
             minimize: str):
    """The convex program in scaled units: bandwidths and traffic divided by ``sigma``
    (the largest per-NPU traffic of a class, in GB), so that the solver sees numbers near
    1 (unscaled, Clarabel stalls at "optimal_inaccurate" on some of LIBRA's cases); times
    are unchanged by the scaling. Returns the problem and the bandwidths in GB/s."""
    import cvxpy as cp

    D = len(net.dims)
    S = _classes(net, w)
    sigma = float(min(max(S.max(), 1e-3), 1e6)) if S.size and S.max() > 0 else 1.0
    Bs = cp.Variable(D, pos=True)
    kap = net.npus * net.kappa()
    cost_s = kap @ Bs                       # dollars / sigma
    cons = [Bs >= min_bw / sigma]
    terms = []
    if len(S) and (minimize == "time" or max_time is not None):
        u = cp.Variable(len(S))
        for k, row in enumerate(S):
            for i in range(D):
                if row[i] > 0:
                    cons.append(u[k] >= (row[i] / sigma) * cp.inv_pos(Bs[i]))
        terms = [cp.sum(u)]
    comm = terms[0] if terms else 0.0
    for text in constraints:           # each row scaled to a largest coefficient of 1
        a, c, op, rhs = parse_constraint(text, D)
        row = a + c * kap
        norm = float(np.max(np.abs(row))) or 1.0
        expr = (row / norm) @ Bs
        r = rhs / sigma / norm
        cons.append({"<=": expr <= r, ">=": expr >= r, "==": expr == r}[op])
    if max_cost is not None:
        norm = float(kap.max())
        cons.append((kap / norm) @ Bs <= max_cost / sigma / norm)
    if max_time is not None:
        cons.append(comm <= max_time - w.compute_s)
    if minimize == "time":
        obj = cp.Minimize(comm)
    else:                                    # cost, normalized by its value at B = sigma
        obj = cp.Minimize(cost_s / float(kap.sum()))
    return cp.Problem(obj, cons), _Scaled(Bs, sigma)


class _Scaled:
    """The bandwidth variable in GB/s (``value``) behind its scaled solver variable."""

    def __init__(self, var, sigma: float) -> None:
        self.var, self.sigma = var, sigma

    @property
    def value(self):
        v = self.var.value
        return None if v is None else np.asarray(v, float) * self.sigma


def _solve_program(prob, B, constraints) -> np.ndarray:
    import warnings

    import cvxpy as cp

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # the status is checked below
            prob.solve(solver=cp.CLARABEL, max_iter=2000)
    except cp.error.SolverError as e:   # pragma: no cover - numerical trouble
        raise InfeasibleError(f"the solver failed: {e}") from None
    if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        raise InfeasibleError("no allocation satisfies the constraints: "
                              + "; ".join(constraints or ["(bounds only)"]))
    runaway = B.value is not None and float(np.max(B.value)) > 1e7   # 10 PB/s per NPU
    if prob.status in (cp.UNBOUNDED, cp.UNBOUNDED_INACCURATE) or (
            prob.status != cp.OPTIMAL and runaway):
        raise InputError("the problem is unbounded: constrain the total bandwidth or the "
                         "cost (e.g. --constraint 'B0 + B1 + B2 == 500')", item="--constraint")
    if prob.status != cp.OPTIMAL:
        raise InfeasibleError(f"the solver stopped with status {prob.status!r}; not accepted")
    return np.maximum(np.asarray(B.value, float), 0.0)


def _check_bounded(net: LibraNetwork, w: Workload, cons: Sequence[str],
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
    used = np.flatnonzero(_classes(net, w).sum(axis=0) > 0)
    for i in used:
        obj = np.zeros(D)
        obj[i] = -1.0
        r = linprog(obj, A_ub=np.array(A_ub) if A_ub else None, b_ub=b_ub or None,
                    A_eq=np.array(A_eq) if A_eq else None, b_eq=b_eq or None,
                    bounds=[(0, None)] * D, method="highs")
        if r.status == 3:
            raise InputError(f"nothing limits B{i}: constrain the bandwidth or the cost "
                             f"(e.g. --constraint 'B0 + ... == 500' or --budget)",
                             item="--constraint")


def solve(net: LibraNetwork, workload: Workload, *, objective: str = "perf",
          constraints: Sequence[str] = (), budget: float | None = None,
          time_target: float | None = None, min_bw: float = 1e-3,
          rtol: float = 1e-6) -> LibraResult:
    """The optimal allocation for ``objective`` (``perf``, ``perf-per-cost`` or
    ``min-cost``) under ``constraints`` (strings, see :func:`parse_constraint`), a dollar
    ``budget`` and, for ``min-cost``, ``time_target`` seconds.

    Raises
    ------
    InfeasibleError
        Naming the constraints when nothing satisfies them, or when the solver does not
        report an optimal solution.
    """
    if objective not in OBJECTIVES:
        raise InputError(f"objective must be one of {', '.join(OBJECTIVES)}, got "
                         f"{objective!r}", item="--objective")
    cons = list(constraints)
    solves = 1
    if objective != "min-cost":
        _check_bounded(net, workload, cons, budget)
    if objective == "perf":
        prob, B = _program(net, workload, cons, min_bw=min_bw, max_cost=budget,
                           max_time=None, minimize="time")
        b = _solve_program(prob, B, cons)
    elif objective == "min-cost":
        if time_target is None:
            raise InputError("min-cost needs a time target (--time-target)",
                             item="--time-target")
        prob, B = _program(net, workload, cons, min_bw=min_bw, max_cost=budget,
                           max_time=time_target, minimize="cost")
        b = _solve_program(prob, B, cons)
    else:
        b, solves = _perf_per_cost(net, workload, cons, budget, min_bw, rtol)
    T = iteration_time(net, workload, b)
    total = float(np.sum(b))
    eq = equal_split(net, total)
    return LibraResult(objective, "optimal", tuple(float(x) for x in b), T, cost(net, b),
                       iteration_time(net, workload, eq), cost(net, eq), net.spec(b), solves)


def _range(net, w, cons, budget, min_bw, slow: float) -> tuple[float, float, float, int]:
    """(cheapest cost, cost of the cheapest allocation at most ``slow`` times slower than
    the fastest, cost of the fastest) and the solves used."""
    prob, B = _program(net, w, cons, min_bw=min_bw, max_cost=budget, max_time=None,
                       minimize="cost")
    cheapest = cost(net, _solve_program(prob, B, cons))
    prob, B = _program(net, w, cons, min_bw=min_bw, max_cost=budget, max_time=None,
                       minimize="time")
    fast = _solve_program(prob, B, cons)
    t_fast, c_fast = iteration_time(net, w, fast), cost(net, fast)
    prob, B = _program(net, w, cons, min_bw=min_bw, max_cost=budget,
                       max_time=w.compute_s + slow * (t_fast - w.compute_s),
                       minimize="cost")
    c_slow = cost(net, _solve_program(prob, B, cons))
    return cheapest, c_slow, max(c_fast, c_slow * (1 + _EDGE)), 3


def _perf_per_cost(net, w, cons, budget, min_bw, rtol) -> tuple[np.ndarray, int]:
    """The minimum of ``C * T*(C)`` over cost levels ``C`` (see the module docstring).

    The search interval is proved to hold the minimum: below the cost ``c_slow`` of the
    cheapest allocation whose communication is ``K`` times the fastest's, every product is
    at least ``cheapest * K * comm_fast``; ``K`` grows tenfold until that exceeds the
    fastest allocation's product. In the interval: a grid of ``GRID`` log-spaced levels,
    then golden-section refinement around the best of them to ``rtol`` in ``log C``.
    """
    solves = 0

    def at(C: float) -> tuple[float, np.ndarray]:
        nonlocal solves
        prob, B = _program(net, w, cons, min_bw=min_bw, max_cost=C, max_time=None,
                           minimize="time")
        b = _solve_program(prob, B, cons)
        solves += 1
        return cost(net, b) * iteration_time(net, w, b), b

    K = 100.0
    while True:
        cheapest, lo, hi, n = _range(net, w, cons, budget, min_bw, K)
        solves += n
        f_fast = at(hi)
        comm_fast = f_fast[0] / hi - w.compute_s
        if cheapest * (w.compute_s + K * comm_fast) >= f_fast[0] or K >= 1e6:
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
    best = min([*vals, f1, f2, f_fast], key=lambda x: x[0])
    return best[1], solves


def pareto(net: LibraNetwork, workload: Workload, *, points: int = 50,
           constraints: Sequence[str] = (), min_bw: float = 1e-3,
           slowest: float = 10.0) -> list[tuple[float, float, tuple]]:
    """``points`` optimal (cost, time, bandwidths), cost levels spaced evenly on a log
    scale from the cheapest allocation whose communication takes ``slowest`` times the
    fastest's to the fastest allocation; each is a convex solve."""
    cons = list(constraints)
    _check_bounded(net, workload, cons, None)
    _, lo, hi, _ = _range(net, workload, cons, None, min_bw, slowest)
    out = []
    for C in np.geomspace(lo, hi, points):
        prob, B = _program(net, workload, cons, min_bw=min_bw, max_cost=float(C),
                           max_time=None, minimize="time")
        b = _solve_program(prob, B, cons)
        out.append((cost(net, b), iteration_time(net, workload, b), tuple(b)))
    return out
