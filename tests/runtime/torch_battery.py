"""Worker for tests/runtime/test_torch_dist.py: one process of an 8-process gloo job.

Run as ``python torch_battery.py RANK WORLD STORE_FILE OUT_DIR``. For every group size
p = 2..WORLD it creates one subgroup of ranks 0..p-1 and runs, inside it, every synthesizer
applicable to a few topologies with p ranks, checking results against torch's own
collectives (allreduce) or against the closed form computed locally from every rank's
deterministic input (other kinds). Results go to OUT_DIR/rank<RANK>.json.
"""

from __future__ import annotations

import json
import sys
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist

from topocoll import runtime as rt
from topocoll.selection import ALGORITHMS, ScheduleCache, synthesize
from topocoll.topology.spec import parse_spec

R = dist.ReduceOp
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INTS = (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)


def specs(p):
    out = [f"ring:{p}"]
    for a in (2, 3):
        if p % a == 0 and p > a:
            out.append(f"hier:ring({a})x ring({p // a})")
    if p == 8:
        out.append("hier:fc(2)x ring(2)x switch(2)")
    if p == 9:   # the smallest torus with edge-disjoint Hamiltonian rings
        out.append("torus:3x3")
    if p == 6:   # racks behind switches: the two-level schedules apply
        out.append("twotier:racks=3,hosts=2,oversub=2")
    if p == 4:   # boxes named by the topology: NCCL's rings across boxes apply
        out.append("dgx:2,gpus=2")
    return out


def make_input(rank, n, dtype, op=R.SUM, seed=0):
    g = torch.Generator().manual_seed(1000 * seed + rank)
    if dtype == torch.bool:
        return torch.rand(n, generator=g) < 0.5
    if dtype.is_floating_point:
        return (torch.rand(n, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)
    if op == R.PRODUCT:   # products wrap modulo 2^bits in any order
        pm = torch.randint(0, 2, (n,), generator=g) * 2
        return (pm + 1 if dtype == torch.uint8 else pm - 1).to(dtype)
    lo, hi = (0, 30) if dtype == torch.uint8 else (-15, 16)
    return torch.randint(lo, hi, (n,), generator=g).to(dtype)


def local_reduce(xs, op):
    """Closed-form reduction of exact (integer or bool) inputs, for dtypes gloo lacks."""
    fn = {R.SUM: torch.add, R.PRODUCT: torch.mul, R.MIN: torch.minimum, R.MAX: torch.maximum,
          R.BAND: torch.bitwise_and, R.BOR: torch.bitwise_or, R.BXOR: torch.bitwise_xor}[op]
    out = xs[0].clone()
    for x in xs[1:]:
        out = fn(out, x).to(out.dtype)
    return out


def close(a, b, inputs_abs_sum, p, dtype):
    if not dtype.is_floating_point:
        return bool(torch.equal(a, b))
    fi = torch.finfo(dtype)
    # p * eps * (sum of |inputs|), plus rounding in the subnormal range
    tol = p * fi.eps * inputs_abs_sum + p * fi.smallest_normal * fi.eps
    return bool(((a.double() - b.double()).abs() <= tol).all())


class Checker:
    def __init__(self, rank):
        self.rank, self.cases, self.failures = rank, [], []

    def check(self, case, ok, detail=""):
        self.cases.append(case)
        if not ok:
            self.failures.append(f"{case}: {detail}")


def cases(world):
    """Every ``(synthesizer, spec, p, options)`` the battery runs."""
    for p in range(2, world + 1):
        for spec in specs(p):
            topo = parse_spec(spec)
            for syn in ALGORITHMS:
                if syn.unsupported(topo, tuple(range(p))):
                    continue
                if syn.kind in ("broadcast", "reduce"):
                    for root in sorted({0, p - 1}):
                        yield syn, spec, {"root": root}
                else:
                    yield syn, spec, {}


def prepare(world):
    """Synthesize every schedule of the battery once into the test session's cache
    (``$TOPOCOLL_CACHE``) before the workers start, so that they only read them."""
    cache = ScheduleCache()
    for syn, spec, options in cases(world):
        synthesize(syn, parse_spec(spec), options, cache=cache)


def schedule(syn, topo, group, me, **options):
    """``syn``'s schedule, from the cache that :func:`prepare` filled."""
    return synthesize(syn, topo, options, cache=ScheduleCache())


def run_case(chk, syn, spec, p, group, me):
    topo = parse_spec(spec)
    if syn.unsupported(topo, tuple(range(p))):
        return
    sched = schedule(syn, topo, group, me)
    case = f"{syn.name}-{syn.kind}-{spec}"
    n = 37 * p + 5   # uneven chunk sizes on purpose
    if syn.kind == "allreduce":
        # integers: any chunk sent to the wrong place, lost or reduced twice shows exactly
        # (floats would hide a reordering within their tolerance; every dtype and op is
        # compared by run_dtypes on a pipelined and a tree schedule)
        x = make_input(me, n, torch.int64)
        ref = x.clone()
        dist.all_reduce(ref, group=group)
        rt.all_reduce(x, sched, group=group)
        chk.check(f"{case}-{torch.int64}", torch.equal(x, ref), "differs from dist.all_reduce")
    elif syn.kind == "allgather":
        x = make_input(me, n, torch.int64)
        out = torch.empty(p * n, dtype=torch.int64)
        rt.all_gather_into_tensor(out, x, sched, group=group)
        want = torch.cat([make_input(r, n, torch.int64) for r in range(p)])
        chk.check(case, torch.equal(out, want))
    elif syn.kind == "reduce_scatter":
        x = make_input(me, p * n, torch.int64)
        out = torch.empty(n, dtype=torch.int64)
        rt.reduce_scatter_tensor(out, x, sched, group=group)
        want = sum(make_input(r, p * n, torch.int64) for r in range(p))[me * n:(me + 1) * n]
        chk.check(case, torch.equal(out, want))
    elif syn.kind == "alltoall":
        x = make_input(me, p * n, torch.int64)
        out = torch.empty(p * n, dtype=torch.int64)
        rt.all_to_all_single(out, x, sched, group=group)
        want = torch.cat([make_input(r, p * n, torch.int64)[me * n:(me + 1) * n] for r in range(p)])
        chk.check(case, torch.equal(out, want))
    elif syn.kind in ("broadcast", "reduce"):
        for root in sorted({0, p - 1}):
            sched = schedule(syn, topo, group, me, root=root)
            x = make_input(me, n, torch.int64)
            if syn.kind == "broadcast":
                rt.broadcast(x, sched, group=group)
                chk.check(f"{case}-root{root}", torch.equal(x, make_input(root, n, torch.int64)))
            else:
                rt.reduce(x, sched, group=group)
                if me == root:
                    want = sum(make_input(r, n, torch.int64) for r in range(p))
                    chk.check(f"{case}-root{root}", torch.equal(x, want))


def run_dtypes(chk, p, group, me):
    """Every dtype and reduce op torch reduces, on a pipelined and a tree schedule."""
    from topocoll.synth import double_binary_tree_allreduce, ring_allreduce
    topo = parse_spec(f"ring:{p}")
    scheds = [ring_allreduce(topo), double_binary_tree_allreduce(topo, pipeline=3)]
    n = 1001
    for sched in scheds:
        for dtype in FLOATS + INTS + (torch.bool,):
            ops = [R.SUM, R.MIN, R.MAX, R.PRODUCT]
            if not dtype.is_floating_point:
                ops += [R.BAND, R.BOR, R.BXOR] if dtype != torch.bool else []
            for op in ops:
                case = f"dtype-{sched.name}-{dtype}-{op}"
                x = make_input(me, n, dtype, op, seed=3)
                ref = x.clone()
                try:
                    dist.all_reduce(ref, op=op, group=group)
                except (RuntimeError, ValueError):   # gloo lacks it (int16): closed form
                    ref = local_reduce([make_input(r, n, dtype, op, seed=3) for r in range(p)],
                                       op)
                    case += "-local"
                rt.all_reduce(x, sched, op=op, group=group)
                s = sum(make_input(r, n, torch.float64, op, seed=3).abs() for r in range(p))
                if op == R.PRODUCT and dtype.is_floating_point:   # scale: the exact product
                    s = torch.stack([make_input(r, n, dtype, op, seed=3).double()
                                     for r in range(p)]).prod(0).abs()
                chk.check(case, close(x, ref, s, p, dtype), f"max diff "
                          f"{(x.double() - ref.double()).abs().max().item()}")
        x = make_input(me, n, torch.float32, seed=4)
        rt.all_reduce(x, sched, op=R.AVG, group=group)
        want = sum(make_input(r, n, torch.float64, seed=4) for r in range(p)) / p
        chk.check(f"avg-{sched.name}", bool(((x.double() - want).abs() < 1e-5).all()))


def run_duplex(chk, p, duplex, me):
    """Each direction of a pair on its own group: same results as torch's own collectives."""
    from topocoll.synth import (
        bidirectional_ring_allgather,
        direct_reduce_scatter,
        recursive_doubling_allreduce,
    )
    topo = parse_spec(f"ring:{p}")
    n = 11 * p
    x = make_input(me, n, torch.int64)
    ref = x.clone()
    dist.all_reduce(ref, group=duplex.up)
    rt.all_reduce(x, recursive_doubling_allreduce(topo), group=duplex)
    chk.check(f"duplex-allreduce-{p}", torch.equal(x, ref))
    out = torch.empty(p * n, dtype=torch.int64)
    rt.all_gather_into_tensor(out, x, bidirectional_ring_allgather(topo), group=duplex)
    want = torch.cat([sum(make_input(r, n, torch.int64) for r in range(p))] * p)
    chk.check(f"duplex-allgather-{p}", torch.equal(out, want))
    y = make_input(me, p * n, torch.int64)
    part = torch.empty(n, dtype=torch.int64)
    rt.reduce_scatter_tensor(part, y, direct_reduce_scatter(topo), group=duplex)
    want = sum(make_input(r, p * n, torch.int64) for r in range(p))[me * n:(me + 1) * n]
    chk.check(f"duplex-reduce_scatter-{p}", torch.equal(part, want))


def run_ddp(chk, p, group, me, state=None, label="ddp"):
    """Gradients with the hook (state: the group or DuplexGroups) equal DDP's own."""
    from topocoll.synth import ring_allreduce
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(9, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
    models = []
    for hooked in (False, True):
        m = torch.nn.parallel.DistributedDataParallel(
            __import__("copy").deepcopy(base), process_group=group, bucket_cap_mb=0.0001)
        if hooked:
            m.register_comm_hook(group if state is None else state, rt.ddp_comm_hook(
                lambda n: ring_allreduce(parse_spec(f"ring:{n}"))))
        g = torch.Generator().manual_seed(me)
        x = torch.randn(5, 9, generator=g)
        m(x).pow(2).sum().backward()
        models.append(m)
    for (na, a), (_, b) in zip(models[0].named_parameters(),
                                   models[1].named_parameters(), strict=True):
        chk.check(f"{label}-{na}", torch.allclose(a.grad, b.grad, rtol=1e-5, atol=1e-6),
                  "hooked gradient differs")


def main():
    rank, world, store, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=120))
    chk = Checker(rank)
    try:
        for p in range(2, world + 1):
            group = dist.new_group(list(range(p)))
            duplex = rt.DuplexGroups(dist.new_group(list(range(p))),
                                     dist.new_group(list(range(p))))
            if rank >= p:
                continue
            run_duplex(chk, p, duplex, rank)
            for spec in specs(p):
                for syn in ALGORITHMS:
                    run_case(chk, syn, spec, p, group, rank)
            if p in (3, 8):
                run_dtypes(chk, p, group, rank)
            if p == 4:
                run_ddp(chk, p, group, rank)
                run_ddp(chk, p, group, rank, state=duplex, label="ddpduplex")
    except Exception:
        chk.failures.append("crash: " + traceback.format_exc())
        raise
    finally:
        with open(f"{out}/rank{rank}.json", "w") as f:
            json.dump({"cases": chk.cases, "failures": chk.failures}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
