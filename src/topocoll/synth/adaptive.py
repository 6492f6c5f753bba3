"""Topology-adaptive allreduce (INFOCOM'21 style): per-worker trees, overlapped stages.

Every worker roots trees; each tree aggregates (reduce, up an in-tree) and then
broadcasts (down an out-tree) its own partition, sized in proportion to the tree's rate
(a class of multiplicity ``m`` out of ``k`` per root carries ``m/k`` of the root's
block). Aggregation and broadcast are **overlapped**: the broadcast of batch ``b``
starts as soon as its aggregation reaches the root, so both pipelines run at once and
share every arc (the joint per-arc load is what each step pays) and only one pipeline
fill is paid instead of two.

Forests:

- ``exact`` (edge splitting applies): the optimal packings of
  :mod:`topocoll.optimum.packing` (in-trees from the reversed graph), at the exact cut
  optimum.
- ``mwu`` (any topology, e.g. switches whose in- and out-capacity differ under
  background contention): Garg-Könemann multiplicative weights. Each round, every
  worker adds its minimum-length spanning arborescence over shortest switch paths
  (Chu-Liu/Edmonds on the metric closure); arc lengths grow as ``exp(eps * load / c)``.
  The rate is scaled to the most loaded arc; :func:`mwu_gap` reports the ratio to the
  exact cut bound, which still holds.

References
----------
.. [1] Zhang, Wu and Li, "Near-Optimal Topology-adaptive Parameter Synchronization in
   Distributed DNN Training", IEEE INFOCOM 2021.
.. [2] Garg and Könemann, "Faster and simpler algorithms for multicommodity flow and
   other fractional packing problems", SIAM J. Comput. 37(2), 2007.
.. [3] Edmonds, "Optimum branchings", J. Res. NBS 71B, 1967.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ..collective import allgather, allreduce, reduce_scatter
from ..errors import NotSupportedError, OverBudgetError
from ..numeric import exp, log
from ..optimum.maxflow import capacity_graph
from ..optimum.packing import Packing, TreeClass, eulerian_reason, optimal_packing
from ..schedule import Schedule, overlay, reverse
from ..topology import Topology
from ._common import DEFAULT_SIZE, require, resolve_group
from .forest_rows import (
    CHUNK_BUDGET,
    TRANSFER_BUDGET,
    build_rows,
    bundle_bandwidth,
    choose_batches,
    quantum,
    tree_rows,
)
from .free_partition import FREE_BUDGET, free_partition_allreduce

__all__ = ["topology_adaptive_allreduce", "mwu_packing", "mwu_gap", "MWU_ROUNDS", "MWU_GAP",
           "MWU_WORK"]

#: Most rounds of the multiplicative-weights packing (trees per worker).
MWU_ROUNDS = 96
#: The fallback stops at the first round within this factor of the exact cut optimum.
MWU_GAP = 1.01
#: Work budget of the automatic fallback to the multiplicative-weights packing when the
#: exact packing is over its own budget, in ``MWU_ROUNDS x N^3`` (an arborescence over
#: the members' complete digraph per root per round). About 30 us per unit on 2 cores
#: (11 s for 16 ranks on ``dgx:2``, 47 s for 32 on ``dgx-h100:4``): the default admits
#: 16 ranks.
MWU_WORK = 400_000


def mwu_packing(topology: Topology, ranks: Sequence[int] | None = None, *,
                reverse: bool = False, rounds: int = MWU_ROUNDS, eps: float = 0.5,
                gap: float | None = None) -> Packing:
    """Near-optimal spanning-tree packing by multiplicative weights (any topology).

    Returns a :class:`~topocoll.optimum.packing.Packing` with ``R <= rounds`` unit
    trees per member (identical trees merged into classes); arcs are shortest switch
    paths. Its allgather time is ``(M/N) * max_e load_e / (R * c_e)``, see
    :func:`mwu_gap`.

    Parameters
    ----------
    rounds : int
        Most rounds (each adds one tree per member).
    eps : float
        Step of the weights: an arc's length grows by ``exp(eps / c_e)`` per tree on it.
    gap : float, optional
        Stop after the first round whose packing is within ``gap`` (>= 1) of the exact
        cut optimum (:func:`~topocoll.optimum.maxflow.allgather_optimum`, a true lower
        bound, so the stop is certified). Default: run all ``rounds``.

    Notes
    -----
    Lengths are kept as logarithms and normalized to the longest arc before each
    shortest-path pass, so long runs neither overflow nor lose arcs to underflow.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> p = mwu_packing(ring(4, bandwidth=1.0), rounds=4)
    >>> p.per_root[0], sum(t.mult for t in p.trees if t.root == 0)
    (4, 4)
    >>> q = mwu_packing(ring(4, bandwidth=1.0), rounds=50, gap=1.0)   # stops early
    >>> q.per_root[0], mwu_gap(ring(4, bandwidth=1.0), q)
    (2, 1.0)
    """
    import networkx as nx
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    require(isinstance(rounds, int) and rounds >= 1, f"rounds must be >= 1, got {rounds!r}")
    require(gap is None or gap >= 1, f"gap must be >= 1, got {gap!r}")
    g = capacity_graph(topology, ranks)
    if reverse:
        g = g.reversed()
    V = list(g.members)
    n = g.num_nodes
    cap = np.array(g.cap, dtype=float)
    src, dst = g.src, g.dst
    loglen = -log(cap)
    load = np.zeros(len(cap))
    arc_of = {(int(u), int(v)): i for i, (u, v) in enumerate(zip(src, dst, strict=True))}
    found: dict[int, Counter] = {r: Counter() for r in V}
    if gap is not None:
        from ..optimum.maxflow import allgather_optimum

        x = allgather_optimum(topology, ranks, reverse=reverse).value * g.unit  # as mwu_gap
    done = 0
    for _ in range(rounds):
        for r in V:
            length = exp(np.maximum(loglen - loglen.max(), -700.0))
            m = csr_matrix((length, (src, dst)), shape=(n, n))
            dist, pred = dijkstra(m, directed=True, indices=V, return_predecessors=True)
            G = nx.DiGraph()
            for i, u in enumerate(V):
                for v in V:
                    if v != u and v != r and np.isfinite(dist[i, v]):
                        G.add_edge(u, v, weight=float(dist[i, v]))
            tree = nx.minimum_spanning_arborescence(G, attr="weight", preserve_attrs=False)
            arcs = []
            for u, v in nx.bfs_edges(tree, r):
                i = V.index(u)
                path = [v]
                while path[-1] != u:
                    path.append(int(pred[i, path[-1]]))
                path = tuple(reversed(path))
                arcs.append((u, v, path))
                for a, b in zip(path, path[1:], strict=False):
                    e = arc_of[a, b]
                    load[e] += 1
                    loglen[e] += eps / cap[e]
            found[r][tuple(arcs)] += 1
        done += 1
        if gap is not None and (load / cap).max() / done <= float(x) * gap:
            break
    classes = tuple(TreeClass(r, m, tuple((u, v, ((path, m),)) for u, v, path in arcs))
                    for r in V for arcs, m in found[r].items())
    scale = Fraction(int(np.ceil((load / cap).max() * 10**6)), 10**6)
    return Packing(max(1, math.ceil(scale)), {r: done for r in V}, classes, g.unit, 0)


def mwu_gap(topology: Topology, packing: Packing, ranks: Sequence[int] | None = None, *,
            reverse: bool = False) -> float:
    """Time of ``packing`` over the exact allgather optimum (>= 1; 1 is optimal).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> round(mwu_gap(ring(4), mwu_packing(ring(4), rounds=8)), 6) >= 1
    True
    """
    from ..optimum.maxflow import allgather_optimum

    g = capacity_graph(topology, ranks)
    caps = {(int(u), int(v)): c for u, v, c in zip(g.src, g.dst, g.cap, strict=True)}
    if reverse:
        caps = {(v, u): c for (u, v), c in caps.items()}
    k = max(packing.per_root.values())
    worst = max(Fraction(l, caps[a]) for a, l in packing.arc_loads().items())
    x = allgather_optimum(topology, ranks, reverse=reverse).value * g.unit
    return float(worst / k / x)


def _forests(topology: Topology, group: tuple[int, ...], method: str):
    if method == "auto":
        method = "exact" if eulerian_reason(capacity_graph(topology, group)) is None else "mwu"
    if method == "exact":
        try:
            return (optimal_packing(topology, group, reverse=True),
                    optimal_packing(topology, group), "exact")
        except OverBudgetError as e:
            work = MWU_ROUNDS * len(group) ** 3
            if work > MWU_WORK:
                raise OverBudgetError(f"{e}; the multiplicative-weights packing is estimated "
                                      f"at {work:,} units, over its budget of "
                                      f"{MWU_WORK:,}") from None
            method = "mwu"
        except NotSupportedError:
            method = "mwu"
    require(method == "mwu", f"method must be 'auto', 'exact' or 'mwu', got {method!r}")
    return (mwu_packing(topology, group, reverse=True, rounds=MWU_ROUNDS, gap=MWU_GAP),
            mwu_packing(topology, group, rounds=MWU_ROUNDS, gap=MWU_GAP), "mwu")


def _free_floor(topology: Topology, group: tuple[int, ...]) -> float:
    """A lower bound on the free-partition allreduce's seconds per buffer byte.

    Every tree of the tree LP (:mod:`~topocoll.optimum.treelp`) has ``N - 1`` edges and
    each edge carries its rate one way on a path of at least ``h`` arcs and back on
    another (``h`` the fewest hops between two members), so ``X <= Σ_a c_a / (2 (N - 1)
    h)`` over all arcs. When the fixed forests already reach it, the LP cannot win.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    g = capacity_graph(topology, group)
    n = g.num_nodes
    hops = shortest_path(csr_matrix((np.ones(len(g.src)), (g.src, g.dst)), shape=(n, n)),
                         unweighted=True, indices=list(g.members))[:, list(g.members)]
    h = float(hops[hops > 0].min())
    total = float(sum(g.cap) * g.unit)
    return 2 * (len(group) - 1) * h / total


def _fixed_fluid(topology: Topology, pin: Packing, pout: Packing, n: int) -> float:
    """Seconds per buffer byte of the overlapped fixed-partition forests (joint load)."""
    bw = bundle_bandwidth(topology)
    load: dict[tuple[int, int], float] = {}
    for (a, b), v in pout.arc_loads().items():
        load[a, b] = load.get((a, b), 0.0) + v / max(pout.per_root.values())
    for (a, b), v in pin.arc_loads().items():      # in-trees live on the reversed graph
        load[b, a] = load.get((b, a), 0.0) + v / max(pin.per_root.values())
    return max(v / bw[h] for h, v in load.items()) / n


def topology_adaptive_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                                batches: int | None = None, method: str = "auto",
                                message_bytes: float = DEFAULT_SIZE, alpha: float = 0.0,
                                budget: int | None = None,
                                partition: str = "auto") -> Schedule:
    """Return the overlapped per-worker-tree allreduce.

    Parameters
    ----------
    topology : Topology
        Any topology.
    ranks : sequence of int, optional
        Participants (default all ranks).
    batches : int, optional
        Pipeline depth; default from the alpha-beta model (:func:`choose_batches`).
    method : {'auto', 'exact', 'mwu'}
        Forests: exact packings when edge splitting applies ('auto' then picks them),
        else multiplicative weights.
    message_bytes, alpha, budget
        As for :func:`~topocoll.synth.forest.optimal_allgather` (default budget:
        :data:`~topocoll.synth.forest_rows.TRANSFER_BUDGET` for 'fixed',
        :data:`~topocoll.synth.free_partition.FREE_BUDGET` for 'free').
    partition : {'auto', 'free', 'fixed'}
        'free': the tree-LP optimum with partitions sized by tree rates
        (:func:`~topocoll.synth.free_partition.free_partition_allreduce`); 'fixed':
        every worker owns ``1/N`` (the forests above); 'auto': the one with the smaller
        bandwidth term (fluid seconds per byte, recorded in ``meta``), 'fixed' on ties
        (its trees are shallower). 'auto' skips the tree LP when the fixed forests
        already reach a lower bound on every free-partition schedule
        (:func:`_free_floor`: uniform tori, fully connected), e.g. a 16x16 torus.

    Notes
    -----
    Steps ``0 .. P + D_in - 2`` aggregate batch ``b`` up the in-trees (depth-``d`` arcs
    in step ``b + D_in - d``); the broadcast of batch ``b`` runs down the out-trees
    from step ``b + D_in`` on, overlapping later aggregation steps. ``meta`` records
    the forests used and, for 'mwu', the gap to the exact bound.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> s = topology_adaptive_allreduce(ring(4), batches=4)
    >>> s.collective.kind, s.num_steps, s.meta["partition"], s.meta["forests"]
    ('allreduce', 9, 'fixed', 'exact')
    >>> from topocoll.topology.explicit import from_edges
    >>> t = from_edges([(i, 4, b) for i, b in enumerate([1e9, 8e9, 8e9, 8e9])],
    ...                num_ranks=4, num_switches=1, bidirectional=True)
    >>> topology_adaptive_allreduce(t, batches=4).meta["partition"]   # slow host: a leaf
    'free'
    """
    group = resolve_group(topology, ranks)
    require(len(group) >= 2, "topology_adaptive needs at least two ranks")
    require(partition in ("auto", "free", "fixed"),
            f"partition must be 'auto', 'free' or 'fixed', got {partition!r}")
    if partition == "free":
        return free_partition_allreduce(topology, ranks=group, batches=batches,
                                        message_bytes=message_bytes,
                                        alpha=alpha, budget=budget or FREE_BUDGET)
    pin, pout, used = _forests(topology, group, method)
    free = None
    if partition == "auto":
        fixed = _fixed_fluid(topology, pin, pout, len(group))
        floor = _free_floor(topology, group)
        why = {"fluid_fixed_s_per_B": f"{fixed:.6g}", "free_floor_s_per_B": f"{floor:.6g}"}
    if partition == "auto" and fixed > floor * (1 + 1e-9):
        free = free_partition_allreduce(topology, ranks=group, batches=batches,
                                        message_bytes=message_bytes,
                                        alpha=alpha, budget=budget or FREE_BUDGET)
        rate = float(free.meta["lp_rate_Bps"]) / (1 + float(free.meta["rounding_loss"]))
        why["fluid_free_s_per_B"] = f"{1 / rate:.6g}"
        if 1 / rate < fixed * (1 - 1e-9):
            return free.replace(meta={**free.meta, **why})
    elif partition == "fixed":
        why = {}
    Q = math.lcm(quantum(pin), quantum(pout))
    if partition == "auto" and Q * len(group) > CHUNK_BUDGET:
        # the fixed forests' quantum is over the chunk budget (tree_rows would refuse):
        # the free partitions' rounding has no such quantum
        free = free or free_partition_allreduce(topology, ranks=group, batches=batches,
                                                message_bytes=message_bytes, alpha=alpha,
                                                budget=budget or FREE_BUDGET)
        return free.replace(meta={**free.meta, **why, "fixed_quantum": str(Q)})
    budget = budget or TRANSFER_BUDGET
    if batches is None:
        rows = tree_rows(pout, {r: i * Q for i, r in enumerate(group)}, Q, 1)
        batches = choose_batches(rows, topology, message_bytes / len(group) / Q, alpha=alpha,
                                 budget=budget // 2)
    require(isinstance(batches, int) and batches >= 1, f"batches must be >= 1, got {batches}")
    P = batches
    base = {r: i * Q * P for i, r in enumerate(group)}
    rin, rout = tree_rows(pin, base, Q, P), tree_rows(pout, base, Q, P)
    split = Q * P
    # reversing the in-tree pipeline delivers batch P - 1 to the roots first, so the
    # broadcast takes the batches in that order, starting right after the first arrives
    agg = reverse(build_rows(allgather(group, split=split), rin, P), reduce_scatter(group, split))
    bcast = build_rows(allgather(group, split=split), rout, P, lead=rin.D, flip=True)
    meta = {"partition": "fixed", "batches": str(P), "forests": used, **why}
    if used == "mwu":
        meta["gap_reduce_scatter"] = f"{mwu_gap(topology, pin, group, reverse=True):.4f}"
        meta["gap_allgather"] = f"{mwu_gap(topology, pout, group):.4f}"
    return overlay([agg, bcast], allreduce(group, split=len(group) * split),
                   name="topology_adaptive", meta=meta)
