"""Text workloads: every dialect round-trips, foreign files parse, bad lines are named,
and LIBRA reads what we write."""

from __future__ import annotations

import pytest

from topocoll.errors import InputError
from topocoll.fabric import (
    parse_network,
    read_communicator,
    read_libra_workload,
)
from topocoll.workload import (
    DIALECTS,
    find_device,
    format_text_workload,
    model_layers,
    parse_model,
    parse_parallel,
    parse_text_workload,
)

LAYERS = model_layers(parse_model("llama2-7b:layers=3"), parse_parallel("tp=4,dp=2"),
                      find_device("h100"))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialect_round_trips(dialect):
    text = format_text_workload(LAYERS, dialect, header={"model_parallel_NPU_group": 4})
    w = parse_text_workload(text)                    # dialect recognized
    assert w.dialect == dialect and w.layers == LAYERS
    if dialect == "aicb":
        assert w.header["model_parallel_NPU_group"] == 4 and w.header["vpp"] == 3


def test_the_formats_reference_example_parses():
    text = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 ep: 1 pp: 1 vpp: 2 "
            "ga: 1 all_gpus: 16 checkpoints: 0 checkpoint_initiates: 0 pp_comm 0\n2\n"
            "attn_0\t-1\t420000\tALLREDUCE\t25165824\t420000\tALLREDUCE\t25165824\t380000\t"
            "NONE\t0\t1\n"
            "mlp_0\t-1\t910000\tALLREDUCE\t25165824\t910000\tALLREDUCE\t25165824\t850000\t"
            "ALLREDUCE\t100663296\t1\n")
    w = parse_text_workload(text)
    assert w.dialect == "aicb" and w.header["all_gpus"] == 16 and w.header["pp_comm"] == 0
    assert [ly.wg_bytes for ly in w.layers] == [0, 100663296]


@pytest.mark.parametrize("text, item", [
    ("DATA\n2\nl0 -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n", "line 2"),
    ("DATA\n1\nl0 -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8\n", "line 3"),
    ("l0 -1 1 NONE 0 1 BROADCAST 0 1 ALLREDUCE 8 0\n", "line 1"),
    ("l0 -1 x NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n", "line 1"),
    ("\n", "line 1"),
])
def test_bad_files_name_the_line(text, item):
    with pytest.raises(InputError) as e:
        parse_text_workload(text)
    assert e.value.item == item


def test_libra_reads_our_libra_output(tmp_path):
    net = parse_network("hier:ring(4)x switch(2)")
    f = tmp_path / "w.txt"
    f.write_text(format_text_workload(LAYERS, "libra"))
    (tmp_path / "c.yml").write_text("Forward: [4, -1]\nInputGrad: [4, -1]\n"
                                    "WeightGrad: [-1, 2]\n")
    w = read_libra_workload(f, read_communicator(tmp_path / "c.yml", 2))
    assert w.compute_s == pytest.approx(sum(ly.fwd_compute + ly.ig_compute + ly.wg_compute
                                            for ly in LAYERS) * 1e-9)
    assert sum(c.count for c in w.collectives) == 3 * len(LAYERS)
    assert net.npus == 8
