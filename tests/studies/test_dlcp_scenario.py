"""DLCP's scenario: messages and phases, background, the schemes, and the command."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.errors import InputError
from topocoll.studies.dlcp_scenario import SCHEMES, background_flows, dlcp_messages, run_dlcp
from topocoll.topology.spec import parse_spec
from topocoll.workload import LAYERED

TOPO = "leafspine:leaves=2,spines=2,hosts=2,bw=10Gbps"


def test_messages_push_lossy_pull_reliable_and_wait_for_pushes():
    rng = np.random.default_rng(0)
    msgs, pushed = dlcp_messages(LAYERED["resnet50"], 4, "dlcp", eps=0.05, payload=9000,
                                 bucket=2e6, scale=0.05, rng=rng)
    pushes = [m for m in msgs if not m.deps]
    pulls = [m for m in msgs if m.deps]
    assert len(pushes) == len(pulls) and all(m.eps == 0.05 for m in pushes)
    assert all(m.eps == 0.0 for m in pulls)                    # replicas stay identical
    assert pushed == sum(sum(p.length for p in m.packets) for m in pushes)
    byid = {m.id: m for m in msgs}
    for m in pulls:                          # a pull waits for every push to its server
        assert {byid[d].dst for d in m.deps} == {m.src} and len(m.deps) == 3
    # front buckets get better classes than back ones
    first = min(m.id for m in pushes)
    last = max(m.id for m in pushes)
    assert min(p.priority for p in byid[first].packets) <= \
        min(p.priority for p in byid[last].packets)
    base, _ = dlcp_messages(LAYERED["resnet50"], 4, "baseline", eps=0.05, payload=9000,
                            bucket=2e6, scale=0.05, rng=np.random.default_rng(0))
    assert {p.priority for m in base for p in m.packets} == {1}
    assert all(m.eps == 0 for m in base)


def test_background_load_matches_its_rate():
    rng = np.random.default_rng(3)
    bg = background_flows(8, 1.25e9, 0.5, 0.2, rng)
    offered = sum(b.nbytes for b in bg) / (8 * 0.2 * 1.25e9)
    assert 0.4 < offered < 0.6 and all(b.src != b.dst for b in bg)
    assert background_flows(8, 1.25e9, 0.0, 1.0, rng) == []


def test_schemes_run_and_bounded_loss_stays_in_budget():
    t = parse_spec(TOPO)
    recs = run_dlcp(t, LAYERED["resnet50"], workers=4, iterations=2, seed=2,
                    background_load=0.3, scale=0.1, buffer=200_000, payload=9000)
    assert [r["scheme"] for r in recs] == list(SCHEMES)
    for r in recs:
        assert 0 < r["p50_s"] <= r["p99_s"] and len(r["iterations_s"]) == 2
        assert r["loss_fraction"] <= 0.02 + 1e-12
        if r["scheme"] != "dlcp":
            assert r["loss_fraction"] == 0.0
    again = run_dlcp(t, LAYERED["resnet50"], workers=4, iterations=2, seed=2,
                     background_load=0.3, scale=0.1, buffer=200_000, payload=9000)
    assert again == recs                                          # seeded
    with pytest.raises(InputError) as e:
        run_dlcp(t, LAYERED["resnet50"], workers=9)
    assert e.value.item == "workers"
    with pytest.raises(InputError) as e:
        run_dlcp(t, LAYERED["resnet50"], schemes=("magic",))
    assert e.value.item == "schemes"


def test_worker_processes_give_the_same_records(monkeypatch):
    """Scheme-iterations spread over processes (each seeded by its iteration) give the
    records of one process, with 95% intervals for p50 and p99."""
    import topocoll.studies.dlcp_scenario as mod

    t = parse_spec(TOPO)
    kw = dict(workers=4, iterations=3, seed=5, background_load=0.3, scale=0.05,
              payload=9000, schemes=("baseline", "dlcp"))
    one = run_dlcp(t, LAYERED["resnet50"], jobs=1, **kw)
    monkeypatch.setattr(mod, "PARALLEL_MIN_PACKETS", 0)
    two = run_dlcp(t, LAYERED["resnet50"], jobs=2, **kw)
    assert one == two
    for r in one:                # three samples bound neither side of a median at 95%
        assert r["p50_ci_s"] == [None, None] and r["ci_coverage"][0] == 1.0
    with pytest.raises(InputError) as e:
        run_dlcp(t, LAYERED["resnet50"], jobs=0, **kw)
    assert e.value.item == "jobs"
    with pytest.raises(InputError) as e:
        run_dlcp(t, LAYERED["resnet50"], transport="bbr", **kw)
    assert e.value.item == "transport"


def test_dctcp_in_every_scheme_reacts_to_marks():
    """With DCTCP under every scheme the baseline becomes the dctcp scheme, and the marks
    slow the senders: fewer drops than the fixed window for every scheme."""
    t = parse_spec(TOPO)
    kw = dict(workers=4, iterations=1, seed=2, background_load=0.3, scale=0.1,
              buffer=200_000, payload=9000, window=14)
    fixed = {r["scheme"]: r for r in run_dlcp(t, LAYERED["resnet50"], **kw)}
    cc = {r["scheme"]: r for r in run_dlcp(t, LAYERED["resnet50"], transport="dctcp", **kw)}
    assert cc["baseline"]["iterations_s"] == fixed["dctcp"]["iterations_s"]
    assert cc["dctcp"] == {**fixed["dctcp"]}
    assert sum(r["drops"] for r in cc.values()) < sum(r["drops"] for r in fixed.values())


def test_command_json():
    r = CliRunner().invoke(app, ["dlcp", "-t", TOPO, "--workers", "4", "--iterations", "1",
                                 "--schemes", "baseline,dlcp", "--payload", "64KiB",
                                 "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert [s["scheme"] for s in d["schemes"]] == ["baseline", "dlcp"]
    for s in d["schemes"]:
        for k in ("scheme", "p50_s", "p99_s", "loss_fraction", "retransmitted_bytes"):
            assert k in s


def test_ring_pattern_reduce_scatter_lossy_all_gather_reliable():
    rng = np.random.default_rng(0)
    msgs, lossy = dlcp_messages(LAYERED["resnet50"], 4, "dlcp", eps=0.05, payload=9000,
                                bucket=2e6, scale=0.05, rng=rng, pattern="ring")
    byid = {m.id: m for m in msgs}
    per_bucket = 2 * 3 * 4
    assert len(msgs) % per_bucket == 0
    first = msgs[:per_bucket]
    rs, ag = first[:12], first[12:]
    assert all(m.eps == 0.05 for m in rs) and all(m.eps == 0.0 for m in ag)
    assert [m.weight for m in rs] == [1.0] * 4 + [2.0] * 4 + [3.0] * 4   # contributions
    assert all(m.dst == (m.src + 1) % 4 for m in first)
    for m in first[4:]:                      # each step waits for what its sender got
        (d,) = m.deps
        assert byid[d].dst == m.src
    assert lossy == sum(sum(p.length for p in m.packets) for m in msgs if m.eps)
    t = parse_spec(TOPO)
    recs = run_dlcp(t, LAYERED["resnet50"], workers=4, iterations=1, seed=1, scale=0.05,
                    background_load=0.2, schemes=("baseline", "dlcp"), pattern="ring",
                    payload=9000, buffer=200_000)
    assert all(r["p50_s"] > 0 for r in recs) and recs[1]["loss_fraction"] <= 0.05
    with pytest.raises(InputError) as e:
        run_dlcp(t, LAYERED["resnet50"], workers=4, pattern="mesh")
    assert e.value.item == "pattern"


def test_tree_pattern_reduce_up_lossy_broadcast_down_reliable():
    msgs, lossy = dlcp_messages(LAYERED["resnet50"], 7, "dlcp", eps=0.05, payload=9000,
                                bucket=2e6, scale=0.05, rng=np.random.default_rng(0),
                                pattern="tree")
    byid = {m.id: m for m in msgs}
    first = msgs[:12]                       # one bucket: 6 up, 6 down on 7 workers
    up, down = first[:6], first[6:]
    assert all(m.dst == (m.src - 1) // 2 and m.eps == 0.05 for m in up)
    assert {m.src: m.weight for m in up} == {6: 1.0, 5: 1.0, 4: 1.0, 3: 1.0, 2: 3.0, 1: 3.0}
    assert all(m.src == (m.dst - 1) // 2 and m.eps == 0.0 for m in down)
    root_in = {byid[d].src for d in down[0].deps}          # the root waits for both halves
    assert root_in == {1, 2}
    assert lossy == sum(sum(p.length for p in m.packets) for m in msgs if m.eps)
    recs = run_dlcp(parse_spec(TOPO), LAYERED["resnet50"], workers=4, iterations=1, seed=1,
                    scale=0.05, background_load=0.0, schemes=("baseline",), pattern="tree",
                    payload=9000)
    assert recs[0]["p50_s"] > 0


def test_dctcp_scheme_is_reliable_and_reacts_to_marks():
    t = parse_spec("leafspine:leaves=2,spines=2,hosts=4,bw=10Gbps")
    kw = dict(workers=8, iterations=1, seed=3, background_load=0.5, scale=0.3)
    base, dctcp = run_dlcp(t, LAYERED["resnet50"], schemes=("baseline", "dctcp"), **kw)
    assert dctcp["scheme"] == "dctcp" and dctcp["loss_fraction"] == 0.0   # reliable
    assert dctcp["p50_s"] > 0 and dctcp["drops"] < base["drops"]   # marks before drops
    # a zero threshold marks every packet: DCTCP keeps backing off and takes longer
    always = run_dlcp(t, LAYERED["resnet50"], schemes=("dctcp",), mark=0, **kw)[0]
    assert always["p50_s"] > dctcp["p50_s"]


def test_loss_profile_places_lost_packets_in_importance_order():
    from topocoll.sim.dlcp.engine import Message
    from topocoll.sim.dlcp.gradient_packets import GradientPacket
    from topocoll.studies.dlcp_scenario import loss_profile, profile_summary

    pk = tuple(GradientPacket(7, 0, i * 10, 10, pr) for i, pr in enumerate((1, 5, 3, 5)))
    lossy = Message(7, src=0, dst=1, packets=pk, eps=0.5)
    clean = Message(8, src=0, dst=1, packets=pk, eps=0.5)
    reliable = Message(9, src=0, dst=1, packets=pk)
    # least important first: packets 1 and 3 (class 5), then 2 (3), then 0 (1)
    prof = loss_profile([lossy, clean, reliable], [(7, (3, 0))])
    assert prof == [[0.25, 0.75], []]
    assert profile_summary(prof) == {"messages_that_may_lose": 2, "lossy_messages": 1,
                                     "mean_lost_quantile": 0.5}


def test_engine_pattern_trains_with_the_engines_drops():
    from topocoll.studies.dlcp_convergence import drop_mask

    g = np.arange(1.0, 9.0)                      # 4 blocks of 2, increasing magnitude
    rng = np.random.default_rng(0)
    # a profile whose every message lost its two least important packets (of four)
    m = drop_mask(g, block=2, eps=0.0, pattern="engine", rng=rng, profile=[[0.0, 0.25]])
    assert m.tolist() == [True] * 4 + [False] * 4
    # a profile of clean messages loses nothing
    assert not drop_mask(g, block=2, eps=0.0, pattern="engine", rng=rng,
                         profile=[[], []]).any()
    with pytest.raises(InputError):
        drop_mask(g, block=2, eps=0.0, pattern="engine", rng=rng, profile=None)


def test_background_below_every_gradient_class_yields_to_layer_priority():
    """Background in class 7 (below the gradients' 1-6) under layer priority: gradients
    see an almost empty fabric, faster than with background in class 4 between them; the
    FIFO baseline does not care about classes (the same run)."""
    t = parse_spec(TOPO)
    kw = dict(workers=4, iterations=1, seed=1, background_load=0.6, scale=0.2,
              buffer=300_000, schemes=("baseline", "layer_priority"))
    mid = run_dlcp(t, LAYERED["resnet50"], background_class=4, **kw)
    low = run_dlcp(t, LAYERED["resnet50"], background_class=7, **kw)
    assert low[0]["p50_s"] == mid[0]["p50_s"]
    assert low[1]["p50_s"] < mid[1]["p50_s"] and low[1]["drops"] <= mid[1]["drops"]
    with pytest.raises(InputError) as e:
        run_dlcp(t, LAYERED["resnet50"], workers=4, background_class=0)
    assert e.value.item == "background_class"
    bg = background_flows(4, 1.25e9, 0.5, 0.1, np.random.default_rng(0), priority=7)
    assert bg and {b.priority for b in bg} == {7}
