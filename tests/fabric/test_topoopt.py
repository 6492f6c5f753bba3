"""TopologyFinder: the port split, exact degree, connectivity, rings per group, and
matchings that serve the heaviest demand first with diminishing returns."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from topocoll.errors import InputError
from topocoll.fabric import split_degree, topology_finder


def _degrees(t):
    out = np.bincount([lk.src for lk in t.links], minlength=t.num_ranks)
    inn = np.bincount([lk.dst for lk in t.links], minlength=t.num_ranks)
    return set(out), set(inn)


def test_split_is_proportional_with_even_ring_ports():
    assert split_degree(4, 1.0, 1.0) == (2, 2)
    assert split_degree(8, 3.0, 1.0) == (6, 2)
    assert split_degree(8, 1.0, 0.0) == (8, 0)
    assert split_degree(6, 1e-6, 1.0) == (2, 4)       # rings keep at least 2 ports
    assert split_degree(4, 0.0, 1.0) == (0, 4)


@pytest.mark.parametrize("n, d, groups", [(16, 4, {16: 5e9}), (32, 6, {32: 1e9, 8: 3e9}),
                                          (24, 8, {4: 2e9}), (128, 4, {128: 1e10})])
def test_exact_degree_and_connectivity(n, d, groups):
    rng = np.random.default_rng(3)
    mp = rng.random((n, n)) * 1e8
    r = topology_finder(n, d, allreduce=groups, mp=mp)
    assert _degrees(r.topology) == ({d}, {d})
    g = nx.DiGraph((lk.src, lk.dst) for lk in r.topology.links)
    assert nx.is_strongly_connected(g)
    for size, js in r.jumps.items():      # every jump is a ring over its group
        for j in js:
            assert n // np.gcd(j, n) == size
    for m in r.matchings:                 # perfect matchings
        assert sorted(x for p in m for x in p) == list(range(n))


def test_matchings_serve_the_heaviest_pair_first_with_diminishing_returns():
    n = 8
    mp = np.zeros((n, n))
    mp[0, 5] = mp[5, 0] = 10e9            # one heavy pair
    mp[2, 3] = mp[3, 2] = 1e9
    r = topology_finder(n, 6, allreduce={n: 1e9}, mp=mp, split="proportional")
    assert r.degree_mp >= 2
    assert (0, 5) in r.matchings[0] and (2, 3) in r.matchings[0]
    # 10x the demand of (2, 3): still first after one link (10/2 = 5 > 1)
    assert (0, 5) in r.matchings[1]
    assert r.topology.meta["degree_mp"] == r.degree_mp


def test_released_code_variant_and_bad_input():
    r = topology_finder(16, 4, allreduce={16: 1e9}, mp=np.ones((16, 16)), split="all-reduce")
    assert (r.degree_allreduce, r.degree_mp) == (4, 0) and r.jumps[16] == [1, 5]
    with pytest.raises(InputError) as e:
        topology_finder(15, 4, allreduce={5: 1e9}, mp=np.ones((15, 15)) * 1e9)
    assert e.value.item == "servers"
    with pytest.raises(InputError) as e:
        topology_finder(16, 4, allreduce={5: 1e9})
    assert e.value.item == "group 5"
