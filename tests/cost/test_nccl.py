"""The NCCL model (issue 31): closed forms, NCCL's rules for which algorithm applies, and
the choice."""

import math

import pytest

from topocoll.cost.nccl import (
    NCCL_NVLINK_LINK_BPS,
    NVLS_EFFICIENCY,
    nccl_choose,
    nccl_estimates,
    nccl_system,
    nic_wire_efficiency,
)
from topocoll.errors import InputError, NotSupportedError
from topocoll.topology import parse_spec

GiB = 2**30


def _est(spec, kind, size, algo, proto="Simple", ranks=None):
    for e in nccl_estimates(parse_spec(spec), kind, size, ranks=ranks, algorithms=[algo]):
        if e.protocol == proto:
            return e
    raise AssertionError(f"no {algo}/{proto}")


def test_system_from_box_presets():
    s = nccl_system(parse_spec("dgx-h100:2"), range(16))
    assert (s.nodes, s.ppn) == (2, 8)
    assert s.nvlink_Bps == pytest.approx(18 * 20.6e9)           # NCCL's SM90 per-link figure
    assert s.nic_Bps == pytest.approx(50e9 * 4096 / (4096 + 26))
    a = nccl_system(parse_spec("dgx-a100:1"))
    assert a.nvlink_Bps == pytest.approx(240e9) and a.nvls_Bps == 0
    b = nccl_system(parse_spec("dgx-b200:1"))
    assert b.nvlink_Bps == pytest.approx(18 * 40.1e9)
    assert b.nvls_Bps == pytest.approx(18 * 40.1e9 * 0.74)
    assert nccl_system(parse_spec("gb200-nvl72:2"), range(0, 144, 2)).ppn == 36


def test_wire_efficiency_is_the_header_arithmetic():
    assert nic_wire_efficiency("ib") == 4096 / 4122
    assert nic_wire_efficiency("roce") == 4096 / 4178
    with pytest.raises(InputError):
        nic_wire_efficiency("tcp")


def test_not_a_box_or_uneven_groups_are_refused():
    with pytest.raises(NotSupportedError, match="box preset"):
        nccl_estimates(parse_spec("torus:4x4"), "allreduce", GiB)
    with pytest.raises(NotSupportedError, match="same number"):
        nccl_estimates(parse_spec("dgx-h100:2"), "allreduce", GiB, ranks=[0, 1, 2, 8])
    with pytest.raises(NotSupportedError, match="two ranks"):
        nccl_estimates(parse_spec("dgx-h100:1"), "allreduce", GiB, ranks=[3])


@pytest.mark.parametrize("n", [2, 5, 8])
def test_ring_allreduce_closed_form(n):
    """Ring Simple: time = NCCL's latency + S 2(n-1)/n over the NVLink rate, so busbw at a
    large size is the NVLink rate less the latency share."""
    S = 64 * GiB
    e = _est("dgx-h100:1", "allreduce", S, "ring", ranks=range(n))
    lat = (8.4 + 2 * (n - 1) * 3.4) * 1e-6
    assert e.latency == pytest.approx(lat)
    assert e.time == pytest.approx(lat + S * 2 * (n - 1) / n / (18 * 20.6e9))
    assert e.busbw == pytest.approx(18 * 20.6e9, rel=2e-3)


@pytest.mark.parametrize(("spec", "ranks", "bus"), [
    # 8 GPUs per box: a GPU sends 7/8 of its ring bytes over NVLink, 1/8 through its NIC
    ("dgx-h100:2", range(16), 8 * 50e9 * 4096 / 4122),           # NIC-bound, > NVLink
    ("dgx-a100:2", range(16), 8 * 25e9 * 4096 / 4122),
    # 2 GPUs per box: NVLink would allow 2 x its rate; the two NICs bind
    ("dgx-h100:2", [0, 1, 8, 9], 2 * 50e9 * 4096 / 4122),
    # one GPU per box: every ring hop is a NIC
    ("dgx-h100:4", [0, 8, 16, 24], 50e9 * 4096 / 4122),
    # gb200-nvl72: 36 GPUs per box, NVLink x 36/35 (742 GB/s) under 36 NICs
    ("gb200-nvl72:2", range(0, 144, 2), 18 * 40.1e9 * 36 / 35),
])
def test_ring_across_boxes_bus(spec, ranks, bus):
    """Across boxes a ring leaves each box through one GPU's NIC per channel, the exit
    rotating over the box's GPUs: bus = min(NVLink x ppn/(ppn-1), ppn x NIC); one box:
    NVLink. nccl-tests measures 396 GB/s on two H100 boxes (NVIDIA/nccl-tests#319), above
    one box's 370: the NVLink port cannot be carrying every hop."""
    S = 64 * GiB
    e = _est(spec, "allreduce", S, "ring", ranks=ranks)
    assert e.rate == pytest.approx(bus * len(ranks) / (2 * (len(ranks) - 1)))
    assert e.busbw == pytest.approx(bus, rel=5e-3)          # less the latency share


@pytest.mark.parametrize("n", [3, 4, 8])
def test_nvls_allreduce_moves_one_and_a_bit(n):
    """NVLS: (1 + 1/n) S through each port at NVLink x 0.85, so busbw 2(n-1)/(n+1) of it."""
    S = 64 * GiB
    e = _est("dgx-h100:1", "allreduce", S, "nvls", ranks=range(n))
    rate = 18 * NCCL_NVLINK_LINK_BPS["hopper"] * NVLS_EFFICIENCY["hopper"]
    assert e.in_network and e.latency == pytest.approx(25e-6)
    assert e.busbw == pytest.approx(2 * (n - 1) / (n + 1) * rate, rel=1e-3)


def test_which_algorithms_apply():
    h1 = parse_spec("dgx-h100:1")
    names = {e.algorithm for e in nccl_estimates(h1, "allreduce", GiB, ranks=[0, 1])}
    assert names == {"tree", "ring"}                        # NVLS off at two GPUs
    assert {e.algorithm for e in nccl_estimates(h1, "allreduce", GiB)} == {
        "tree", "ring", "nvls"}
    a1 = parse_spec("dgx-a100:1")
    assert "nvls" not in {e.algorithm for e in nccl_estimates(a1, "allreduce", GiB)}
    h2 = parse_spec("dgx-h100:2")
    assert {e.algorithm for e in nccl_estimates(h2, "allreduce", GiB)} == {
        "tree", "ring", "nvls_tree"}
    one_per_box = list(range(0, 32, 8))
    h4 = parse_spec("dgx-h100:4")
    assert {e.algorithm for e in nccl_estimates(h4, "allgather", GiB, ranks=one_per_box)} == {
        "ring", "pat"}
    assert {e.algorithm for e in nccl_estimates(h4, "alltoall", GiB)} == {"p2p"}
    assert {e.algorithm for e in nccl_estimates(h4, "broadcast", GiB)} == {"ring"}
    with pytest.raises(NotSupportedError, match="NVLink SHARP"):
        nccl_estimates(a1, "allreduce", GiB, algorithms=["nvls"])
    with pytest.raises(NotSupportedError, match="unknown NCCL algorithm"):
        nccl_estimates(h1, "allreduce", GiB, algorithms=["collnet"])


def test_protocols_scale_as_nccls_tuning_model():
    S = 64 * GiB
    simple = _est("dgx-h100:1", "allreduce", S, "ring")
    ll128 = _est("dgx-h100:1", "allreduce", S, "ring", "LL128")
    ll = _est("dgx-h100:1", "allreduce", S, "ring", "LL")
    assert ll128.rate == pytest.approx(0.92 * simple.rate)
    # LL: half the bandwidth, capped at llMaxBw (141 GB/s bus on Hopper in one box)
    assert ll.rate == pytest.approx(min(141e9, 0.5 * 18 * 20.6e9) * 8 / 14)


def test_choice_small_latency_bound_large_bandwidth_bound():
    t = parse_spec("dgx-h100:1")
    small, large = nccl_choose(t, "allreduce", 1024), nccl_choose(t, "allreduce", 4 * GiB)
    assert small.protocol == "LL" and small.time < 20e-6
    assert (large.algorithm, large.protocol) == ("nvls", "Simple")
    for e in nccl_estimates(t, "allreduce", 4 * GiB):
        assert large.time <= e.time


def test_tree_applies_the_size_correction():
    t = parse_spec("dgx-h100:2")
    e = nccl_estimates(t, "allreduce", 2**20, algorithms=["tree"])
    simple = next(x for x in e if x.protocol == "Simple")
    # log2(2^20 / 64) = 14 -> NCCL's Simple factor .5; 2 x 8 GPUs: NIC-bound tree
    bus = 0.92 * min(18 * 20.6e9, 8 * 50e9 * 4096 / 4122)
    assert simple.rate == pytest.approx(bus * 0.5 / 2)


def test_alltoall_is_nic_bound_across_boxes():
    S = 4 * GiB
    e = _est("dgx-h100:6,transport=roce", "alltoall", S, "p2p")
    per_nic = S * 40 / 48 / e.time
    assert per_nic == pytest.approx(50e9 * 4096 / 4178, rel=1e-3)
    one_box = _est("dgx-h100:1", "alltoall", S, "p2p")
    assert one_box.rate == pytest.approx(18 * 20.6e9 * 8 / 7)


def test_estimates_are_finite_on_every_box_and_kind():
    for spec in ("dgx-a100:2", "dgx-h100:2", "hgx-h200:1", "dgx-b200:2", "gb200-nvl72:1"):
        t = parse_spec(spec)
        for kind in ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce",
                     "alltoall"):
            for size in (0, 8, 2**20, 2**33):
                best = nccl_choose(t, kind, size)
                assert math.isfinite(best.time) and best.time > 0
