"""Box presets (issue 31): the real machines, their data-sheet figures, and the spec."""

import pytest

from topocoll.errors import TopologyError
from topocoll.topology import BOXES, box_cluster, box_of, dgx_a100, dgx_h100, find_box, parse_spec


@pytest.mark.parametrize("name", sorted(BOXES))
def test_every_box_builds_parses_and_round_trips(name):
    box = BOXES[name]
    t = parse_spec(f"{name}:2")
    assert t.num_ranks == 2 * box.gpus and box_of(t) is box
    assert t.links[0].bandwidth == (box.nvlink_Bps if box.scale_up == "switch"   # NVSwitch
                                    else box.nvlink_link_Bps)                  # one peer
    nic = [lk for lk in t.links if lk.src == 0 and lk.dst >= t.num_ranks][-1]
    assert nic.bandwidth == box.nic_Bps                              # GPU -> its rail
    assert parse_spec(t.name).fingerprint() == t.fingerprint()
    assert box.source and box.arch in ("ampere", "hopper", "blackwell", "cdna3")


def test_data_sheet_figures():
    assert find_box("dgx-a100").nvlink_Bps == 300e9 and not find_box("dgx-a100").nvls
    assert find_box("dgx-h100").nvlink_Bps == 450e9 and find_box("dgx-h100").nvls
    assert find_box("dgx-b200").nvlink_Bps == 900e9
    assert find_box("gb200-nvl72").gpus == 72


def test_presets_keep_their_names_and_links():
    assert dgx_h100(2).name == "dgx-h100:2" and dgx_a100(3, fabric="switch").name == \
        "dgx-a100:3,fabric=switch"
    assert dgx_h100(2).links == parse_spec("dgx:2").links


def test_transport_option():
    t = parse_spec("dgx-h100:2,transport=roce")
    assert t.meta["nic_transport"] == "roce" and t.name == "dgx-h100:2,transport=roce"
    assert box_cluster("dgx-h100", 2, transport="ib").name == "dgx-h100:2"
    assert t.fingerprint() != parse_spec("dgx-h100:2").fingerprint()
    with pytest.raises(TopologyError, match="transport"):
        parse_spec("dgx-h100:2,transport=tcp")
    with pytest.raises(TopologyError, match="unknown box"):
        find_box("dgx-z9")


def test_mi300x_is_a_full_mesh_and_nccl_declines_it():
    from topocoll.cost.nccl import nccl_estimates
    from topocoll.errors import NotSupportedError

    t = parse_spec("mi300x:2")
    assert t.num_switches == 8 + 4                  # no box switch: rails and spines only
    peers = [lk for lk in t.links if lk.src == 0 and lk.dst < t.num_ranks]
    assert len(peers) == 7 and all(lk.bandwidth == 64e9 for lk in peers)
    assert t.path(0, 5) == (0, 5)
    with pytest.raises(NotSupportedError, match="RCCL"):
        nccl_estimates(t, "allreduce", 2**30)


def test_tpu_slice():
    from topocoll.workload import find_device

    t = parse_spec("tpu-v5p:4x4x8")
    assert t.num_ranks == 128 and len(t.dims) == 3
    assert {lk.bandwidth for lk in t.links} == {100e9}
    assert find_device("tpu-v5p").peak_flops == 459e12
    with pytest.raises(TopologyError, match="3-D torus"):
        parse_spec("tpu-v5p:8x8")
    # TPU v4: six ICI links at 50 GB/s per direction; its device preset is the v4 chip
    t4 = parse_spec("tpu-v4:4x4x8")
    assert t4.name == "tpu-v4:4x4x8" and {lk.bandwidth for lk in t4.links} == {50e9}
    assert float(t4.egress_bandwidth()[0]) == 6 * 50e9
    assert find_device("tpu-v4").peak_flops == 275e12
    with pytest.raises(TopologyError, match="3-D torus"):
        parse_spec("tpu-v4:4x4")
