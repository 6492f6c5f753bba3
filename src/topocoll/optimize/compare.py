"""compare_algorithms(): every applicable algorithm, verified, costed and ranked per size."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..collective import make_collective
from ..cost import AlphaBeta, CostModel, lower_bound
from ..errors import NotSupportedError
from ..synth import SYNTHESIZERS, Synthesizer
from ..topology import Topology
from ..verification import verify

__all__ = ["CompareRow", "compare_algorithms"]


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


def _candidates(syn: Synthesizer, topology: Topology, p: int) -> list[dict[str, Any]]:
    if not syn.tunables:
        return [{}]
    keys = sorted(syn.tunables)
    values = [[v for v in syn.tunables[k] if not (k == "pipeline" and v > max(1, 4 * p))]
              for k in keys]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


def compare_algorithms(topology: Topology, kind: str, sizes: Sequence[float], *,
                       algorithms: Sequence[str] | None = None, ranks: Sequence[int] | None = None,
                       root: int | None = None, model: CostModel | None = None,
                       progress: Callable[[str], None] | None = None) -> list[CompareRow]:
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
    reasons = []
    coll = make_collective(kind, group, 1, root if kind in ("broadcast", "reduce") else None)
    bounds = {n: lower_bound(coll, topology, n).time for n in sizes}
    for syn in syns:
        reason = syn.applies(topology, group)
        if reason:
            reasons.append(f"{syn.name}: {reason}")
            continue
        if progress:
            progress(syn.name)
        best: dict[float, CompareRow] = {}
        for opts in _candidates(syn, topology, len(group)):
            kwargs: dict[str, Any] = dict(opts)
            if ranks is not None:
                kwargs["ranks"] = group
            if kind in ("broadcast", "reduce") and root is not None:
                kwargs["root"] = root
            try:
                sched = syn.func(topology, **kwargs)
            except NotSupportedError as e:
                reasons.append(f"{syn.name}: {e}")
                break
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

