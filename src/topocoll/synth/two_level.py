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

from ..collective import allreduce, reduce_scatter
from ..errors import NotSupportedError, TopologyError
from ..schedule import Schedule
from ..topology import Link, Topology
from ._common import DEFAULT_SIZE, gather_parts, require, resolve_group
from .two_level_plan import Frame, Plan

__all__ = ["two_level_groups", "two_level_groupings", "two_level_unsupported_reason",
           "two_level_allgather",
           "two_level_reduce_scatter", "two_level_allreduce"]

#: In-group shapes (``relay=`` option): ``off`` (direct exchange), ``on`` (store-and-
#: forward trees of depth two where members are not all one hop apart), ``auto`` (plan
#: both, keep the faster).
RELAYS = ("auto", "on", "off")
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


def _part(topology: Topology, group: tuple[int, ...], groups, message_bytes: float, alpha: float,
          steps: int | None, units: int | None, reverse: bool, relay: str):
    """``(frame, plan)`` of the allgather (``reverse=False``) or of the allgather on the
    reversed graph whose time-reverse is the reduce-scatter; with ``relay='auto'`` the
    faster of the direct and the relayed in-group shape."""
    topo = _reversed(topology) if reverse else topology
    best = None
    for r in ((False, True) if relay == "auto" else (relay == "on",)):
        for rot in (False, True):
            frame = Frame(topo, group, groups, relay=r, rotate=rot)
            if r and not frame.relayed and relay == "auto":
                break                             # nothing to relay (or too deep)
            if rot and best is not None and best[0].period == 1 and not best[0].rotate:
                break                             # one piece per unit already
            plan = Plan(frame, message_bytes, alpha, steps, units)
            if best is None or plan.time(alpha) < best[1].time(alpha):
                best = (frame, plan)
    return best


def _meta(frame: Frame, plan: Plan, suffix: str = "") -> dict[str, str]:
    return {f"groups{suffix}": f"{frame.R}x{frame.h}", f"steps{suffix}": str(plan.steps),
            f"relay{suffix}": "on" if frame.relayed else "off",
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


def _build(topology: Topology, ranks, kind: str, message_bytes: float, alpha: float,
           steps: int | None, units: int | None, groups="auto", relay="auto") -> Schedule:
    from ..schedule import concat, reverse

    group = resolve_group(topology, ranks)
    require(message_bytes > 0 and alpha >= 0, "message_bytes must be > 0 and alpha >= 0")
    require(relay in RELAYS, f"relay must be one of {RELAYS}, got {relay!r}")
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
        parts = {rev: _part(topology, group, gs, message_bytes, alpha, steps, units, rev, relay)
                 for rev in revs}
        if kind == "allreduce":                   # one chunk size for both halves
            U = max(p.units for _, p in parts.values())
            q = math.lcm(*(f.period for f, _ in parts.values()))
            for rev, (f, p) in parts.items():
                f.period = q
                if p.units != U:
                    parts[rev] = (f, Plan(f, message_bytes, alpha, p.steps - p.depth, U))
        t = sum(p.rounded_time + p.steps * (alpha + p.latency) for _, p in parts.values())
        if best is None or t < best[0]:
            best = (t, label, parts)
    _, label, parts = best
    out, meta = [], {"grouping": label}
    for rev, (f, p) in parts.items():
        Q = p.units * f.period
        s = f.schedule(p.cum * f.period, Q, "two_level", {})
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
    message_bytes, alpha : float
        Message size (bytes) and per-step overhead (s) the overlap is planned for.
    steps : int, optional
        Steps that carry rail traffic (the schedule has one more, two with relays);
        default: the fastest up to :data:`MAX_STEPS` steps in all at ``message_bytes`` and
        ``alpha``.
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
    relay : {'auto', 'on', 'off'}
        In-group shape (:data:`RELAYS`, :mod:`~topocoll.synth.two_level_plan`): where
        members of a group are not all one hop apart (MI250 boxes), relay through a
        member in a later step instead of sending over two-hop paths; 'auto' plans both
        and keeps the faster (``meta["relay"]``).

    Raises
    ------
    NotSupportedError
        If the ranks do not form equal groups of at least two, or on a bad option.
    TopologyError
        If ``ranks`` names a rank outside the topology or repeats one, or given
        ``groups`` miss, repeat or add a rank.
"""


def two_level_allgather(topology: Topology, *, ranks: Sequence[int] | None = None,
                        message_bytes: float = DEFAULT_SIZE, alpha: float = 0.0,
                        steps: int | None = None, units: int | None = None,
                        groups: str | Sequence[Sequence[int]] = "auto",
                        relay: str = "auto") -> Schedule:
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
    return _build(topology, ranks, "allgather", message_bytes, alpha, steps, units, groups, relay)


def two_level_reduce_scatter(topology: Topology, *, ranks: Sequence[int] | None = None,
                             message_bytes: float = DEFAULT_SIZE, alpha: float = 0.0,
                             steps: int | None = None, units: int | None = None,
                             groups: str | Sequence[Sequence[int]] = "auto",
                        relay: str = "auto") -> Schedule:
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
    return _build(topology, ranks, "reduce_scatter", message_bytes, alpha, steps, units, groups,
                  relay)


def two_level_allreduce(topology: Topology, *, ranks: Sequence[int] | None = None,
                        message_bytes: float = DEFAULT_SIZE, alpha: float = 0.0,
                        steps: int | None = None, units: int | None = None,
                        groups: str | Sequence[Sequence[int]] = "auto",
                        relay: str = "auto") -> Schedule:
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
    return _build(topology, ranks, "allreduce", message_bytes, alpha, steps, units, groups, relay)


two_level_allgather.__doc__ = two_level_allgather.__doc__.format(params=_PARAMS)
