"""DLCP on the emulated cluster: a bounded-loss UDP message between namespaces, against
the packet engine on the uncontended case, and real losses recovered or zero-filled.

Real time on a shared VM is not the same on every machine: at stop 45 the same 2 MB
message read -1% .. +4% against the engine and, minutes later on the same idle machine,
+81% .. +126% (the emulated links' stretches that docs/studies/dlcp.md reports). So these
tests assert what holds on any machine (nothing finishes faster than the engine's line
rate allows, strict priority puts the class-1 message first, one FIFO finishes both
together, losses are resent or zero-filled within the budget, DSCP marks spread the
packets over the bands); the accuracy figure is the study's, measured with repetitions."""

from __future__ import annotations

import os
import shutil
import statistics

import pytest

from topocoll.topology.spec import parse_spec

# real time: the Python peers must keep up with the emulated 50 Mb/s, so these run alone,
# after the parallel suite (make test); beside the torch and Ray batteries they were
# starved of CPU (the class-1 message as slow as FIFO: +90%)
pytestmark = [pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                 reason="needs root and iproute2"),
              pytest.mark.alone]

from topocoll.testbed.dlcp_peer import compare_contended, compare_message  # noqa: E402
from topocoll.testbed.netns import down, up  # noqa: E402

SPEC = "leafspine:leaves=2,spines=2,hosts=2,bw=50Mbps"


def _runs(measure, n: int = 3, retries: int = 2) -> list:
    """``n`` completed runs of ``measure()``; a run whose message did not complete (the
    peers' UDP exchange stalled by the VM, seen on this host with the code of earlier
    stops too) is run again, at most ``retries`` times in all."""
    from topocoll.testbed.netns import TestbedError

    out, failed = [], 0
    while len(out) < n:
        try:
            out.append(measure())
        except TestbedError as e:
            failed += 1
            if failed > retries or "did not complete" not in str(e):
                raise
    return out


def test_uncontended_message_agrees_with_the_engine():
    name = f"q{os.getpid()}"
    topo = parse_spec(SPEC)
    tb = up(topo, name=name)
    try:
        rows = _runs(lambda: compare_message(tb, topo, 0, 3, 2_000_000, eps=0.02))
    finally:
        down(name)
    # never faster than the engine's line-rate physics (10% for the clocks)
    assert all(r["error"] >= -0.1 for r in rows), [r["error"] for r in rows]
    assert all(r["predicted_zero_filled"] == 0 for r in rows)


def test_real_losses_are_resent_or_zero_filled_within_the_budget():
    name = f"l{os.getpid()}"
    topo = parse_spec(SPEC)
    tb = up(topo, name=name, queue_packets=8)        # 200 in flight into 8: drops
    try:
        strict = compare_message(tb, topo, 0, 3, 1_000_000, eps=0.0, window=200,
                                 queue_packets=8)
        loose = compare_message(tb, topo, 0, 3, 1_000_000, eps=0.05, window=200,
                                queue_packets=8)
    finally:
        down(name)
    assert strict["measured_retransmitted_bytes"] > 0 and strict["rounds"] > 1
    assert strict["measured_zero_filled"] == 0               # reliable: all delivered
    assert loose["measured_zero_filled"] <= 0.05 * 1_000_000


def test_priority_bands_by_dscp_on_switch_ports():
    import subprocess

    name = f"b{os.getpid()}"
    topo = parse_spec(SPEC)
    limits = (40, 40, 34, 28, 22, 16, 10, 10)
    tb = up(topo, name=name, band_limits=limits, delay="off")
    try:
        rows = _runs(lambda: compare_message(tb, topo, 0, 3, 1_000_000, eps=0.02,
                                             bands=limits))
        # rank 3 hangs off leaf switch 5: its port towards rank 3 has the bands
        qd = subprocess.run(["tc", "-n", tb.ns(5), "-s", "qdisc", "show", "dev", "e3"],
                            capture_output=True, text=True).stdout
    finally:
        down(name)
    assert all(r["error"] >= -0.1 for r in rows), rows
    sent = {}
    for block in qd.split("qdisc pfifo ")[1:]:
        handle = int(block.split(":")[0])
        sent[handle - 30] = int(block.split("Sent ")[1].split(" bytes ")[1].split()[0])
        assert f"limit {limits[handle - 30]}p" in block
    # the packets were spread over the data classes 1..6 by their DSCP marks
    assert all(sent[b] > 0 for b in range(1, 7)), sent


@pytest.mark.parametrize("bands", [True, False], ids=["bands", "fifo"])
def test_contended_port_agrees_with_the_engine(bands):
    """Two 2 MB messages into one rank from one instant: with strict-priority bands the
    class-1 message takes the port first (half the time of the class-6 one), with one
    FIFO both finish together; the testbed and the engine agree per message."""
    from topocoll.testbed.dlcp_peer import band_limits

    name = f"k{os.getpid()}{int(bands)}"
    topo = parse_spec(SPEC)
    limits = band_limits(100)
    tb = up(topo, name=name, band_limits=limits if bands else None, delay="off")
    flows = [(0, 3, 2_000_000, 1), (1, 3, 2_000_000, 6)]
    try:
        runs = _runs(lambda: compare_contended(tb, topo, flows, bands=bands))
    finally:
        down(name)
    assert all(r["error"] >= -0.1 for run in runs for r in run), runs
    hi = statistics.median(run[0]["measured_s"] for run in runs)
    lo = statistics.median(run[1]["measured_s"] for run in runs)
    pred_hi, pred_lo = runs[0][0]["predicted_s"], runs[0][1]["predicted_s"]
    if bands:       # the engine: 0.34 s against 0.67 s; the testbed must show the same order
        assert pred_hi < 0.6 * pred_lo and hi < 0.7 * lo, (hi, lo)
    else:           # one FIFO: the two interleave and finish within a few percent
        assert abs(pred_hi / pred_lo - 1) < 0.05 and abs(hi / lo - 1) < 0.15, (hi, lo)
    assert all(r["predicted_drops"] == 0 for run in runs for r in run)
