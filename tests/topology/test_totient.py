"""TotientPerms: the worked examples, exact degree, connectivity, ring validity and the
diameter against brute force and against consecutive jumps."""

from __future__ import annotations

import math

import networkx as nx
import pytest

from topocoll.errors import TopologyError
from topocoll.topology import circulant, totient, totient_jumps
from topocoll.topology.spec import parse_spec


def _diameter(t) -> int:
    g = nx.DiGraph((lk.src, lk.dst) for lk in t.links)
    return max(max(d.values()) for _, d in nx.all_pairs_shortest_path_length(g))


def test_worked_examples():
    assert totient_jumps(128, 128, 2) == [1, 13]
    assert totient_jumps(128, 128, 4) == [1, 5, 13, 39]
    t = parse_spec("totient:128,d=4,bw=100Gbps")
    assert t.meta["jumps"] == [1, 13] and t.describe()["meta"]["jumps"] == [1, 13]
    assert t.link_bandwidth.min() == 12.5e9


@pytest.mark.parametrize("n, d, group", [(128, 4, None), (128, 8, None), (64, 6, 16),
                                         (30, 4, None), (36, 4, 6), (12, 2, None),
                                         (16, 4, 2)])
def test_degree_connectivity_rings_and_diameter(n, d, group):
    t = totient(n, d, group=group)
    out_deg = [0] * n
    in_deg = [0] * n
    for lk in t.links:
        out_deg[lk.src] += 1
        in_deg[lk.dst] += 1
    assert set(out_deg) == {d} and set(in_deg) == {d}          # exactly d ports each way
    g = group or n
    for j in t.meta["jumps"]:
        # every jump is a ring: length n for the joining ring, g for the group's rings
        length = n // math.gcd(j, n)
        assert length in (n, g) and length >= 2
    assert nx.is_strongly_connected(nx.DiGraph((lk.src, lk.dst) for lk in t.links))
    assert t.describe()["rank_diameter_hops"] == _diameter(t)


def test_geometric_jumps_beat_consecutive_ones():
    for d, consecutive in ((4, [1, 3]), (8, [1, 3, 5, 7])):
        geo = totient(128, d)
        assert 2 * _diameter(geo) <= _diameter(circulant(128, consecutive))


@pytest.mark.parametrize("spec, item", [("totient:128,d=3", "field 'd'"),
                                        ("totient:128,d=4,group=5", "field 'group'"),
                                        ("totient:8,d=10", "field 'd'"),
                                        ("totient:2,d=2", "field 'n'")])
def test_bad_specs_name_the_field(spec, item):
    with pytest.raises(TopologyError) as e:
        parse_spec(spec)
    assert e.value.item == item
