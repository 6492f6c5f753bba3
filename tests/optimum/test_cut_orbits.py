"""The fabric's shifts (topology.symmetry): claimed only where they hold; the candidate cut
bound on one cut per orbit gives the same bound, and the same cut, as every candidate cut;
pair hop distances by one search and translation equal the all-pairs table."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from topocoll.collective import (
    allgather,
    allreduce,
    alltoall,
    broadcast,
    reduce_scatter,
)
from topocoll.optimum import candidate_cuts, cut_bound, lower_bound
from topocoll.optimum.bound_sets import collective_sets
from topocoll.optimum.cuts import _candidate_masks, _orbit_shifts
from topocoll.topology import Dim, hypercube, mesh, multi_dim, ring, torus
from topocoll.topology.symmetry import shift_dims, shift_permutation

FABRICS = {
    "ring2": lambda: ring(2),
    "ring3": lambda: ring(3),
    "ring8": lambda: ring(8),
    "ring9": lambda: ring(9),
    "torus4x3": lambda: torus((4, 3)),
    "torus2x2x3": lambda: torus((2, 2, 3)),
    "torus4x4_two_rates": lambda: torus((4, 4), bandwidth=(1e9, 3e9)),
    "mesh3x4": lambda: mesh((3, 4)),
    "hypercube3": lambda: hypercube(3),
    "ring_x_full": lambda: multi_dim([Dim("ring", 4, 2e9), Dim("fully_connected", 3, 1e9)]),
    "line_x_ring": lambda: multi_dim([Dim("line", 3, 2e9), Dim("ring", 5, 1e9)]),
}


def _slow_link(t):
    """``t`` with one link at a tenth of its bandwidth: no shift is an automorphism."""
    links = list(t.links)
    links[1] = dataclasses.replace(links[1], bandwidth=links[1].bandwidth / 10)
    return dataclasses.replace(t, links=tuple(links))


def _collectives(p):
    every = list(range(p))
    out = [allreduce(every), allgather(every), reduce_scatter(every), alltoall(every),
           broadcast(every, root=p - 1), allreduce(every, split=3)]
    if p > 2:
        out += [allreduce(every[1:]), allgather(every[::2])]
    return out


@pytest.mark.parametrize("name", [*FABRICS, "torus4x3_one_slow_link"])
def test_orbit_cuts_give_the_full_lists_bound_and_cut(name):
    t = _slow_link(torus((4, 3))) if name.endswith("slow_link") else FABRICS[name]()
    for c in _collectives(t.num_ranks):
        fast = cut_bound(c, t, 3e9)
        full = cut_bound(c, t, 3e9, candidate_cuts(t))   # cuts given: never reduced
        assert fast == full, (name, c.kind, c.ranks)


def test_shift_dims_are_automorphisms_and_nothing_else():
    assert shift_dims(ring(8)) == (0,)
    assert shift_dims(torus((4, 3))) == (0, 1)
    assert shift_dims(torus((4, 4), bandwidth=(1e9, 3e9))) == (0, 1)
    assert shift_dims(FABRICS["ring_x_full"]()) == (0, 1)
    assert shift_dims(FABRICS["line_x_ring"]()) == (1,)
    assert shift_dims(mesh((3, 4))) == ()
    assert shift_dims(_slow_link(torus((4, 3)))) == ()
    for t in (torus((4, 3)), FABRICS["line_x_ring"]()):
        pairs = {(a, b, w) for a, b, w in zip(t.link_src.tolist(), t.link_dst.tolist(),
                                               t.link_bandwidth.tolist(), strict=True)}
        for k in shift_dims(t):
            p = shift_permutation(t, k)
            assert sorted(p.tolist()) == list(range(t.num_ranks))
            assert {(int(p[a]), int(p[b]), w) for a, b, w in pairs} == pairs


def test_collective_shifts_only_for_invariant_collectives():
    t = torus((4, 3))

    def shifts(c):
        members, pre, post = collective_sets(c, t)
        m = np.zeros(t.num_ranks, dtype=bool)
        m[members] = True
        return _orbit_shifts(c, t, pre, post, m)

    every = list(range(12))
    for c in (allreduce(every), allgather(every), reduce_scatter(every), alltoall(every)):
        assert shifts(c) == (0, 1), c.kind
    assert shifts(broadcast(every, root=0)) == ()
    assert shifts(allreduce(every[1:])) == ()
    assert shifts(allreduce([0, 4, 8])) == (1,)   # coordinate 0 fixed: dimension 1 shifts it


def test_reduced_list_is_small_at_scale():
    t = ring(4096)
    c = allreduce(list(range(4096)))
    members, pre, post = collective_sets(c, t)
    s = _orbit_shifts(c, t, pre, post, np.ones(4096, dtype=bool))
    assert s == (0,)
    assert _candidate_masks(t, shifts=s).shape == (2, 4096)   # rank 0 and the arc from 0
    assert _candidate_masks(t).shape[0] == 2 * 4096
    b = lower_bound(c, t, 1e9)
    assert b.cut == pytest.approx(1e9 / (2 * t.link_bandwidth[0]))


@pytest.mark.parametrize("name", [*FABRICS, "torus4x3_one_slow_link"])
def test_pair_hops_equal_the_all_pairs_table(name):
    from topocoll.topology.symmetry import pair_hops

    t = _slow_link(torus((4, 3))) if name.endswith("slow_link") else FABRICS[name]()
    n = t.num_nodes
    u, v = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    assert np.array_equal(pair_hops(t, u, v), t.hop_distances()[u, v])


@pytest.mark.parametrize("spec", ["fattree:k=4", "leafspine:leaves=4,spines=2,hosts=4",
                                  "dgx:2,gpus=4", "dgx-h100:4", "twotier:racks=3,hosts=2,oversub=2",
                                  "hier:ring(4)x switch(3)", "hier:fc(2)x ring(3)x switch(2)",
                                  "star:5", "torus:3x3"])
def test_switch_nearest_ranks_equal_the_hop_table(spec):
    """The stopped searches give each switch the ranks at its least hop count, as the
    hop counts from every switch to every rank did."""
    from scipy.sparse.csgraph import shortest_path

    from topocoll.optimum.cuts import _switch_nearest
    from topocoll.topology.spec import parse_spec

    t = parse_spec(spec)
    near = _switch_nearest(t)
    assert near.shape == (t.num_switches, t.num_ranks)
    if not t.num_switches:
        return
    d = np.atleast_2d(shortest_path(t.adjacency(), directed=True, unweighted=True,
                                    indices=np.array(t.switches)))[:, :t.num_ranks]
    want = (d == d.min(axis=1, keepdims=True)) & np.isfinite(d)
    assert np.array_equal(near, want)
    assert near.any(axis=1).all()
