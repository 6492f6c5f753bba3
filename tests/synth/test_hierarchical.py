"""The hierarchical (ASTRA-sim / LIBRA) scheme: correctness on tori, meshes and
hand-built multi-dimensional topologies; dimension order, steps and per-dimension bytes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _refcheck import assert_correct, sent

from topocoll.errors import NotSupportedError
from topocoll.selection import find_algorithm
from topocoll.synth import (
    hierarchical_allgather,
    hierarchical_allreduce,
    hierarchical_reduce_scatter,
)
from topocoll.topology import Dim, Link, Topology, fully_connected, hypercube, mesh, ring, star
from topocoll.topology import torus as torus_

FUNCS = {"allreduce": hierarchical_allreduce, "allgather": hierarchical_allgather,
         "reduce_scatter": hierarchical_reduce_scatter}


def hand_built(dims: tuple[Dim, ...]) -> Topology:
    """A multi-dimensional topology from ``dims``: each group of a dimension is wired as
    its kind says (a switch per group for 'switch')."""
    n = math.prod(d.size for d in dims)
    links: list[Link] = []
    switch = n
    stride = 1
    for k, d in enumerate(dims):
        for base in (r for r in range(n) if (r // stride) % d.size == 0):
            m = [base + x * stride for x in range(d.size)]
            if d.kind == "fully_connected":
                pairs = [(a, b) for a in m for b in m if a != b]
            elif d.kind == "switch":
                pairs = [(a, switch) for a in m] + [(switch, a) for a in m]
                switch += 1
            else:
                hops = d.size if d.kind == "ring" and d.size > 2 else d.size - 1
                pairs = [(m[i], m[(i + 1) % d.size]) for i in range(hops)]
                pairs += [(b, a) for a, b in pairs]
            links += [Link(a, b, d.bandwidth, d.latency, k) for a, b in pairs]
        stride *= d.size
    return Topology("hand:" + "x".join(f"{d.kind}{d.size}" for d in dims), n, switch - n,
                    tuple(links), dims=dims)


def _multi_dim_topologies():
    dims = (Dim("fully_connected", 4, 200e9), Dim("switch", 2, 100e9), Dim("ring", 3, 50e9))
    out = [hand_built(dims),
           hand_built((Dim("line", 3, 1e9), Dim("fully_connected", 2, 1e9))),
           hand_built((Dim("switch", 5, 1e9), Dim("line", 2, 1e9), Dim("switch", 3, 1e9)))]
    try:  # the generator is developed concurrently; use it once it exists
        from topocoll.topology.hierarchical import multi_dim
    except ImportError:
        return out
    return out + [multi_dim(dims)]


TOPOLOGIES = [torus_((4, 4)), torus_((2, 3, 4)), torus_((5,)), mesh((3, 5)), hypercube(4),
              fully_connected(5), star(6), ring(7), *_multi_dim_topologies()]


def _phase_steps(dim: Dim) -> int:
    return dim.size - 1 if dim.kind in ("ring", "line") else 1


@pytest.mark.parametrize("kind", FUNCS)
@pytest.mark.parametrize("topo", TOPOLOGIES, ids=lambda t: t.name)
def test_correct_and_formulas(topo, kind):
    s = FUNCS[kind](topo)
    assert_correct(s, topo)
    p, dims = topo.num_ranks, topo.dims
    h = 2 if any(d.kind in ("ring", "line") for d in dims) else 1
    assert s.collective.num_chunks == p * h
    one_pass = sum(_phase_steps(d) for d in dims)
    assert s.num_steps == one_pass * (2 if kind == "allreduce" else 1)
    np.testing.assert_allclose(sent(s, p), (p - 1) / p * (2 if kind == "allreduce" else 1))


@pytest.mark.parametrize("topo", TOPOLOGIES, ids=lambda t: t.name)
def test_dimension_order_and_per_dimension_bytes(topo):
    """Reduce-scatter runs dims 0, 1, ... and allgather back in reverse; every transfer
    stays inside one dimension's group; dimension d moves (n_d - 1)/(n_0...n_d) per rank
    in each pass."""
    s = hierarchical_allreduce(topo)
    dims = topo.dims
    coords = np.array([topo.coords(r) for r in range(topo.num_ranks)])
    expected = [d for d in range(len(dims)) for _ in range(_phase_steps(dims[d]))]
    expected += expected[::-1]
    share = np.zeros(len(dims))
    for k, step in enumerate(s.steps):
        for t in step:
            differ = np.flatnonzero(coords[t.src] != coords[t.dst]).tolist()
            assert differ == [expected[k]], (k, t)
            if k < len(expected) // 2 and t.src == 0:
                share[expected[k]] += len(t.chunks) / s.collective.num_chunks
    prefix = np.cumprod([d.size for d in dims])
    np.testing.assert_allclose(share, [(d.size - 1) / prefix[i] for i, d in enumerate(dims)])


def test_reduce_scatter_final_owner_is_rank_c():
    topo = torus_((2, 3, 4))
    s = hierarchical_reduce_scatter(topo)
    h = 2
    assert all(s.collective.post(c) == frozenset({c // h}) for c in range(24 * h))
    assert_correct(s, topo)


def test_direct_dimensions_use_one_step_to_every_peer():
    topo = star(6)
    (step,) = hierarchical_reduce_scatter(topo).steps
    assert len(step) == 30 and all(len(t.chunks) == 1 and t.chunks[0] == t.dst for t in step)


def test_not_applicable():
    flat = ring(5, bidirectional=False)
    assert flat.dims == ()
    with pytest.raises(NotSupportedError, match="dims"):
        hierarchical_allreduce(flat)
    with pytest.raises(NotSupportedError, match="all ranks"):
        hierarchical_allgather(torus_((2, 2)), ranks=[0, 1, 2])
    with pytest.raises(NotSupportedError):
        hierarchical_reduce_scatter(torus_((2, 2)), ranks=[1, 0, 2, 3])
    assert_correct(hierarchical_allreduce(torus_((2, 2)), ranks=[0, 1, 2, 3]))


@pytest.mark.parametrize("kind", FUNCS)
def test_registry_entries(kind):
    entry = find_algorithm("hierarchical", kind)
    assert entry.func is FUNCS[kind]
    assert entry.unsupported(torus_((2, 3)), tuple(range(6))) is None
    assert "dims" in entry.unsupported(ring(5, bidirectional=False), tuple(range(5)))
    assert isinstance(entry.unsupported(torus_((2, 3)), (0, 1, 2)), str)
    with pytest.raises(NotSupportedError):
        entry(torus_((2, 3)), ranks=[0, 1, 2])
    assert_correct(entry(torus_((2, 3))), torus_((2, 3)))
