"""Chakra traces: the replay's semantics, reading and writing through mlc-chakra, our own
send/receive exporter read back by the package, and a real trace that torch records on
CPU and Chakra's converter turns into ET."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from topocoll.errors import InputError
from topocoll.topology.spec import parse_spec
from topocoll.workload import CollectiveCoster
from topocoll.workload.chakra_et import read_chakra, write_chakra
from topocoll.workload.taskgraph import TaskGraph, TaskNode, replay

pytest.importorskip("chakra")
TOP = parse_spec("star:4,bw=1GB/s,lat=0s")


def _coster():
    return CollectiveCoster(TOP, algorithms=["ring", "direct", "binomial_tree"], bounds=False)


def test_replay_joins_collectives_and_serializes_streams():
    c = _coster()
    ar = c.time("x", "allreduce", (0, 1, 2), 3e6)
    nodes = []
    for r in range(3):
        nodes += [TaskNode(10 * r, r, "comp", "a", duration_s=1e-3 * (r + 1)),
                  TaskNode(10 * r + 1, r, "coll", collective="allreduce", size=3e6,
                           group=(0, 1, 2), deps=(10 * r,)),
                  TaskNode(10 * r + 2, r, "comp", "b", duration_s=5e-3)]   # no deps
    r = replay(TaskGraph(3, tuple(nodes)), c, timeline=True)
    # b overlaps the collective but waits for a on the compute stream
    assert r.makespan_s == pytest.approx(max(3e-3 + ar, 3e-3 + 5e-3))
    assert r.compute_s == pytest.approx((6e-3, 7e-3, 8e-3))
    assert r.collectives == 1 and r.comm_s["allreduce"] == pytest.approx(ar)
    spans = {(t.stage, t.kind): (t.start, t.end) for t in r.tasks}
    assert spans[(0, "allreduce")][0] == pytest.approx(3e-3)   # waits for rank 2


def test_replay_matches_sends_and_receives_and_names_bad_traces():
    c = _coster()
    g = TaskGraph(2, (TaskNode(0, 0, "send", peer=1, size=1e6, tag=7),
                      TaskNode(1, 1, "comp", duration_s=2e-3),
                      TaskNode(2, 1, "recv", peer=0, size=1e6, tag=7, deps=(1,))))
    r = replay(g, c)
    assert r.transfers == 1 and r.makespan_s == pytest.approx(2e-3 + r.comm_s["p2p"])
    with pytest.raises(InputError, match="no matching"):
        replay(TaskGraph(2, (TaskNode(0, 0, "send", peer=1, size=1.0),)), c)
    with pytest.raises(InputError, match="same kind and size"):
        replay(TaskGraph(2, (TaskNode(0, 0, "coll", collective="allreduce", size=1.0,
                                      group=(0, 1)),
                             TaskNode(1, 1, "coll", collective="allreduce", size=2.0,
                                      group=(0, 1)))), c)
    with pytest.raises(InputError, match="deadlock"):      # two orders of two collectives
        replay(TaskGraph(2, (
            TaskNode(0, 0, "coll", collective="allreduce", size=1.0, group=(0, 1)),
            TaskNode(1, 0, "send", peer=1, size=1.0, deps=(0,)),
            TaskNode(2, 1, "recv", peer=0, size=1.0),
            TaskNode(3, 1, "coll", collective="allreduce", size=1.0, group=(0, 1),
                     deps=(2,)))), c)
    with pytest.raises(InputError) as e:
        TaskGraph(2, (TaskNode(0, 0, "comp", deps=(5,)),)).check()
    assert e.value.item == "task 0"


def test_write_then_read_keeps_every_task(tmp_path):
    g = TaskGraph(3, tuple(n for r in range(3) for n in (
        TaskNode(100 * r, r, "comp", "f", duration_s=1.5e-3),
        TaskNode(100 * r + 1, r, "coll", "g", collective="reduce_scatter", size=3000.0,
                 group=(0, 1) if r < 2 else (2,), deps=(100 * r,)),
        TaskNode(100 * r + 2, r, "send" if r == 0 else "recv", peer=1 if r == 0 else 0,
                 size=64.0, tag=3) if r < 2 else TaskNode(100 * r + 2, r, "comp"))))
    paths = write_chakra(g, tmp_path)
    assert json.loads(paths[-1].read_text()) == {"1": [0, 1], "2": [2]}
    h = read_chakra(tmp_path)             # the groups file beside the trace
    key = [(n.rank, n.kind, n.collective, n.size, n.duration_s, n.group, n.peer, n.tag,
            len(n.deps)) for n in sorted(h.nodes, key=lambda n: (n.rank, n.id))]
    want = [(n.rank, n.kind, n.collective, n.size, n.duration_s, n.group, n.peer, n.tag,
             len(n.deps)) for n in g.nodes]
    assert key == want


def test_our_send_receive_exporter_reads_back_through_the_package(tmp_path):
    from typer.testing import CliRunner

    from topocoll.cli import app

    runner = CliRunner()
    sched = tmp_path / "ring.json"
    r = runner.invoke(app, ["synth", "-a", "ring", "-c", "allreduce", "-t", "ring:4",
                            "-o", str(sched)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["export", "chakra", str(sched), "-s", "4MB",
                            "-o", str(tmp_path / "et")])
    assert r.exit_code == 0, r.output
    g = read_chakra(tmp_path / "et")
    assert g.ranks == 4 and {n.kind for n in g.nodes} == {"send", "recv"}
    # a ring all-reduce: 2 (p - 1) steps of one chunk each way per rank
    assert sum(n.kind == "send" for n in g.nodes) == 4 * 6
    res = replay(g, CollectiveCoster(parse_spec("ring:4,bw=1GB/s,lat=0s"),
                                     algorithms=["binomial_tree"], bounds=False))
    assert res.makespan_s == pytest.approx(6 * 1e6 / 1e9, rel=1e-6)  # 1 MB chunks, 6 steps


def _record(out: Path) -> None:
    script = r'''
import os, sys, torch, torch.distributed as dist
from torch.profiler import ExecutionTraceObserver, profile, ProfilerActivity
def main(rank, world, out):
    # a file rendezvous: no TCP port to pick and lose to a concurrent test
    dist.init_process_group("gloo", init_method=f"file://{out}/rendezvous", rank=rank,
                            world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10))
    x = torch.randn(32, 64); y = torch.randint(0, 10, (32,))
    et = ExecutionTraceObserver().register_callback(f"{out}/host.{rank}.json")
    with profile(activities=[ProfilerActivity.CPU], execution_trace_observer=et) as prof:
        torch.nn.functional.cross_entropy(model(x), y).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
    prof.export_chrome_trace(f"{out}/kineto/prof.{rank}.json")
    dist.destroy_process_group()
if __name__ == "__main__":
    import torch.multiprocessing as mp
    mp.spawn(main, args=(2, sys.argv[1]), nprocs=2)
'''
    (out / "kineto").mkdir()
    (out / "rec.py").write_text(script)         # spawn needs a file to import main from
    rec = subprocess.run([sys.executable, str(out / "rec.py"), str(out)],
                         capture_output=True, text=True, timeout=300)
    assert rec.returncode == 0, rec.stderr[-3000:]
    conv = shutil.which("chakra_converter") or str(Path(sys.executable).parent /
                                                   "chakra_converter")
    (out / "et").mkdir()
    for r in (0, 1):
        subprocess.run([conv, "PyTorch", "--input", str(out / f"host.{r}.json"), "--output",
                        str(out / "et" / f"model.{r}.et")], check=True, capture_output=True,
                       timeout=300, cwd=out)


@pytest.mark.slow
def test_real_torch_trace_through_chakras_converter(tmp_path):
    pytest.importorskip("torch")
    _record(tmp_path)
    g = read_chakra(tmp_path / "et", kineto=tmp_path / "kineto")
    for r in (0, 1):
        colls = [n for n in g.nodes if n.rank == r and n.kind == "coll"]
        # one all-reduce per parameter tensor: 64x128 + 128 + 128x10 + 10 floats
        assert [(n.collective, n.size) for n in colls] == [
            ("allreduce", 4 * 8192), ("allreduce", 4 * 128), ("allreduce", 4 * 1280),
            ("allreduce", 4 * 10)]
        prof = json.loads((tmp_path / "kineto" / f"prof.{r}.json").read_text())
        ops = [e for e in prof["traceEvents"] if e.get("ph") == "X"
               and e.get("cat") == "cpu_op"]
        span = (max(e["ts"] + e["dur"] for e in ops) - min(e["ts"] for e in ops)) * 1e-6
        compute = sum(n.duration_s for n in g.nodes if n.rank == r and n.kind == "comp")
        assert 0 < compute <= span          # top-level ops only: nothing charged twice
    res = replay(g, CollectiveCoster(parse_spec("ring:2,bw=1GB/s"), algorithms=["ring"],
                                     bounds=False))
    assert res.collectives == 4 and res.makespan_s >= max(res.compute_s)
    from typer.testing import CliRunner

    from topocoll.cli import app

    out = CliRunner().invoke(app, ["import", "chakra", str(tmp_path / "et"), "--kineto",
                                   str(tmp_path / "kineto"), "-t", "ring:2,bw=1GB/s", "-a", "ring",
                                   "--json",
                                   "--trace", str(tmp_path / "tl.json")])
    assert out.exit_code == 0, out.output
    d = json.loads(out.stdout)
    assert d["iteration_s"] == pytest.approx(res.makespan_s, rel=1e-9)
    assert d["collectives"] == 4 and d["nodes"]["coll"] == 8
    assert json.loads((tmp_path / "tl.json").read_text())["traceEvents"]
