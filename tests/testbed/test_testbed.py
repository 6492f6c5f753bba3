"""The emulated cluster: build, shape, measure one link, run workers, survive a killed rank.

Needs root and iproute2 (``make test`` installs iproute2 when it is missing); skipped
otherwise. Every test uses its own testbed name, so tests can run in parallel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from topocoll.topology.spec import parse_spec

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2")

from topocoll.testbed.launch import measure_throughput, start_workers  # noqa: E402
from topocoll.testbed.netns import TestbedError, down, load, up  # noqa: E402


def _ours(prefix):
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [x for x in ns.split() + links.split() if x.startswith(prefix)]


@pytest.fixture
def testbed_name(request):
    name = f"t{abs(hash(request.node.name)) % 10**4}"
    down(name)
    yield name
    down(name)
    assert not _ours(f"tcb{name}"), "teardown left namespaces or interfaces behind"


def test_up_shape_measure_down(testbed_name):
    rate_mbit = 80
    tb = up(parse_spec(f"line:2,bw={rate_mbit}Mbps,lat=2ms"), name=testbed_name)
    assert load(testbed_name) == tb
    assert len(_ours(tb.prefix)) == 2
    qd = subprocess.run(["tc", "-n", tb.ns(0), "class", "show", "dev", tb.rank_iface[0]],
                        capture_output=True, text=True).stdout
    assert "rate 80Mbit" in qd
    goodput = measure_throughput(tb, 0, 1, seconds=2.5) * 8 / 1e6
    assert abs(goodput - rate_mbit) <= 0.10 * rate_mbit, f"{goodput:.1f} Mbit/s"
    with pytest.raises(TestbedError, match="already exists"):
        up(parse_spec("line:2"), name=testbed_name)
    assert sorted(down(testbed_name)) == [tb.ns(0), tb.ns(1)]
    assert down(testbed_name) == []          # idempotent
    with pytest.raises(TestbedError, match="no testbed"):
        load(testbed_name)


def test_down_after_crash_removes_leftovers(testbed_name):
    pfx = f"tcb{testbed_name}"
    subprocess.run(["ip", "netns", "add", f"{pfx}-0"], check=True)
    subprocess.run(["ip", "link", "add", "name", f"{pfx}v0a", "type", "veth", "peer", "name",
                    f"{pfx}v0b"], check=True)
    assert len(_ours(pfx)) == 3
    down(testbed_name)
    assert not _ours(pfx)


def test_multi_hop_routes_through_a_switch(testbed_name):
    tb = up(parse_spec("leafspine:leaves=2,spines=1,hosts=2,bw=200Mbps"), name=testbed_name)
    # rank 0 -> rank 3 crosses leaf, spine and leaf; both directions carry data
    for src, dst in ((0, 3), (3, 1)):
        goodput = measure_throughput(tb, src, dst, seconds=1.0) * 8 / 1e6
        assert 100 < goodput < 200, f"{src}->{dst}: {goodput:.1f} Mbit/s"


def test_bad_names_and_missing_tools():
    with pytest.raises(TestbedError, match="name"):
        up(parse_spec("line:2"), name="Bad-Name")


@pytest.mark.slow
def test_killed_rank_fails_every_other_rank_quickly(testbed_name):
    spec = "ring:4,bw=200Mbps"
    tb = up(parse_spec(spec), name=testbed_name, spec=spec)
    procs = start_workers(tb, [sys.executable, "-m", "topocoll.testbed.worker", "--topology",
                               spec, "--algorithm", "ring", "--size", "4MiB", "--iters", "1000",
                               "--timeout", "20"])
    try:
        for p in procs:   # every rank initialised and ran one collective
            for line in p.stdout:
                if line.strip() == "ready":
                    break
        time.sleep(0.5)   # now mid-collective
        procs[1].kill()
        t0 = time.monotonic()
        outs = {}
        for r, p in enumerate(procs):
            if r != 1:
                outs[r] = p.communicate(timeout=60)[0]
        elapsed = time.monotonic() - t0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    last = [t.strip().splitlines()[-1] for t in outs.values()]
    print(f"survivors failed after {elapsed:.1f} s:", *last, sep="\n")
    assert elapsed < 45, f"survivors took {elapsed:.0f} s to fail"
    for r, text in outs.items():
        assert procs[r].returncode == 3, f"rank {r} exited {procs[r].returncode}: {text[-500:]}"
        assert f"rank {r}: collective failed:" in text, text
    # the rank that saw the dead peer directly names it
    assert any("(rank 1)" in t or "peers [" in t and "1" in t for t in outs.values())
    assert sorted(down(testbed_name)) == sorted(tb.ns(v) for v in tb.nodes)
