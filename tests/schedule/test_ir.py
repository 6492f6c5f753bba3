import json

import numpy as np
import pytest

from topocoll.collective import allgather, allreduce, reduce_scatter
from topocoll.errors import ScheduleError
from topocoll.schedule import (
    Op,
    Schedule,
    ScheduleBuilder,
    Transfer,
    concat,
    load_schedule,
    overlay,
    relabel,
    remap_chunks,
    reverse,
    save_schedule,
    schedule_from_dict,
    schedule_to_dict,
)
from topocoll.synth import ring_allgather, ring_allreduce
from topocoll.topology import ring
from topocoll.verification import verify


def same(a: Schedule, b: Schedule) -> bool:
    return (a.collective == b.collective and a.steps == b.steps and a.name == b.name
            and dict(a.meta) == dict(b.meta))


def test_builder_paths_and_multi_chunk():
    b = ScheduleBuilder(allgather(3))
    b.new_step().add(0, 1, [0], path=[0, 2, 1]).add_many([1, 2], [2, 0], [[1], [2]])
    b.new_step().add_many([1, 2], [0, 1], ([0, 2, 3], [1, 0, 2]))
    s = b.build(name="x")
    assert s.num_steps == 2 and s.num_transfers == 5
    assert s.step(0)[0].path == (0, 2, 1) and s.step(0)[1].path is None
    assert s.step(1)[0].chunks == (1, 0) and s.step(1)[1].chunks == (2,)
    assert s.chunk_counts().tolist() == [1, 1, 1, 2, 1]
    assert s.transfer_steps().tolist() == [0, 0, 0, 1, 1]
    rep = verify(s, collect=True)   # nothing ever brings chunk 0 to rank 2
    assert [(v.kind, v.rank, v.chunk) for v in rep.violations] == [("missing_data", 2, 0)]


def test_arrays_are_read_only():
    s = ring_allgather(ring(4))
    with pytest.raises(ValueError):
        s.src[0] = 3


def test_malformed_schedules_are_rejected():
    c = allgather(2)
    with pytest.raises(ScheduleError):
        Schedule(c, [0, 2], [0, 1], [1, 0], [0, 0], [0, 1, 1], [0])  # empty chunk list
    with pytest.raises(ScheduleError):
        Schedule(c, [0, 3], [0, 1], [1, 0], [0, 0], [0, 1, 2], [0, 1])  # bad step_ptr
    with pytest.raises(ScheduleError):
        Schedule(c, [0, 2], [0, 1], [1, 0], [0, 3], [0, 1, 2], [0, 1])  # bad op


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_round_trip(tmp_path, suffix):
    b = ScheduleBuilder(allgather(3))
    b.add(0, 1, [0], path=[0, 1]).add(1, 2, [1]).new_step().add(2, 0, [2, 1], Op.COPY)
    b.add(1, 0, [1]).add(0, 2, [0]).add(2, 1, [2]).new_step().add(1, 2, [0])
    s = b.build(name="custom", meta={"k": "v"})
    f = tmp_path / f"s{suffix}"
    save_schedule(s, f)
    assert same(load_schedule(f), s)
    r = ring_allreduce(ring(5))
    assert same(schedule_from_dict(json.loads(json.dumps(schedule_to_dict(r)))), r)


@pytest.mark.parametrize("data,field", [
    ({"type": "other"}, "type"), ({"type": "topocoll.schedule", "version": 99}, "version"),
    ({"type": "topocoll.schedule", "version": 1}, "collective"),
    ({"type": "topocoll.schedule", "version": 1,
      "collective": {"kind": "allgather", "ranks": [0, 1]},
      "steps": [[{"src": 0, "dst": 1, "op": "move", "chunks": [0]}]]}, "transfer"),
])
def test_bad_files_name_the_field(data, field):
    with pytest.raises(ScheduleError) as e:
        schedule_from_dict(data)
    assert field in str(e.value)


def _one_transfer(**row):
    t = {"src": 0, "dst": 1, "op": "copy", "chunks": [0]}
    t.update(row)
    return {"type": "topocoll.schedule", "version": 1,
            "collective": {"kind": "allgather", "ranks": [0, 1]},
            "steps": [[{"src": 1, "dst": 0, "op": "copy", "chunks": [1]}], [t]]}


@pytest.mark.parametrize("row,message", [
    ({"src": 1.0}, "step 1, transfer 0: field 'src' must hold integers, got 1.0"),
    ({"dst": True}, "step 1, transfer 0: field 'dst' must hold integers, got True"),
    ({"chunks": ["0"]}, "step 1, transfer 0: field 'chunks' must hold integers, got '0'"),
    ({"path": [0, 0.5, 1]}, "step 1, transfer 0: field 'path' must hold integers, got 0.5"),
    ({"chunks": 3}, "step 1, transfer 0: malformed transfer"),
    ({"op": "move"}, "step 1, transfer 0: malformed transfer"),
    ({"chunks": []}, "transfer 1 (0->1) carries no chunks"),
])
def test_bad_transfers_are_named_not_coerced(row, message):
    with pytest.raises(ScheduleError) as e:
        schedule_from_dict(_one_transfer(**row))
    assert message in str(e.value)


def test_fast_and_row_by_row_readers_agree():
    from topocoll.schedule.io import _columns, _from_rows
    b = ScheduleBuilder(allgather(3))
    b.add(0, 1, [0], path=[0, 1]).add(1, 2, [1]).new_step()
    b.add(2, 0, [2, 1]).add(1, 0, [1], path=[1, 2, 0]).new_step().new_step().add(1, 2, [0])
    s = b.build()
    d = json.loads(json.dumps(schedule_to_dict(s)))
    assert _columns(d["steps"]) is not None
    fast = Schedule(s.collective, *_columns(d["steps"]))
    slow = _from_rows(s.collective, d["steps"], "", {})
    assert same(fast, s) and same(slow, s)
    assert np.array_equal(fast.path_ptr, s.path_ptr)
    assert np.array_equal(fast.path_nodes, s.path_nodes)


def test_transforms_compose_correct_schedules():
    t = ring(6)
    ag = ring_allgather(t)
    rs = reverse(ag, reduce_scatter(6))
    assert verify(rs, t).ok
    assert rs.num_steps == ag.num_steps
    assert rs.step(0)[0].op is Op.REDUCE
    ar = concat([rs, ag], allreduce(6, split=6))
    assert verify(ar, t).ok and ar.num_steps == 2 * ag.num_steps
    # relabel onto ranks 10..15 of a bigger ring
    moved = relabel(ag, np.arange(6) + 10, allgather(range(10, 16)))
    assert verify(moved, ring(16)).ok
    # two half-size allgathers overlaid on disjoint chunk halves form a split-2 allgather
    a = remap_chunks(ag, np.arange(6) * 2, allgather(6, split=2))
    b = remap_chunks(ag, np.arange(6) * 2 + 1, allgather(6, split=2))
    both = overlay([a, b], allgather(6, split=2))
    assert both.num_steps == ag.num_steps and both.num_transfers == 2 * ag.num_transfers
    assert verify(both, t).ok


def test_reverse_of_broadcast_is_reduce():
    from topocoll.collective import broadcast, reduce
    c = broadcast(4, root=1)
    s = Schedule.from_steps(c, [[Transfer(1, 0, (0,)), Transfer(1, 2, (0,))],
                                [Transfer(2, 3, (0,))]])
    assert verify(s).ok
    r = reverse(s, reduce(4, root=1))
    assert [len(st) for st in r.steps] == [1, 2]
    assert verify(r).ok


def test_reverse_reads_every_path_backwards():
    """The reversed schedule's explicit paths run from the new source to the new
    destination, node for node the old path backwards (empty paths stay empty), and it
    verifies: a reduce-scatter from a switched fabric's allgather with paths."""
    from topocoll.selection import find_algorithm
    from topocoll.topology import fat_tree

    t = fat_tree(4)
    ag = find_algorithm("direct", "allgather")(t, paths="spread")
    assert ag.has_paths
    rs = reverse(ag, reduce_scatter(t.num_ranks, split=ag.collective.split))
    ptr, old = ag.path_ptr, ag.path_nodes
    want = np.concatenate([old[ptr[i]:ptr[i + 1]][::-1] for i in range(len(ptr) - 1)])
    # same multiset of reversed paths (transfers are reordered by step)
    got = sorted(tuple(rs.path_nodes[rs.path_ptr[i]:rs.path_ptr[i + 1]].tolist())
                 for i in range(rs.num_transfers))
    exp = sorted(tuple(want[ptr[i]:ptr[i + 1]].tolist()) for i in range(len(ptr) - 1))
    assert got == exp
    assert all(p[0] == int(a) and p[-1] == int(b) for p, a, b in zip(
        (rs.path_nodes[rs.path_ptr[i]:rs.path_ptr[i + 1]] for i in range(rs.num_transfers)),
        rs.src, rs.dst, strict=True) if len(p))
    assert verify(rs, t).ok


# ------------------------------------------------------------------ fingerprint
def test_schedule_fingerprint_survives_files(tmp_path):
    from topocoll.schedule import load_schedule, save_schedule
    from topocoll.synth import ring_allreduce
    from topocoll.topology import torus

    s = ring_allreduce(torus((4, 4)))
    for name in ("s.json", "s.npz"):
        save_schedule(s, tmp_path / name)
        assert load_schedule(tmp_path / name).fingerprint() == s.fingerprint()
    assert s.replace(meta={"a": "1"}).fingerprint() != s.fingerprint()
    assert s.replace(name="x").fingerprint() != s.fingerprint()


def test_schedule_fingerprint_is_pinned():
    from topocoll.synth import ring_allreduce
    from topocoll.topology.spec import parse_spec

    s = ring_allreduce(parse_spec("torus:4x4,bw=400Gbps,lat=100ns"))
    assert s.fingerprint() == (
        "ec1ad236fdc0f58295edeeb79f6c78e544580c01f2cc32f31446c56baedae673")


def _stored(s: Schedule) -> Schedule:
    """``s`` with its chunk pointer stored (an explicit ``arange``)."""
    return Schedule(s.collective, s.step_ptr, s.src, s.dst, s.op,
                    np.arange(s.num_transfers + 1), s.chunks, name=s.name, meta=s.meta)


def test_one_chunk_per_transfer_keeps_no_pointer_until_read():
    s = ring_allreduce(ring(5))
    assert s.unit_chunks and "chunk_ptr" not in vars(s)
    assert len(s.compact_chunk_ptr) == 0 and not s.compact_chunk_ptr.flags.writeable
    assert s.chunk_counts().tolist() == [1] * s.num_transfers
    explicit = _stored(s)
    assert explicit.unit_chunks and np.array_equal(explicit.compact_chunk_ptr, [])
    # the same schedule either way: fingerprint (without making the pointer), steps
    assert s.fingerprint() == explicit.fingerprint() and "chunk_ptr" not in vars(s)
    assert s.steps == explicit.steps
    assert s.replace(name="x").fingerprint() == explicit.replace(name="x").fingerprint()
    assert "chunk_ptr" not in vars(s.replace(name="x"))
    ptr = s.chunk_ptr                                    # made on first read, then kept
    assert ptr.tolist() == list(range(s.num_transfers + 1)) and not ptr.flags.writeable
    assert s.chunk_ptr is ptr
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = s.nothing


def test_implicit_pointer_survives_pickle_files_and_transforms(tmp_path):
    import pickle

    s = ring_allgather(ring(4))
    back = pickle.loads(pickle.dumps(s))
    assert "chunk_ptr" not in vars(back) and back.fingerprint() == s.fingerprint()
    assert back.chunk_ptr.tolist() == list(range(s.num_transfers + 1))
    for suffix in (".npz", ".json"):
        save_schedule(s, tmp_path / f"s{suffix}")
        assert load_schedule(tmp_path / f"s{suffix}").fingerprint() == s.fingerprint()
    rs = reverse(s, reduce_scatter(4))
    assert rs.unit_chunks and "chunk_ptr" not in vars(rs)
    assert rs.fingerprint() == reverse(_stored(s), reduce_scatter(4)).fingerprint()
    assert verify(rs, ring(4)).ok
    both = concat([ring_allgather(ring(4)), s])
    assert "chunk_ptr" not in vars(both) and both.num_transfers == 2 * s.num_transfers
    mixed = overlay([s, Schedule.from_steps(allgather(4), [[Transfer(0, 1, (0, 1))]])])
    assert not mixed.unit_chunks and "chunk_ptr" in vars(mixed)
    assert mixed.chunk_counts()[:5].tolist() == [1, 1, 1, 1, 2]   # step 0: the ring, then it


def test_without_a_pointer_every_transfer_carries_one_chunk():
    s = ring_allgather(ring(3))
    with pytest.raises(ScheduleError, match="without chunk_ptr every transfer carries one"):
        Schedule(s.collective, s.step_ptr, s.src, s.dst, s.op, None, s.chunks[:-1])
    b = ScheduleBuilder(allgather(3))
    b.add_many([0, 1], [1, 2], (np.array([0, 1, 2]), np.array([0, 1])))   # a CSR of ones
    assert "chunk_ptr" not in vars(b.build())


def test_ragged_gather_by_slices_equals_the_index_arrays(monkeypatch):
    """Runs of consecutive transfers (whole steps, reversed) and scattered ones, through
    both paths of the gather."""
    from topocoll.schedule import transforms

    rng = np.random.default_rng(3)
    ptr = np.concatenate([[0], np.cumsum(rng.integers(1, 4, 500))])
    vals = rng.integers(0, 1000, int(ptr[-1])).astype(np.int32)
    steps = np.concatenate([[0], np.cumsum(rng.integers(0, 40, 30))])
    steps = steps[steps <= 500]
    runs = np.concatenate([np.arange(a, b) for a, b in
                           zip(steps[-2::-1], steps[:0:-1], strict=True)])
    for idx in (runs, rng.permutation(500), np.arange(500), np.zeros(0, np.int64)):
        want = np.concatenate([vals[ptr[i]:ptr[i + 1]] for i in idx]) if len(idx) else \
            np.zeros(0, np.int32)
        for run in (1, 10**9):              # slices always / never
            monkeypatch.setattr(transforms, "RUN_SLICES", run)
            got = transforms._gather_ragged(ptr, vals, idx)
            assert got.dtype == want.dtype and got.tolist() == want.tolist()
