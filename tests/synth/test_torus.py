"""Torus baselines: mirrored recursive doubling, bucket, Hamiltonian rings."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.cost import AlphaBeta
from topocoll.errors import NotSupportedError
from topocoll.synth.hierarchical import hierarchical_allreduce
from topocoll.synth.multiport import make_plan
from topocoll.synth.torus import (
    _xor_rule,
    bucket_allgather,
    bucket_allreduce,
    bucket_reduce_scatter,
    hamiltonian_cycles,
    hamiltonian_rings_allgather,
    hamiltonian_rings_allreduce,
    hamiltonian_rings_reduce_scatter,
    hamiltonian_unsupported_reason,
    mirrored_recursive_doubling_allgather,
    mirrored_recursive_doubling_allreduce,
    mirrored_recursive_doubling_reduce_scatter,
)
from topocoll.topology import multi_dim, ring, torus
from topocoll.topology.core import Dim
from topocoll.topology.spec import parse_spec
from topocoll.verification import verify

SPECS = ["torus:4x4", "torus:3x5", "torus:2x3x4", "torus:8x8", "torus:4x4x4", "torus:6x6",
         "mesh:3x4", "ring:10", "hier:fc(4)x fc(4)", "torus:5x5x3"]


@pytest.mark.parametrize("spec", SPECS)
def test_baselines_verify(spec):
    t = parse_spec(spec)
    fns = [mirrored_recursive_doubling_allreduce, mirrored_recursive_doubling_allgather,
           mirrored_recursive_doubling_reduce_scatter, bucket_allreduce, bucket_allgather,
           bucket_reduce_scatter,
           lambda t: mirrored_recursive_doubling_allreduce(t, variant="latency")]
    if hamiltonian_unsupported_reason(t, tuple(range(t.num_ranks))) is None:
        fns += [hamiltonian_rings_allreduce, hamiltonian_rings_allgather,
                hamiltonian_rings_reduce_scatter]
    for fn in fns:
        rep = verify(fn(t), t, collect=True)
        assert rep.ok, (spec, rep.violations[:2])


def test_mirrored_recursive_doubling_peers_by_hand():
    plan = make_plan(torus((8, 8)), None, _xor_rule)
    # rank 0: port 0 -> x^1, y^1, x^2, y^2, x^4, y^4; mirrored port 2 -> x-1, y-1, x-2, ...
    assert plan.peers[0, :, 0].tolist() == [1, 8, 2, 16, 4, 32]
    assert plan.peers[2, :, 0].tolist() == [7, 56, 6, 48, 4, 32]
    # on a ring of 8, step 2 is distance 4 (recursive doubling) against Swing's 3
    assert plan.peers[0, 4, 1] == 5


def test_mirrored_recursive_doubling_congests_more_than_swing():
    # 1-D ring of 64, one port, RS step s: recursive doubling's 2**s hops against Swing's
    # |rho(s)|: the same bytes but longer paths, so more load per link.
    from topocoll.synth.swing import swing_reduce_scatter

    t = ring(64, bandwidth=1.0, latency=0.0)
    model = AlphaBeta(bound=False)
    sw = model.evaluate(swing_reduce_scatter(t, multiport=False), t, 64.0).time
    rd = model.evaluate(mirrored_recursive_doubling_reduce_scatter(t), t, 64.0).time
    assert rd > sw


def test_bad_variant_is_rejected():
    with pytest.raises(NotSupportedError, match="variant"):
        mirrored_recursive_doubling_allreduce(torus((4, 4)), variant="fast")


def test_bucket_uses_all_ports_where_hierarchical_uses_two():
    t = torus((4, 4), bandwidth=1.0, latency=0.0)
    model = AlphaBeta(bound=False)
    n = 16 * 8.0
    b = model.evaluate(bucket_allreduce(t), t, n)
    h = model.evaluate(hierarchical_allreduce(t), t, n)
    # D = 2 copies on different dimensions: half the time of one copy on all the data
    assert b.time == pytest.approx(h.time / 2)
    # every link carries the same bytes: 2(p-1)/p * n / (2D) per link ... in total
    assert np.ptp(b.link_load) == 0


def test_bucket_step_count_and_chunks():
    s = bucket_allreduce(torus((3, 5)))
    assert s.num_steps == 2 * (2 + 4) and s.collective.num_chunks == 15 * 2 * 2
    assert bucket_allreduce(multi_dim([Dim("fully_connected", 4, 1e9)] * 2)).num_steps == 4


def test_hamiltonian_cycles_are_edge_disjoint_hamiltonian():
    for shape in [(3, 3), (4, 4), (8, 8), (4, 8), (8, 4), (16, 64), (6, 12)]:
        t = torus(shape)
        a, b = hamiltonian_cycles(t)
        n = t.num_ranks
        edges = []
        for cyc in (a, b):
            assert sorted(cyc) == list(range(n))
            e = {frozenset((cyc[i], cyc[(i + 1) % n])) for i in range(n)}
            assert all(len(t.links_between(*tuple(x))) == 1 for x in e)
            edges.append(e)
        assert not edges[0] & edges[1]
        assert len(edges[0] | edges[1]) == 2 * n     # together: every cable of the torus


@pytest.mark.parametrize("shape,why", [((3, 6), "not one Hamiltonian cycle"),
                                       ((3, 5), "divide"), ((2, 4), ">= 3"),
                                       ((4, 4, 4), "2-D torus")])
def test_hamiltonian_rejects(shape, why):
    with pytest.raises(NotSupportedError, match=why):
        hamiltonian_rings_allreduce(torus(shape))


def test_hamiltonian_rings_have_no_congestion():
    t = torus((8, 8), bandwidth=1.0, latency=1e-7)
    r = AlphaBeta(bound=False).evaluate(hamiltonian_rings_allreduce(t), t, 64 * 4.0)
    # 2(p-1) steps of one 1-byte hop each
    assert r.time == pytest.approx(2 * 63 * (1e-7 + 1.0))


def test_bucket_with_rings_on_fully_connected_dimensions():
    t = multi_dim([Dim("fully_connected", 4, 1e9)] * 2)
    s = bucket_allreduce(t, dimension_algorithm="ring")
    assert s.num_steps == 2 * (3 + 3) and verify(s, t).ok
    for fn in (bucket_allgather, bucket_reduce_scatter):
        assert verify(fn(t, dimension_algorithm="ring"), t).ok
    with pytest.raises(NotSupportedError, match="dimension_algorithm"):
        bucket_allreduce(t, dimension_algorithm="tree")


@pytest.mark.parametrize("kind", ["allreduce", "allgather", "reduce_scatter"])
def test_hamiltonian_rings_memory_floor_is_exact(kind):
    # the registry's floor on (transfer, chunk) entries, which refuses a 128x128 torus up
    # front (50 GiB) instead of running out of memory, is the schedule's own count
    from topocoll.selection import find_algorithm
    from topocoll.topology import parse_spec

    syn = find_algorithm("hamiltonian_rings", kind)
    for shape in ("4x4", "4x8"):
        t = parse_spec(f"torus:{shape}")
        assert syn(t).chunk_ptr[-1] == syn.min_entries(t.num_ranks)


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:6x6", "torus:5x3", "ring:7", "ring:12",
                                  "hypercube:4", "hammingmesh:8x4", "hier:fc(4)xfc(4)"])
def test_butterfly_and_bucket_memory_floors_hold(spec):
    # the floors that refuse swing / mirrored recursive doubling / bucket on 128x128 up
    # front (12.5 GiB; it used to run out of memory) never exceed a real schedule's count
    from topocoll.selection import find_algorithm
    from topocoll.topology import parse_spec

    t = parse_spec(spec)
    for name, kw in [("swing", {}), ("mirrored_recursive_doubling", {}), ("bucket", {}),
                     ("mirrored_recursive_doubling", {"variant": "latency"})]:
        syn = find_algorithm(name, "allreduce")
        try:
            s = syn(t, **kw)
        except NotSupportedError:
            continue
        floor = syn.min_entries(t.num_ranks, kw)
        assert s.chunk_ptr[-1] >= floor, (name, kw)
        assert (floor > 0) == (kw.get("variant") != "latency"), (name, kw)
