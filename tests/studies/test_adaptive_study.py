"""The topology-adaptive study: strong baselines, contention as residual bandwidth, a
training iteration."""

from __future__ import annotations

import json

import pytest

from topocoll.studies.adaptive import (
    ADAPTIVE_BASELINES,
    loaded,
    render_adaptive_tables,
    run_adaptive_study,
    scenario_topology,
    write_adaptive_study,
)
from topocoll.topology import parse_spec


def test_loaded_cables_keep_their_residual_bandwidth_both_ways():
    t = parse_spec("random:12,spread=1,density=0.5,seed=3")
    lt = loaded(t, 0.25, 0.9, seed=3)
    cut = [(a.src, a.dst) for a, b in zip(t.links, lt.links, strict=True)
           if b.bandwidth < a.bandwidth]
    assert cut and all((d, s) in cut for s, d in cut)          # both directions
    for a, b in zip(t.links, lt.links, strict=True):
        assert b.bandwidth == pytest.approx(a.bandwidth * (0.1 if (a.src, a.dst) in cut
                                                           else 1.0))
    cables = {frozenset(x) for x in cut}
    assert len(cables) == round(0.25 * len({frozenset((lk.src, lk.dst)) for lk in t.links}))
    assert loaded(t, 0.0, 0.9) is t


def test_contention_study_row(tmp_path):
    name = "contention, 1/4 of cables at 90%"
    [case] = run_adaptive_study([name], sizes=[2.0 ** 24], jobs=[("resnet50", 32)])
    for times in (*case.collective_s.values(), *case.iteration_s.values()):
        sp = case.speedups(times)
        assert set(sp) == set(ADAPTIVE_BASELINES)
        assert min(sp.values()) >= 1 - 1e-9        # adaptive never loses here
    # the loaded fabric is never faster than the same fabric without the other jobs
    [free] = run_adaptive_study(["contention, 1/4 of cables at 50%"], sizes=[2.0 ** 24],
                                jobs=[])
    t90 = case.collective_s[f"{2.0 ** 24:g}"]["topology_adaptive"]
    t50 = free.collective_s[f"{2.0 ** 24:g}"]["topology_adaptive"]
    assert t90 >= t50 * (1 - 1e-9)
    assert scenario_topology(name).num_ranks == 16
    paths = write_adaptive_study(tmp_path, [case])
    assert json.loads(paths[0].read_text())[0]["scenario"] == name
    table = render_adaptive_tables([case])
    assert table.count(f"| {name} |") == 2 and "resnet50 iteration" in table
