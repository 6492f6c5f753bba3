"""Sub-fabrics (issue 30): a group is costed on the links its routes reach, and groups
that are the same up to renaming share one fingerprint."""

import numpy as np
import pytest

from topocoll.topology import dgx_h100, parse_spec
from topocoll.topology.subfabric import route_subfabric


def test_rail_and_box_groups():
    t = dgx_h100(4)
    rail = route_subfabric(t, [2, 10, 18, 26])
    assert rail.topology.num_ranks == 4 and rail.topology.num_switches == 1
    assert rail.nodes[4] == t.num_ranks + 4 + 2                 # rail switch 2
    box = route_subfabric(t, range(8, 16))
    assert box.topology.num_switches == 1 and box.nodes[8] == t.num_ranks + 1
    # every link of the sub-fabric is the fabric link it names, endpoints renamed
    for i, gi in enumerate(box.links):
        a, b = box.topology.links[i], t.links[gi]
        assert (box.nodes[a.src], box.nodes[a.dst]) == (b.src, b.dst)
        assert a.bandwidth == b.bandwidth and a.latency == b.latency
    fps = {route_subfabric(t, range(8 * b, 8 * b + 8)).topology.fingerprint()
           for b in range(4)}
    assert len(fps) == 1
    rails = {route_subfabric(t, [r, r + 8, r + 16, r + 24]).topology.fingerprint()
             for r in range(8)}
    assert len(rails) == 1


def test_routes_between_members_are_kept():
    t = parse_spec("fattree:k=4,routing=ecmp")
    group = [0, 5, 9, 14]
    s = route_subfabric(t, group)
    assert s is not None and s.topology.routing == "ecmp"
    pairs = np.array([[a, b] for a in range(4) for b in range(4) if a != b])
    local = s.topology.routes(pairs)
    glob = t.routes(np.array([[group[a], group[b]] for a, b in pairs]))
    assert np.array_equal(s.links[local.link], glob.link)
    assert np.allclose(local.frac, glob.frac) and np.array_equal(local.hops, glob.hops)


@pytest.mark.parametrize("spec,group", [("torus:4x4", [0, 1, 2, 3]),        # has dims
                                        ("circulant:8,jumps=1/3", [0, 4]),   # ranks forward
                                        ("fattree:k=4,routing=ecmp", range(16)),  # whole fabric
                                        ("dgx-h100:2", [3])])                # one rank
def test_refused_where_it_would_change_what_can_be_built(spec, group):
    assert route_subfabric(parse_spec(spec), group) is None


def test_coster_schedules_are_global_and_verify():
    from topocoll.verification import verify
    from topocoll.workload import CollectiveCoster

    t = dgx_h100(2)
    cc = CollectiveCoster(t)
    for ranks in [(1, 9), tuple(range(8, 16))]:
        cc.time("x", "allreduce", ranks, 2**24)
        s = cc.schedule("allreduce", ranks, 2**24)
        assert tuple(s.collective.ranks) == ranks
        assert verify(s, t).ok
        assert set(cc.link_use("allreduce", ranks, 2**24)) <= set(range(len(t.links)))
    # the second box's group reused the first one's choice
    assert len(cc._sub_choice) == 2
    cc.time("y", "allreduce", tuple(range(8)), 2**24)
    assert len(cc._sub_choice) == 2
    whole = CollectiveCoster(t, subfabric=False)
    assert whole.time("x", "allreduce", tuple(range(8)), 2**24) == pytest.approx(
        cc.time("x", "allreduce", tuple(range(8)), 2**24), rel=0.05)


def test_contention_moves_the_first_groups_schedule_onto_the_others():
    from topocoll.workload import CollectiveCoster

    t = dgx_h100(2)
    groups = [(r, r + 8) for r in range(8)]
    cc = CollectiveCoster(t, contention=True)
    together = cc.time_all("dp", "allreduce", groups, 2**26)
    alone = cc.time("dp", "allreduce", groups[0], 2**26)
    # the eight rails are disjoint: running them together costs what one costs alone
    assert together == pytest.approx(alone)
    moved = cc._same_as_first("allreduce", groups[0], groups[3], 2**26)
    assert moved is not None and set(moved.src.tolist()) | set(moved.dst.tolist()) <= {3, 11}
