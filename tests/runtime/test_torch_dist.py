"""The torch.distributed executor over every synthesizer, on 2..9 gloo processes.

One job of 9 processes (tests/runtime/torch_battery.py) creates one subgroup per size
p = 2..9 and runs many schedules in each; the tests below read its per-rank results.
Nine, not eight: edge-disjoint Hamiltonian rings need at least a 3x3 torus.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from topocoll.runtime import chunk_bounds  # noqa: E402
from topocoll.selection import ALGORITHMS  # noqa: E402
from topocoll.topology.spec import parse_spec  # noqa: E402

WORLD = 9
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def battery(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("battery")
    sys.path.insert(0, str(HERE))
    from torch_battery import prepare

    prepare(WORLD)                  # every schedule made once, here; the workers read them
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(HERE))
    procs = [subprocess.Popen([sys.executable, str(HERE / "torch_battery.py"), str(r), str(WORLD),
                               str(tmp / "store"), str(tmp)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(WORLD)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=900)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for r, p in enumerate(procs):
        assert p.returncode == 0, f"rank {r} exited with {p.returncode}:\n{logs[r][-3000:]}"
    return [json.loads((tmp / f"rank{r}.json").read_text()) for r in range(WORLD)]


def test_no_failures(battery):
    fails = [f for res in battery for f in res["failures"]]
    assert not fails, "\n".join(fails[:20])


def _specs_run(cases, syn) -> set[str]:
    prefix = f"{syn.name}-{syn.kind}-"
    # case names are "<name>-<kind>-<spec>[-<detail>]"; the battery's specs have no '-'
    return {c[len(prefix):].split("-", 1)[0] for c in cases if c.startswith(prefix)}


def test_every_synthesizer_ran_on_every_group_size_it_applies_to(battery):
    cases = set(battery[0]["cases"])
    for syn in ALGORITHMS:
        ran = _specs_run(cases, syn)
        assert ran, f"{syn.name} {syn.kind} never ran"
        for p in range(2, WORLD + 1):
            if not syn.unsupported(parse_spec(f"ring:{p}"), tuple(range(p))):
                assert f"ring:{p}" in ran, f"{syn.name} {syn.kind} did not run on ring:{p}"
    # the last rank takes part only in the WORLD-rank group: every schedule it ran spans it
    last = set(battery[WORLD - 1]["cases"])
    for syn in ALGORITHMS:
        for spec in _specs_run(last, syn):
            assert parse_spec(spec).num_ranks == WORLD, (syn.name, spec)


def test_dtypes_and_ops_were_compared(battery):
    cases = battery[0]["cases"]
    for dt in ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32",
               "int64", "bool"):
        assert any(f"torch.{dt}-" in c for c in cases if c.startswith("dtype")), dt
    assert any("MAX" in c for c in cases) and any("PRODUCT" in c for c in cases)


def test_duplex_groups_give_the_same_results(battery):
    cases = battery[0]["cases"]
    for p in range(2, WORLD + 1):
        for kind in ("allreduce", "allgather", "reduce_scatter"):
            assert f"duplex-{kind}-{p}" in cases


def test_ddp_hook_matches_default_allreduce(battery):
    assert sum(c.startswith("ddp-") for c in battery[0]["cases"]) == 4
    assert sum(c.startswith("ddpduplex-") for c in battery[0]["cases"]) == 4


def test_chunk_bounds_cover_evenly():
    b = chunk_bounds(37, 5)
    assert b[0][0] == 0 and b[-1][1] == 37
    assert all(x[1] == y[0] for x, y in zip(b[:-1], b[1:], strict=True))
    assert max(y - x for x, y in b) - min(y - x for x, y in b) <= 1


NCCL_SCRIPT = """
import os, sys, torch, torch.distributed as dist
from topocoll import runtime as rt
from topocoll.synth import ring_allreduce, double_binary_tree_allreduce
from topocoll.topology import ring
r, n = int(sys.argv[1]), int(sys.argv[2])
torch.cuda.set_device(r)
dist.init_process_group("nccl", init_method="file://" + sys.argv[3], rank=r, world_size=n)
for s in (ring_allreduce(ring(n)), double_binary_tree_allreduce(ring(n), pipeline=2)):
    x = torch.arange(1001, device="cuda", dtype=torch.int64) * (r + 1)
    ref = x.clone(); dist.all_reduce(ref); rt.all_reduce(x, s)
    assert torch.equal(x, ref), s.name
dist.destroy_process_group()
"""


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                    reason="NCCL path needs at least 2 GPUs")
def test_nccl_path_matches_nccl_all_reduce(tmp_path):
    n = min(torch.cuda.device_count(), 4)
    procs = [subprocess.Popen([sys.executable, "-c", NCCL_SCRIPT, str(r), str(n),
                               str(tmp_path / "store")]) for r in range(n)]
    assert [p.wait(timeout=300) for p in procs] == [0] * n


def test_bad_calls_are_named(tmp_path):
    import torch.distributed as dist

    from topocoll.errors import NotSupportedError, ScheduleError
    from topocoll.runtime import all_reduce
    from topocoll.synth import ring_allgather, ring_allreduce
    from topocoll.topology import ring
    with pytest.raises(ScheduleError, match="allreduce"):
        all_reduce(torch.zeros(4), ring_allgather(ring(2)))
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    try:
        with pytest.raises(ScheduleError, match="process group has 1 ranks"):
            all_reduce(torch.zeros(4), ring_allreduce(ring(2)))
        from topocoll.collective import allreduce
        from topocoll.schedule import Schedule
        one = Schedule.from_steps(allreduce(1), [])
        with pytest.raises(NotSupportedError, match="contiguous"):
            all_reduce(torch.zeros(4, 4).t(), one)
        with pytest.raises(NotSupportedError, match="AVG"):
            all_reduce(torch.zeros(4, dtype=torch.int32), one, op=dist.ReduceOp.AVG)
        x = torch.arange(5.0)
        assert torch.equal(all_reduce(x, one), torch.arange(5.0))   # one rank: identity
    finally:
        dist.destroy_process_group()


def test_missing_torch_names_the_extra():
    code = ("import sys; sys.modules['torch'] = None\n"
            "from topocoll.runtime import torch_dist\n"
            "try:\n    torch_dist._torch()\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "topocoll[torch]" in out.stdout, out.stdout + out.stderr
