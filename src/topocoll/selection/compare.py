"""Every applicable algorithm, synthesized, verified and costed: the selection engine.

:func:`evaluate_candidates` is the one loop that turns (collective, topology, sizes) into
evaluated candidates: for each applicable algorithm of :data:`~topocoll.selection.catalog.
ALGORITHMS` and each of its option sets (tunables, size-planned variants), the schedule
(from the :class:`~topocoll.selection.cache.ScheduleCache` when given one), whether it
verifies, and its cost at every size. :func:`compare_algorithms` keeps the best option
set per algorithm and size as display rows (``topocoll compare``, the demo);
:func:`~topocoll.selection.choose.choose` ranks them at one size and keeps the schedules.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..collective import Collective, make_collective
from ..cost import AlphaBeta, CostModel, SimResult, routed_pairs
from ..errors import NotSupportedError, OverBudgetError
from ..optimum import lower_bound
from ..schedule import Schedule
from ..synth import Synthesizer
from ..topology import Topology
from ..topology.symmetry import pair_hops
from ..verification import verify
from .cache import ScheduleCache
from .catalog import ALGORITHMS, synthesize
from .nccl import is_nccl_name, nccl_evaluate

__all__ = ["CompareRow", "Evaluated", "compare_algorithms", "evaluate_candidates",
           "route_entries", "all_pairs_route_entries", "MAX_ROUTE_ENTRIES",
           "MAX_TUNE_TRANSFERS", "PAIRS_PER_BLOCK"]


@dataclass(frozen=True)
class CompareRow:
    """One algorithm at one message size.

    ``bound_s`` is the strongest proven lower bound (:func:`topocoll.optimum.lower_bound`,
    the figure ``topocoll bound`` prints) and ``bound_fraction`` is ``bound_s / time_s``:
    the fraction of the bound's speed the schedule reaches, never above 1 for a verified
    schedule (1.0 = provably optimal under the cost model). ``topology`` is the fabric's
    full canonical spec.
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
    topology: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the ``--json`` output of ``topocoll compare``)."""
        return asdict(self)


def _candidates(syn: Synthesizer, topology: Topology, group: tuple[int, ...],
                sizes: Sequence[float]) -> list[dict[str, Any]]:
    out = _grid(syn, group)
    if syn.sized:                        # planned for one size: the largest compared
        out = [{**c, "message_bytes": int(max(sizes))} for c in out]
    return out + [{**c, "message_bytes": int(max(sizes))} for c in syn.extra]


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
    keys = routed_pairs(schedule, n)
    d = pair_hops(topology, keys // n, keys % n)
    return int(d[np.isfinite(d)].sum())


#: Node pairs whose hop distances :func:`all_pairs_route_entries` looks up at once.
PAIRS_PER_BLOCK = 1 << 22


def all_pairs_route_entries(topology: Topology, group: Sequence[int]) -> int:
    """:func:`route_entries` of a schedule that sends between every ordered pair of
    distinct members of ``group`` (``direct``, ``pairwise``), without building it: the
    sum of hop distances over those pairs (unreachable pairs left out), a block of rows
    at a time.

    >>> from topocoll.synth import direct_allgather
    >>> from topocoll.topology import ring
    >>> all_pairs_route_entries(ring(8), range(8))       # as route_entries' example
    128
    >>> route_entries(direct_allgather(ring(8)), ring(8))
    128
    """
    g = np.asarray(list(group), dtype=np.int64)
    n = len(g)
    rows = max(1, PAIRS_PER_BLOCK // max(n, 1))
    total = 0
    for a in range(0, n, rows):
        u = g[a:a + rows]
        d = pair_hops(topology, np.repeat(u, n), np.tile(g, len(u)))
        total += int(d[np.isfinite(d)].sum())
    return total


def _too_many_routes(what: str, work: int, limit: float, name: str) -> str:
    """The reason the routing guard gives for skipping algorithm ``name``."""
    return (f"{what} would route {work:,} link traversals (limit {limit:,.0f}); "
            f"name it with -a {name} to cost it anyway")


@dataclass(frozen=True, eq=False)
class Evaluated:
    """One schedule of one algorithm with one option set, verified and costed.

    Attributes
    ----------
    algorithm : str
    options : dict
        The options it was synthesized with (tunables and ``message_bytes`` for planned ones;
        never ``ranks`` or ``root``, which the collective holds).
    schedule : Schedule
    verified : bool
        Whether it passed :func:`~topocoll.verify` on the topology.
    results : tuple of SimResult
        Its cost at each size, in the order asked.
    """

    algorithm: str
    options: dict[str, Any]
    schedule: Schedule
    verified: bool
    results: tuple[SimResult, ...]


def evaluate_candidates(topology: Topology, collective: Collective, sizes: Sequence[float], *,
                        algorithms: Sequence[str] | None = None,
                        model: CostModel | None = None, cache: ScheduleCache | None = None,
                        progress: Callable[[str], None] | None = None,
                        max_route_entries: float = MAX_ROUTE_ENTRIES,
                        skipped: list[tuple[str, str]] | None = None) -> Iterator[Evaluated]:
    """Yield every applicable algorithm's schedules, verified and costed at ``sizes``.

    Parameters
    ----------
    topology : Topology
    collective : Collective
        Kind, ranks and root; the split is the algorithm's own.
    sizes : sequence of float
        Message sizes in bytes (nccl-tests ``size`` convention).
    algorithms : sequence of str, optional
        Restrict to these names (default: all that apply).
    model : CostModel, optional
        Defaults to :class:`~topocoll.cost.AlphaBeta`.
    cache : ScheduleCache, optional
        Reuse and keep schedules there (default: none).
    progress : callable, optional
        Called with the algorithm's name before it runs.
    max_route_entries : float
        Algorithms not named in ``algorithms`` whose schedule would route more link
        traversals than this (:func:`route_entries`) are skipped.
    skipped : list, optional
        Receives ``(algorithm, reason)`` for every algorithm not evaluated.

    Yields
    ------
    Evaluated
        In the order of the catalog, and within an algorithm in the order of its option
        sets; larger pipeline depths are not tried once a schedule passes
        :data:`MAX_TUNE_TRANSFERS`.

    Raises
    ------
    NotSupportedError
        If ``algorithms`` names one that does not exist for the kind.
    """
    model = model or AlphaBeta()
    kind, group = collective.kind, tuple(collective.ranks)
    whole = group == tuple(range(topology.num_ranks))
    want = set(algorithms) if algorithms else None
    syns = [s for s in ALGORITHMS if s.kind == kind and (want is None or s.name in want)]
    if want:
        unknown = want - {s.name for s in syns}
        if unknown:
            names = sorted({s.name for s in ALGORITHMS if s.kind == kind})
            raise NotSupportedError(f"no algorithm {sorted(unknown)} for {kind}; "
                                    f"available: {', '.join(names)}")
    skipped = skipped if skipped is not None else []
    for syn in syns:
        reason = syn.unsupported(topology, group)
        if reason:
            skipped.append((syn.name, reason))
            continue
        if want is None and math.isfinite(max_route_entries) and syn.all_pairs:
            work = all_pairs_route_entries(topology, group)
            if work > max_route_entries:       # refused before it is built
                skipped.append((syn.name, _too_many_routes(
                    f"every ordered pair of its {len(group):,} ranks", work,
                    max_route_entries, syn.name)))
                continue
        if progress:
            progress(syn.name)
        cap_batches = math.inf
        over_budget, shown = None, False
        for opts in _candidates(syn, topology, group, sizes):
            if opts.get("batches", 0) > cap_batches:
                continue
            kwargs: dict[str, Any] = dict(opts)
            if not whole:
                kwargs["ranks"] = group
            if kind in ("broadcast", "reduce") and collective.root is not None:
                kwargs["root"] = collective.root
            try:
                sched = synthesize(syn, topology, kwargs, cache=cache)
            except OverBudgetError as e:
                # this option set is over a work budget; another (the portfolio's own
                # choice) may not be
                over_budget = over_budget or str(e)
                continue
            except NotSupportedError as e:
                skipped.append((syn.name, str(e)))
                break
            if want is None and math.isfinite(max_route_entries):
                work = route_entries(sched, topology)
                if work > max_route_entries:
                    skipped.append((syn.name, _too_many_routes(
                        f"{sched.num_transfers:,} transfers", work, max_route_entries,
                        syn.name)))
                    break
            if "batches" in opts and sched.num_transfers > MAX_TUNE_TRANSFERS:
                cap_batches = min(cap_batches, opts["batches"])
            if cache is None:
                ok = verify(sched, topology, collect=True).ok
            else:
                ok = cache.verified(sched, topology,
                                    lambda s, t: verify(s, t, collect=True).ok,
                                    made_by=cache.key(syn.name, syn.kind, kwargs, topology))
            results = model.evaluate_sizes(sched, topology, sizes)
            shown = True
            yield Evaluated(syn.name, dict(opts), sched, ok, tuple(results))
            del sched, results    # not held while the next one is synthesized (GiBs at scale)
        if over_budget and not shown:
            skipped.append((syn.name, over_budget))


def compare_algorithms(topology: Topology, kind: str, sizes: Sequence[float], *,
                       algorithms: Sequence[str] | None = None, ranks: Sequence[int] | None = None,
                       root: int | None = None, model: CostModel | None = None,
                       cache: ScheduleCache | None = None,
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
        Restrict to these names (default: all that apply). ``nccl`` and
        ``nccl_<algorithm>`` (:mod:`~topocoll.selection.nccl`) add rows of the NCCL
        model (``model="nccl"``, no schedule, ``verified=False``); they are never part
        of the default.
    ranks, root : optional
        Subgroup and root (broadcast/reduce).
    model : CostModel, optional
        Defaults to :class:`~topocoll.cost.AlphaBeta`.
    cache : ScheduleCache, optional
        Reuse and keep schedules there (the CLI passes the user's cache).
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
    group = tuple(ranks) if ranks is not None else tuple(range(topology.num_ranks))
    coll = make_collective(kind, group, 1, root if kind in ("broadcast", "reduce") else None)
    alpha = float(getattr(model, "alpha", 0.0) or 0.0)
    bounds = {n: lower_bound(coll, topology, n, alpha=alpha).time for n in sizes}
    skipped = skipped if skipped is not None else []
    name = getattr(model or AlphaBeta(), "name", "model")
    best: dict[tuple[str, float], CompareRow] = {}
    named_nccl = [a for a in algorithms or () if is_nccl_name(a)]
    for a, n, e, in_net in nccl_evaluate(topology, kind, sizes, named_nccl, ranks=group):
        b = bounds[n] if in_net is None else in_net
        best[(a, n)] = CompareRow(a, kind, n, e.time, e.algbw, e.busbw, b,
                                  b / e.time if e.time > 0 else 1.0, False, 0, 0,
                                  {"algorithm": e.algorithm, "protocol": e.protocol},
                                  "nccl", topology.name)
    scheduled = [a for a in algorithms or () if not is_nccl_name(a)]
    candidates = (() if named_nccl and not scheduled else
                  evaluate_candidates(topology, coll, sizes, algorithms=scheduled or None,
                                      model=model, cache=cache, progress=progress,
                                      max_route_entries=max_route_entries, skipped=skipped))
    for ev in candidates:
        sched = ev.schedule
        for n, r in zip(sizes, ev.results, strict=True):
            row = CompareRow(ev.algorithm, kind, float(n), r.time, r.algbw, r.busbw, bounds[n],
                             bounds[n] / r.time if r.time > 0 else 1.0, ev.verified,
                             sched.num_steps, sched.num_transfers, dict(ev.options), name,
                             topology.name)
            k = (ev.algorithm, n)
            if k not in best or (row.verified, -row.time_s) > (best[k].verified,
                                                               -best[k].time_s):
                best[k] = row
        del ev, sched             # the generator's next schedule is built without these
    rows = list(best.values())
    if not rows:
        raise NotSupportedError(f"no algorithm applies to {kind} on {topology.name}: "
                                + "; ".join(f"{a}: {why}" for a, why in skipped))
    rows.sort(key=lambda r: (r.size_bytes, not (r.verified or r.model == "nccl"), r.time_s))
    return rows
