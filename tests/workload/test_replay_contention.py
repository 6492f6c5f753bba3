"""Replay with link sharing: concurrent transfers and collectives share links max-min
fairly; closed forms on a star, and no change where links are disjoint or nothing
overlaps."""

from __future__ import annotations

import pytest

from topocoll.topology.spec import parse_spec
from topocoll.workload import CollectiveCoster
from topocoll.workload.taskgraph import TaskGraph, TaskNode, replay

STAR = parse_spec("star:4,bw=1GB/s,lat=0s")


def _coster():
    return CollectiveCoster(STAR, algorithms=["ring", "direct", "binomial_tree"], bounds=False)


def _pair(src, dst, tag, base, size=1e6, deps=()):
    return (TaskNode(base, src, "send", peer=dst, size=size, tag=tag, deps=deps),
            TaskNode(base + 1, dst, "recv", peer=src, size=size, tag=tag))


def test_two_transfers_on_one_link_take_twice_as_long():
    g = TaskGraph(4, (*_pair(0, 1, 0, 0), *_pair(0, 1, 1, 10)))
    alone = replay(g, _coster())
    shared = replay(g, _coster(), contention=True)
    t = 1e6 / 1e9
    assert alone.makespan_s == pytest.approx(t, rel=1e-9)
    assert shared.makespan_s == pytest.approx(2 * t, rel=1e-9)


def test_disjoint_transfers_and_compute_do_not_slow_each_other():
    g = TaskGraph(4, (*_pair(0, 1, 0, 0), *_pair(2, 3, 0, 10),
                      TaskNode(20, 0, "comp", duration_s=5e-3)))
    a, b = replay(g, _coster()), replay(g, _coster(), contention=True)
    assert b.makespan_s == pytest.approx(a.makespan_s, rel=1e-12)


def test_a_collective_and_a_transfer_of_another_kind_share_the_links_they_both_use():
    c = _coster()
    size = 4e6
    ar = c.time("x", "allreduce", (0, 1, 2, 3), size)
    nodes = [TaskNode(100 + r, r, "coll", collective="allreduce", size=size,
                      group=(0, 1, 2, 3)) for r in range(4)]
    nodes += _pair(0, 1, 0, 0, size=2e6)          # a pipeline send during the all-reduce
    g = TaskGraph(4, tuple(nodes))
    alone = replay(g, _coster())
    shared = replay(g, _coster(), contention=True, timeline=True)
    assert alone.makespan_s == pytest.approx(ar, rel=1e-9)
    assert shared.makespan_s > alone.makespan_s
    # fluid bound: no faster than the busiest link's total bytes over its capacity
    use = c.link_use("allreduce", (0, 1, 2, 3), size)
    p2p = c.link_use("broadcast", (0, 1), 2e6, root=0)
    t_p2p = c.time("y", "broadcast", (0, 1), 2e6, root=0)
    busiest = max(use.get(lk, 0) * ar + p2p.get(lk, 0) * t_p2p for lk in set(use) | set(p2p))
    assert shared.makespan_s >= busiest * (1 - 1e-9)
    assert shared.makespan_s <= ar + t_p2p + 1e-12      # never worse than one after another


def test_train_task_graph_replay_on_the_command_line():
    import json

    from typer.testing import CliRunner

    from topocoll.cli import app

    args = ["train", "-m", "transformer:hidden=1024,ffn=4096,heads=16,layers=4,seq=512,"
            "vocab=32000", "-t", "hier:ring(4)x switch(4)", "-p", "tp=4,pp=2,dp=2",
            "--global-batch", "8", "--no-bounds", "-a", "ring,direct,binomial_tree",
            "--no-overlap", "--task-graph", "--json"]
    runner = CliRunner()
    alone = json.loads(runner.invoke(app, args).stdout)
    shared = json.loads(runner.invoke(app, [*args, "--contention"]).stdout)
    # alone, the replay is the iteration model; sharing links can only slow it down
    assert alone["task_graph"]["iteration_s"] == pytest.approx(alone["iteration_s"],
                                                               rel=1e-9)
    assert shared["task_graph"]["iteration_s"] >= alone["task_graph"]["iteration_s"]
    assert shared["task_graph"]["contention"] is True


def test_the_coster_keeps_the_chosen_schedule(monkeypatch):
    """Issue 29: link loads are computed on the schedule choose picked, not a second
    synthesis of it (the coster kept only the algorithm's name and options)."""
    import topocoll.selection as selection
    from topocoll.topology.spec import parse_spec
    from topocoll.workload import CollectiveCoster

    t = parse_spec("dgx:2,gpus=4")
    cc = CollectiveCoster(t, algorithms=["ring", "direct"])
    ranks = tuple(range(8))
    cc.time("dp", "allreduce", ranks, 2**24)
    picked = cc.schedule("allreduce", ranks, 2**24)
    assert picked.name == cc.chosen["dp"]["algorithm"]

    def no_second_synthesis(*a, **k):
        raise AssertionError("synthesized again")

    monkeypatch.setattr(selection, "synthesize", no_second_synthesis)
    use = cc.link_use("allreduce", ranks, 2**24)
    assert use and all(0 < f <= 1 + 1e-9 for f in use.values())
