"""Verification by symmetry: a schedule whose claimed symmetries hold is run for one chunk
per orbit, and its report is the one the direct run gives.

``execute`` takes that path for schedules of at least ``SYMMETRY_MIN_ENTRIES`` entries;
the tests lower the threshold to 0 so that small schedules take it.
"""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.schedule import Schedule, Symmetry
from topocoll.synth import (
    bidirectional_ring_allgather,
    bidirectional_ring_allreduce,
    bidirectional_ring_reduce_scatter,
    bucket_allreduce,
    hamiltonian_rings_allreduce,
    hierarchical_allgather,
    mirrored_recursive_doubling_allgather,
    mirrored_recursive_doubling_allreduce,
    mirrored_recursive_doubling_reduce_scatter,
    ring_allgather,
    ring_allreduce,
    ring_reduce_scatter,
    swing_allreduce,
    swing_reduce_scatter,
)
from topocoll.topology import ring, torus
from topocoll.verification import semantics as sem
from topocoll.verification import verify

#: schedule, and how many chunks the symmetric path runs (one per orbit)
SCHEDULES = {
    "ring-allreduce-7": (lambda: ring_allreduce(ring(7)), 1),
    "ring-allgather-6": (lambda: ring_allgather(ring(6)), 1),
    "ring-reduce_scatter-5": (lambda: ring_reduce_scatter(ring(5)), 1),
    "ring-subgroup": (lambda: ring_allreduce(ring(8), ranks=[1, 3, 4, 6], order=[6, 1, 4, 3]),
                      1),
    "bidirectional-allreduce-3x3": (lambda: bidirectional_ring_allreduce(torus((3, 3))), 2),
    "bidirectional-allgather-8": (lambda: bidirectional_ring_allgather(ring(8)), 2),
    "halfway-allreduce-7": (lambda: bidirectional_ring_allreduce(ring(7), variant="halfway"),
                            2),
    "halfway-reduce_scatter-3x4": (lambda: bidirectional_ring_reduce_scatter(
        torus((3, 4)), variant="halfway"), 2),
    "hamiltonian-4x4": (lambda: hamiltonian_rings_allreduce(torus((4, 4))), 4),
    "hamiltonian-4x8": (lambda: hamiltonian_rings_allreduce(torus((4, 8))), 4),
    # translations along every dimension: the chunks of one rank stand for all
    "bucket-allreduce-4x6": (lambda: bucket_allreduce(torus((4, 6))), 4),
    "hierarchical-allgather-3x5": (lambda: hierarchical_allgather(torus((3, 5))), 2),
    # one diagonal shift (orbits of 16 positions): 16 x 4 ranks x 4 chunks / 16
    "bucket-allreduce-16x4": (lambda: bucket_allreduce(torus((16, 4))), 16),
    # shifts by 2: a quarter of the 8x4 positions (4 ports x 32 blocks = 128 chunks)
    "swing-allreduce-8x4": (lambda: swing_allreduce(torus((8, 4))), 16),
    "swing-reduce_scatter-4x4x4": (lambda: swing_reduce_scatter(torus((4, 4, 4))), 48),
    # half turns of each dimension (XOR of the top bit): orbits of 4 (2-D) or 8 (3-D)
    "mrd-allreduce-8x4": (lambda: mirrored_recursive_doubling_allreduce(torus((8, 4))), 32),
    "mrd-reduce_scatter-4x4x4": (lambda: mirrored_recursive_doubling_reduce_scatter(
        torus((4, 4, 4))), 48),
    "mrd-allgather-16x16": (lambda: mirrored_recursive_doubling_allgather(torus((16, 16))),
                            256),
}


def run(s: Schedule, symmetric: bool, monkeypatch) -> tuple:
    monkeypatch.setattr(sem, "SYMMETRY_MIN_ENTRIES", 0 if symmetric else 1 << 62)
    out = sem.Collector(1000)
    num_ranks = int(max(s.participants().max(), max(s.collective.ranks))) + 1
    cells = sem.execute(s, num_ranks, False, out)
    return (out.total, [(v.kind, v.step, v.transfer, v.rank, v.chunk) for v in out.items],
            cells), out


def corrupted(s: Schedule, rng: np.random.Generator) -> Schedule:
    """One random edit: an endpoint, an operation or a chunk id (in range, so that only
    the symmetric structure can give it away), or one transfer dropped from its step."""
    cols = {k: np.array(getattr(s, k)) for k in ("src", "dst", "op", "chunks")}
    what = rng.choice(["src", "dst", "op", "chunks", "drop"])
    if what == "drop":
        t = int(rng.integers(s.num_transfers))
        keep = np.ones(s.num_transfers, dtype=bool)
        keep[t] = False
        step = s.step_of(t)
        step_ptr = s.step_ptr.copy()
        step_ptr[step + 1:] -= 1
        counts = np.diff(s.chunk_ptr)[keep]
        entries = np.repeat(keep, np.diff(s.chunk_ptr))
        return Schedule(s.collective, step_ptr, cols["src"][keep], cols["dst"][keep],
                        cols["op"][keep], np.concatenate([[0], np.cumsum(counts)]),
                        cols["chunks"][entries], symmetries=s.symmetries)
    i = int(rng.integers(len(cols[what])))
    hi = {"src": max(s.collective.ranks) + 1, "dst": max(s.collective.ranks) + 1, "op": 2,
          "chunks": s.collective.num_chunks}[what]
    cols[what][i] = (cols[what][i] + 1 + int(rng.integers(hi - 1))) % hi
    return Schedule(s.collective, s.step_ptr, cols["src"], cols["dst"], cols["op"],
                    s.chunk_ptr, cols["chunks"], symmetries=s.symmetries)


@pytest.mark.parametrize("name", SCHEDULES)
def test_claims_hold_and_one_chunk_per_orbit_runs(name, monkeypatch):
    make, orbits = SCHEDULES[name]
    s = make()
    assert s.symmetries
    num_ranks = int(s.participants().max()) + 1
    reps, err = sem.orbit_representatives(s, num_ranks)
    assert len(reps) == orbits
    assert 0 < err < 1e-20
    symmetric, out = run(s, True, monkeypatch)
    assert out.orbit_chunks == len(reps)
    assert symmetric == run(s, False, monkeypatch)[0]
    assert symmetric[0] == 0


@pytest.mark.parametrize("name", ["ring-allreduce-7", "ring-subgroup",
                                  "bidirectional-allreduce-3x3", "hamiltonian-4x4",
                                  "bucket-allreduce-4x6", "swing-allreduce-8x4",
                                  "halfway-allreduce-7", "mrd-allreduce-8x4"])
def test_corrupted_schedules_get_the_direct_report(name, monkeypatch):
    """40 corrupted copies: the symmetric path gives exactly the direct run's report
    (violations, their order, totals, cells); every corruption that breaks the schedule is
    caught, including those in chunks the symmetric path does not run."""
    s = SCHEDULES[name][0]()
    rng = np.random.default_rng(11)
    broken = 0
    for _ in range(40):
        c = corrupted(s, rng)
        direct, _ = run(c, False, monkeypatch)
        symmetric, out = run(c, True, monkeypatch)
        assert symmetric == direct
        if direct[0]:
            broken += 1
            assert out.orbit_chunks is None        # the direct run made the report
    assert broken >= 30


def test_the_claims_check_is_what_catches_a_broken_orbit(monkeypatch):
    """A schedule broken only in a chunk that is not its orbit's representative: the
    check of the claims rejects them; with that check disabled the symmetric path would
    accept the schedule (so the test above can fail)."""
    s = ring_allreduce(ring(7))
    cols = {k: np.array(getattr(s, k)) for k in ("src", "dst", "op", "chunks")}
    # the last delivery of chunk 3 carries chunk 4 (which its destination already holds)
    # instead: one rank ends without chunk 3; the orbit's least chunk, 0, is untouched
    t = int(np.flatnonzero(cols["chunks"] == 3)[-1])
    cols["chunks"][t] = 4
    bad = Schedule(s.collective, s.step_ptr, cols["src"], cols["dst"], cols["op"], s.chunk_ptr,
                   cols["chunks"], symmetries=s.symmetries)
    monkeypatch.setattr(sem, "SYMMETRY_MIN_ENTRIES", 0)
    assert sem.orbit_representatives(bad, 7) is None
    assert not verify(bad, ring(7), method="fingerprint", collect=True).ok

    real = sem._claim_products

    def blind(*args):
        prod, count = real(*args)
        prod[..., 1], prod[..., 3] = prod[..., 0], prod[..., 2]
        return prod, count

    monkeypatch.setattr(sem, "_claim_products", blind)
    assert verify(bad, ring(7), method="fingerprint", collect=True).ok


def test_the_claims_check_reads_an_implicit_pointer_as_a_stored_one(monkeypatch):
    """Schedules of one chunk per transfer reach the claims' check with an empty chunk
    pointer (:attr:`~topocoll.schedule.Schedule.compact_chunk_ptr`): its products and
    counts equal those of the stored pointer, on intact and corrupted schedules."""
    real = sem._claim_products
    seen = []

    def both(step_ptr, src, dst, op, chunk_ptr, *rest):
        got = real(step_ptr, src, dst, op, chunk_ptr, *rest)
        seen.append(len(chunk_ptr))
        if len(chunk_ptr) == 0:
            stored = real(step_ptr, src, dst, op, np.arange(len(src) + 1, dtype=np.int64),
                          *rest)
            assert all(np.array_equal(a, b) for a, b in zip(got, stored, strict=True))
        return got

    monkeypatch.setattr(sem, "SYMMETRY_MIN_ENTRIES", 0)
    monkeypatch.setattr(sem, "_claim_products", both)
    rng = np.random.default_rng(5)
    for name in ("ring-allreduce-7", "hamiltonian-4x4", "swing-allreduce-8x4"):
        s = SCHEDULES[name][0]()
        for c in [s] + [corrupted(s, rng) for _ in range(5)]:
            verify(c, method="fingerprint", collect=True)
    # the ring and the Hamiltonian rings carry one chunk per transfer, swing several
    assert seen.count(0) >= 10 and any(seen)


def test_wrong_claims_cost_only_the_check(monkeypatch):
    s = ring_allreduce(ring(6))
    r = np.arange(6)
    wrong = [
        Symmetry(r, np.roll(r, -2), r, np.roll(r, -1)),           # ranks and chunks disagree
        Symmetry(r, np.roll(r, -1), r[:3], r[[1, 2, 0]]),         # chunks: a wrong cycle
        Symmetry(r, np.roll(r, -1), np.arange(7), np.roll(np.arange(7), -1)),  # no chunk 6
        Symmetry(r, np.zeros(6, np.int64), r, np.roll(r, -1)),    # not a permutation
    ]
    for claim in wrong:
        c = s.replace(symmetries=(claim,))
        assert sem.orbit_representatives(c, 6) is None
        report, out = run(c, True, monkeypatch)
        assert out.orbit_chunks is None and report[0] == 0


def test_allgather_claims_must_carry_each_chunk_to_its_owners_image(monkeypatch):
    """In an allgather chunk ``c`` starts at its owner only, so a rotation of the ranks
    must move chunks the same way: the ring's own claim does, a claim that rotates the
    chunks the other way does not."""
    s = ring_allgather(ring(5))
    (y,) = s.symmetries
    assert sem.orbit_representatives(s, 5) is not None
    flipped = Symmetry(y.ranks, y.rank_images, y.chunk_images, y.chunks)
    assert sem.orbit_representatives(s.replace(symmetries=(flipped,)), 5) is None


def test_the_bound_of_the_check_is_in_the_report(monkeypatch):
    s = ring_allreduce(ring(9))
    monkeypatch.setattr(sem, "SYMMETRY_MIN_ENTRIES", 0)
    with_claims = verify(s, ring(9), method="fingerprint", collect=True)
    monkeypatch.setattr(sem, "SYMMETRY_MIN_ENTRIES", 1 << 62)
    direct = verify(s, ring(9), method="fingerprint", collect=True)
    m = len(s.chunks)
    assert with_claims.checked_cells == direct.checked_cells
    assert with_claims.error_probability == pytest.approx(
        direct.error_probability + (m / sem.MERSENNE61) ** 2, rel=1e-12)


def test_mulmod61_is_the_exact_product_modulo_the_prime():
    from topocoll.verification.semantics import MERSENNE61 as P
    from topocoll.verification.semantics import _mulmod61_many

    rng = np.random.default_rng(61)
    a = rng.integers(0, P, 20_000, dtype=np.int64)
    b = rng.integers(0, P, 20_000, dtype=np.int64)
    edge = [0, 1, 2, P - 2, P - 1, 2**60, 2**61 - 2, 2**31, 2**31 - 1, 2**30]
    a = np.concatenate([a, np.repeat(edge, len(edge))]).astype(np.int64)
    b = np.concatenate([b, np.tile(edge, len(edge))]).astype(np.int64)
    got = _mulmod61_many(a, b)
    assert [int(x) for x in got] == [int(x) * int(y) % P for x, y in zip(a, b, strict=True)]


def _cut_down_reference(s, want):
    """The cut-down schedule's columns by a plain loop over the transfers."""
    steps, keep, ptr, out = [0], [], [0], []
    for st in range(s.num_steps):
        for t in range(int(s.step_ptr[st]), int(s.step_ptr[st + 1])):
            mine = [int(c) for c in s.chunks[s.chunk_ptr[t]:s.chunk_ptr[t + 1]] if want[c]]
            if mine:
                keep.append(t)
                out += mine
                ptr.append(len(out))
        steps.append(len(keep))
    return steps, keep, ptr, out


@pytest.mark.parametrize("make", [bucket_allreduce, swing_allreduce, hamiltonian_rings_allreduce,
                                  bidirectional_ring_allreduce, ring_reduce_scatter])
def test_cut_down_equals_a_plain_loop(make):
    s = make(torus((4, 4)))
    C = s.collective.num_chunks
    rng = np.random.default_rng(7)
    for want in (np.zeros(C, bool), np.ones(C, bool), rng.random(C) < 0.2):
        ref = _cut_down_reference(s, want)
        for chunk_ptr in (s.chunk_ptr, s.compact_chunk_ptr):   # stored, and as kernels get it
            ok, step_ptr, keep, ptr, out = sem._cut_down(
                s.step_ptr, s.src, s.dst, s.op, chunk_ptr, s.chunks, want, 16,
                not s.collective.is_reduction)
            assert ok
            assert [step_ptr.tolist(), keep.tolist(), ptr.tolist(), out.tolist()] == list(ref)


@pytest.mark.parametrize("fault", [None, "endpoint out of range", "to itself",
                                   "chunk out of range", "reduce in a copy collective"])
def test_cut_down_refuses_what_the_direct_run_reports(fault):
    copy = fault == "reduce in a copy collective"
    s = ring_allgather(ring(6)) if copy else ring_allreduce(ring(6))
    src, dst, chunks, op = (getattr(s, c).copy() for c in ("src", "dst", "chunks", "op"))
    if fault == "endpoint out of range":
        dst[5] = 6
    elif fault == "to itself":
        dst[9] = src[9]
    elif fault == "chunk out of range":
        chunks[17] = 99
    elif copy:
        op[3] = 1                                   # a REDUCE in an allgather
    want = np.ones(s.collective.num_chunks, bool)
    ok, *rest = sem._cut_down(s.step_ptr, src, dst, op, s.chunk_ptr, chunks, want, 6,
                              not s.collective.is_reduction)
    if fault is None:                               # the untouched schedule is kept whole
        assert ok and rest[1].tolist() == list(range(s.num_transfers))
    else:
        assert not ok and all(len(x) == 0 for x in rest)


def test_a_plan_map_is_claimed_on_the_ports_it_commutes_with():
    """Recursive doubling's XOR by 1 commutes with the plain ports' partners, its mirror
    image with the mirrored ports': each is claimed on those ports' chunks only (and the
    verifier accepts the claims); a shift by 1 commutes with no port and is not claimed."""
    from topocoll.synth.multiport import half_turns, make_plan, plan_symmetries
    from topocoll.synth.torus import _xor_rule

    t = torus((8, 4))
    plan = make_plan(t, None, _xor_rule)
    v = np.arange(plan.q)
    x, y = v % 8, v // 8
    xor1 = (x ^ 1) + 8 * y
    mirrored = (-((-x % 8) ^ 1)) % 8 + 8 * y
    shift1 = (x + 1) % 8 + 8 * y
    extra = plan_symmetries(plan, "allreduce", [xor1, mirrored, shift1])
    assert len(extra) == 2
    Q = plan.q
    assert sorted(extra[0].chunks.tolist()) == list(range(2 * Q))          # ports 0, 1
    assert sorted(extra[1].chunks.tolist()) == list(range(2 * Q, 4 * Q))   # ports 2, 3
    s = mirrored_recursive_doubling_allreduce(t)
    both = s.replace(symmetries=[*half_turns(plan, "allreduce"), *extra])
    reps, _ = sem.orbit_representatives(both, 32)
    assert len(reps) == 16                         # orbits of 8: half turns and one XOR
    wrong = s.replace(symmetries=[*half_turns(plan, "allreduce"), extra[0].__class__(
        extra[0].ranks, extra[0].rank_images, extra[1].chunks, extra[1].chunk_images)])
    assert sem.orbit_representatives(wrong, 32) is None    # XOR by 1 on mirrored ports
