"""Scale-out fabrics for clusters of real boxes, as they are bought: a fat-tree of
top-of-rack leaves, a rail-optimized Clos, rail-only, and TopoOpt-style direct connect.

Every GPU of a :class:`~.boxes.Box` has one NIC of ``nic_bandwidth``; what joins the NICs
is the scale-out fabric:

- ``fat-tree``: a folded Clos of ``radix``-port switches; the NICs of consecutive boxes
  share a leaf (a top-of-rack switch), as in a general-purpose data center.
- ``rail``: rail-optimized (NVIDIA's SuperPOD): NIC ``k`` of every box of a group of boxes
  goes to the leaf of rail ``k``; the spine joins every leaf.
- ``rail-only`` (Wang, Ghobadi et al., "Rail-only", 2023): every rail is its own Clos and
  nothing joins the rails; traffic between rails crosses the scale-up domain (a route
  through the box's NVSwitch to the GPU of the right rail).
- ``direct``: no switches: port ``k`` of every box is one link of a ring of boxes with
  TopoOpt's TotientPerms jumps (:func:`~.totient.totient_jumps`; even ports give ``+j``,
  odd ports ``-j``), host forwarding through the boxes for everything else.

A Clos is planned by :func:`clos_plan` from its leaves' endpoints: ``radix`` ports per
switch, a leaf has ``down`` endpoint ports and ``up`` uplinks with ``down / up`` the
oversubscription; two tiers while the leaves fit one spine's radix, else three (pods of
``radix / 2`` leaves under aggregation switches, non-blocking above the leaves). The plan
counts the real switches, cables and cabled ports (what :mod:`topocoll.fabric.design`
prices: a leaf cables the uplinks its endpoints need). The
routed topology keeps every leaf but merges the parallel switches of a tier into one node
whose links carry their summed capacity (one spine; one aggregation node per pod and one
core): under ECMP's even split the link loads are the same, and routing stays cheap.

Examples
--------
>>> from .boxes import find_box
>>> p = clos_plan([list(range(i, i + 32)) for i in range(0, 1024, 32)], radix=64)
>>> p.tiers, p.leaves, p.spines, p.cores, p.cables
(2, 32, 16, 0, (1024, 1024, 0))
>>> t = cluster("dgx-h100", 16, "rail", nic_bandwidth=50e9)
>>> t.num_ranks, t.meta["scaleout"]["plans"][0]["tiers"]    # a leaf per rail, a spine
(128, 2)
>>> t.path(0, 9)                                # GPU 0 to GPU 1 of the next box: rail 1
(0, 128, 1, 145, 9)
>>> t = cluster("dgx-h100", 128, "rail-only", nic_bandwidth=50e9)
>>> [p["tiers"] for p in t.meta["scaleout"]["plans"]] == [2] * 8
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..errors import TopologyError
from ._common import (
    DEFAULT_LATENCY,
    cable,
    check_count,
    check_rate,
    check_ratio,
    check_time,
    fmt_num,
    switch_latencies,
    units_in,
)
from .core import Link, Topology

__all__ = ["ClosPlan", "clos_plan", "leaf_ports", "cluster", "cluster_plans", "SCALEOUTS"]

#: Scale-out fabrics of :func:`cluster`.
SCALEOUTS = ("fat-tree", "rail", "rail-only", "direct")


@dataclass(frozen=True)
class ClosPlan:
    """The real switches and cables of one folded Clos.

    Attributes
    ----------
    radix : int
        Ports per switch.
    down, up : int
        Endpoint ports and uplinks per leaf (``up = 0`` for a single switch).
    tiers : int
        1 (one switch), 2 (leaf-spine) or 3 (leaf-aggregation-core).
    leaves, spines, cores, pods : int
        Switches per tier (``spines`` are the aggregation switches of a 3-tier Clos) and
        pods (3 tiers; else 1).
    cables : tuple of int
        Endpoint-leaf, leaf-spine and aggregation-core cables. A leaf cables as many
        uplinks as its endpoints need at the oversubscription (``ceil(endpoints / o)``, at
        most ``up``); the tiers above the leaves are non-blocking.
    leaf_groups : tuple of tuple of int
        The endpoints under each leaf.
    """

    radix: int
    down: int
    up: int
    tiers: int
    leaves: int
    spines: int
    cores: int
    pods: int
    cables: tuple[int, int, int]
    leaf_groups: tuple[tuple[int, ...], ...]

    @property
    def switches(self) -> int:
        """Every switch of the plan."""
        return self.leaves + self.spines + self.cores

    @property
    def ports(self) -> int:
        """Switch ports with a cable in them: one per endpoint, two per leaf-spine and
        per aggregation-core cable."""
        return self.cables[0] + 2 * self.cables[1] + 2 * self.cables[2]

    def leaf_uplinks(self, leaf: int) -> int:
        """The uplinks leaf ``leaf`` cables (0 for a single switch)."""
        if self.tiers == 1:
            return 0
        return min(self.up, math.ceil(len(self.leaf_groups[leaf]) * self.up / self.down
                                      - 1e-9))

    def summary(self) -> dict:
        """The plan without its leaf groups (a JSON record)."""
        d = asdict(self)
        del d["leaf_groups"]
        d["cables"] = list(self.cables)
        return d


def leaf_ports(radix: int, oversubscription: float = 1.0) -> tuple[int, int]:
    """Endpoint ports and uplinks of a ``radix``-port leaf at ``oversubscription``
    (endpoints / uplinks, at most the ratio asked): ``down = floor(radix o / (1 + o))``,
    ``up = radix - down``.

    >>> leaf_ports(64), leaf_ports(64, 3.0)
    ((32, 32), (48, 16))
    """
    r = check_count(radix, "radix", minimum=2)
    o = check_ratio(oversubscription, "oversubscription")
    down = max(1, math.floor(r * o / (1 + o) + 1e-9))
    return down, r - down


def clos_plan(leaf_groups: Sequence[Sequence[int]], *, radix: int = 64,
              oversubscription: float = 1.0) -> ClosPlan:
    """The Clos whose leaves hold ``leaf_groups`` (each at most ``leaf_ports(radix,
    oversubscription)[0]`` endpoints).

    Raises
    ------
    TopologyError
        When a leaf holds more endpoints than its ports, or the leaves need more than three
        tiers of ``radix``-port switches.
    """
    down, up = leaf_ports(radix, oversubscription)
    groups = tuple(tuple(int(x) for x in g) for g in leaf_groups)
    if not groups or max(len(g) for g in groups) > down:
        raise TopologyError(f"a leaf of radix {radix} at oversubscription "
                            f"{fmt_num(oversubscription)} has {down} endpoint ports, "
                            f"{max((len(g) for g in groups), default=0)} asked",
                            item="field 'radix'")
    n_leaves = len(groups)
    ends = sum(len(g) for g in groups)
    if n_leaves == 1:
        return ClosPlan(radix, down, 0, 1, 1, 0, 0, 1, (ends, 0, 0), groups)
    ups = [min(up, math.ceil(len(g) * up / down - 1e-9)) for g in groups]
    n_up = sum(ups)
    if n_leaves <= radix:
        spines = math.ceil(n_up / radix)
        return ClosPlan(radix, down, up, 2, n_leaves, spines, 0, 1, (ends, n_up, 0), groups)
    per_pod = radix // 2
    pods = math.ceil(n_leaves / per_pod)
    if pods > radix:
        raise TopologyError(f"{n_leaves} leaves need more than three tiers of {radix}-port "
                            f"switches (at most {radix * per_pod} leaves)",
                            item="field 'radix'")
    aggs = sum(math.ceil(sum(ups[p * per_pod:(p + 1) * per_pod]) / per_pod)
               for p in range(pods))
    cores = math.ceil(n_up / radix)
    return ClosPlan(radix, down, up, 3, n_leaves, aggs, cores, pods, (ends, n_up, n_up),
                    groups)


def _rail_groups(boxes: int, gpus: int, rails: Sequence[int], down: int) -> list[list[int]]:
    """Leaves of the given rails: NIC ``k`` of ``down`` consecutive boxes each."""
    return [[b * gpus + k for b in range(s, min(boxes, s + down))]
            for k in rails for s in range(0, boxes, down)]


def cluster_plans(gpus: int, boxes: int, scaleout: str, *, radix: int = 64,
                  oversubscription: float = 1.0) -> list[ClosPlan]:
    """The Clos plans of ``boxes`` boxes of ``gpus`` GPUs under ``scaleout``: one for a
    fat-tree or a rail-optimized fabric, one per rail for rail-only, none for direct
    connect."""
    if scaleout not in SCALEOUTS:
        raise TopologyError(f"scaleout must be one of {', '.join(SCALEOUTS)}, got "
                            f"{scaleout!r}", item="field 'scaleout'")
    if scaleout == "direct":
        return []
    down, _ = leaf_ports(radix, oversubscription)
    n = boxes * gpus
    if scaleout == "fat-tree":
        return [clos_plan([range(i, min(n, i + down)) for i in range(0, n, down)],
                          radix=radix, oversubscription=oversubscription)]
    if scaleout == "rail":
        return [clos_plan(_rail_groups(boxes, gpus, range(gpus), down), radix=radix,
                          oversubscription=oversubscription)]
    return [clos_plan(_rail_groups(boxes, gpus, [k], down), radix=radix,
                      oversubscription=oversubscription) for k in range(gpus)]


def _direct_ports(boxes: int, ports: int, block: int) -> list[tuple[int, bool]]:
    """(jump, inside its block) of each port. One block (``block == boxes``): the
    TotientPerms jumps of all boxes (:func:`_direct_jumps`). Blocks of ``block``
    consecutive boxes (TopoOpt's rings per all-reduce group, the data-parallel group of a
    pipeline stage): the last pair of ports joins the blocks (jump ``block``, box ``i`` of
    one block to box ``i`` of the next: the pipeline's neighbours), the others are
    TotientPerms rings inside each block, repeated when the block has fewer rings than
    port pairs."""
    if block == boxes:
        jumps = _direct_jumps(boxes, ports)
        out = []
        for k in range(ports):
            j = jumps[k // 2] if k // 2 < len(jumps) else 1
            sign = 1 if k % 2 == 0 or k // 2 >= len(jumps) else -1
            out.append((sign * j, False))
        return out
    from .totient import totient_jumps

    pairs = ports // 2
    inner: list[int] = []
    if block >= 2 and pairs >= 2:
        cands = sum(1 for k in range(1, block // 2 + 1) if math.gcd(k, block) == 1)
        inner = totient_jumps(block, block, max(1, min(pairs - 1, cands)))
    out = []
    for k in range(ports):
        pair = k // 2
        sign = 1 if k % 2 == 0 else -1
        if inner and pair < pairs - 1:
            out.append((sign * inner[pair % len(inner)], True))
        else:
            out.append((sign * block, False))
    return out


def _direct_jumps(boxes: int, ports: int) -> list[int]:
    """One TotientPerms jump per pair of ports (``+j`` and ``-j``), an odd port left over
    taking jump 1 one way."""
    from .totient import totient_jumps

    pairs = ports // 2
    cands = sum(1 for k in range(1, boxes // 2 + 1) if math.gcd(k, boxes) == 1)
    return totient_jumps(boxes, boxes, min(pairs, cands)) if pairs else []


@units_in
def cluster(box: str, boxes: int, scaleout: str = "rail", *, nic_bandwidth: float | None = None,
            oversubscription: float = 1.0, radix: int = 64, block: int | None = None,
            nvlink_latency: float = DEFAULT_LATENCY, nic_latency: float = DEFAULT_LATENCY,
            switch_latency: float = 0.0, name: str | None = None) -> Topology:
    """Return ``boxes`` of the real box ``box`` (:data:`~.boxes.BOXES`) joined by the
    ``scaleout`` fabric (:data:`SCALEOUTS`, see the module docstring).

    Parameters
    ----------
    nic_bandwidth : float, optional
        Each GPU's NIC (bytes/s per direction); default the box's. Every switch port and
        every direct link runs at it.
    oversubscription : float
        A leaf's endpoint ports over its uplinks (``fat-tree``, ``rail``, ``rail-only``).
    radix : int
        Ports per switch.
    block : int, optional
        ``direct`` only: the boxes of one data-parallel group (consecutive), which get
        their own rings (see :func:`_direct_ports`); default every box in one group.

    Returns
    -------
    Topology
        Node ids: ranks (GPU ``k`` of box ``b`` is ``b * gpus + k``), one scale-up switch per
        box (none for a full-mesh box), the leaves, then the merged upper tiers.
        ``meta``: ``groups`` (each box's ranks), ``box``, ``nic_transport`` and
        ``scaleout`` (kind, oversubscription, radix, NIC rate and each Clos plan's
        :meth:`ClosPlan.summary`; the direct connect's ``jumps``).
    """
    from .boxes import find_box

    b = find_box(box)
    nb = check_count(boxes, "boxes", minimum=1)
    nic = check_rate(b.nic_Bps if nic_bandwidth is None else nic_bandwidth, "nic_bandwidth")
    nv_lat, nic_lat = check_time(nvlink_latency, "nvlink_latency"), check_time(
        nic_latency, "nic_latency")
    g = b.gpus
    n = nb * g
    plans = cluster_plans(g, nb, scaleout, radix=radix, oversubscription=oversubscription)
    links: list[Link] = []
    if b.scale_up == "mesh":
        for bx in range(nb):
            for i in range(bx * g, (bx + 1) * g):
                for j in range(i + 1, (bx + 1) * g):
                    cable(links, i, j, b.nvlink_link_Bps, nv_lat)
        nxt = n
    else:
        for r in range(n):
            cable(links, r, n + r // g, b.nvlink_Bps, nv_lat)
        nxt = n + nb
    meta_plans = [p.summary() for p in plans]
    extra: dict = {}
    if scaleout == "direct":
        if nb < 3:
            raise TopologyError("direct connect needs at least 3 boxes",
                                item="field 'boxes'")
        blk = nb if block is None else check_count(block, "block", minimum=1)
        if nb % blk:
            raise TopologyError(f"block {blk} does not divide {nb} boxes",
                                item="field 'block'")
        for k, (j, within) in enumerate(_direct_ports(nb, g, blk)):
            for bx in range(nb):
                if within:
                    start = bx - bx % blk
                    to = start + (bx - start + j) % blk
                else:
                    to = (bx + j) % nb
                links.append(Link(bx * g + k, to * g + k, nic, nic_lat))
        extra["jumps"] = _direct_jumps(nb, g) if blk == nb else [
            j for j, _ in _direct_ports(nb, g, blk)[::2]]
        extra["block"] = blk
    else:
        for plan in plans:
            leaf0 = nxt
            for li, grp in enumerate(plan.leaf_groups):
                for r in grp:
                    cable(links, r, leaf0 + li, nic, nic_lat)
            nxt += plan.leaves
            if plan.tiers == 2:
                spine = nxt
                nxt += 1
                for li in range(plan.leaves):
                    cable(links, leaf0 + li, spine, plan.leaf_uplinks(li) * nic, nic_lat)
            elif plan.tiers == 3:
                per_pod = radix // 2
                agg0, core = nxt, nxt + plan.pods
                nxt += plan.pods + 1
                for li in range(plan.leaves):
                    cable(links, leaf0 + li, agg0 + li // per_pod,
                          plan.leaf_uplinks(li) * nic, nic_lat)
                for p in range(plan.pods):
                    pod_up = sum(plan.leaf_uplinks(li) for li in range(
                        p * per_pod, min(plan.leaves, (p + 1) * per_pod)))
                    cable(links, agg0 + p, core, pod_up * nic, nic_lat)
    num_switches = nxt - n
    label = name or (f"{b.name}:{nb},scaleout={scaleout},nic_bw={fmt_num(nic * 8 / 1e9)}Gbps"
                     + ("" if oversubscription == 1 else f",oversub={fmt_num(oversubscription)}")
                     + ("" if radix == 64 else f",radix={radix}")
                     + ("" if block in (None, nb) else f",block={block}"))
    return Topology(label, n, num_switches, tuple(links),
                    node_latency=switch_latencies(n, num_switches, switch_latency),
                    meta={"groups": [list(range(x * g, (x + 1) * g)) for x in range(nb)],
                          "box": b.name, "nic_transport": b.nic_transport,
                          "scaleout": {"kind": scaleout, "oversubscription": oversubscription,
                                       "radix": radix, "nic_Bps": nic, "plans": meta_plans,
                                       **extra}})
