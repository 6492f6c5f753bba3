"""Outputs: utilization matrix, Chrome/Perfetto trace JSON, heat map."""

from __future__ import annotations

import json

import numpy as np
import pytest

from topocoll.collective import allgather
from topocoll.schedule import ScheduleBuilder
from topocoll.sim import FlowSim
from topocoll.sim.outputs import link_utilization, plot_utilization, trace_events, write_trace
from topocoll.synth.ring import bidirectional_ring_allreduce
from topocoll.topology import line, ring

B = 1e9


def _two_flows():
    # line 0-1-2, no latency: 0->2 (1 GB) and 1->2 (2 GB) share link 1->2
    b = ScheduleBuilder(allgather(3)).new_step()
    b.add(0, 2, [0]).add(1, 2, [0, 1])
    t = line(3, bandwidth=B, latency=0.0)
    return FlowSim().run(b.build(name="two"), t, 3e9), t


def test_utilization_exact_on_contended_link():
    run, t = _two_flows()
    edges, util = link_utilization(run, bins=3)          # bins of 1 s over [0, 3]
    np.testing.assert_allclose(edges, [0, 1, 2, 3])
    l01, l12 = t.links_between(0, 1)[0], t.links_between(1, 2)[0]
    np.testing.assert_allclose(util[:, l12], [1, 1, 1], rtol=1e-12)
    np.testing.assert_allclose(util[:, l01], [0.5, 0.5, 0], atol=1e-12)
    others = np.setdiff1d(np.arange(len(t.links)), [l01, l12])
    assert np.all(util[:, others] == 0)
    # bytes are conserved: sum over bins x bandwidth x width = link load
    np.testing.assert_allclose(util.sum(axis=0) * B * 1.0, run.result.link_load, rtol=1e-12)


def test_utilization_bins_and_bad_input():
    run, _ = _two_flows()
    edges, util = link_utilization(run, bins=7, end=6.0)
    assert util.shape == (7, 4) and edges[-1] == 6.0
    assert np.all(util <= 1 + 1e-12) and np.all(util >= 0)
    with pytest.raises(ValueError, match="bins"):
        link_utilization(run, bins=0)


def test_trace_is_valid_chrome_json(tmp_path):
    t = ring(6, bandwidth=B, latency=1e-6)
    s = bidirectional_ring_allreduce(t)
    run = FlowSim().run(s, t, 6e6)
    path = tmp_path / "timeline.json"
    write_trace(run, path, counters=4, bins=10)
    data = json.loads(path.read_text())
    ev = data["traceEvents"]
    xs = [e for e in ev if e["ph"] == "X"]
    assert len(xs) == s.num_transfers
    for e in xs:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["dur"] >= 0 and e["name"] == f"{e['pid']}->{e['args']['dst']}"
    ts = sorted(x["args"]["transfer"] for x in xs)
    assert ts == list(range(s.num_transfers))
    # per (pid, tid) lane, complete events never overlap (required for correct nesting)
    lanes: dict = {}
    for e in xs:
        lanes.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in lanes.values():
        spans.sort()
        assert all(b0 >= a1 - 1e-9 for (_, a1), (b0, _) in zip(spans, spans[1:], strict=False))
    # the bidirectional ring sends two transfers at once: two lanes per rank
    assert {tid for (_, tid) in lanes} == {0, 1}
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert {f"rank {r}" for r in range(6)} <= names
    counters = [e for e in ev if e["ph"] == "C"]
    assert len(counters) == 4 * 10 and all("utilization" in c["args"] for c in counters)
    last = max(x["ts"] + x["dur"] for x in xs)
    assert last == pytest.approx(run.result.time * 1e6, rel=1e-9)
    assert data["otherData"]["model"] == "flow"


def test_trace_without_counters():
    run, _ = _two_flows()
    ev = trace_events(run, counters=0)["traceEvents"]
    assert not [e for e in ev if e["ph"] == "C"]
    xs = sorted((e for e in ev if e["ph"] == "X"), key=lambda e: e["args"]["transfer"])
    assert [(x["ts"], x["dur"]) for x in xs] == [(0.0, 2e6), (0.0, 3e6)]


def test_heatmap_png(tmp_path):
    pytest.importorskip("matplotlib")
    run, _ = _two_flows()
    out = tmp_path / "heat.png"
    plot_utilization(run, out, bins=20)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 1000
