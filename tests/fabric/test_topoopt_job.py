"""A TopoOpt job: traffic of per-layer strategies and iteration time, against closed
forms."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.errors import InputError
from topocoll.fabric import FabricEval, Job, switch_fabric, topology_finder
from topocoll.topology.totient import totient
from topocoll.workload import LAYERED, Layer, LayeredModel, find_device

A100 = find_device("a100-80g")


def _toy():
    return LayeredModel("toy", (Layer("t0", 1000 * 64, 0.0, 2.0 * 64, "embedding"),
                                Layer("fc1", 4096 * 4096, 2.0 * 4096 * 4096, 2.0 * 4096),
                                Layer("fc2", 4096 * 1024, 2.0 * 4096 * 1024, 2.0 * 1024)))


def test_traffic_closed_forms():
    job = Job(_toy(), servers=8, device=A100, batch_per_gpu=16)
    Bs = 64
    tr = job.traffic((3, 1, 1))
    assert tr.allreduce == {8: 4.0 * (4096 * 4096 + 4096 * 1024)}
    assert tr.embedding[3] == Bs * 4 * 64 and tr.embedding.sum() == tr.embedding[3]
    M = tr.mp_matrix()
    assert M[3, 5] == M[5, 3] == Bs * 4 * 64 and M[0, 1] == 0
    tr = job.traffic((3, 2, 1))                   # fc1 split over pairs of servers
    assert tr.allreduce[4] == 4.0 * 4096 * 4096 / 2
    # output (fp32) and the input gathered (previous layer not split alike), fwd + bwd
    assert tr.tp[2] == 2 * (Bs * 4 * 4096 + Bs * 4 * 64)
    assert tr.mp_matrix()[0, 1] == tr.tp[2] and tr.mp_matrix()[1, 2] == 0
    assert tr.memory[0] < job.traffic((3, 1, 1)).memory[0]


def test_switch_and_ring_times_match_closed_forms():
    n, B = 16, 10e9
    job = Job(_toy(), servers=n, device=A100, batch_per_gpu=16, tp_sizes=())
    tr = job.traffic((0, 1, 1))
    X = tr.allreduce[n]
    fe = FabricEval(job, switch_fabric(n, B, latency=0.0))
    t = fe.time(tr)
    assert t.allreduce_s == pytest.approx(2 * (n - 1) / n * X / B)
    assert t.mp_s == pytest.approx((n - 1) * tr.embedding[0] / B)   # server 0's uplink
    topo = totient(n, 4, bandwidth=B, latency=0.0)
    fe = FabricEval(job, topo, rings={n: topo.meta["jumps"]})
    # two bidirectional rings = four directed rings, each with a quarter of the data
    assert fe.time(tr).allreduce_s == pytest.approx(2 * (n - 1) / n * X / 4 / B)


def test_memory_decides_and_errors_name_the_item():
    candle = LAYERED["candle-uno"]
    small = find_device("a100-40g")
    job = Job(candle, servers=16, device=small, batch_per_gpu=8)
    s = job.initial_strategy()
    assert job.fits(s) and not job.fits(tuple(1 for _ in s))
    assert any(c > 1 for c in s)
    with pytest.raises(InputError) as e:
        Job(candle, servers=4, device=small, batch_per_gpu=8, tp_sizes=(2,)).initial_strategy()
    assert e.value.item == "model"
    with pytest.raises(InputError) as e:
        Job(candle, servers=2, device=small, batch_per_gpu=8)
    assert e.value.item == "servers"
    with pytest.raises(InputError) as e:
        Job(candle, servers=8, device=small, batch_per_gpu=0)
    assert e.value.item == "batch_per_gpu"
    job = Job(_toy(), servers=8, device=A100, batch_per_gpu=4)
    with pytest.raises(InputError):
        job.traffic((1, 1))
    with pytest.raises(InputError):
        FabricEval(job, switch_fabric(6, 1e9))


def test_finder_rings_serve_the_subgroups():
    # fc1 split over 2: its gradient shards all-reduce in strided groups of n/2
    n = 16
    job = Job(_toy(), servers=n, device=A100, batch_per_gpu=16, tp_sizes=(2,))
    tr = job.traffic((0, 2, 1))
    r = topology_finder(n, 6, allreduce=dict(tr.allreduce), mp=tr.mp_matrix(), bandwidth=1e9,
                        split="all-reduce")
    assert set(r.jumps) == {8, 16}
    fe = FabricEval(job, r.topology, rings=r.jumps)
    plain = FabricEval(job, r.topology)            # the same links as routed logical rings
    assert fe.time(tr).allreduce_s <= plain.time(tr).allreduce_s * (1 + 1e-9)
    assert np.isfinite(fe.time(tr).iteration_s)


def _chain(layers=4):
    return LayeredModel("chain", tuple(Layer(f"fc{i}", 2048 * 2048, 2.0 * 2048 * 2048,
                                             2.0 * 2048) for i in range(layers)))


def test_span_1f1b_is_the_workload_schedule_bit_for_bit():
    from topocoll.fabric import span_1f1b
    from topocoll.workload import pipeline_1f1b

    rng = np.random.default_rng(0)
    for P in (2, 3, 4, 8):
        for m in (1, 2, 3, 5, 16):
            f, b = rng.random(P).tolist(), rng.random(P).tolist()
            h = float(rng.random())
            assert span_1f1b(P, m, f, b, h) == max(pipeline_1f1b(P, m, f, b, h))
    assert span_1f1b(1, 1, [2.0], [3.0], 9.0) == 5.0


def test_partition_is_the_brute_force_optimum():
    import itertools

    from topocoll.fabric.topoopt.job import _partition

    rng = np.random.default_rng(1)
    for _ in range(20):
        w = rng.random(7)
        for parts in (1, 2, 3, 4):
            cuts = _partition(w, parts)
            got = max(w[a:b].sum() for a, b in zip([0, *cuts[:-1]], cuts, strict=True))
            best = min(max(w[a:b].sum() for a, b in zip((0, *c), (*c, 7), strict=True))
                       for c in itertools.combinations(range(1, 7), parts - 1))
            assert got == pytest.approx(best) and cuts[-1] == 7 and len(cuts) == parts


def test_pipeline_traffic_closed_forms():
    n, P, m = 8, 2, 4
    job = Job(_chain(), servers=n, device=A100, batch_per_gpu=16, tp_sizes=(2,))
    Bs = 64
    assert job.stages(P) == ((0, 1), (2, 3))
    tr = job.traffic((1, 1, 1, 1, P, m))
    # each stage all-reduces its two layers over the n / P servers holding it
    assert tr.allreduce == {n // P: 2 * 4.0 * 2048 * 2048}
    # one micro-batch's fp32 activations per replica pair, P B_s / m samples
    assert tr.hops == (P * Bs / m * 4 * 2048,)
    M = tr.mp_matrix()
    assert M[0, 1] == M[1, 0] == 2 * m * tr.hops[0] and M[1, 2] == 0 and M[2, 3] > 0
    # a stage's servers hold half the weights
    assert tr.memory[0] == pytest.approx(job.traffic((1, 1, 1, 1)).memory[0] / 2)
    # tensor parallel inside a stage: blocks of 2 servers P apart
    tr = job.traffic((2, 1, 1, 1, P, m))
    assert tr.allreduce[n // (P * 2)] == 4.0 * 2048 * 2048 / 2
    assert tr.mp_matrix()[0, 2] > 0 and tr.mp_matrix()[0, 4] == 0
    for bad in ((4, 1, 1, 1, P, m), (3, 1, 1, 1, P, m), (1, 1, 1, 1, 2, 64)):
        assert not job.valid(bad)
    with pytest.raises(InputError):
        job.traffic((1, 1, 1, 1, 3, 1))


def test_overlap_hides_the_allreduce_behind_the_backward():
    n, B = 16, 10e9
    job = Job(_chain(8), servers=n, device=A100, batch_per_gpu=16)
    s = job.initial_strategy()
    on = FabricEval(job, switch_fabric(n, B)).score(s)
    off = FabricEval(job, switch_fabric(n, B), overlap=False).score(s)
    assert off.exposed_allreduce_s == off.allreduce_s == on.allreduce_s
    assert on.exposed_allreduce_s < on.allreduce_s
    assert on.iteration_s - on.exposed_allreduce_s == pytest.approx(
        off.iteration_s - off.allreduce_s)
    # on a switch a pipeline of P stages moves 1/P of the gradients per server
    fe = FabricEval(job, switch_fabric(n, B))
    t1, t4 = fe.score(s[:-2] + (1, 1)), fe.score(s[:-2] + (4, 8))
    g = n // 4
    assert t4.allreduce_s - 2 * (g - 1) * 1e-6 == pytest.approx(
        (t1.allreduce_s - 2 * (n - 1) * 1e-6) / 4 * ((g - 1) / g) / ((n - 1) / n))
    assert t4.bubble_s > 0 and t1.bubble_s == 0


def test_phase_matrices_are_what_fabric_eval_costs():
    from topocoll.fabric import phase_matrices
    from topocoll.fabric.linkload import LinkLoads

    n = 16
    job = Job(LAYERED["dlrm"], servers=n, device=A100, batch_per_gpu=128, tp_sizes=(2, 4))
    s = list(job.initial_strategy())
    s[64] = 4                                          # one dense layer tensor-parallel
    tr = job.traffic(tuple(s))
    r = topology_finder(n, 6, allreduce=dict(tr.allreduce), mp=tr.mp_matrix(),
                        bandwidth=1e9, latency=0.0, allreduce_ports=4)
    fe = FabricEval(job, r.topology, rings=r.jumps)
    ph = phase_matrices(tr, r.jumps)
    assert set(ph) == {"embedding", "tensor", "allreduce"}
    ll = LinkLoads(r.topology)

    def fluid(M):
        return float((ll.route(M[None])[:, 0] / ll.capacity).max())

    t = fe.time(tr)
    assert fluid(ph["allreduce"]) == pytest.approx(t.allreduce_s)
    assert fluid(ph["embedding"]) + fluid(ph["tensor"]) == pytest.approx(t.mp_s)
    # every byte of the iteration's model-parallel demand is in a phase
    assert ph["embedding"].sum() + ph["tensor"].sum() == pytest.approx(tr.mp_matrix().sum())
