"""The verifier: correct schedules pass; each planted bug is caught, named and located."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.collective import allgather, allreduce, broadcast, reduce_scatter
from topocoll.errors import ScheduleError
from topocoll.schedule import Op, Schedule, Transfer, concat
from topocoll.synth import (
    bidirectional_ring_allreduce,
    ring_allgather,
    ring_allreduce,
    ring_reduce_scatter,
)
from topocoll.topology import ring, star, torus
from topocoll.verification import VIOLATION_KINDS, verify

METHODS = ("exact", "fingerprint")


def edit(schedule: Schedule, *, collective=None, **cols) -> Schedule:
    """A copy of ``schedule`` with some columns replaced (arrays are copied first)."""
    arrays = {k: np.array(getattr(schedule, k)) for k in
              ("step_ptr", "src", "dst", "op", "chunk_ptr", "chunks")}
    for k, fn in cols.items():
        arrays[k] = fn(arrays[k])
    return Schedule(collective or schedule.collective, arrays["step_ptr"], arrays["src"],
                    arrays["dst"], arrays["op"], arrays["chunk_ptr"], arrays["chunks"],
                    schedule.path_ptr, schedule.path_nodes, name=schedule.name)


def setitem(i, v):
    def f(a):
        a[i] = v
        return a
    return f


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("p", [2, 3, 5, 8, 13])
def test_correct_ring_schedules_pass(p, method):
    t = ring(p)
    for s in (ring_allreduce(t), ring_allgather(t), ring_reduce_scatter(t),
              bidirectional_ring_allreduce(t)):
        rep = verify(s, t, collect=True, method=method)
        assert rep.ok, rep.violations[:3]
        assert rep.method == method
        assert rep.checked_cells == sum(len(s.collective.post(c))
                                        for c in range(s.collective.num_chunks))
        assert (rep.error_probability == 0) == (method == "exact")


def _kinds(schedule, topology=None, method="exact"):
    rep = verify(schedule, topology, collect=True, method=method)
    assert not rep.ok
    assert rep.total_violations >= len(rep.violations) > 0
    return rep, {v.kind for v in rep.violations}


# Each case: (description, builder returning (schedule, topology), expected kind, where)
def bug_dropped_transfer():
    # remove the last transfer of a ring allgather: rank 0 never gets block 1
    s = ring_allgather(ring(4))
    keep = np.ones(s.num_transfers, bool)
    keep[-1] = False
    t = np.flatnonzero(keep)
    b = Schedule(s.collective, np.minimum(s.step_ptr, len(t)), s.src[t], s.dst[t], s.op[t],
                 np.arange(len(t) + 1), s.chunks[t])
    return b, ring(4)


def bug_copy_instead_of_reduce():
    s = ring_allreduce(ring(4))
    return edit(s, op=setitem(1, Op.COPY)), ring(4)


def bug_wrong_chunk():
    s = ring_allgather(ring(5))
    return edit(s, chunks=setitem(0, 3)), ring(5)


def bug_reduce_twice():
    # the first reduce-scatter step is repeated: contributions are counted twice
    s = ring_reduce_scatter(ring(4))
    first = Schedule(s.collective, s.step_ptr[:2], s.src[:4], s.dst[:4], s.op[:4],
                     s.chunk_ptr[:5], s.chunks[:4])
    return concat([first, s], s.collective), ring(4)


def bug_send_before_receive():
    # swap the first two allgather steps of a ring: ranks forward blocks they lack
    s = ring_allgather(ring(4))
    order = np.r_[4:8, 0:4, 8:12]
    return edit(s, src=lambda a: a[order], dst=lambda a: a[order],
                chunks=lambda a: a[order]), ring(4)


def bug_bad_rank():
    s = ring_allgather(ring(4))
    return edit(s, dst=setitem(2, 9)), ring(4)


def bug_switch_endpoint():
    s = ring_allgather(star(4))
    return edit(s, dst=setitem(2, 4)), star(4)   # node 4 is the switch


def bug_self_transfer():
    s = ring_allgather(ring(4))
    return edit(s, dst=setitem(1, 1)), ring(4)


def bug_bad_chunk_id():
    s = ring_allgather(ring(4))
    return edit(s, chunks=setitem(0, 17)), ring(4)


def bug_conflicting_writes():
    # two copies into the same (rank, chunk) in one step
    c = allgather(3)
    s = Schedule.from_steps(c, [[Transfer(0, 1, (0,))],
                                [Transfer(0, 2, (0,)), Transfer(1, 2, (0,))]])
    return s, None


def bug_reduce_in_allgather():
    s = ring_allgather(ring(4))
    return edit(s, op=setitem(0, Op.REDUCE)), ring(4)


def bug_no_route():
    c = allgather(2)
    s = Schedule.from_steps(c, [[Transfer(0, 1, (0,), path=(0, 2, 1)),
                                 Transfer(1, 0, (1,))]])
    return s, ring(4)   # 0->2 is not a link of ring(4)


def bug_schedule_for_bigger_group():
    s = ring_allreduce(ring(8))
    return s, ring(4)


def bug_reduce_scatter_wrong_owner():
    s = ring_reduce_scatter(ring(4))
    return s.replace(collective=reduce_scatter([1, 2, 3, 0])), ring(4)


BUGS = [
    (bug_dropped_transfer, "missing_data"),
    (bug_copy_instead_of_reduce, "missing_contributions"),
    (bug_wrong_chunk, "not_held"),
    (bug_reduce_twice, "double_count"),
    (bug_send_before_receive, "not_held"),
    (bug_bad_rank, "bad_rank"),
    (bug_switch_endpoint, "bad_rank"),
    (bug_self_transfer, "self_transfer"),
    (bug_bad_chunk_id, "bad_chunk"),
    (bug_conflicting_writes, "conflicting_writes"),
    (bug_reduce_in_allgather, "reduce_in_copy_collective"),
    (bug_no_route, "no_route"),
    (bug_schedule_for_bigger_group, "bad_rank"),
    (bug_reduce_scatter_wrong_owner, "missing_contributions"),
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bug,kind", BUGS, ids=[b.__name__ for b, _ in BUGS])
def test_planted_bug_is_caught(bug, kind, method):
    schedule, topology = bug()
    rep, kinds = _kinds(schedule, topology, method)
    assert kind in kinds, rep.violations[:5]
    with pytest.raises(ScheduleError) as exc:
        verify(schedule, topology, method=method)
    assert exc.value.kind in VIOLATION_KINDS
    assert str(exc.value)


def test_violation_locations_are_exact():
    s = ring_allreduce(ring(4))
    bad = edit(s, op=setitem(5, Op.COPY))           # step 1, transfer 1->2
    with pytest.raises(ScheduleError) as exc:
        verify(bad, ring(4))
    # the copy in step 1 overwrites rank 2's partial sum of chunk 3; the loss shows at the end
    assert exc.value.kind == "missing_contributions"
    assert exc.value.chunk == 3
    rep = verify(bad, ring(4), collect=True)
    assert {v.rank for v in rep.violations} == {0, 1, 2, 3}    # everyone misses rank 2's part
    assert all(v.chunk == 3 for v in rep.violations)
    assert "rank(s) 2" in rep.violations[0].message

    dbl = bug_reduce_twice()[0]
    v = verify(dbl, ring(4), collect=True).violations[0]
    assert (v.kind, v.step, v.src, v.dst, v.chunk, v.rank) == ("double_count", 1, 0, 1, 3, 0)
    assert v.message == "step 1, transfer 0->1: chunk 3 reduced twice from rank 0 at rank 1"

    ns = bug_send_before_receive()[0]
    v = verify(ns, ring(4), collect=True).violations[0]
    assert (v.kind, v.step, v.transfer, v.rank, v.chunk) == ("not_held", 0, 0, 0, 3)


def test_collect_lists_every_violation_and_caps():
    s = ring_allgather(ring(6))
    bad = edit(s, op=lambda a: np.ones_like(a))     # every transfer a REDUCE
    rep = verify(bad, ring(6), collect=True, max_violations=7)
    assert len(rep.violations) == 7
    assert rep.total_violations == s.num_transfers
    assert all(v.kind == "reduce_in_copy_collective" for v in rep.violations)


def test_concurrent_reduces_into_one_cell_are_combined():
    c = allreduce(3)
    steps = [[Transfer(1, 0, (0,), Op.REDUCE), Transfer(2, 0, (0,), Op.REDUCE)],
             [Transfer(0, 1, (0,)), Transfer(0, 2, (0,))]]
    for m in METHODS:
        assert verify(Schedule.from_steps(c, steps), method=m).ok


def test_reads_see_start_of_step_state():
    # a swap exchange: both read the other's value before either write lands
    c = allreduce(2)
    s = Schedule.from_steps(c, [[Transfer(0, 1, (0,), Op.REDUCE), Transfer(1, 0, (0,), Op.REDUCE)]])
    for m in METHODS:
        assert verify(s, method=m).ok


def test_broadcast_and_subgroup():
    c = broadcast([2, 5, 7], root=5)
    s = Schedule.from_steps(c, [[Transfer(5, 2, (0,))], [Transfer(2, 7, (0,))]])
    assert verify(s, torus((2, 4))).ok
    short = Schedule.from_steps(c, [[Transfer(5, 2, (0,))]])
    rep = verify(short, torus((2, 4)), collect=True)
    assert [(v.kind, v.rank) for v in rep.violations] == [("missing_data", 7)]


def test_fingerprint_mode_is_used_for_large_state_and_catches_loss():
    t = ring(300)
    s = ring_allreduce(t)
    rep = verify(s, t, collect=True, method="fingerprint")
    assert rep.ok and 0 < rep.error_probability < 1e-12
    bad = edit(s, op=setitem(300 * 150 + 7, Op.COPY))
    rep = verify(bad, t, collect=True, method="fingerprint")
    assert not rep.ok
    assert {v.kind for v in rep.violations} == {"missing_contributions"}


def _paths_reference(s, topology):
    """The hop-by-hop check the vectorized one replaced: (transfer, message) of every bad
    explicit path, in transfer order."""
    out = []
    for t in np.flatnonzero(np.diff(s.path_ptr)).tolist():
        path = s.path_nodes[s.path_ptr[t]: s.path_ptr[t + 1]].tolist()
        src, dst = int(s.src[t]), int(s.dst[t])
        if path[0] != src or path[-1] != dst:
            out.append(t)
            continue
        for u, v in zip(path, path[1:], strict=False):
            if not (0 <= u < topology.num_nodes and 0 <= v < topology.num_nodes) or \
                    not topology.links_between(u, v):
                out.append(t)
                break
    return out


def test_vectorized_path_check_equals_the_hop_by_hop_one():
    """Explicit switch paths of a real schedule, then damaged three ways (a hop with no
    link, a node out of range, a wrong end): the same transfers are reported."""
    from topocoll.selection import find_algorithm
    from topocoll.topology.spec import parse_spec

    t = parse_spec("dgx-h100:2")
    s = find_algorithm("optimal", "allgather")(t, batches=2)
    assert s.has_paths and verify(s, t).ok and not _paths_reference(s, t)
    rng = np.random.default_rng(5)
    nodes = np.array(s.path_nodes)
    with_path = np.flatnonzero(np.diff(s.path_ptr) > 2)
    for damage in ("hop", "range", "end"):
        bad = nodes.copy()
        hit = rng.choice(with_path, size=5, replace=False)
        for tr in hit:
            a, b = s.path_ptr[tr], s.path_ptr[tr + 1]
            if damage == "hop":
                bad[a + 1] = (bad[a] + 1) % t.num_ranks        # rank -> rank: no link
            elif damage == "range":
                bad[a + 1] = t.num_nodes + 3
            else:
                bad[b - 1] = (bad[b - 1] + 1) % t.num_ranks
        d = s.replace(path_nodes=bad)
        want = _paths_reference(d, t)
        got = sorted({v.transfer for v in verify(d, t, collect=True).violations
                      if v.kind == "no_route"})
        assert got == want and set(want) >= set(hit.tolist()), damage
