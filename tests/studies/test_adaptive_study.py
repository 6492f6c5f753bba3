"""The topology-adaptive study: strong baselines, contention as residual bandwidth, a
training iteration."""

from __future__ import annotations

import json

import pytest

from topocoll.studies.adaptive import (
    ADAPTIVE_BASELINES,
    render_adaptive_tables,
    run_adaptive_study,
    scenario_topology,
    write_adaptive_study,
)


def test_contention_scenarios_load_a_quarter_of_the_links():
    base = scenario_topology("contention: none (random, 100 Gb/s)")
    for name, keep in (("contention, 1/4 of links at 50%", 0.5),
                       ("contention, 1/4 of links at 90%", 0.1)):
        t = scenario_topology(name)
        assert [(lk.src, lk.dst) for lk in t.links] == [(lk.src, lk.dst) for lk in base.links]
        hit = [b.bandwidth / a.bandwidth for a, b in zip(base.links, t.links, strict=True)
               if b.bandwidth < a.bandwidth]
        assert hit and all(x == pytest.approx(keep) for x in hit)
        assert 0.1 < len(hit) / len(t.links) < 0.4          # about a quarter


def test_contention_study_row(tmp_path):
    name = "contention, 1/4 of links at 90%"
    [case] = run_adaptive_study([name], sizes=[2.0 ** 24], jobs=[("resnet50", 32)])
    for times in (*case.collective_s.values(), *case.iteration_s.values()):
        sp = case.speedups(times)
        assert set(sp) == set(ADAPTIVE_BASELINES)
        assert min(sp.values()) >= 1 - 1e-9        # adaptive never loses here
    # the loaded fabric is never faster than the same fabric without the other jobs
    [free] = run_adaptive_study(["contention, 1/4 of links at 50%"], sizes=[2.0 ** 24],
                                jobs=[])
    t90 = case.collective_s[f"{2.0 ** 24:g}"]["topology_adaptive"]
    t50 = free.collective_s[f"{2.0 ** 24:g}"]["topology_adaptive"]
    assert t90 >= t50 * (1 - 1e-9)
    assert scenario_topology(name).num_ranks == 16
    paths = write_adaptive_study(tmp_path, [case])
    assert json.loads(paths[0].read_text())[0]["scenario"] == name
    table = render_adaptive_tables([case])
    assert table.count(f"| {name} |") == 2 and "resnet50 iteration" in table
