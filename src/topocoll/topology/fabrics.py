"""Switched fabrics: k-ary fat-tree, leaf-spine and DGX-style GPU clusters.

Conventions (shared with :mod:`topocoll.topology.generators`): bandwidths in bytes/s
per link per direction, latencies in seconds; ranks are numbered first, then switches,
tier by tier from the ranks upwards; every cable is two links (up, then down) emitted tier
by tier from the ranks upwards, so that the deterministic shortest path prefers the lowest
tier. ``switch_latency`` becomes the ``node_latency`` of every switch (paid when a transfer
passes through it). ``dims`` is empty; ``meta["groups"]`` lists the ranks under each
lowest-level group (pod, leaf or box).
"""

from __future__ import annotations

from ..errors import TopologyError
from ._common import (
    DEFAULT_BANDWIDTH,
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
from .core import Link, Topology, check_size

__all__ = ["fat_tree", "leaf_spine", "dgx", "box_cluster", "dgx_a100", "dgx_h100", "FABRICS"]

#: Fabric kinds of :func:`dgx`.
FABRICS = ("rail", "switch")


@units_in
def fat_tree(k: int, *, bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY,
             oversubscription: float = 1.0, switch_latency: float = 0.0,
             name: str | None = None) -> Topology:
    """Return a k-ary three-tier fat-tree (Al-Fares et al.) with ``k**3 / 4`` ranks.

    Parameters
    ----------
    k : int
        Switch radix, even and >= 2. There are ``k`` pods of ``k/2`` edge and ``k/2``
        aggregation switches, and ``(k/2)**2`` core switches.
    bandwidth : float
        Bytes/s of a host (rank) link, per direction.
    latency : float
        Seconds per link, every tier.
    oversubscription : float
        Uplinks (edge -> aggregation and aggregation -> core, and their downward twins)
        get ``bandwidth / oversubscription``. 1 is full bisection; 2 halves every uplink,
        so the ``k/2`` hosts of an edge switch share ``k/4`` host links' worth of uplink.
    switch_latency : float
        Forwarding latency of every switch, in seconds.

    Returns
    -------
    Topology
        Rank ``h`` sits in pod ``h // (k*k/4)`` under edge switch ``h // (k/2)``. Node
        ids: ranks, then the ``k*k/2`` edge switches (pod-major), the ``k*k/2``
        aggregation switches (pod-major), then the core switches; core switch
        ``(a, c)`` (id offset ``a*k/2 + c``) joins aggregation switch ``a`` of every pod.
        ``3 * k**3 / 2`` links. ``meta["groups"]`` holds the ranks of each pod.

    Raises
    ------
    TopologyError
        ``item="field 'k'"`` if ``k`` is not an even integer >= 2; likewise for a bad
        bandwidth, latency or oversubscription.

    References
    ----------
    .. [1] Al-Fares, Loukissas and Vahdat, "A scalable, commodity data center network
       architecture", SIGCOMM 2008.

    Examples
    --------
    >>> t = fat_tree(4)
    >>> t.num_ranks, t.num_switches, len(t.links), t.describe()["rank_diameter_hops"]
    (16, 20, 96, 6)
    """
    k = check_count(k, "k")
    check_size(f"fattree:k={k}", k ** 3 // 4 + 5 * k * k // 4, 3 * k ** 3 // 2)
    if k % 2:
        raise TopologyError(f"k must be even, got {k}", item="field 'k'")
    bw, lat = check_rate(bandwidth), check_time(latency)
    up = bw / check_ratio(oversubscription)
    h = k // 2
    n = k * h * h
    edge, agg, core = n, n + k * h, n + 2 * k * h
    links: list[Link] = []
    for r in range(n):
        cable(links, r, edge + r // h, bw, lat)
    for p in range(k):
        for e in range(h):
            for a in range(h):
                cable(links, edge + p * h + e, agg + p * h + a, up, lat)
    for p in range(k):
        for a in range(h):
            for c in range(h):
                cable(links, agg + p * h + a, core + a * h + c, up, lat)
    num_switches = 2 * k * h + h * h
    label = name or (f"fattree:k={k}" + _oversub_suffix(oversubscription))
    return Topology(label, n, num_switches, tuple(links),
                    node_latency=switch_latencies(n, num_switches, switch_latency),
                    meta={"groups": [list(range(p * h * h, (p + 1) * h * h)) for p in range(k)]})


@units_in
def leaf_spine(leaves: int, spines: int, hosts_per_leaf: int, *,
               bandwidth: float = DEFAULT_BANDWIDTH, uplink_bandwidth: float | None = None,
               oversubscription: float = 1.0, latency: float = DEFAULT_LATENCY,
               switch_latency: float = 0.0, name: str | None = None) -> Topology:
    """Return a two-tier leaf-spine (folded Clos) fabric.

    Parameters
    ----------
    leaves : int
        Leaf (top-of-rack) switches, >= 2.
    spines : int
        Spine switches, >= 1; every leaf has one link to every spine.
    hosts_per_leaf : int
        Ranks under each leaf, >= 1.
    bandwidth : float
        Bytes/s of a host link, per direction.
    uplink_bandwidth : float, optional
        Bytes/s of each leaf-spine link. Default
        ``hosts_per_leaf * bandwidth / (spines * oversubscription)``: the leaf's uplinks
        carry ``1 / oversubscription`` of its hosts' bandwidth.
    oversubscription : float
        Only used for the default ``uplink_bandwidth``; giving both is an error.
    latency, switch_latency : float
        Seconds per link; forwarding latency of every switch.

    Returns
    -------
    Topology
        Rank ``h`` sits under leaf ``h // hosts_per_leaf``. Node ids: ranks, leaves, spines.
        ``meta["groups"]`` holds the ranks of each leaf.

    Raises
    ------
    TopologyError
        Naming the bad field, e.g. ``item="field 'spines'"``.

    Examples
    --------
    >>> t = leaf_spine(4, 2, 8, bandwidth=50e9)
    >>> t.num_ranks, t.num_switches, len(t.links), t.links[-1].bandwidth / 1e9
    (32, 6, 80, 200.0)
    """
    nl = check_count(leaves, "leaves")
    ns = check_count(spines, "spines", minimum=1)
    hpl = check_count(hosts_per_leaf, "hosts_per_leaf", minimum=1)
    bw, lat = check_rate(bandwidth), check_time(latency)
    over = check_ratio(oversubscription)
    if uplink_bandwidth is None:
        up = hpl * bw / (ns * over)
    elif over != 1.0:
        raise TopologyError("give uplink_bandwidth or oversubscription, not both",
                            item="field 'oversubscription'")
    else:
        up = check_rate(uplink_bandwidth, "uplink_bandwidth")
    n = nl * hpl
    links: list[Link] = []
    for r in range(n):
        cable(links, r, n + r // hpl, bw, lat)
    for leaf in range(nl):
        for s in range(ns):
            cable(links, n + leaf, n + nl + s, up, lat)
    label = name or (f"leafspine:leaves={nl},spines={ns},hosts={hpl}"
                     + _oversub_suffix(oversubscription)
                     + (f",uplink_bw={fmt_num(up)}" if uplink_bandwidth is not None else ""))
    return Topology(label, n, nl + ns, tuple(links),
                    node_latency=switch_latencies(n, nl + ns, switch_latency),
                    meta={"groups": [list(range(i * hpl, (i + 1) * hpl)) for i in range(nl)]})


@units_in
def dgx(boxes: int, *, gpus_per_box: int = 8, nvlink_bandwidth: float = 450e9,
        nic_bandwidth: float = 50e9, nvlink_latency: float = DEFAULT_LATENCY,
        nic_latency: float = DEFAULT_LATENCY, fabric: str = "rail", spines: int | None = None,
        switch_latency: float = 0.0, name: str | None = None) -> Topology:
    """Return a cluster of DGX-style boxes: GPUs on an NVSwitch, one NIC per GPU.

    Parameters
    ----------
    boxes : int
        Number of boxes, >= 1.
    gpus_per_box : int
        GPUs (ranks) per box, >= 2. GPU ``i`` of box ``b`` is rank ``b * gpus_per_box + i``.
    nvlink_bandwidth, nvlink_latency : float
        Each GPU's link to its box's NVSwitch (bytes/s per direction, seconds).
    nic_bandwidth, nic_latency : float
        Each GPU's NIC link to the scale-out fabric; also the latency of spine links.
    fabric : {'rail', 'switch'}
        ``'rail'``: one rail switch per GPU index joins GPU ``i`` of every box (rail-
        optimized); a spine layer joins the rails. ``'switch'``: every NIC on one fabric
        switch.
    spines : int, optional
        Rail fabric only. Spine switches above the rails; every rail links to every
        spine with ``boxes * nic_bandwidth / spines``, so a rail's uplink capacity equals
        its downlink capacity (full bisection between rails). Default
        ``max(1, gpus_per_box // 2)``; 0 builds a rail-only fabric in which cross-rail
        traffic goes through the NVSwitches.
    switch_latency : float
        Forwarding latency of every switch (NVSwitch, rail, spine).

    Returns
    -------
    Topology
        Node ids: ranks, one NVSwitch per box, then the rail switches and spines (or the
        single fabric switch). Links: NVLink cables, NIC cables, then spine cables, so
        shortest-path routing prefers NVLink among equal hop counts.
        ``meta["groups"]`` holds the ranks of each box.

    Raises
    ------
    TopologyError
        Naming the bad field, e.g. ``item="field 'fabric'"``.

    Examples
    --------
    >>> t = dgx(2)
    >>> t.num_ranks, t.num_switches, len(t.links)
    (16, 14, 128)
    >>> t.path(0, 8), t.meta["groups"][1][:3]
    ((0, 18, 8), [8, 9, 10])
    >>> dgx(4, fabric="switch").num_switches
    5
    """
    return _dgx(boxes, gpus_per_box, nvlink_bandwidth, nic_bandwidth, nvlink_latency,
                nic_latency, fabric, spines, switch_latency, name, {})


def _dgx(boxes, gpus_per_box, nvlink_bandwidth, nic_bandwidth, nvlink_latency, nic_latency,
         fabric, spines, switch_latency, name, extra_meta, mesh_link: float = 0.0
         ) -> Topology:
    """:func:`dgx`; with ``mesh_link`` > 0 the GPUs of a box are fully connected by links
    of that rate (no NVSwitch: AMD's Infinity Fabric boxes)."""
    nb = check_count(boxes, "boxes", minimum=1)
    g = check_count(gpus_per_box, "gpus_per_box")
    nv_bw, nic_bw = check_rate(nvlink_bandwidth, "nvlink_bandwidth"), check_rate(
        nic_bandwidth, "nic_bandwidth")
    nv_lat, nic_lat = check_time(nvlink_latency, "nvlink_latency"), check_time(
        nic_latency, "nic_latency")
    if fabric not in FABRICS:
        raise TopologyError(f"fabric must be one of {FABRICS}, got {fabric!r}",
                            item="field 'fabric'")
    if fabric == "switch" and spines is not None:
        raise TopologyError("spines apply only to fabric='rail'", item="field 'spines'")
    ns = max(1, g // 2) if spines is None else check_count(spines, "spines", minimum=0)
    n = nb * g
    links: list[Link] = []
    if mesh_link > 0:
        for b in range(nb):
            for i in range(b * g, (b + 1) * g):
                for j in range(i + 1, (b + 1) * g):
                    cable(links, i, j, mesh_link, nv_lat)
        boxsw = 0
    else:
        for r in range(n):
            cable(links, r, n + r // g, nv_bw, nv_lat)
        boxsw = nb
    fab = n + boxsw
    if fabric == "switch":
        for r in range(n):
            cable(links, r, fab, nic_bw, nic_lat)
        num_switches = boxsw + 1
    else:
        for r in range(n):
            cable(links, r, fab + r % g, nic_bw, nic_lat)
        for rail in range(g):
            for s in range(ns):
                cable(links, fab + rail, fab + g + s, nb * nic_bw / ns, nic_lat)
        num_switches = boxsw + g + ns
    label = name or (f"dgx:{nb}" + (f",gpus={g}" if g != 8 else "")
                     + (",fabric=switch" if fabric == "switch" else "")
                     + (f",spines={spines}" if spines is not None else ""))
    return Topology(label, n, num_switches, tuple(links),
                    node_latency=switch_latencies(n, num_switches, switch_latency),
                    meta={"groups": [list(range(b * g, (b + 1) * g)) for b in range(nb)],
                          **extra_meta})


@units_in
def box_cluster(box: str, boxes: int, *, fabric: str = "rail", spines: int | None = None,
                transport: str | None = None, nvlink_latency: float = DEFAULT_LATENCY,
                nic_latency: float = DEFAULT_LATENCY, switch_latency: float = 0.0,
                name: str | None = None) -> Topology:
    """Return ``boxes`` of the real box ``box`` (:data:`~.boxes.BOXES`): its GPUs per
    NVLink domain, NVLink and NIC line rates, in :func:`dgx`'s structure.

    ``meta["box"]`` names the box and ``meta["nic_transport"]`` the NIC protocol
    (``transport``: ``ib`` or ``roce``; default the box's), for models that need more
    than link rates (:mod:`topocoll.cost.nccl`).

    Examples
    --------
    >>> t = box_cluster("gb200-nvl72", 2)
    >>> t.name, t.num_ranks, t.links[0].bandwidth / 1e9, t.meta["box"]
    ('gb200-nvl72:2', 144, 900.0, 'gb200-nvl72')
    >>> box_cluster("dgx-h100", 1, transport="roce").name
    'dgx-h100:1,transport=roce'
    """
    from .boxes import NIC_TRANSPORTS, find_box

    b = find_box(box)
    if transport is not None and transport not in NIC_TRANSPORTS:
        raise TopologyError(f"transport must be one of {NIC_TRANSPORTS}, got {transport!r}",
                            item="field 'transport'")
    label = name or (_preset_name(box, boxes, fabric, spines)
                     + (f",transport={transport}" if transport not in (None, b.nic_transport)
                        else ""))
    return _dgx(boxes, b.gpus, b.nvlink_Bps, b.nic_Bps, nvlink_latency, nic_latency, fabric,
                spines, switch_latency, label,
                {"box": b.name, "nic_transport": transport or b.nic_transport},
                mesh_link=b.nvlink_link_Bps if b.scale_up == "mesh" else 0.0)


@units_in
def dgx_a100(boxes: int, *, fabric: str = "rail", spines: int | None = None,
             nvlink_latency: float = DEFAULT_LATENCY, nic_latency: float = DEFAULT_LATENCY,
             switch_latency: float = 0.0, name: str | None = None) -> Topology:
    """Return ``boxes`` DGX A100: 8 GPUs, NVLink 300 GB/s per direction, 8 x 200 Gb/s NICs
    (:func:`box_cluster` of ``dgx-a100``).

    Examples
    --------
    >>> t = dgx_a100(2)
    >>> nvlink, nic = t.links[0], t.links[2 * t.num_ranks]
    >>> t.name, nvlink.bandwidth / 1e9, nic.bandwidth / 1e9
    ('dgx-a100:2', 300.0, 25.0)
    """
    return box_cluster("dgx-a100", boxes, fabric=fabric, spines=spines,
                       nvlink_latency=nvlink_latency, nic_latency=nic_latency,
                       switch_latency=switch_latency, name=name)


@units_in
def dgx_h100(boxes: int, *, fabric: str = "rail", spines: int | None = None,
             nvlink_latency: float = DEFAULT_LATENCY, nic_latency: float = DEFAULT_LATENCY,
             switch_latency: float = 0.0, name: str | None = None) -> Topology:
    """Return ``boxes`` DGX H100: 8 GPUs, NVLink 450 GB/s per direction, 8 x 400 Gb/s NICs
    (:func:`box_cluster` of ``dgx-h100``).

    Examples
    --------
    >>> t = dgx_h100(2)
    >>> nvlink, nic = t.links[0], t.links[2 * t.num_ranks]
    >>> t.name, nvlink.bandwidth / 1e9, nic.bandwidth / 1e9
    ('dgx-h100:2', 450.0, 50.0)
    """
    return box_cluster("dgx-h100", boxes, fabric=fabric, spines=spines,
                       nvlink_latency=nvlink_latency, nic_latency=nic_latency,
                       switch_latency=switch_latency, name=name)


def _preset_name(prefix: str, boxes, fabric: str, spines) -> str:
    return (f"{prefix}:{boxes}" + (",fabric=switch" if fabric == "switch" else "")
            + (f",spines={spines}" if spines is not None else ""))


def _oversub_suffix(oversubscription: float) -> str:
    return "" if oversubscription == 1 else f",oversub={fmt_num(oversubscription)}"
