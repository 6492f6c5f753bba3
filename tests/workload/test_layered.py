"""Non-transformer models: published parameter counts, DLRM's shape, and the data-parallel
iteration with its all-reduce and (for DLRM) all-to-all."""

from __future__ import annotations

import pytest

from topocoll.errors import InputError
from topocoll.topology.spec import parse_spec
from topocoll.workload import LAYERED, dlrm, find_device, simulate_dp_iteration

ALG = ["ring", "direct", "pairwise"]


def test_published_counts():
    assert LAYERED["resnet50"].parameters == 25_557_032        # torchvision
    assert LAYERED["vgg16"].parameters == 138_357_544           # configuration D
    # ResNet-50: about 4.1 G multiply-accumulates per 224x224 image
    assert LAYERED["resnet50"].forward_flops / 2 == pytest.approx(4.1e9, rel=0.01)


def test_dlrm_is_the_topoopt_shape():
    m = dlrm()
    tables = [ly for ly in m.layers if ly.kind == "embedding"]
    assert len(tables) == 64 and all(ly.params == 10_000_000 * 128 for ly in tables)
    assert sum(1 for ly in m.layers if ly.name.startswith("top")) == 16
    assert sum(1 for ly in m.layers if ly.name.startswith("bottom")) == 8


def test_dp_iteration_pays_for_its_collectives():
    topo = parse_spec("dgx:2,nic_bw=5GB/s")
    v100 = find_device("v100")
    one = simulate_dp_iteration(LAYERED["vgg16"], topo, v100, batch_per_rank=16, ranks=8,
                                algorithms=ALG)
    two = simulate_dp_iteration(LAYERED["vgg16"], topo, v100, batch_per_rank=16,
                                algorithms=ALG)
    # the same per-GPU compute; across boxes (5 GB/s NICs) the all-reduce is exposed
    assert two.compute_s == pytest.approx(one.compute_s)
    assert two.breakdown["dp_exposed_s"] > one.breakdown["dp_exposed_s"]
    assert two.iteration_s == pytest.approx(two.compute_s + two.exposed_comm_s)
    r = simulate_dp_iteration(LAYERED["dlrm"], parse_spec("dgx-a100:2"),
                              find_device("a100-80g"), batch_per_rank=1024, algorithms=ALG)
    assert r.breakdown["ep_s"] > 0 and "embedding alltoall" in r.collectives
    with pytest.raises(InputError) as e:       # 82 G parameters on one GPU
        simulate_dp_iteration(LAYERED["dlrm"], parse_spec("dgx-a100:2"),
                              find_device("a100-80g"), ranks=1, algorithms=ALG)
    assert e.value.item == "stage 0"
