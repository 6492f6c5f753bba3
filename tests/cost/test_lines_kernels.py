"""The alpha-beta model's compiled line loops equal the array formulations they replaced."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.cost import AlphaBeta
from topocoll.cost import alphabeta as ab
from topocoll.cost._lines import one_link_lines, step_envelope
from topocoll.synth import ring_allreduce, swing_allreduce
from topocoll.topology import torus


def test_envelope_in_one_pass_equals_the_pareto_front_then_maximum():
    rng = np.random.default_rng(3)
    ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 40, size=200))])
    lat = rng.random(ptr[-1]) * 1e-5
    slope = rng.random(ptr[-1]) * 1e-9
    slope[::7] = 0.0                                    # flat lines and ties
    lat[1::6] = lat[0::6][:len(lat[1::6])]             # equal latencies
    cbs = np.array([0.0, 1.0, 3e3, 2**21 + 7.0, 2**30])
    direct = step_envelope(lat, slope, ptr, cbs)
    p_lat, p_slope, p_ptr = ab._pareto(lat, slope, ptr)
    ref = np.zeros_like(direct)
    for k in range(len(ptr) - 1):
        if p_ptr[k + 1] > p_ptr[k]:
            val = p_lat[p_ptr[k]:p_ptr[k + 1], None] + p_slope[p_ptr[k]:p_ptr[k + 1], None] * cbs
            ref[k] = np.maximum(val.max(axis=0), 0.0)
    assert np.array_equal(direct, ref)
    assert (np.diff(ptr) == 0).any() and not direct[np.diff(ptr) == 0].any()


def test_one_link_lines_equal_bincount_per_step():
    rng = np.random.default_rng(5)
    step_ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 30, size=50))])
    T, L = int(step_ptr[-1]), 17
    link = rng.integers(0, L, size=T)
    nbytes = rng.random(T) * 1e6
    inv_bw = 1.0 / (rng.random(L) * 1e11 + 1e9)
    s0, s1 = 3, 41
    a, b = step_ptr[s0], step_ptr[s1]
    slope, total = one_link_lines(step_ptr, s0, s1, link[a:b], nbytes[a:b], 2.5, inv_bw, L)
    tstep = np.repeat(np.arange(s1 - s0), np.diff(step_ptr[s0:s1 + 1]))
    key = tstep * L + link[a:b]
    load = np.bincount(key, weights=nbytes[a:b], minlength=(s1 - s0) * L) * 2.5
    assert np.array_equal(slope, load[key] * inv_bw[link[a:b]])
    assert np.array_equal(total, load.reshape(s1 - s0, L).sum(axis=0))


@pytest.mark.parametrize("make", [ring_allreduce, swing_allreduce])
def test_many_sizes_take_the_pareto_path_and_agree(make, monkeypatch):
    t = torus((4, 4))
    s = make(t)
    sizes = [float(x) for x in np.geomspace(1, 2**30, 20)]
    direct = AlphaBeta().evaluate_sizes(s, t, sizes[:10])
    pareto = AlphaBeta().evaluate_sizes(s, t, sizes)          # 20 sizes: the sorted front
    monkeypatch.setattr(ab, "DIRECT_ENVELOPE_SIZES", 100)
    again = AlphaBeta().evaluate_sizes(s, t, sizes)
    for x, y in zip(pareto, again, strict=True):
        assert np.array_equal(x.step_times, y.step_times)
    for x, y in zip(direct, pareto[:10], strict=True):
        assert x.time == y.time


@pytest.mark.parametrize("case", ["ring-unit", "hypercube-multi-chunk"])
def test_pair_table_inside_the_loop_equals_the_searched_pairs(case, monkeypatch):
    # one-link schedules: the dense pair table (looked up in the compiled loop) and the
    # sorted-key search (numpy) give the same times and loads, bit for bit
    from topocoll.synth import rabenseifner_allreduce
    from topocoll.topology import hypercube, ring

    if case == "ring-unit":
        t = ring(8)
        s = ring_allreduce(t)
    else:
        t = hypercube(4)
        s = rabenseifner_allreduce(t)
        assert s.chunk_ptr[-1] > s.num_transfers            # transfers of several chunks
    sizes = [32.0, 3e3 + 1, 2.0**30]
    dense = [AlphaBeta(alpha=a).evaluate_sizes(s, t, sizes) for a in (0.0, 1e-6)]
    one = AlphaBeta().evaluate(s, t, 12345.0)
    monkeypatch.setattr(ab, "DENSE_PAIR_TABLE", 0)
    searched = [AlphaBeta(alpha=a).evaluate_sizes(s, t, sizes) for a in (0.0, 1e-6)]
    again = AlphaBeta().evaluate(s, t, 12345.0)
    for xs, ys in zip(dense, searched, strict=True):
        for x, y in zip(xs, ys, strict=True):
            assert np.array_equal(x.step_times, y.step_times)
            assert np.array_equal(x.link_load, y.link_load)
    assert np.array_equal(one.step_times, again.step_times)
    assert np.array_equal(one.link_load, again.link_load)


@pytest.mark.parametrize("n, T, pairs", [(7, 50, 5), (5000, 200_000, 30_000),
                                         (2**20, 10_000, 10_000), (300, 200_000, 60_000),
                                         (64, 20_000, 8_000)])
def test_distinct_pairs_are_the_sorted_unique_keys(n, T, pairs):
    """The hash set (grown from 4,096 slots, keys up to ``n**2``, repeats and a skip
    mask) and the bitmap it turns into when it would outgrow one (the last two cases:
    more than 2,048 distinct keys of ``n**2 <= 2**19``) give exactly ``np.unique`` of
    the kept keys."""
    from topocoll.cost._lines import distinct_pairs

    rng = np.random.default_rng(n)
    pick = rng.integers(0, n, size=(pairs, 2))
    rows = pick[rng.integers(0, pairs, size=T)]
    src, dst = rows[:, 0].astype(np.int32), rows[:, 1].astype(np.int32)
    keys = src.astype(np.int64) * n + dst
    assert np.array_equal(distinct_pairs(src, dst, n, np.zeros(0, dtype=bool)), np.unique(keys))
    skip = rng.random(T) < 0.3
    assert np.array_equal(distinct_pairs(src, dst, n, skip), np.unique(keys[~skip]))


def _one_link_cases():
    from topocoll.synth import bidirectional_ring_allreduce, rabenseifner_allreduce, ring_allgather
    from topocoll.topology import hypercube, ring

    t4 = torus((4, 4), bandwidth=(1e9, 3e9))             # two rates: slopes differ by link
    yield "ring", ring_allreduce(t4), t4
    yield "swing", swing_allreduce(t4), t4
    yield "bidirectional", bidirectional_ring_allreduce(t4), t4
    h = hypercube(3)                                      # several chunks per transfer
    yield "rabenseifner", rabenseifner_allreduce(h), h
    r = ring(6)
    yield "allgather", ring_allgather(r), r


@pytest.mark.parametrize("case", list(_one_link_cases()), ids=lambda c: c[0])
def test_one_pass_step_times_equal_lines_then_envelope(case):
    """The fused kernel gives the bits of one_link_lines_table + step_envelope (times and
    link loads), batch by batch, at sizes that include 0 and uneven ones."""
    _, s, t = case
    cbs = np.array([0.0, 1.0, 3e3 + 0.5, 2**21 + 7.0, 2**30])
    rt, pair_id, explicit = AlphaBeta()._routed(s, t)
    fused = ab._Evaluator(s, t, rt, pair_id, explicit, 1.0)
    ref = ab._Evaluator(s, t, rt, pair_id, explicit, 1.0)
    assert fused.one_link and explicit is None
    S = s.num_steps
    for s0, s1 in [(0, S), (0, 1), (1, S), (S // 2, S)]:
        got = fused.envelope(s0, s1, cbs)
        want = ab._envelope(*ref.lines(s0, s1), cbs)
        assert got.shape == (s1 - s0, len(cbs)) and np.array_equal(got, want)
        assert np.array_equal(fused.link_load, ref.link_load)


def _repeating_steps():
    """A one-link schedule on ring(6) whose steps repeat the step before them, or nearly
    (one destination, one chunk count, one more transfer), with empty steps between."""
    from topocoll.collective import allgather
    from topocoll.schedule import ScheduleBuilder
    from topocoll.topology import ring

    t = ring(6)
    b = ScheduleBuilder(allgather(6, split=2))
    fwd = np.arange(6)
    base = [(fwd, (fwd + 1) % 6, [[0], [1], [2], [3], [4], [5]])]
    steps = [
        base, base, [],                                    # a repeat, then an empty step
        base,                                              # repeats across the empty one
        [(fwd, (fwd + 1) % 6, [[0], [1], [2], [3], [4, 10], [5]])],  # two chunks on one
        [(fwd, (fwd + 1) % 6, [[0], [1], [2], [3], [4, 10], [5]])],
        [(fwd, (fwd + 1) % 6, [[0], [1], [2], [3], [4, 11], [5]])],  # same counts
        base,
        [(fwd, np.r_[(fwd[:5] + 1) % 6, 4], [[0], [1], [2], [3], [4], [5]])],  # 5 -> 4
        [(np.r_[fwd, 0], np.r_[(fwd + 1) % 6, 5], [[0], [1], [2], [3], [4], [5], [6]])],
        [(np.r_[fwd, 0], np.r_[(fwd + 1) % 6, 5], [[0], [1], [2], [3], [4], [5], [6]])],
    ]
    for st in steps:
        b.new_step()
        for src, dst, ch in st:
            ptr = np.r_[0, np.cumsum([len(c) for c in ch])]
            b.add_many(src, dst, (ptr, np.concatenate(ch)))
    return b.build(name="repeats"), t


@pytest.mark.parametrize("chunk_bytes", [1.0, 3.7])
def test_repeated_steps_are_costed_as_computed_afresh(chunk_bytes):
    """Steps that repeat the one before them reuse its links, times and loads; the bits
    equal the lines computed step by step (one step per call: nothing to reuse), with
    near-repeats (a destination, a chunk count, one more transfer) computed afresh."""
    s, t = _repeating_steps()
    cbs = np.array([0.0, 1.0, 3e3 + 0.5, 2**30])
    rt, pair_id, explicit = AlphaBeta()._routed(s, t)
    fused = ab._Evaluator(s, t, rt, pair_id, explicit, chunk_bytes)
    ref = ab._Evaluator(s, t, rt, pair_id, explicit, chunk_bytes)
    assert fused.one_link and not fused.unit_chunks
    S = s.num_steps
    got = fused.envelope(0, S, cbs)
    want = np.concatenate([ref.envelope(k, k + 1, cbs) for k in range(S)])
    assert np.array_equal(got, want) and np.array_equal(fused.link_load, ref.link_load)
    assert np.array_equal(got, ab._envelope(*ab._Evaluator(s, t, rt, pair_id, explicit,
                                                            chunk_bytes).lines(0, S), cbs))
    # a near-repeat's loads or times differ from the step before it (else the case tests
    # nothing): two chunks load 4 -> 5 twice, 5 -> 4 loads another link (the loads above)
    assert not np.array_equal(got[4], got[3]) and np.array_equal(got[5], got[4])
    assert np.array_equal(got[1], got[0]) and np.array_equal(got[3], got[0])
    assert np.array_equal(got[10], got[9]) and not got[2].any()


def test_repeated_steps_and_the_pairs_without_them():
    """repeated_steps flags exactly the steps equal to the last nonempty one before them;
    routed_pairs, which leaves them out when they are most of the transfers, is np.unique
    of every key (a ring: all repeats; the repeating test schedule: some; swing: none)."""
    from topocoll.cost import routed_pairs
    from topocoll.cost._lines import repeated_steps

    s, t = _repeating_steps()
    rep = repeated_steps(s.step_ptr, s.src, s.dst)
    assert rep.tolist() == [False, True, False, True, True, True, True, True, False, False, True]
    for sched, topo in [(s, t), (ring_allreduce(torus((4, 4))), torus((4, 4))),
                        (swing_allreduce(torus((4, 4))), torus((4, 4)))]:
        n = topo.num_nodes
        sp = sched.step_ptr
        want = np.unique(sched.src.astype(np.int64) * n + sched.dst)
        assert np.array_equal(routed_pairs(sched, n), want)
        flags = repeated_steps(sp, sched.src, sched.dst)
        for k in range(1, sched.num_steps):       # a flagged step repeats its predecessor
            prev = max((j for j in range(k) if sp[j + 1] > sp[j]), default=None)
            same = prev is not None and sp[k + 1] - sp[k] == sp[prev + 1] - sp[prev] and \
                np.array_equal(sched.src[sp[k]:sp[k + 1]], sched.src[sp[prev]:sp[prev + 1]]) \
                and np.array_equal(sched.dst[sp[k]:sp[k + 1]], sched.dst[sp[prev]:sp[prev + 1]])
            assert bool(flags[k]) == (same and sp[k + 1] > sp[k]), k
