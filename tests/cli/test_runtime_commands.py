"""CLI: export msccl/chakra and testbed up/run/bench/down, with --json and one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.export.chakra import decode_chakra
from topocoll.export.msccl import from_msccl_xml
from topocoll.verification import verify

runner = CliRunner()
needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2")


# unique per process: several checkouts run this suite on one machine at the same time
TB = f"c{os.getpid()}"


def run(*args, code=0):
    r = runner.invoke(app, list(args))
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    return r


def test_export_msccl_and_chakra(tmp_path):
    sched = tmp_path / "s.json"
    run("synth", "--topology", "ring:4", "--collective", "reduce_scatter", "--algorithm", "ring",
        "-o", str(sched))
    xml = tmp_path / "rs.xml"
    d = json.loads(run("export", "msccl", str(sched), "-o", str(xml), "--dialect",
                       "msccl-executor", "--json").stdout)
    assert d["dialect"] == "msccl-executor" and 'coll="reducescatter"' in xml.read_text()
    assert verify(from_msccl_xml(xml.read_text()), collect=True).ok
    d = json.loads(run("export", "chakra", str(sched), "-o", str(tmp_path / "et"), "--size",
                       "1MiB", "--json").stdout)
    assert len(d["files"]) == 4
    _, nodes = decode_chakra(open(d["files"][0], "rb").read())
    assert len(nodes) == 6   # 3 steps, one send and one receive each


def test_export_errors_are_one_line(tmp_path):
    sched = tmp_path / "a2a.json"
    run("synth", "--topology", "ring:4", "--collective", "alltoall", "--algorithm", "direct",
        "-o", str(sched))
    r = run("export", "msccl", str(sched), "-o", str(tmp_path / "x.xml"), code=2)
    assert r.stderr.count("\n") == 1 and "alltoall" in r.stderr


@needs_root
def test_testbed_down_is_idempotent_and_names_are_checked():
    d = json.loads(run("testbed", "down", "--name", TB + "d", "--json").stdout)
    assert d == {"name": TB + "d", "removed": []}
    r = run("testbed", "up", "--topology", "ring:3", "--name", "BAD!", code=2)
    assert "name" in r.stderr


@needs_root
@pytest.mark.slow
def test_testbed_up_run_down_and_bench():
    d = json.loads(run("testbed", "up", "--topology", "line:2,bw=200Mbps", "--name", TB + "u",
                       "--json").stdout)
    try:
        assert d["num_ranks"] == 2 and len(d["links"]) == 2
        assert d["delay_mode"] == "none"   # 1 us default latency: below the delay line's
        r = run("testbed", "run", "--name", TB + "u", "--json", "--", sys.executable, "-c",
                "import os; print(os.environ['RANK'], os.environ['MASTER_ADDR'])")
        res = json.loads(r.stdout)
        assert [x["output"].split() for x in res] == [["0", d["rank_addr"][0]],
                                                        ["1", d["rank_addr"][0]]]
    finally:
        run("testbed", "down", "--name", TB + "u")
    r = run("testbed", "bench", "--topology", "line:2,bw=200Mbps", "--algorithms",
            "ring,torch", "--size", "2MiB", "--iters", "2", "--json")   # default name: b<pid>
    rows = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert [x["algorithm"] for x in rows] == ["ring", "torch"]
    for x in rows:
        assert x["size_bytes"] == 2**21 and x["measured_s"] > 0 and x["predicted_s"] > 0
        # 2 MiB over 200 Mbit/s each way takes at least 42 ms; the network bounds the time
        assert x["measured_s"] >= 0.9 * x["predicted_s"]
        # one flow per direction of one link: the flow level agrees with alpha-beta
        assert x["predicted_flow_s"] == pytest.approx(x["predicted_s"], rel=1e-9)


@needs_root
def test_testbed_up_says_how_link_delay_is_emulated():
    name = TB + "l"
    try:
        r = run("testbed", "up", "--topology", "line:2,bw=100Mbps,lat=1ms", "--name", name)
        from topocoll.testbed.netns import netem_available
        how = "netem" if netem_available() else "userspace delay line"
        assert f"link delay: {how}" in r.stdout
        r = run("testbed", "up", "--topology", "line:2", "--name", name, code=2)
        assert "already exists" in r.stderr and r.stderr.count("\n") == 1
    finally:
        run("testbed", "down", "--name", name)
    r = run("testbed", "up", "--topology", "line:2,lat=1ms", "--name", name, "--delay", "x",
            code=2)
    assert "--delay must be one of" in r.stderr and "'x'" in r.stderr


@needs_root
def test_testbed_dlcp_contend_puts_two_senders_on_one_port():
    r = run("testbed", "dlcp", "--contend", "1", "--bands", "--size", "1MB",
            "--name", TB + "k", "--json")
    rows = json.loads(r.stdout)
    assert [(x["src"], x["dst"], x["class"]) for x in rows] == [(0, 3, 1), (1, 3, 6)]
    assert all(x["bands"] for x in rows)
    # the engine gives class 1 the port first: about half the time of class 6
    assert rows[0]["predicted_s"] < 0.6 * rows[1]["predicted_s"]
    assert rows[0]["measured_s"] < rows[1]["measured_s"]
