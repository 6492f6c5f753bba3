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
    assert e.value.item == "--model"
    with pytest.raises(InputError) as e:
        Job(candle, servers=2, device=small, batch_per_gpu=8)
    assert e.value.item == "--servers"
    with pytest.raises(InputError) as e:
        Job(candle, servers=8, device=small, batch_per_gpu=0)
    assert e.value.item == "--batch-per-gpu"
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
