"""Parallelism search: the candidate space, memory pruning and a deterministic ranking."""

from __future__ import annotations

import pytest

from topocoll.topology.spec import parse_spec
from topocoll.workload import (
    candidate_parallelisms,
    find_device,
    memory_per_gpu,
    parse_model,
    search_parallelism,
)

TINY = parse_model("transformer:hidden=1024,ffn=4096,heads=16,layers=8,seq=512,vocab=32000")


def test_candidates_are_every_valid_factorization():
    c = candidate_parallelisms(TINY, 16, global_batch=32, recompute=("none",), zero=(0,))
    got = {(p.tp, p.pp, p.dp) for p in c}
    want = {(tp, pp, 16 // (tp * pp)) for tp in (1, 2, 4, 8) for pp in (1, 2, 4, 8, 16)
            if 16 % (tp * pp) == 0 and pp <= 8}
    assert got == want
    assert all(p.world == 16 and 32 % (p.micro_batch * p.dp) == 0 for p in c)


def test_search_prunes_by_memory_and_ranks_by_time():
    small = find_device("a100-40g")
    model = parse_model("llama2-7b:seq=1024")
    res = search_parallelism(model, 8, parse_spec("dgx:1"), small, global_batch=8,
                             algorithms=["ring"], zero=(0,))
    assert res.enumerated == res.evaluated + len(res.skipped) + res.pruned_memory
    assert res.pruned_memory > 0
    times = [p.result.iteration_s for p in res.ranked]
    assert times == sorted(times)
    assert all(memory_per_gpu(model, p.parallel).peak <= small.memory for p in res.ranked)
    again = search_parallelism(model, 8, parse_spec("dgx:1"), small, global_batch=8,
                               algorithms=["ring"], zero=(0,))
    assert [p.parallel for p in again.ranked] == [p.parallel for p in res.ranked]


class _Scaled:
    """Every collective takes ``c`` times a fixed positive time (different per call
    site): the iteration must never get shorter as ``c`` grows."""

    def __init__(self, topology, c: float) -> None:
        from topocoll.workload import CollectiveCoster

        class Coster(CollectiveCoster):
            def time(self, label, kind, ranks, size, root=None, algorithms=None):
                return 0.0 if len(ranks) < 2 else c * (1e-5 + size / 5e10)

            def time_all(self, label, kind, groups, size):
                return self.time(label, kind, tuple(groups[0]), size)

        self.coster = Coster(topology)


MOE = parse_model("transformer:hidden=1024,ffn=2048,heads=16,layers=8,seq=512,vocab=32000,"
                  "experts=4,top_k=2")


@pytest.mark.parametrize("model, par", [
    (TINY, "tp=2,pp=4,dp=2,mb=1,gb=8"),
    (TINY, "tp=4,pp=2,dp=2,mb=1,gb=16,zero=1,recompute=full"),
    (TINY, "tp=2,pp=2,dp=4,mb=1,gb=16,zero=3,sp=true,recompute=selective"),
    (TINY, "tp=1,pp=8,dp=2,mb=2,gb=32"),
    (MOE, "tp=1,pp=2,dp=8,ep=4,mb=1,gb=16"),
])
def test_the_iteration_never_gets_shorter_when_collectives_get_longer(model, par):
    """What makes the free-collective iteration a lower bound (``FreeCollectives``)."""
    from topocoll.workload import FreeCollectives, parse_parallel, simulate_iteration

    topo = parse_spec("dgx:2")
    p = parse_parallel(par)
    dev = find_device("a100-80g")
    free = simulate_iteration(model, p, topo, dev, coster=FreeCollectives(topo),
                              check_memory=False).iteration_s
    times = [simulate_iteration(model, p, topo, dev, coster=_Scaled(topo, c).coster,
                                check_memory=False).iteration_s
             for c in (0.0, 0.3, 1.0, 3.0, 10.0, 100.0)]
    assert times[0] == free
    assert all(a <= b for a, b in zip(times, times[1:], strict=False))
    assert times[-1] > times[0]             # the collectives are charged at all


def test_configurations_that_cannot_win_are_skipped_not_misranked():
    """Branch and bound: the default search costs only what can still beat the best; the
    best and every costed time equal the exhaustive search's, and each skipped
    configuration's bound is below its exhaustive time and above the best."""
    from topocoll.workload import FreeCollectives, simulate_iteration

    topo = parse_spec("dgx:2")
    dev = find_device("a100-80g")
    kw = dict(global_batch=32, algorithms=["ring", "direct"])
    every = search_parallelism(TINY, 16, topo, dev, exhaustive=True, **kw)
    fast = search_parallelism(TINY, 16, topo, dev, **kw)
    assert not every.skipped and fast.skipped
    assert fast.enumerated == fast.evaluated + len(fast.skipped) + fast.pruned_memory
    assert fast.evaluated + len(fast.skipped) == every.evaluated
    assert fast.best.parallel == every.best.parallel
    assert fast.best.result.iteration_s == every.best.result.iteration_s
    full = {p.parallel: p.result.iteration_s for p in every.ranked}
    for p in fast.ranked:
        assert p.result.iteration_s == full[p.parallel]
    best = fast.best.result.iteration_s
    for s in fast.skipped:
        assert best < s.lower_bound_s <= full[s.parallel]
        assert s.lower_bound_s == simulate_iteration(
            TINY, s.parallel, topo, dev, coster=FreeCollectives(topo),
            check_memory=False).iteration_s
    # and nothing whose bound is within reach of the best was skipped
    free = FreeCollectives(topo)
    costed = {p.parallel for p in fast.ranked}
    assert all(simulate_iteration(TINY, p, topo, dev, coster=free,
                                  check_memory=False).iteration_s > best
               for p in full if p not in costed)
