"""Parallelism search: the candidate space, memory pruning and a deterministic ranking."""

from __future__ import annotations

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
    assert res.enumerated == res.evaluated + res.pruned_memory and res.pruned_memory > 0
    times = [p.result.iteration_s for p in res.ranked]
    assert times == sorted(times)
    assert all(memory_per_gpu(model, p.parallel).peak <= small.memory for p in res.ranked)
    again = search_parallelism(model, 8, parse_spec("dgx:1"), small, global_batch=8,
                               algorithms=["ring"], zero=(0,))
    assert [p.parallel for p in again.ranked] == [p.parallel for p in res.ranked]
