"""Topology-adaptive allreduce with free partition sizes (the tree LP optimum, pipelined).

:func:`~topocoll.optimum.treelp.tree_allreduce_lp` gives trees ``T`` with rates
``x_T`` (``X = Σ x_T``); tree ``T`` carries the share ``x_T / X`` of the buffer,
reduces it up and broadcasts it down the *same* tree, rooted at its center (smallest
depth ``D_T``), both stages overlapped. Rates become integer chunk counts ``n_T`` out of
``Q`` chunks per batch (exact when the shares are rationals with a small common
denominator, else largest-remainder rounding with the smallest ``Q`` whose loss is
below :data:`ROUNDING_TARGET`); the loss ``max_a Σ_T n_T u_{a,T} / (Q c_a) · X - 1`` is
reported in ``meta["rounding_loss"]``.

Pipeline: the buffer is ``P`` batches of ``Q`` chunks. Vertex ``v`` at depth ``d`` of
tree ``T`` sends its partial sum of batch ``b`` to its parent in step ``b + D_T - d``
(after all its children, which are deeper) and receives the result of batch ``b`` in
step ``b + D_T + d - 1`` (the root holds it after step ``b + D_T - 1``). In the steady
state every tree edge carries ``n_T`` chunks each way per step, so the bandwidth term
is ``M / X`` up to rounding; ``P`` comes from the alpha-beta model
(:func:`~topocoll.synth.forest_rows.choose_batches`).

References
----------
.. [1] Zhang, Wu and Li, "Near-Optimal Topology-adaptive Parameter Synchronization in
   Distributed DNN Training", IEEE INFOCOM 2021.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ..collective import allreduce
from ..numeric import matmul
from ..optimum.treelp import MAX_ITERATIONS, TreeLP, tree_allreduce_lp
from ..schedule import Op, Schedule, ScheduleBuilder
from ..topology import Topology
from ._common import DEFAULT_SIZE, require, resolve_group
from .forest_rows import CHUNK_BUDGET, TRANSFER_BUDGET, Rows, bundle_bandwidth, choose_batches

__all__ = ["free_partition_allreduce", "tree_lp", "quantize", "ROUNDING_TARGET", "LP_ROUNDS",
           "LP_WORK"]

#: Largest relative bandwidth loss accepted from rounding rates to chunk counts before a
#: larger ``Q`` is tried.
ROUNDING_TARGET = 1e-3
#: Default transfer budget for choosing ``P`` (larger than the forest default: these
#: trees are deeper, so the pipeline fill needs more batches to amortize).
FREE_BUDGET = 8 * TRANSFER_BUDGET
#: Default cap on the column generation's master solves (work, not seconds); the
#: certified gap is reported in ``meta`` if it is hit.
LP_ROUNDS = MAX_ITERATIONS
#: Default cap on the column generation's counted work (each master solve: arcs x
#: trees; :func:`~topocoll.optimum.treelp.tree_allreduce_lp`), 1-3 us per unit on 2
#: cores (more on larger LPs). Measured to optimality: 4.0e6 units for the largest LP of
#: the test suite (16 ranks), 1.06e7 for ``hammingmesh:8x4`` (32 ranks, 14 s), 2.3e7
#: for a dense ``random:16`` (22 s); ``hammingmesh:8x8`` (64 ranks) had not converged
#: after 150 solves and 138 s (gap 1.40). Over the cap the feasible trees found so far
#: are used and ``meta["lp_gap"]`` says how far from the optimum they may be.
LP_WORK = 8_000_000


def tree_lp(topology: Topology, group: tuple[int, ...], rounds: int = LP_ROUNDS,
            work: int | None = LP_WORK) -> TreeLP:
    """:func:`~topocoll.optimum.treelp.tree_allreduce_lp`, memoized on the topology."""
    return topology.memo(("tree_allreduce_lp", group, rounds, work),
                         lambda: tree_allreduce_lp(topology, group, max_iterations=rounds,
                                                   work=work))


def _usage(lp: TreeLP, topology: Topology):
    """Per tree: (arc keys, uses) over the topology's ordered node pairs."""
    out = []
    for tree in lp.trees:
        use: dict[tuple[int, int], int] = {}
        for _, _, p, q in tree:
            for path in (p, q):
                for h in zip(path, path[1:], strict=False):
                    use[h] = use.get(h, 0) + 1
        out.append(use)
    return out


def _matrix(usage, bw):
    keys = sorted({h for use in usage for h in use})
    idx = {h: i for i, h in enumerate(keys)}
    U = np.zeros((len(keys), len(usage)))
    for t, use in enumerate(usage):
        for h, u in use.items():
            U[idx[h], t] = u
    return U / np.array([bw[h] for h in keys])[:, None]


def _loss(n: np.ndarray, W: np.ndarray, X: float) -> float:
    return float(matmul(W, n).max()) / int(n.sum()) * X - 1.0


def quantize(shares: np.ndarray, usage, bw, X: float, qmax: int) -> tuple[np.ndarray, int, float]:
    """Integer chunk counts ``n`` (``Q = Σ n``) for tree ``shares``; returns (n, Q, loss).

    Exact rational shares with a common denominator ``<= qmax`` are used as such.
    Otherwise, for a target ``T`` doubling from the number of trees: ``n = floor(T
    shares)`` (never above the optimal load), then single chunks are added greedily
    where they lower ``max_a load_a / (Q c_a)``; stop at loss <= :data:`ROUNDING_TARGET`
    or ``T > qmax``. ``loss = X max_a Σ_T n_T u_{a,T} / (Q c_a) - 1``.

    Examples
    --------
    >>> import numpy as np
    >>> n, Q, _ = quantize(np.array([0.25, 0.75]), [{(0, 1): 1}, {(1, 0): 1}],
    ...                    {(0, 1): 1.0, (1, 0): 3.0}, 4.0, 64)
    >>> n.tolist(), Q
    ([1, 3], 4)
    """
    W = _matrix(usage, bw)
    fr = [Fraction(float(s)).limit_denominator(qmax) for s in shares]
    Q = math.lcm(*(f.denominator for f in fr))
    if Q <= qmax and all(abs(float(f) - s) <= 1e-9 * max(s, 1e-300)
                         for f, s in zip(fr, shares, strict=True)):
        n = np.array([f.numerator * (Q // f.denominator) for f in fr], dtype=np.int64)
        if n.sum() == Q:
            return n, Q, _loss(n, W, X)
    best = None
    T = 1 << max(0, math.ceil(math.log2(max(len(shares), 1))))
    while True:
        n = np.floor(shares * T).astype(np.int64)
        if not n.any():
            n[np.argmax(shares)] = 1
        load = matmul(W, n)
        for _ in range(len(shares)):
            q = int(n.sum())
            trial = (load[:, None] + W).max(axis=0) / (q + 1)
            t = int(np.argmin(trial))
            if trial[t] >= load.max() / q * (1 - 1e-12):
                break
            n[t] += 1
            load += W[:, t]
        loss = _loss(n, W, X)
        if best is None or loss < best[2] - 1e-15:
            best = (n, int(n.sum()), loss)
        if loss <= ROUNDING_TARGET or 2 * T > qmax:
            return best
        T *= 2


def _root_at_center(tree) -> tuple[int, dict[int, int], dict[int, int], dict]:
    """Root, parent and depth maps, and the paths of each (a, b) tree direction."""
    adj: dict[int, list[int]] = {}
    paths = {}
    for u, v, p, q in tree:
        adj.setdefault(u, []).append(v)
        adj.setdefault(v, []).append(u)
        paths[u, v], paths[v, u] = p, q

    def bfs(s):
        par, dep, order = {s: s}, {s: 0}, [s]
        for x in order:
            for w in adj[x]:
                if w not in dep:
                    par[w], dep[w] = x, dep[x] + 1
                    order.append(w)
        return par, dep, order

    _, _, order = bfs(tree[0][0])
    a = order[-1]
    par, dep, order = bfs(a)
    b = order[-1]
    chain = [b]
    while chain[-1] != a:
        chain.append(par[chain[-1]])
    root = chain[len(chain) // 2]              # the center of a longest path
    par, dep, _ = bfs(root)
    return root, par, dep, paths


def _lp_rows(lp: TreeLP, n: np.ndarray, Q: int):
    src, dst, off, start, count, paths, ops = [], [], [], [], [], [], []
    depths = []
    first = 0
    for tree, k in zip(lp.trees, n, strict=True):
        if not k:
            continue
        root, par, dep, pth = _root_at_center(tree)
        D = max(dep.values())
        depths.append(D)
        for v, p in par.items():
            if v == root:
                continue
            for s_, d_, o, op in ((v, p, D - dep[v] + 1, Op.REDUCE),
                                  (p, v, D + dep[v], Op.COPY)):
                path = pth[s_, d_]
                src.append(s_)
                dst.append(d_)
                off.append(o)
                start.append(first)
                count.append(int(k))
                paths.append(path if len(path) > 2 else None)
                ops.append(int(op))
        first += int(k)
    i64 = np.int64
    rows = Rows(np.array(src, i64), np.array(dst, i64), np.array(off, i64),
                 np.array(start, i64), np.array(count, i64), paths, Q)
    return rows, np.array(ops, np.int8), max(depths)


def _merge(rows: Rows, ops: np.ndarray) -> tuple[np.ndarray, Rows]:
    """Rows of different trees that share endpoints, path, op and step offset run in the
    same step: one transfer each. Returns the group of every row and the merged rows
    (what :func:`~topocoll.synth.forest_rows.choose_batches` counts)."""
    keys: dict = {}
    group = np.array([keys.setdefault((int(rows.src[i]), int(rows.dst[i]), rows.paths[i],
                                       int(rows.depth[i]), int(ops[i])), len(keys))
                      for i in range(len(rows.src))], dtype=np.int64)
    first = np.full(len(keys), -1, dtype=np.int64)
    first[group[::-1]] = np.arange(len(group))[::-1]
    count = np.bincount(group, weights=rows.count, minlength=len(keys)).astype(np.int64)
    merged = Rows(rows.src[first], rows.dst[first], rows.depth[first], rows.start[first],
                   count, [rows.paths[i] for i in first], rows.Q)
    return group, merged


def _emit(b: ScheduleBuilder, rows: Rows, ops: np.ndarray, group: np.ndarray,
          sel: np.ndarray, s: int) -> None:
    """Add the transfers of step ``s`` (rows ``sel``, merged by ``group``)."""
    sel = sel[np.argsort(group[sel], kind="stable")]
    first = rows.start[sel] + (s - (rows.depth[sel] - 1)) * rows.Q
    cnt = rows.count[sel]
    ptr = np.concatenate([[0], np.cumsum(cnt)])
    ids = np.repeat(first - ptr[:-1], cnt) + np.arange(ptr[-1])
    g = group[sel]
    head = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]]))
    tptr = np.concatenate([ptr[head], [ptr[-1]]])
    lead = sel[head]
    paths = [rows.paths[i] for i in lead]
    b.add_many(rows.src[lead], rows.dst[lead], (tptr, ids), ops[lead],
               paths=paths if any(p is not None for p in paths) else None)


def free_partition_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                             batches: int | None = None, message_bytes: float = DEFAULT_SIZE,
                             alpha: float = 0.0, budget: int = FREE_BUDGET,
                             rounds: int = LP_ROUNDS, work: int | None = LP_WORK) -> Schedule:
    """Return the overlapped tree allreduce at the LP optimum with free partition sizes.

    Parameters
    ----------
    topology : Topology
        Any topology (switches forward only).
    ranks : sequence of int, optional
        Participants (default all ranks).
    batches : int, optional
        Pipeline depth ``P``; default from the alpha-beta model for ``message_bytes`` and
        ``alpha`` (:func:`~topocoll.synth.forest_rows.choose_batches`).
    message_bytes, alpha, budget
        As for :func:`~topocoll.synth.forest.optimal_allgather` (default budget
        :data:`FREE_BUDGET`).
    rounds, work : int
        Caps on the column generation's master solves and on its counted work
        (:data:`LP_WORK`; None: none); if one is hit, ``meta["lp_gap"]`` is the
        certified relative gap of the LP solution used.

    Notes
    -----
    ``num_steps = P + 2 max_T D_T - 1``. ``meta`` holds the LP rate ``lp_rate_Bps``
    (``X``), whether it is proved optimal, its gap and iterations, the
    number of trees, ``Q`` and the rounding loss.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = free_partition_allreduce(ring(4), batches=2)
    >>> s.collective.kind, s.meta["lp_optimal"], s.meta["rounding_loss"]
    ('allreduce', 'True', '0')
    """
    group = resolve_group(topology, ranks)
    require(len(group) >= 2, "free_partition needs at least two ranks")
    lp = tree_lp(topology, group, rounds, work)
    bw = bundle_bandwidth(topology)
    usage = _usage(lp, topology)
    N = len(group)
    qmax = max(len(lp.trees), min(4096, CHUNK_BUDGET // (32 * 2 * (N - 1))))
    n, Q, loss = quantize(lp.rates / lp.value, usage, bw, lp.value, qmax)
    rows, ops, D = _lp_rows(lp, n, Q)
    group_of, merged = _merge(rows, ops)
    if batches is None:
        batches = choose_batches(merged, topology, message_bytes / Q, alpha=alpha, budget=budget)
    require(isinstance(batches, int) and batches >= 1, f"batches must be >= 1, got {batches}")
    P = batches
    b = ScheduleBuilder(allreduce(group, split=Q * P))
    for s in range(P + rows.D - 1):
        b.new_step()
        sel = np.flatnonzero((rows.depth - 1 <= s) & (s - (rows.depth - 1) < P))
        if len(sel):
            _emit(b, rows, ops, group_of, sel, s)
    meta = {"partition": "free", "batches": str(P), "chunks_per_batch": str(Q),
            "trees": str(int((n > 0).sum())), "max_depth": str(D),
            "lp_rate_Bps": f"{lp.value:.9g}", "lp_optimal": str(lp.optimal),
            "lp_gap": f"{lp.gap:.3g}", "lp_iterations": str(lp.iterations),
            "rounding_loss": "0" if abs(loss) < 1e-12 else f"{loss:.3g}"}
    return b.build(name="topology_adaptive", meta=meta)
