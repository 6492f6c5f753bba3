"""The part of a fabric a group of ranks uses: the nodes and links its routes reach.

A collective among 8 GPUs of one box, or among 16 GPUs on one rail of a 1,024-GPU
cluster, moves data only over the links its members' routes take. Costing it on those
(:func:`route_subfabric`) instead of the whole fabric makes synthesis, verification and
bounds scale with the group, and groups whose sub-fabrics are the same up to renaming
(the 128 boxes' tensor-parallel groups; the data-parallel groups of every rail) have the
same :meth:`~topocoll.topology.Topology.fingerprint`, so a caller costs one and reuses it.

The sub-fabric is the subgraph induced by the members and every node on a route between
two members under the fabric's routing policy (all equal-cost paths for ECMP), with the
members as its ranks ``0..g-1`` in the order given and those nodes' switches after them
in the fabric's order; links keep the fabric's order (routing tie-breaks stay the same),
so the routes between members in the sub-fabric are the routes in the fabric.

It is refused (None) where it would change what can be built: fabrics with dimensions
(tori and hierarchies, whose algorithms need the structure), routes through ranks that
are not members (direct-connect fabrics, where other ranks forward), and groups that
reach the whole fabric anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from .core import Topology

__all__ = ["SubFabric", "route_subfabric", "MAX_SUBFABRIC_PAIRS"]

#: Ordered member pairs routed to find a sub-fabric (a group of up to 512 ranks); larger
#: groups are costed on the whole fabric.
MAX_SUBFABRIC_PAIRS = 2**18


@dataclass(frozen=True, eq=False)
class SubFabric:
    """A group's sub-fabric and how it maps onto the fabric.

    Attributes
    ----------
    topology : Topology
        Members are ranks ``0..g-1`` (in the group's order), then the switches.
    nodes : ndarray of int64
        ``nodes[v]`` is the fabric node of sub-fabric node ``v``.
    links : ndarray of int64
        ``links[i]`` is the fabric link of sub-fabric link ``i``.
    """

    topology: Topology
    nodes: np.ndarray
    links: np.ndarray


def route_subfabric(topology: Topology, ranks: Sequence[int]) -> SubFabric | None:
    """The sub-fabric of ``ranks`` (see the module docstring), or None where the group is
    costed on the whole fabric.

    Examples
    --------
    >>> from topocoll.topology import dgx_h100
    >>> t = dgx_h100(4)
    >>> s = route_subfabric(t, [1, 9, 17, 25])          # GPU 1 of every box: one rail
    >>> s.topology.num_ranks, s.topology.num_switches, s.nodes.tolist()
    (4, 1, [1, 9, 17, 25, 37])
    >>> a, b = route_subfabric(t, range(8)), route_subfabric(t, range(8, 16))
    >>> a.topology.fingerprint() == b.topology.fingerprint()     # two boxes, one cost
    True
    """
    group = [int(r) for r in ranks]
    g = len(group)
    if g < 2 or topology.dims or g * (g - 1) > MAX_SUBFABRIC_PAIRS:
        return None
    key = ("subfabric", tuple(group))
    return topology.memo(key, lambda: _build(topology, group))


def _build(topology: Topology, group: list[int]) -> SubFabric | None:
    g = len(group)
    members = np.asarray(group, dtype=np.int64)
    src = np.repeat(members, g)
    dst = np.tile(members, g)
    off = src != dst
    r = topology.routes(np.stack([src[off], dst[off]], axis=1))
    used = np.unique(r.link)
    on_route = np.unique(np.concatenate([topology.link_src[used], topology.link_dst[used],
                                         members]))
    is_member = np.zeros(topology.num_nodes, dtype=bool)
    is_member[members] = True
    if np.any((on_route < topology.num_ranks) & ~is_member[on_route]):
        return None                        # another rank forwards: keep the whole fabric
    switches = on_route[on_route >= topology.num_ranks]
    if g + len(switches) == topology.num_nodes:
        return None
    nodes = np.concatenate([members, switches])
    local = np.full(topology.num_nodes, -1, dtype=np.int64)
    local[nodes] = np.arange(len(nodes))
    keep = np.flatnonzero((local[topology.link_src] >= 0) & (local[topology.link_dst] >= 0))
    links = tuple(replace(topology.links[i], src=int(local[topology.link_src[i]]),
                          dst=int(local[topology.link_dst[i]])) for i in keep)
    lat = (tuple(topology.node_latency[v] for v in nodes) if topology.node_latency else ())
    meta = {}
    if "groups" in (topology.meta or {}):
        parts = [[int(local[v]) for v in grp if 0 <= v < topology.num_ranks
                  and is_member[v]] for grp in topology.meta["groups"]]
        meta["groups"] = [p for p in parts if p]
    sub = Topology(f"{topology.name}[{g} ranks]", g, len(switches), links, node_latency=lat,
                   routing=topology.routing, meta=meta)
    return SubFabric(sub, nodes, keep.astype(np.int64))
