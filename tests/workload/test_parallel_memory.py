"""Parallel groups, placement and memory per GPU."""

from __future__ import annotations

import pytest

from topocoll.errors import InputError
from topocoll.workload import (
    check_fits,
    find_device,
    groups,
    memory_per_gpu,
    parse_model,
    parse_parallel,
    stage_parameters,
)


def test_groups_partition_the_ranks_and_tp_is_consecutive():
    p = parse_parallel("tp=4,pp=3,dp=2")
    for kind, size in (("tp", 4), ("pp", 3), ("dp", 2)):
        gs = groups(p, kind)
        assert sorted(r for g in gs for r in g) == list(range(24))
        assert all(len(g) == size for g in gs)
    assert groups(p, "tp")[0] == (0, 1, 2, 3)
    q = parse_parallel("tp=2,pp=1,dp=4,ep=2")
    assert groups(q, "ep") == [(0, 2), (1, 3), (4, 6), (5, 7)]


@pytest.mark.parametrize("text, item", [
    ("tp=0", "tp"), ("tp=2,dp=3,ep=2", "ep"), ("dp=2,gb=3", "global_batch"),
    ("recompute=some", "recompute"), ("zero=4", "zero"), ("interleave=2", "interleave"),
    ("tq=2", "parallel 'tq'"), ("tp=two", "parallel 'tp'"), ("tp=2,tp=4", "parallel 'tp'"),
])
def test_bad_parallelism_names_the_key(text, item):
    with pytest.raises(InputError) as e:
        parse_parallel(text)
    assert e.value.item == item


def test_memory_follows_zero_and_the_korthikanti_table():
    m = parse_model("gpt3-175b")
    base = parse_parallel("tp=8,pp=8,dp=16,mb=1,gb=128")
    p = stage_parameters(m, base, 3)            # a middle stage: 12 blocks / 8
    assert p == pytest.approx(12 * m.layer_parameters / 8)
    r0 = memory_per_gpu(m, base).stages[3]
    assert (r0.weights, r0.gradients, r0.optimizer) == pytest.approx((2 * p, 2 * p, 12 * p))
    z1 = memory_per_gpu(m, base.with_(zero=1)).stages[3]
    z3 = memory_per_gpu(m, base.with_(zero=3)).stages[3]
    assert z1.optimizer == pytest.approx(12 * p / 16) and z1.gradients == r0.gradients
    assert z3.weights < r0.weights and z3.gradients == pytest.approx(2 * p / 16)
    # activations: s b h (10 + 24/t + 5 a s/(h t)) per block, with 1F1B's pp - s in flight
    s, h, a, t = m.seq, m.hidden, m.heads, 8
    per_block = s * h * (10 + 24 / t + 5 * a * s / (h * t))
    assert r0.activations == pytest.approx(per_block * 12 * (8 - 3))
    sp = memory_per_gpu(m, base.with_(sequence_parallel=True)).stages[3]
    assert sp.activations == pytest.approx(s * h * (34 / t + 5 * a * s / (h * t)) * 12 * 5)
    full = memory_per_gpu(m, base.with_(recompute="full")).stages[3]
    assert full.activations < sp.activations


def test_a_config_that_does_not_fit_is_refused_naming_the_stage():
    m = parse_model("gpt3-175b")
    rep = memory_per_gpu(m, parse_parallel("tp=8,pp=1,dp=1"))
    with pytest.raises(InputError) as e:
        check_fits(rep, find_device("a100-80g"))
    assert e.value.item == "stage 0" and "does not fit" in str(e.value)


def test_llama3_405b_as_meta_trained_it_fits_an_h100():
    """Issue 31: TP 8, PP 16, DP 64, sequence 8,192, micro-batch 1, ZeRO-1, sequence
    parallel, selective recompute ran on 80 GB H100s; the memory model said 90 GiB while a
    gated MLP was counted as four tensors (8 s f bytes). Megatron-Core's fused SwiGLU keeps
    the first projection's output and the second's input: 6 s f."""
    from topocoll.workload import find_device, memory_per_gpu, parse_model, parse_parallel
    from topocoll.workload.memory import check_configuration

    m = parse_model("llama3-405b")
    par = parse_parallel("tp=8,pp=16,dp=64,gb=2048,mb=1,zero=1,sp=1,recompute=selective")
    rep, split, scores = m.layer_activation_terms()
    s, h, f, kv = m.seq, m.hidden, m.ffn, m.kv_dim
    assert split == 2 * s * (h + kv) + 2 * s * kv + 2 * s * h + 6 * s * f
    mem = memory_per_gpu(m, par)
    assert mem.peak / 2**30 < 80
    check_configuration(m, par, find_device("h100"))          # does not raise


def test_the_lighter_stages_are_the_two_ends():
    """An uneven split puts the stages with one block fewer at the ends, first, last,
    second, ... (Meta's 405B: 126 blocks over 16 stages, 7 on the first and the last)."""
    from topocoll.workload import parse_model, parse_parallel, stage_layers

    def split(layers, pp):
        m = parse_model(f"transformer:hidden=64,ffn=256,heads=4,layers={layers},seq=16,"
                        f"vocab=100")
        return stage_layers(m, parse_parallel(f"tp=1,pp={pp}"))

    assert stage_layers(parse_model("llama3-405b"), parse_parallel("tp=8,pp=16")) == \
        [7] + [8] * 14 + [7]
    assert split(10, 4) == [2, 3, 3, 2] and split(11, 4) == [2, 3, 3, 3]
    assert split(17, 16) == [1] * 8 + [2] + [1] * 7 and split(96, 8) == [12] * 8
    for layers in range(8, 40):
        for pp in range(1, 9):
            x = split(layers, pp)
            assert sum(x) == layers and max(x) - min(x) <= 1
            assert x[0] == min(x) and (x.count(min(x)) < 2 or x[-1] == min(x))


def test_llama3_405b_interleaved_as_meta_ran_it_fits_an_h100():
    """Meta ran 405B with an interleaved schedule; with the first and last stage one
    block lighter (as Meta split it), 8 chunks per stage fit in 80 GB (84.1 GiB when the
    first stage held 8 blocks)."""
    from topocoll.workload import find_device, memory_per_gpu, parse_model, parse_parallel

    m = parse_model("llama3-405b")
    for dp in (64, 128):
        par = parse_parallel(f"tp=8,pp=16,dp={dp},gb=2048,mb=1,zero=1,sp=1,"
                             f"recompute=selective,interleave=8")
        assert memory_per_gpu(m, par).peak <= find_device("h100").memory
