"""compare_algorithms(): every applicable algorithm, verified, costed and ranked per size."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..collective import make_collective
from ..cost import AlphaBeta, CostModel, lower_bound
from ..errors import NotSupportedError
from ..schedule import Schedule
from ..synth import SYNTHESIZERS, Synthesizer
from ..topology import Topology
from ..verification import verify

__all__ = ["CompareRow", "compare_algorithms", "route_entries", "MAX_ROUTE_ENTRIES"]


@dataclass(frozen=True)
class CompareRow:
    """One algorithm at one message size.

    ``bound_fraction`` is ``bound_s / time_s``: the fraction of the lower bound's speed that
    the schedule reaches (1.0 = provably optimal under the cost model).
    """

    algorithm: str
    collective: str
    size_bytes: float
    time_s: float
    algbw_Bps: float
    busbw_Bps: float
    bound_s: float
    bound_fraction: float
    verified: bool
    steps: int
    transfers: int
    params: dict[str, Any] = field(default_factory=dict)
    model: str = "analytical"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the ``--json`` output of ``topocoll compare``)."""
        return asdict(self)


def _candidates(syn: Synthesizer, topology: Topology, group: tuple[int, ...],
                sizes: Sequence[float]) -> list[dict[str, Any]]:
    out = _grid(syn, group)
    if syn.sized:                        # planned for one size: the largest compared
        out = [{**c, "size": int(max(sizes))} for c in out]
    if syn.name == "optimal" and syn.kind in ("allgather", "reduce_scatter", "allreduce"):
        # the default choice among batches, timed trees (where in reach), spread direct
        # and butterflies: shaped for the largest size, costed at every size like the
        # batched pipelines
        out.append({"pipeline": "auto", "size": int(max(sizes))})
    return out


def _grid(syn: Synthesizer, group: tuple[int, ...]) -> list[dict[str, Any]]:
    """Every combination of ``syn``'s tunables (pipeline depths up to ``4 p``)."""
    if not syn.tunables:
        return [{}]
    p = len(group)
    keys = sorted(syn.tunables)
    values = [[v for v in syn.tunables[k] if not (k == "pipeline" and v > max(1, 4 * p))]
              for k in keys]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


#: Once a tuned schedule has more transfers than this, larger pipeline depths
#: (``batches``) of the same algorithm are not tried (they only multiply the transfers;
#: on a 16x16 torus ``batches=256`` meant 130 million).
MAX_TUNE_TRANSFERS = 2_000_000

#: Default limit on the link traversals that routing one schedule may materialize in
#: :func:`compare_algorithms` (about 2-3 GB of route arrays); see :func:`route_entries`.
MAX_ROUTE_ENTRIES = 10**8


def route_entries(schedule: Schedule, topology: Topology) -> int:
    """Link traversals that routing ``schedule`` materializes under shortest-path routing.

    Cost models route every distinct ``(src, dst)`` pair of a schedule once; the route
    arrays hold one entry per link of each path. This is their size: the sum of hop
    distances over distinct pairs (ECMP and spraying add parallel entries on top).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> from topocoll.synth import direct_allgather, ring_allgather
    >>> route_entries(ring_allgather(ring(8)), ring(8))        # 8 neighbour pairs
    8
    >>> route_entries(direct_allgather(ring(8)), ring(8))      # all 56 pairs, 1-4 hops
    128
    """
    n = topology.num_nodes
    key = schedule.src.astype(np.int64) * n + schedule.dst
    seen = np.zeros(n * n, dtype=bool)
    seen[key] = True
    d = topology.hop_distances().ravel()[np.flatnonzero(seen)]
    return int(d[np.isfinite(d)].sum())


def compare_algorithms(topology: Topology, kind: str, sizes: Sequence[float], *,
                       algorithms: Sequence[str] | None = None, ranks: Sequence[int] | None = None,
                       root: int | None = None, model: CostModel | None = None,
                       progress: Callable[[str], None] | None = None,
                       max_route_entries: float = MAX_ROUTE_ENTRIES,
                       skipped: list[tuple[str, str]] | None = None) -> list[CompareRow]:
    """Synthesize, verify and cost every applicable algorithm for ``kind`` at each size.

    Parameters
    ----------
    topology : Topology
    kind : str
        Collective kind (``allreduce``, ``allgather``...).
    sizes : sequence of float
        Message sizes in bytes (nccl-tests ``size`` convention).
    algorithms : sequence of str, optional
        Restrict to these names (default: all that apply).
    ranks, root : optional
        Subgroup and root (broadcast/reduce).
    model : CostModel, optional
        Defaults to :class:`~topocoll.cost.AlphaBeta`.
    progress : callable, optional
        Called with a short label before each synthesizer runs.
    max_route_entries : float, optional
        Algorithms that were not named in ``algorithms`` and whose schedule would route
        more link traversals than this (:func:`route_entries`; e.g. all-pairs ``direct``
        on a 64x64 torus, 5e8) are skipped instead of exhausting memory. Naming an
        algorithm always costs it. ``math.inf`` disables the limit.
    skipped : list, optional
        If given, receives ``(algorithm, reason)`` for every algorithm not shown: not
        applicable, not supported with these options, or over ``max_route_entries``.

    Returns
    -------
    list of CompareRow
        Sorted by size, then time. Algorithms with tunable options (e.g. pipeline depth)
        appear once per size with the best option for that size in ``params``. An
        algorithm whose schedule fails verification is reported with ``verified=False``
        and is never silently dropped.

    Raises
    ------
    NotSupportedError
        If no algorithm applies (the message lists the reasons).

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> rows = compare_algorithms(ring(8), "allreduce", [2**20], algorithms=["ring"])
    >>> rows[0].algorithm, rows[0].verified
    ('ring', True)
    """
    model = model or AlphaBeta()
    group = tuple(ranks) if ranks is not None else tuple(range(topology.num_ranks))
    want = set(algorithms) if algorithms else None
    syns = [s for s in SYNTHESIZERS if s.kind == kind and (want is None or s.name in want)]
    if want:
        unknown = want - {s.name for s in syns}
        if unknown:
            names = sorted({s.name for s in SYNTHESIZERS if s.kind == kind})
            raise NotSupportedError(f"no algorithm {sorted(unknown)} for {kind}; "
                                    f"available: {', '.join(names)}")
    rows: list[CompareRow] = []
    reasons: list[str] = []
    skipped = skipped if skipped is not None else []
    coll = make_collective(kind, group, 1, root if kind in ("broadcast", "reduce") else None)
    bounds = {n: lower_bound(coll, topology, n).time for n in sizes}
    for syn in syns:
        reason = syn.applies(topology, group)
        if reason:
            reasons.append(f"{syn.name}: {reason}")
            skipped.append((syn.name, reason))
            continue
        if progress:
            progress(syn.name)
        best: dict[float, CompareRow] = {}
        cap_batches = math.inf
        for opts in _candidates(syn, topology, group, sizes):
            if opts.get("batches", 0) > cap_batches:
                continue
            kwargs: dict[str, Any] = dict(opts)
            if ranks is not None:
                kwargs["ranks"] = group
            if kind in ("broadcast", "reduce") and root is not None:
                kwargs["root"] = root
            try:
                sched = syn.func(topology, **kwargs)
            except NotSupportedError as e:
                reasons.append(f"{syn.name}: {e}")
                skipped.append((syn.name, str(e)))
                break
            if want is None and math.isfinite(max_route_entries):
                work = route_entries(sched, topology)
                if work > max_route_entries:
                    why = (f"{sched.num_transfers:,} transfers would route {work:,} link "
                           f"traversals (limit {max_route_entries:,.0f}); name it with "
                           f"-a {syn.name} to cost it anyway")
                    reasons.append(f"{syn.name}: {why}")
                    skipped.append((syn.name, why))
                    break
            if "batches" in opts and sched.num_transfers > MAX_TUNE_TRANSFERS:
                cap_batches = min(cap_batches, opts["batches"])
            ok = verify(sched, topology, collect=True).ok
            if hasattr(model, "evaluate_sizes"):   # one routing and load pass for all sizes
                results = model.evaluate_sizes(sched, topology, sizes)
            else:
                results = [model.evaluate(sched, topology, n) for n in sizes]
            for n, r in zip(sizes, results, strict=True):
                row = CompareRow(syn.name, kind, float(n), r.time, r.algbw, r.busbw, bounds[n],
                                 bounds[n] / r.time if r.time > 0 else 1.0, ok, sched.num_steps,
                                 sched.num_transfers, dict(opts), getattr(model, "name", "model"))
                if n not in best or (row.verified, -row.time_s) > (best[n].verified,
                                                                   -best[n].time_s):
                    best[n] = row
        rows.extend(best.values())
    if not rows:
        raise NotSupportedError(f"no algorithm applies to {kind} on {topology.name}: "
                                + "; ".join(reasons))
    rows.sort(key=lambda r: (r.size_bytes, not r.verified, r.time_s))
    return rows

