"""Scale-out fabrics of real boxes: the Clos plans (real switches and cables), the routed
topologies with merged upper tiers, rail-only's detour through the box, direct connect."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topocoll.errors import TopologyError
from topocoll.topology import clos_plan, cluster, cluster_plans, leaf_ports, parse_spec


@pytest.mark.parametrize("radix, o", [(64, 1.0), (64, 2.0), (64, 3.0), (48, 1.5), (8, 1.0)])
def test_leaf_ports_split_the_radix_at_the_ratio(radix, o):
    down, up = leaf_ports(radix, o)
    assert down + up == radix
    # the most endpoints without exceeding the ratio
    assert down / up <= o + 1e-9 and (down + 1) / (up - 1) > o


def test_two_tiers_up_to_radix_leaves_then_three():
    two = clos_plan([range(i, i + 32) for i in range(0, 64 * 32, 32)], radix=64)
    assert (two.tiers, two.leaves, two.spines, two.cores) == (2, 64, 32, 0)
    three = clos_plan([range(i, i + 32) for i in range(0, 65 * 32, 32)], radix=64)
    assert three.tiers == 3 and three.pods == math.ceil(65 / 32)
    # non-blocking above the leaves: as many aggregation-core cables as leaf uplinks
    assert three.cables[1] == three.cables[2] == 65 * 32
    assert three.cores == math.ceil(65 * 32 / 64)
    assert clos_plan([range(8)], radix=64).tiers == 1
    with pytest.raises(TopologyError, match="three tiers"):
        clos_plan([range(i, i + 2) for i in range(0, 2 * 9, 2)] * 1, radix=4)
    with pytest.raises(TopologyError, match="endpoint ports"):
        clos_plan([range(40)], radix=64)


def test_rail_only_pays_for_no_spine_between_rails_and_saves_a_tier_at_scale():
    # 8,192 GPUs: one Clos over every NIC needs three tiers, each rail alone two
    full = cluster_plans(8, 1024, "rail")
    only = cluster_plans(8, 1024, "rail-only")
    assert [p.tiers for p in full] == [3] and {p.tiers for p in only} == {2}
    assert sum(p.switches for p in only) < full[0].switches
    # the same leaves either way
    assert sum(p.leaves for p in only) == full[0].leaves


def test_rail_leaves_hold_one_rail_and_fat_tree_leaves_whole_boxes():
    (rail,) = cluster_plans(8, 64, "rail")
    assert all(len({r % 8 for r in g}) == 1 for g in rail.leaf_groups)
    (ft,) = cluster_plans(8, 64, "fat-tree")
    assert all(len({r // 8 for r in g}) == 4 for g in ft.leaf_groups)      # 32 NICs: 4 boxes


def test_routes_rail_only_crosses_rails_inside_the_box():
    t = cluster("dgx-h100", 32, "rail-only")
    n = t.num_ranks
    p = t.path(0, 8 * 5 + 3)            # GPU 0 of box 0 to GPU 3 of box 5
    assert 3 in p                       # through GPU 3 of box 0 (the NVSwitch detour)
    assert all(x < n or x >= n for x in p)
    # no link joins the leaves of two rails
    leaves = set(range(n + 32, t.num_nodes))
    rail_of = {}
    for lk in t.links:
        if lk.src < n and lk.dst in leaves:
            rail_of.setdefault(lk.dst, set()).add(lk.src % 8)
    assert all(len(v) == 1 for v in rail_of.values())


def test_merged_spine_carries_the_leaf_uplinks():
    t = cluster("dgx-h100", 64, "fat-tree", nic_bandwidth=50e9, oversubscription=3.0)
    (plan,) = cluster_plans(8, 64, "fat-tree", oversubscription=3.0)
    down, up = leaf_ports(64, 3.0)
    assert (plan.down, plan.up) == (down, up) == (48, 16)
    spine = t.num_nodes - 1
    ups = [lk.bandwidth for lk in t.links if lk.dst == spine]
    # full leaves (48 NICs) cable all 16 uplinks; the last (32 NICs) the 11 it needs
    assert len(ups) == plan.leaves and np.allclose(ups[:-1], up * 50e9)
    assert ups[-1] == pytest.approx(11 * 50e9) and plan.cables[1] == 10 * 16 + 11
    assert plan.ports == 512 + 2 * plan.cables[1]


def test_direct_connect_rings_use_one_port_per_gpu():
    t = cluster("dgx-h100", 16, "direct", nic_bandwidth=50e9)
    out_nic = [lk for lk in t.links if lk.src < t.num_ranks and lk.dst < t.num_ranks]
    assert len(out_nic) == t.num_ranks                   # one outgoing port per GPU
    # rail k is a ring of boxes: every GPU of rail 0 reaches the next box's GPU 0
    assert all(lk.dst % 8 == lk.src % 8 for lk in out_nic)
    assert t.meta["scaleout"]["jumps"][0] == 1
    with pytest.raises(TopologyError, match="3 boxes"):
        cluster("dgx-h100", 2, "direct")


def test_spec_names_rebuild_the_design():
    t = cluster("dgx-h100", 16, "rail-only", nic_bandwidth=25e9, oversubscription=2.0)
    u = parse_spec(t.name)
    assert u.fingerprint() == t.fingerprint()
    with pytest.raises(TopologyError, match="spines"):
        parse_spec("dgx-h100:4,scaleout=rail,spines=2")
    with pytest.raises(TopologyError, match="scaleout"):
        parse_spec("dgx-h100:4,nic_bw=100Gbps")


def test_direct_blocks_ring_each_group_and_join_the_stages_box_to_box():
    t = cluster("dgx-h100", 12, "direct", nic_bandwidth=50e9, block=4)
    n = t.num_ranks
    inside = across = 0
    for lk in t.links:
        if lk.src < n and lk.dst < n and lk.src // 8 != lk.dst // 8:
            a, b = lk.src // 8, lk.dst // 8
            if a // 4 == b // 4:
                inside += 1
            else:
                across += 1
                assert b % 4 == a % 4          # box i of one stage to box i of the next
    # three port pairs ring inside each block of 4, the last pair joins the blocks
    assert inside == 6 * 12 and across == 2 * 12
    assert t.meta["scaleout"]["block"] == 4 and parse_spec(t.name).fingerprint() == \
        t.fingerprint()
    with pytest.raises(TopologyError, match="divide"):
        cluster("dgx-h100", 12, "direct", block=5)
