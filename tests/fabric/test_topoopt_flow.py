"""TopoOpt's exchanges at flow level: the flow core on demand matrices against an
independent max-min simulation, never below the fluid bound, and the iteration rescaled."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.errors import InputError
from topocoll.fabric import FabricEval, Job, flow_check, phase_flow_time, switch_fabric
from topocoll.fabric.linkload import LinkLoads
from topocoll.sim.flow import simulate_transfers
from topocoll.topology.spec import parse_spec
from topocoll.workload import Layer, LayeredModel, find_device


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_flow_level_matches_an_independent_maxmin_simulation(seed):
    """On a ring of 5 every shortest path is unique, so the hashed flow level and the
    testbed's progressive-filling simulation (dense, written separately) route alike."""
    from topocoll.testbed.demand import maxmin_phase

    topo = parse_spec("ring:5,bw=1GB/s")
    rng = np.random.default_rng(seed)
    D = rng.integers(0, 4, (5, 5)).astype(float) * 1e8
    np.fill_diagonal(D, 0.0)
    ll = LinkLoads(topo)
    fluid, flow = phase_flow_time(ll, D, hashed=True, seed=seed)
    assert flow == pytest.approx(maxmin_phase(topo, D, overhead=1.0), rel=1e-9)
    assert flow >= fluid * (1 - 1e-12)


@pytest.mark.parametrize("hashed", [False, True])
def test_flow_never_beats_the_fluid_bound(hashed):
    topo = parse_spec("torus:3x4,bw=1GB/s")
    ll = LinkLoads(topo)
    for seed in range(4):
        D = np.random.default_rng(seed).exponential(1e8, (12, 12))
        np.fill_diagonal(D, 0.0)
        fluid, flow = phase_flow_time(ll, D, hashed=hashed, seed=seed)
        assert flow >= fluid * (1 - 1e-9)
    # a uniform all-to-all on one switch: every host link equally loaded, flow = fluid
    sw = LinkLoads(switch_fabric(8, 1e9))
    U = np.ones((8, 8)) - np.eye(8)
    fl, fw = phase_flow_time(sw, U * 1e6, hashed=hashed)
    assert fw == pytest.approx(fl, rel=1e-9) and fl == pytest.approx(7e6 / 1e9)


def test_hashing_onto_one_path_collides_where_the_split_does_not():
    """Two flows across a 2x2 leaf-spine: split, each half on each spine; hashed with a
    seed that puts both on one spine, that uplink carries both and they take twice as
    long."""
    topo = parse_spec("leafspine:leaves=2,spines=2,hosts=2,bw=1GB/s")
    ll = LinkLoads(topo)
    D = np.zeros((4, 4))
    D[0, 2] = D[1, 3] = 1e9
    fl, split = phase_flow_time(ll, D, hashed=False)
    times = {phase_flow_time(ll, D, hashed=True, seed=s)[1] for s in range(8)}
    assert split == pytest.approx(fl)
    assert min(times) == pytest.approx(fl) and max(times) > 1.5 * fl


def test_flow_check_rescales_only_the_exchanges_that_slow_down():
    model = LayeredModel("toy", (Layer("t0", 1000 * 64, 0.0, 2.0 * 64, "embedding"),
                                 Layer("fc1", 4096 * 4096, 2.0 * 4096 * 4096, 2.0 * 4096)))
    job = Job(model, servers=8, device=find_device("a100-80g"), batch_per_gpu=16)
    fe = FabricEval(job, switch_fabric(8, 10e9))
    s = (3, 1)
    tr = job.traffic(job._full(s))
    assert fe.time(tr, {"allreduce": 1.0, "embedding": 1.0}) == fe.time(tr)
    # the bandwidth term scales, the latency term stays
    t0, t1, t2 = (fe.time(tr, {"allreduce": f}).allreduce_s for f in (0.0, 1.0, 2.0))
    assert 0 < t0 < t1 and t2 - t1 == pytest.approx(t1 - t0, rel=1e-12)
    fc = flow_check(fe, s, hashed=True)
    assert set(fc["phases"]) == {"embedding", "allreduce"}
    for v in fc["phases"].values():           # a switch: each exchange as the fluid says
        assert v["ratio"] == pytest.approx(1.0, rel=1e-9)
    assert fc["flow"].iteration_s == pytest.approx(fc["fluid"].iteration_s, rel=1e-9)


def test_simulate_transfers_and_flow_routes_reject_bad_input():
    with pytest.raises(InputError):
        simulate_transfers(np.ones(1), np.array([0, 1]), np.array([0]), np.ones(1),
                           np.ones(2), np.zeros(2), np.ones(2), 2)
    ll = LinkLoads(parse_spec("ring:4,bw=1GB/s"))
    with pytest.raises(InputError) as e:
        ll.flow_routes(np.array([[1, 1]]))
    assert e.value.item == "pairs"
    assert simulate_transfers(np.ones(1), np.zeros(1, np.int64), np.zeros(0, np.int64),
                              np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), 2).size == 0
