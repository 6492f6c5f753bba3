"""verify(): check a schedule against its collective and, optionally, a topology."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError, InputTypeError, ScheduleError
from ..schedule import Schedule
from ..topology import Topology
from .semantics import MERSENNE31, Collector, Violation, execute

__all__ = ["verify", "VerificationReport", "EXACT_STATE_LIMIT"]

#: Largest state (bytes) for which ``method='auto'`` uses exact bitsets.
EXACT_STATE_LIMIT = 64 * 2**20


@dataclass(frozen=True)
class VerificationReport:
    """Outcome of :func:`verify`.

    Attributes
    ----------
    ok : bool
        True when no violation was found.
    violations : tuple of Violation
        The first ``max_violations`` violations, in schedule order.
    total_violations : int
        How many were found in all (may exceed ``len(violations)``).
    method : {'exact', 'fingerprint'}
        The set representation used.
    error_probability : float
        Upper bound on the probability that a schedule with a wrong final result was
        accepted: 0 for 'exact'; ``cells / (2**31 - 1)**2`` for 'fingerprint', plus the
        bound of the symmetry claims' check where they were used
        (:func:`~topocoll.verification.semantics.orbit_representatives`).
    checked_cells : int
        Number of final (rank, chunk) cells compared with the postcondition.
    """

    ok: bool
    violations: tuple[Violation, ...]
    total_violations: int
    method: str
    error_probability: float
    checked_cells: int

    def raise_first(self) -> None:
        """Raise the first violation as a :class:`ScheduleError` (no-op when ok)."""
        if self.violations:
            v = self.violations[0]
            raise ScheduleError(v.message, kind=v.kind, step=v.step, transfer=v.transfer,
                                rank=v.rank, chunk=v.chunk)


def verify(schedule: Schedule, topology: Topology | None = None, *, collect: bool = False,
           method: str = "auto", max_violations: int = 1000, seed: int = 0) -> VerificationReport:
    """Check that ``schedule`` implements its collective (and fits ``topology``).

    Symbolic execution of chunk contributions (see :mod:`topocoll.verification.semantics`
    for the rules and the violation kinds). With a topology it also checks that every
    endpoint is a rank of the topology and that explicit paths follow existing links.

    Parameters
    ----------
    schedule : Schedule
    topology : Topology, optional
    collect : bool
        If False (default), raise on the first violation. If True, return a report listing
        up to ``max_violations`` of them.
    method : {'auto', 'exact', 'fingerprint'}
        'exact' tracks contributor sets as bitsets (memory ``ranks * chunks * ceil(p/64) * 8``
        bytes); 'fingerprint' tracks 12-byte multiset fingerprints with a stated error
        bound; 'auto' picks 'exact' when its state fits in :data:`EXACT_STATE_LIMIT`.
    max_violations : int
        Cap on the violations kept in the report.
    seed : int
        Seed of the fingerprint values (results are deterministic for a seed).

    Returns
    -------
    VerificationReport

    Raises
    ------
    ScheduleError
        With ``collect=False``, on the first violation; fields ``kind``, ``step``,
        ``transfer``, ``rank`` and ``chunk`` say where.

    Notes
    -----
    Fingerprint mode detects every violation that exact mode detects during execution,
    except a double count that stays within the number of contributors; such a double
    count either spoils the final result (caught at the final check, up to the stated
    probability) or is later overwritten and has no effect on the result.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> from topocoll.synth import ring_allreduce
    >>> verify(ring_allreduce(ring(8)), ring(8)).ok
    True
    """
    if not isinstance(schedule, Schedule):
        raise InputTypeError(f"schedule must be a Schedule, got {type(schedule).__name__}",
                             item="schedule")
    if topology is not None and not isinstance(topology, Topology):
        raise InputTypeError(f"topology must be a Topology or None, got "
                             f"{type(topology).__name__}", item="topology")
    if method not in ("auto", "exact", "fingerprint"):
        raise InputError(f"method must be 'auto', 'exact' or 'fingerprint', got {method!r}",
                         item="method")
    coll = schedule.collective
    limit = max_violations if collect else 1
    out = Collector(max(1, limit))
    top = max(coll.ranks) + 1
    if topology is not None:
        num_ranks = topology.num_ranks
        if top > num_ranks:
            r = next(x for x in coll.ranks if x >= num_ranks)
            out.add(Violation("bad_rank", f"collective rank {r} is not a rank of topology "
                              f"{topology.name!r} ({num_ranks} ranks)", rank=r))
        _check_paths(schedule, topology, out)
        num_ranks = max(num_ranks, top)
    else:
        num_ranks = max(top, int(schedule.participants().max(initial=-1)) + 1)
    if out.full and not collect:
        _report(out, "exact", 0.0, 0).raise_first()
    exact_bytes = num_ranks * coll.num_chunks * 8 * (1 + max(1, (coll.num_ranks + 63) // 64))
    use_exact = method == "exact" or (method == "auto" and exact_bytes <= EXACT_STATE_LIMIT)
    cells = execute(schedule, num_ranks, use_exact, out, seed, stop_early=not collect)
    prob = 0.0 if use_exact else cells / float(MERSENNE31) ** 2 + out.error_bound
    rep = _report(out, "exact" if use_exact else "fingerprint", prob, cells)
    if not collect:
        rep.raise_first()
    return rep


def _report(out: Collector, method: str, prob: float, cells: int) -> VerificationReport:
    return VerificationReport(out.total == 0, tuple(out.items), out.total, method, prob, cells)


def _check_paths(s: Schedule, topology: Topology, out: Collector) -> None:
    """Every explicit path runs from its transfer's source to its destination over links
    that exist. Checked for all paths at once (hop keys against the sorted link keys); the
    per-transfer loop below only words the violations (it was 45% of a default `train` of
    GPT-3 on 1,024 GPUs when it looked up every hop in Python)."""
    if not s.has_paths:
        return
    ptr = np.asarray(s.path_ptr, dtype=np.int64)
    nodes = np.asarray(s.path_nodes, dtype=np.int64)
    idx = np.flatnonzero(np.diff(ptr))
    if not len(idx):
        return
    n = topology.num_nodes
    bad = (nodes[ptr[idx]] != s.src[idx]) | (nodes[ptr[idx + 1] - 1] != s.dst[idx])
    if len(nodes) > 1:
        starts = np.zeros(len(nodes) + 1, dtype=bool)
        starts[ptr] = True                            # a hop never crosses into a new path
        u, v = nodes[:-1], nodes[1:]
        hop = ~starts[1:-1]
        inside = (u >= 0) & (u < n) & (v >= 0) & (v < n)
        keys = np.unique(topology.link_src.astype(np.int64) * n + topology.link_dst)
        k = np.where(inside, u * n + v, -1)
        pos = np.minimum(np.searchsorted(keys, k), len(keys) - 1)
        missing = hop & ~(inside & (keys[pos] == k))
        if missing.any():
            owner = np.searchsorted(ptr, np.flatnonzero(missing), side="right") - 1
            bad |= np.isin(idx, owner)
    idx = idx[bad]
    steps = np.searchsorted(s.step_ptr, idx, side="right") - 1
    for t, step in zip(idx.tolist(), steps.tolist(), strict=True):
        path = s.path_nodes[s.path_ptr[t]: s.path_ptr[t + 1]].tolist()
        src, dst = int(s.src[t]), int(s.dst[t])
        where = f"step {step}, transfer {src}->{dst}"
        problem = None
        if path[0] != src or path[-1] != dst:
            problem = f"explicit path {path} does not run from {src} to {dst}"
        else:
            for u, v in zip(path, path[1:], strict=False):
                if not (0 <= u < topology.num_nodes and 0 <= v < topology.num_nodes) or \
                        not topology.links_between(u, v):
                    problem = f"explicit path {path} uses hop {u}->{v}, which has no link"
                    break
        if problem:
            out.add(Violation("no_route", f"{where}: {problem}", step, t, src, dst))
            if out.full:
                return
