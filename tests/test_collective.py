import pytest

from topocoll.collective import (
    COLLECTIVE_KINDS,
    Collective,
    allgather,
    allreduce,
    alltoall,
    broadcast,
    busbw_factor,
    make_collective,
    reduce,
    reduce_scatter,
)
from topocoll.errors import TopocollError


def test_chunk_tables():
    p, k = 4, 2
    ag = allgather(p, split=k)
    assert ag.num_chunks == 8 and ag.chunks_per_buffer == 8
    assert [ag.owner(c) for c in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert all(ag.post(c) == frozenset(range(4)) for c in range(8))
    rs = reduce_scatter(p)
    assert rs.pre(2) == frozenset(range(4)) and rs.post(2) == {2}
    ar = allreduce(p, split=3)
    assert ar.num_chunks == 3 and ar.chunk_bytes(300) == 100
    a2a = alltoall(3)
    assert a2a.num_chunks == 9 and a2a.chunks_per_buffer == 3
    assert [(min(a2a.pre(c)), min(a2a.post(c))) for c in range(9)] == \
        [(i, j) for i in range(3) for j in range(3)]
    b = broadcast([4, 6, 9], root=6)
    assert b.pre(0) == {6} and b.post(0) == {4, 6, 9}
    r = reduce([4, 6, 9])
    assert r.root == 4 and r.post(0) == {4} and r.is_reduction


def test_subgroup_ownership_follows_rank_order():
    c = allgather([7, 3, 5])
    assert [c.owner(i) for i in range(3)] == [7, 3, 5]
    assert c.pre_sets().indices.tolist() == [7, 3, 5]


@pytest.mark.parametrize("kind", COLLECTIVE_KINDS)
def test_chunks_containing_a_rank_are_the_sets_read_one_by_one(kind):
    for ranks, split in (([7, 3, 5], 1), ([0, 1, 2, 3], 2), ([4, 2], 3)):
        root = ranks[-1] if kind in ("broadcast", "reduce") else None
        c = make_collective(kind, ranks, split=split, root=root)
        for sets, one in ((c.pre_sets(), c.pre), (c.post_sets(), c.post)):
            for r in [*ranks, 99]:
                want = [i for i in range(c.num_chunks) if r in one(i)]
                assert sets.containing(r).tolist() == want, (kind, ranks, split, r)


def test_message_bytes_convention_matches_nccl_tests():
    # allgather and reduce_scatter of the same size move the same chunks
    assert allgather(8).chunk_bytes(2**20) == reduce_scatter(8).chunk_bytes(2**20) == 2**17
    assert alltoall(8).chunk_bytes(2**20) == 2**17   # per-rank send buffer / p
    assert busbw_factor("allreduce", 8) == 1.75
    assert busbw_factor("allgather", 4) == 0.75
    assert busbw_factor("broadcast", 4) == 1.0


@pytest.mark.parametrize("args", [
    ("gather", (0, 1)), ("allreduce", ()), ("allreduce", (0, 0)), ("allreduce", (-1, 2)),
])
def test_bad_collectives(args):
    with pytest.raises(TopocollError):
        Collective(*args)


def test_root_rules():
    with pytest.raises(TopocollError):
        broadcast(4, root=9)
    with pytest.raises(TopocollError):
        make_collective("allreduce", 4, root=1)
    assert set(COLLECTIVE_KINDS) == {"allgather", "reduce_scatter", "allreduce", "broadcast",
                                     "reduce", "alltoall"}
