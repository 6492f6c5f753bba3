"""selection.cache: keys by content, atomic and concurrent writes, corrupt files, bounds."""

from __future__ import annotations

import multiprocessing as mp
import os

import pytest

from topocoll.selection import ScheduleCache, compare_algorithms, find_algorithm
from topocoll.selection.cache import default_cache_dir
from topocoll.synth import ring_allgather, ring_allreduce
from topocoll.topology import ring, torus


def test_round_trip_and_keys(tmp_path):
    c = ScheduleCache(tmp_path)
    t = torus((4, 4))
    s = ring_allreduce(t)
    k = c.key("ring", "allreduce", {}, t)
    assert c.get(k) is None and c.misses == 1
    c.put(k, s)
    assert c.get(k).fingerprint() == s.fingerprint() and c.hits == 1
    # every input of the schedule is in the key
    others = [c.key("ring", "allgather", {}, t), c.key("swing", "allreduce", {}, t),
              c.key("ring", "allreduce", {"ranks": (0, 1)}, t),
              c.key("ring", "allreduce", {"message_bytes": 1024}, t),
              c.key("ring", "allreduce", {}, torus((4, 4), bandwidth=1e9))]
    assert len({k, *others}) == 6
    # and nothing else: a topology with another name, options in another order
    assert c.key("ring", "allreduce", {"a": 1, "b": 2}, t) == \
        c.key("ring", "allreduce", {"b": 2, "a": 1}, torus((4, 4), name="other"))


def test_corrupt_file_is_a_miss_and_removed(tmp_path):
    c = ScheduleCache(tmp_path)
    k = c.key("ring", "allgather", {}, ring(4))
    c.put(k, ring_allgather(ring(4)))
    path = next(tmp_path.glob("*/*.npz"))
    path.write_bytes(path.read_bytes()[:50])          # truncated by a crash elsewhere
    assert c.get(k) is None and not path.exists()
    path.parent.mkdir(exist_ok=True)
    path.write_text("not a schedule")
    assert c.get(k) is None


def test_prune_keeps_the_most_recently_used(tmp_path):
    c = ScheduleCache(tmp_path)
    t = ring(8)
    keys = []
    for i, n in enumerate((4, 5, 6, 7)):
        k = c.key("ring", "allgather", {"n": n}, t)
        c.put(k, ring_allgather(ring(n)))
        os.utime(c._path(k), (1000 + i, 1000 + i))
        keys.append(k)
    os.utime(c._path(keys[0]), (5000, 5000))          # the oldest was just read
    sizes = sorted(p.stat().st_size for p in tmp_path.glob("*/*.npz"))
    c.max_bytes = sum(sizes[-2:]) + 1
    assert c.prune() >= 2
    kept = {p.stem for p in tmp_path.glob("*/*.npz")}
    assert keys[0] in kept and keys[1] not in kept and len(kept) <= 2


def _writer(args):
    directory, n, rounds = args
    c = ScheduleCache(directory)
    t = ring(8)
    out = []
    for r in range(rounds):
        k = c.key("ring", "allgather", {"n": (n + r) % 3}, t)
        c.put(k, ring_allgather(ring(4 + (n + r) % 3)))
        got = c.get(k)
        out.append(got is not None and got.num_steps == 3 + (n + r) % 3)
    return all(out)


def test_concurrent_processes_never_see_a_partial_file(tmp_path):
    with mp.get_context("spawn").Pool(4) as pool:
        assert all(pool.map(_writer, [(tmp_path, n, 20) for n in range(4)]))
    assert not list(tmp_path.glob("*/.tmp-*"))


def test_location(monkeypatch, tmp_path):
    monkeypatch.setenv("TOPOCOLL_CACHE", str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    monkeypatch.delenv("TOPOCOLL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "topocoll"


def test_a_second_compare_reuses_every_schedule(tmp_path):
    c = ScheduleCache(tmp_path)
    t = torus((4, 4))
    first = compare_algorithms(t, "allreduce", [1e3, 1e8], cache=c)
    made = c.misses
    assert made > 0 and c.hits == 0
    again = compare_algorithms(t, "allreduce", [1e3, 1e8], cache=c)
    # every schedule and every verification outcome read back, nothing made again
    assert c.hits == 2 * made and c.misses == made
    assert [r.to_dict() for r in again] == [r.to_dict() for r in first]


def test_unwritable_directory_only_means_no_cache(tmp_path):
    (tmp_path / "f").write_text("a file where the directory should be")
    c = ScheduleCache(tmp_path / "f")
    k = c.key("ring", "allgather", {}, ring(4))
    c.put(k, ring_allgather(ring(4)))          # no error
    assert c.get(k) is None


@pytest.mark.parametrize("name", ["ring", "optimal"])
def test_cached_schedule_is_the_synthesized_one(tmp_path, name):
    c = ScheduleCache(tmp_path)
    t = torus((2, 4))
    from topocoll.selection import synthesize

    a = synthesize(find_algorithm(name, "allgather"), t, {"message_bytes": 2**20}
                   if name == "optimal" else {}, cache=c)
    b = synthesize(find_algorithm(name, "allgather"), t, {"message_bytes": 2**20}
                   if name == "optimal" else {}, cache=c)
    assert a.fingerprint() == b.fingerprint() and c.hits == 1


def test_verification_outcomes_are_kept(tmp_path):
    from topocoll.schedule import Schedule

    c = ScheduleCache(tmp_path)
    t = ring(4)
    good = ring_allgather(t)
    bad = Schedule.from_steps(good.collective, good.steps[:1])      # stops early
    calls = []

    def check(s, topo):
        calls.append(s.num_steps)
        from topocoll.verification import verify
        return verify(s, topo, collect=True).ok

    assert c.verified(good, t, check) and not c.verified(bad, t, check)
    assert c.verified(good, t, check) and not c.verified(bad, t, check)
    assert calls == [3, 1]                      # each checked once, then read back


def test_outcomes_under_the_key_that_made_the_schedule(tmp_path, monkeypatch):
    """With ``made_by`` the outcome is stored under the synthesis key: read back without
    a check, and without hashing the schedule; another key is checked anew."""
    from topocoll.schedule import Schedule

    c = ScheduleCache(tmp_path)
    t = ring(4)
    s = ring_allgather(t)
    made_by = c.key("ring", "allgather", {}, t)
    calls = []

    def check(sched, topo):
        calls.append(sched.num_steps)
        return True

    def no_hash(self):
        raise AssertionError("the schedule was hashed")

    monkeypatch.setattr(Schedule, "fingerprint", no_hash)
    assert c.verified(s, t, check, made_by=made_by)
    assert c.verified(s, t, check, made_by=made_by)
    assert calls == [3]
    assert c.verified(s, t, check, made_by=c.key("ring", "allgather", {"x": 1}, t))
    assert calls == [3, 3]


def test_writes_prune_once_per_fraction_of_the_limit(tmp_path, monkeypatch):
    """A put lists the directory only after PRUNE_FRACTION of the limit was written since
    the last prune; under a tight limit every put prunes, and to the limit."""
    from topocoll.selection import cache as mod

    calls = []
    real = mod.ScheduleCache.prune
    monkeypatch.setattr(mod.ScheduleCache, "prune",
                        lambda self: calls.append(1) or real(self))
    c = ScheduleCache(tmp_path / "c")
    k0 = c.key("ring", "allgather", {"n": 0}, ring(8))
    c.put(k0, ring_allgather(ring(16)))
    size = next((tmp_path / "c").glob("*/*.npz")).stat().st_size
    c.max_bytes = int(size / mod.PRUNE_FRACTION * 3.5)     # a prune every 3.5 files' bytes
    calls.clear()
    for n in range(1, 15):
        c.put(c.key("ring", "allgather", {"n": n}, ring(8)), ring_allgather(ring(16)))
    assert 3 <= len(calls) <= 5                            # not 14
    c.max_bytes = 2 * size                                 # a tight limit: every put
    calls.clear()
    c.put(c.key("ring", "allgather", {"n": 99}, ring(8)), ring_allgather(ring(16)))
    assert calls and len(list((tmp_path / "c").glob("*/*.npz"))) <= 2


def test_schedules_over_the_entry_limit_are_not_stored(tmp_path, monkeypatch):
    from topocoll.selection import cache as cache_mod

    c = ScheduleCache(tmp_path)
    t = torus((4, 4))
    s = ring_allreduce(t)                   # 480 transfers of one chunk each
    monkeypatch.setattr(cache_mod, "MAX_ENTRIES", len(s.chunks) - 1)
    c.put("k1", s)
    assert c.get("k1") is None
    monkeypatch.setattr(cache_mod, "MAX_ENTRIES", len(s.chunks))
    c.put("k2", s)
    assert c.get("k2").fingerprint() == s.fingerprint()
