"""The iteration model: 1F1B against its closed form, collectives from choose, the
breakdown adding up, and the effect of each knob in the direction physics says."""

from __future__ import annotations

import pytest

from topocoll.errors import InputError
from topocoll.topology.spec import parse_spec
from topocoll.workload import (
    Task,
    find_device,
    parse_model,
    parse_parallel,
    pipeline_1f1b,
    simulate_iteration,
)

FAST = ["ring", "direct", "recursive_doubling"]
TINY = parse_model("transformer:hidden=1024,ffn=4096,heads=16,layers=8,seq=512,vocab=32000")
A100 = find_device("a100-80g")


@pytest.mark.parametrize("pp, m", [(1, 1), (1, 5), (2, 2), (4, 8), (4, 2), (8, 32)])
def test_1f1b_matches_the_closed_form(pp, m):
    f, b, hop = 1.0, 2.0, 0.25
    tasks: list[Task] = []
    # without hops: (m + pp - 1)(f + b) (Narayanan et al. SC'21, section 2.2.1)
    assert pipeline_1f1b(pp, m, [f] * pp, [b] * pp, 0.0)[0] == (m + pp - 1) * (f + b)
    end = pipeline_1f1b(pp, m, [f] * pp, [b] * pp, hop, tasks)
    # with hops: at least the fill path's 2 (pp - 1) hops more, at most a hop each way on
    # every op
    assert (m + pp - 1) * (f + b) + 2 * (pp - 1) * hop <= end[0] + 1e-12
    assert end[0] <= (m + pp - 1) * (f + b + 2 * hop) + 1e-12
    assert len(tasks) == 2 * m * pp
    for st in range(pp):   # a stage never runs two ops at once
        spans = sorted((t.start, t.end) for t in tasks if t.stage == st)
        assert all(a[1] <= b_[0] + 1e-12 for a, b_ in zip(spans, spans[1:], strict=False))


def test_breakdown_adds_up_and_collectives_are_chosen():
    r = simulate_iteration(TINY, parse_parallel("tp=2,pp=2,dp=2,mb=1,gb=8"),
                           parse_spec("dgx:1"), A100, algorithms=FAST)
    bd = r.breakdown
    parts = (bd["compute_s"] + bd["tp_s"] + bd["ep_s"] + bd["pp_s"] + bd["dp_exposed_s"]
             + bd["bubble_s"])
    assert parts == pytest.approx(r.iteration_s, rel=1e-9)
    assert r.exposed_comm_s == pytest.approx(bd["tp_s"] + bd["pp_s"] + bd["dp_exposed_s"])
    assert set(r.collectives) >= {"tp allreduce", "pp send", "dp allreduce stage 0"}
    for c in r.collectives.values():
        assert c["algorithm"] in FAST + ["swing", "binomial_tree", "pipeline"] or c["algorithm"]
        assert 0 < c["bound_fraction"] <= 1 + 1e-9
    d = r.to_dict()
    for key in ("iteration_s", "compute_s", "exposed_comm_s", "bubble_s", "mfu",
                "tflops_per_gpu", "memory_gib", "breakdown"):
        assert key in d


def test_knobs_move_time_the_right_way():
    topo = parse_spec("dgx:2")
    base = parse_parallel("tp=2,pp=2,dp=2,mb=1,gb=16")

    def it(**kw):
        return simulate_iteration(TINY, base.with_(**kw), topo, A100, algorithms=FAST)

    r0 = it()
    assert it(recompute="full").iteration_s > r0.iteration_s      # extra forward
    assert it(global_batch=32).iteration_s > r0.iteration_s       # more micro-batches
    # more micro-batches amortize the bubble: the fraction falls
    assert it(global_batch=64).bubble_s / it(global_batch=64).iteration_s < \
        r0.bubble_s / r0.iteration_s
    no_overlap = simulate_iteration(TINY, base, topo, A100, algorithms=FAST, overlap_dp=False)
    assert no_overlap.iteration_s >= r0.iteration_s
    # a slower fabric between boxes never helps
    slow = parse_spec("dgx:2,nic_bw=1GB/s")
    assert simulate_iteration(TINY, base.with_(tp=2, pp=1, dp=8, global_batch=16), slow, A100,
                              algorithms=FAST).iteration_s > \
        simulate_iteration(TINY, base.with_(tp=2, pp=1, dp=8, global_batch=16), topo, A100,
                           algorithms=FAST).iteration_s


def test_mixture_of_experts_pays_for_its_all_to_all():
    moe = parse_model("transformer:hidden=1024,ffn=2048,heads=16,layers=4,seq=512,vocab=32000,"
                      "experts=4,top_k=2")
    r = simulate_iteration(moe, parse_parallel("tp=1,pp=1,dp=4,ep=4,mb=1,gb=8"),
                           parse_spec("dgx:1"), A100, algorithms=FAST + ["pairwise"])
    assert r.breakdown["ep_s"] > 0 and "ep alltoall" in r.collectives


def test_expert_parallelism_moves_experts_not_their_work():
    """A rank's experts serve the tokens of its whole expert group: the multiplies a rank
    does are the same at every ``ep`` (ep divides the work of holding experts, not the
    tokens each must process), so no expert-parallel layout can exceed the device's peak.
    (The first version divided the expert multiplies by ``ep``: Mixtral at TP 1, EP 8
    reported 102.6% MFU.)"""
    from topocoll.workload.compute import layer_compute

    class Flat:                       # a device whose multiplies run at peak at any size
        peak = 1e15

        def gemm_time(self, flops):
            return flops / self.peak

        def memory_time(self, nbytes):
            return 0.0

    mix = parse_model("mixtral-8x7b")
    times = [layer_compute(mix, parse_parallel(f"tp=1,pp=1,dp=8,ep={ep}"), Flat())[0]
             for ep in (1, 2, 4, 8)]
    assert max(times) == pytest.approx(min(times), rel=1e-12)
    flops = 2 * mix.seq * (mix.top_k * mix.expert_parameters)  # the experts' share
    dense = layer_compute(parse_model("transformer:hidden=4096,ffn=14336,heads=32,layers=32,"
                                      "seq=4096,vocab=32000,kv_heads=8,style=llama"),
                          parse_parallel("tp=1,pp=1,dp=8"), Flat())[0]
    # the expert multiplies are top_k dense MLPs' worth
    mlp = 2 * mix.seq * mix.expert_parameters / Flat.peak
    assert times[0] - dense == pytest.approx(flops / Flat.peak - mlp, rel=1e-9)
    r = simulate_iteration(mix, parse_parallel("tp=1,pp=1,dp=8,ep=8,mb=1,gb=8,zero=1,"
                                               "recompute=selective"),
                           parse_spec("dgx-h100:1"), find_device("h100"),
                           algorithms=["direct", "ring"])
    assert 0.3 < r.mfu < 1


@pytest.mark.parametrize("par, item", [
    ("tp=16,pp=1,dp=1", "parallel"),   # more ranks than the fabric
    ("tp=3,pp=1,dp=1", "tp"),            # 16 heads
    ("tp=1,pp=1,dp=2,ep=2", "ep"),       # dense model
])
def test_bad_configurations_name_the_item(par, item):
    with pytest.raises(InputError) as e:
        simulate_iteration(TINY, parse_parallel(par), parse_spec("dgx:1"), A100,
                           algorithms=FAST)
    assert e.value.item == item


def test_contention_charges_groups_that_share_links():
    model = parse_model("transformer:hidden=2048,ffn=8192,heads=16,layers=8,seq=1024,"
                        "vocab=32000")
    par = parse_parallel("tp=4,pp=1,dp=8,mb=1,gb=16")
    # four DP groups cross the same 4:1 oversubscribed uplinks
    shared = parse_spec("twotier:racks=4,hosts=8,oversub=4")
    alone = simulate_iteration(model, par, shared, A100, algorithms=["ring", "direct"])
    both = simulate_iteration(model, par, shared, A100, algorithms=["ring", "direct"],
                              contention=True)
    c = both.collectives["dp allreduce stage 0 (all groups)"]
    assert c["groups"] == 4 and c["time_s"] == pytest.approx(4 * c["alone_s"], rel=0.05)
    assert both.iteration_s > alone.iteration_s
    # rails of DGX boxes are disjoint: contention changes nothing
    rails = parse_spec("dgx:4")
    p2 = parse_parallel("tp=8,pp=1,dp=4,mb=1,gb=16")
    assert simulate_iteration(model, p2, rails, A100, algorithms=["ring"],
                              contention=True).iteration_s == pytest.approx(
        simulate_iteration(model, p2, rails, A100, algorithms=["ring"]).iteration_s)
