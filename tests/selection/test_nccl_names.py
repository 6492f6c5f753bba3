"""`-a nccl` and `-a nccl_<algorithm>` in compare (issue 31)."""

import json

import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.errors import NotSupportedError
from topocoll.selection import compare_algorithms, nccl_names
from topocoll.selection.nccl import in_network_bound
from topocoll.topology import parse_spec

GiB = 2**30


def test_names_per_kind():
    assert nccl_names("allreduce") == ("nccl", "nccl_tree", "nccl_ring", "nccl_nvls",
                                       "nccl_nvls_tree")
    assert nccl_names("alltoall") == ("nccl", "nccl_p2p")


def test_rows_beside_scheduled_algorithms():
    t = parse_spec("dgx-h100:1")
    rows = compare_algorithms(t, "allreduce", [GiB], algorithms=["nccl", "nccl_ring", "ring"])
    by = {r.algorithm: r for r in rows}
    assert set(by) == {"nccl", "nccl_ring", "ring"}
    assert by["nccl"].params == {"algorithm": "nvls", "protocol": "Simple"}
    assert by["nccl"].model == "nccl" and not by["nccl"].verified and by["nccl"].steps == 0
    assert by["ring"].verified and by["ring"].model != "nccl"
    # NVLS beats any schedule's bound, so it is held to the in-switch bound instead
    assert by["nccl"].bound_s == pytest.approx(in_network_bound(t, "allreduce", range(8), GiB))
    assert 0 < by["nccl"].bound_fraction <= 1 and 0 < by["nccl_ring"].bound_fraction <= 1
    assert by["nccl_ring"].bound_s == by["ring"].bound_s
    assert [r.algorithm for r in rows] == ["nccl", "ring", "nccl_ring"]   # fastest first


def test_only_nccl_names_run_no_synthesizer():
    rows = compare_algorithms(parse_spec("dgx-h100:64"), "allreduce", [GiB, 2 * GiB],
                              algorithms=["nccl"])
    assert [r.algorithm for r in rows] == ["nccl", "nccl"]
    assert rows[0].params["algorithm"] == "nvls_tree"


def test_unknown_or_inapplicable_names():
    t = parse_spec("dgx-h100:1")
    with pytest.raises(NotSupportedError, match="nccl_pat"):
        compare_algorithms(t, "allreduce", [GiB], algorithms=["nccl_pat"])
    with pytest.raises(NotSupportedError, match="NVLink SHARP"):
        compare_algorithms(parse_spec("dgx-a100:1"), "allreduce", [GiB],
                           algorithms=["nccl_nvls"])


def test_cli_json_and_errors():
    runner = CliRunner()
    r = runner.invoke(app, ["compare", "-t", "dgx-h100:1", "-s", "1GiB", "-a", "nccl",
                            "--json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)
    assert row["model"] == "nccl" and row["params"]["algorithm"] == "nvls"
    assert 480e9 < row["busbw_Bps"] < 500e9
    r = runner.invoke(app, ["compare", "-t", "torus:4x4", "-a", "nccl"])
    assert r.exit_code == 2 and "box preset" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["compare", "-t", "dgx-h100:1", "-a", "nccl_bogus"])
    assert r.exit_code == 2 and "nccl_bogus" in r.output
    r = runner.invoke(app, ["list", "algorithms", "--json"])
    assert "nccl_nvls" in json.loads(r.output)["algorithms"]["allreduce"]


def test_train_costs_collectives_with_the_nccl_model():
    from topocoll.cost.nccl import nccl_choose
    from topocoll.workload import CollectiveCoster

    t = parse_spec("dgx-h100:2")
    cc = CollectiveCoster(t, algorithms=["nccl"])
    tp = tuple(range(8))
    assert cc.time("tp", "allreduce", tp, 2**26) == nccl_choose(t, "allreduce", 2**26,
                                                                 ranks=tp).time
    rec = cc.chosen["tp"]
    assert rec["algorithm"] == "nccl (nvls/Simple)" and 0 < rec["bound_fraction"] <= 1
    with pytest.raises(NotSupportedError, match="NCCL model"):
        cc.schedule("allreduce", tp, 2**26)
    # with schedule algorithms named too, the faster of both is kept
    both = CollectiveCoster(t, algorithms=["nccl", "direct"])
    dp = (0, 8)
    t_both = both.time("dp", "allreduce", dp, 2**26)
    t_nccl = nccl_choose(t, "allreduce", 2**26, ranks=dp).time
    t_direct = CollectiveCoster(t, algorithms=["direct"]).time("dp", "allreduce", dp, 2**26)
    assert t_both == min(t_nccl, t_direct)


def test_train_cli_with_nccl():
    r = CliRunner().invoke(app, ["train", "-m", "llama2-7b", "-t", "dgx-a100:2", "-p",
                                 "tp=2,pp=1,dp=8", "-a", "nccl", "--json"])
    assert r.exit_code == 0, r.output
    chosen = json.loads(r.output)["collectives"]
    assert any(c["algorithm"].startswith("nccl (") for c in chosen.values())


def test_synth_says_what_nccl_is():
    r = CliRunner().invoke(app, ["synth", "-t", "dgx-h100:1", "-a", "nccl", "-o", "x.json"])
    assert r.exit_code == 2 and "NCCL model" in r.output and "compare or train" in r.output


def test_in_network_bound_is_for_the_kinds_nvls_runs():
    t = parse_spec("dgx-h100:1")
    # every rank sends out 7/8 of 1 GiB at most at its 450 + 50 GB/s
    assert in_network_bound(t, "allgather", range(8), GiB) == pytest.approx(GiB * 7 / 8 / 500e9)
    with pytest.raises(NotSupportedError, match="in-switch"):
        in_network_bound(t, "broadcast", range(8), GiB)
