"""Ring and bidirectional ring: correctness for every p, step counts, per-rank bytes,
ring order and subgroups."""

from __future__ import annotations

import numpy as np
import pytest
from _refcheck import assert_correct, sent

from topocoll.errors import TopologyError
from topocoll.selection import ALGORITHMS, find_algorithm
from topocoll.synth import (
    bidirectional_ring_allgather,
    bidirectional_ring_allreduce,
    bidirectional_ring_reduce_scatter,
    ring_allgather,
    ring_allreduce,
    ring_reduce_scatter,
)
from topocoll.topology import ring

UNI = (ring_allgather, ring_reduce_scatter, ring_allreduce)
BI = (bidirectional_ring_allgather, bidirectional_ring_reduce_scatter,
      bidirectional_ring_allreduce)
ALL = UNI + BI


def _passes(func) -> int:
    return 2 if func in (ring_allreduce, bidirectional_ring_allreduce) else 1


@pytest.mark.parametrize("func", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("p", list(range(2, 41)) + [64])
def test_correct_and_formulas(func, p):
    t = ring(p)
    s = func(t)
    assert_correct(s, t)
    k = _passes(func)
    assert s.num_steps == k * (p - 1)
    np.testing.assert_allclose(sent(s, p), k * (p - 1) / p)
    halves = 2 if func in BI else 1
    assert s.collective.num_chunks == p * halves
    assert all(len(step) == p * halves for step in s.steps)


@pytest.mark.parametrize("func", ALL, ids=lambda f: f.__name__)
def test_neighbours_only(func):
    p = 9
    s = func(ring(p))
    for step in s.steps:
        assert all((t.dst - t.src) % p in ((1,) if func in UNI else (1, p - 1)) for t in step)


@pytest.mark.parametrize("func", ALL, ids=lambda f: f.__name__)
def test_order_and_subgroups(func):
    t = ring(12)
    group = [9, 4, 0, 7, 2]
    order = [0, 2, 4, 7, 9]
    s = func(t, ranks=group, order=order)
    assert s.collective.ranks == tuple(group)
    assert_correct(s, t)
    if func in UNI:
        pairs = {(x.src, x.dst) for st in s.steps for x in st}
        assert pairs == {(order[i], order[(i + 1) % 5]) for i in range(5)}
    assert func(t, ranks=[6]).num_steps == 0
    with pytest.raises(TopologyError):
        func(t, ranks=group, order=[0, 2, 4, 7, 8])


def test_registry_lists_every_ring():
    names = {(s.name, s.kind) for s in ALGORITHMS}
    for name in ("ring", "bidirectional_ring"):
        for kind in ("allgather", "reduce_scatter", "allreduce"):
            assert (name, kind) in names
            assert_correct(find_algorithm(name, kind)(ring(6)), ring(6))


# ---- variant="halfway": whole blocks half way round each direction
@pytest.mark.parametrize("func", BI, ids=lambda f: f.__name__)
@pytest.mark.parametrize("p", range(1, 10))
def test_halfway_correct_for_every_p(func, p):
    from topocoll.topology import star

    t = ring(p) if p > 1 else star(2)
    s = func(t, ranks=list(range(p)), variant="halfway")
    assert_correct(s)
    assert s.num_steps == _passes(func) * (p // 2)
    assert s.meta["variant"] == "halfway"


@pytest.mark.parametrize("p", [5, 6, 9, 16])
def test_halfway_moves_the_same_bytes_per_link_as_halves(p):
    from topocoll.cost.kernel import step_loads

    t = ring(p)
    for func in BI:
        a = step_loads(func(t, variant="halves"), t, 1.0)[0].sum(axis=0)
        b = step_loads(func(t, variant="halfway"), t, 1.0)[0].sum(axis=0)
        assert np.allclose(a, b) and np.allclose(a, a.max())   # every link equally


def test_halfway_halves_the_latency_terms_on_a_long_ring():
    from topocoll.collective import make_collective
    from topocoll.cost import AlphaBeta
    from topocoll.optimum.cuts import cut_bound

    t = ring(128)                                   # 50 GB/s, 1 us links
    M = 2.0**30
    bound = cut_bound(make_collective("allgather", tuple(range(128))), t, M,
                      method="exact").time
    ratio = {v: AlphaBeta(bound=False).evaluate(bidirectional_ring_allgather(t, variant=v),
                                                t, M).time / bound
             for v in ("halves", "halfway")}
    assert ratio["halfway"] == pytest.approx(1 + 64e-6 / bound, rel=1e-9)   # 64 hops of 1 us
    assert ratio["halves"] == pytest.approx(1 + 127e-6 / bound, rel=1e-9)
    s = find_algorithm("optimal", "allgather")(t)             # the default takes it
    assert s.meta["pipeline"] == "halfway_ring"


def test_bad_variant_names_the_field():
    from topocoll.errors import NotSupportedError

    with pytest.raises(NotSupportedError, match="variant"):
        bidirectional_ring_allgather(ring(4), variant="half")


def _halfway_by_steps(topology, ranks, order, kind):
    """The halfway ring as first written: the allgather a step at a time through the
    builder, then :func:`reverse` and :func:`concat` (the reference for the columns
    :func:`topocoll.synth.ring._halfway` writes at once)."""
    from topocoll.collective import allgather, allreduce, reduce_scatter
    from topocoll.schedule import Op, ScheduleBuilder, Symmetry, concat, reverse
    from topocoll.synth._common import block_index, resolve_group, resolve_order

    group = resolve_group(topology, ranks)
    o = resolve_order(topology, group, order)
    blk = block_index(group, o).astype(np.int64)
    p = len(o)
    meta = {"order": ",".join(map(str, o.tolist())), "variant": "halfway"}
    b = ScheduleBuilder(allgather(group, split=2))
    S = p // 2
    pos = np.arange(p)
    for s in range(1, S + 1):
        src, dst, chunks = [], [], []
        for h, d in enumerate((1, -1)):
            origin = blk[(pos - d * (s - 1)) % p]
            if p % 2 == 0 and s == S:
                chunks.append((2 * origin + h)[:, None])
            else:
                chunks.append(np.stack([2 * origin, 2 * origin + 1], axis=1))
            src.append(o[pos])
            dst.append(o[(pos + d) % p])
        ch = np.concatenate(chunks, axis=0)
        ptr = np.arange(0, ch.size + 1, ch.shape[1], dtype=np.int64)
        b.new_step().add_many(np.concatenate(src), np.concatenate(dst), (ptr, ch.reshape(-1)),
                              Op.COPY)
    ids = 2 * blk
    sym = (Symmetry(o, np.roll(o, -1), np.concatenate([ids, ids + 1]),
                    np.concatenate([np.roll(ids, -1), np.roll(ids, -1) + 1])),)
    ag = b.build(name="bidirectional_ring", meta=meta, symmetries=sym)
    if kind == "allgather":
        return ag
    rs = reverse(ag, reduce_scatter(group, split=2), name="bidirectional_ring", meta=meta)
    if kind == "reduce_scatter":
        return rs.replace(symmetries=sym)
    return concat([rs, ag], allreduce(group, split=2 * p), name="bidirectional_ring",
                  meta=meta).replace(symmetries=sym)


@pytest.mark.parametrize("kind", ["allgather", "reduce_scatter", "allreduce"])
@pytest.mark.parametrize("case", ["one", "ring2", "ring3", "ring8", "ring9", "torus3x4",
                                  "subgroup"])
def test_halfway_columns_equal_the_step_by_step_build(kind, case):
    from topocoll.synth.ring import _halfway
    from topocoll.topology import torus
    from topocoll.verification import verify

    topology, ranks, order = {
        "one": (ring(4), [2], None), "ring2": (ring(2), None, None),
        "ring3": (ring(3), None, None), "ring8": (ring(8), None, None),
        "ring9": (ring(9), None, None), "torus3x4": (torus((3, 4)), None, None),
        "subgroup": (ring(10), [7, 1, 3, 8, 4, 0], [3, 0, 8, 1, 7, 4]),
    }[case]
    got = _halfway(topology, ranks, order, kind)
    want = _halfway_by_steps(topology, ranks, order, kind)
    assert got.fingerprint() == want.fingerprint()
    assert got.collective == want.collective
    for col in ("step_ptr", "src", "dst", "op", "chunk_ptr", "chunks"):
        assert np.array_equal(getattr(got, col), getattr(want, col)), col
        assert getattr(got, col).dtype == getattr(want, col).dtype, col
    assert got.unit_chunks == want.unit_chunks
    assert (got.name, got.meta) == (want.name, want.meta)
    assert len(got.symmetries) == len(want.symmetries) == 1
    for f in ("ranks", "rank_images", "chunks", "chunk_images"):
        assert np.array_equal(getattr(got.symmetries[0], f), getattr(want.symmetries[0], f))
    if got.collective.num_ranks > 1:
        assert verify(got, topology).ok
