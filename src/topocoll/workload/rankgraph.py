"""The per-rank task graph of one training iteration of a transformer.

:func:`iteration_graph` lays out what every rank does under tensor, pipeline and data
parallelism, as tasks of a :class:`~topocoll.workload.taskgraph.TaskGraph`:

- per micro-batch, in the 1F1B order of :func:`~topocoll.workload.pipeline_1f1b`
  (``min(pp - s - 1, m)`` warm-up forwards, then one forward and one backward, then the
  rest), the stage's forward: the activation received from the previous stage (receives
  are posted up front, sends do not block the sender), then per
  block its compute and its two tensor-parallel all-reduces (all-gather and
  reduce-scatter with sequence parallelism), the embedding on the first stage and the
  logits on the last, and the activation sent on; the backward the same way back, each
  block's compute twice the forward's (plus the recomputation);
- after the last backward, the data-parallel all-reduce of the stage's gradients
  (reduce-scatter and all-gather with ZeRO) and the optimizer step.

Compute times are those of :func:`~topocoll.workload.simulate_iteration` (the same
device model), so replaying the graph (:func:`~topocoll.workload.taskgraph.replay`) on
a fabric gives :func:`~topocoll.workload.simulate_iteration`'s iteration time without
its gradient overlap, operation by operation (tested); the graph is also what
:func:`~topocoll.workload.chakra_et.write_chakra` writes for ASTRA-sim. Expert
parallelism and interleaving are not laid out.

Examples
--------
>>> from topocoll.workload import find_device, parse_model, parse_parallel
>>> m = parse_model("transformer:hidden=1024,ffn=4096,heads=16,layers=4,seq=512,vocab=32000")
>>> g = iteration_graph(m, parse_parallel("tp=2,pp=2,dp=2,mb=1,gb=8"), find_device("a100-80g"))
>>> g.ranks, sum(n.kind == "coll" and n.rank == 0 for n in g.nodes)
(8, 33)
"""

from __future__ import annotations

from ..errors import InputError
from .compute import ELEMENT_BYTES, block_compute_time, stage_extras
from .devices import Device
from .memory import check_configuration, stage_layers, stage_parameters
from .models import Transformer
from .parallel import Parallelism, groups
from .taskgraph import TaskGraph, TaskNode

__all__ = ["iteration_graph"]



def _order(pp: int, st: int, m: int) -> list[tuple[str, int]]:
    warm = min(pp - st - 1, m)
    seq = [("F", j) for j in range(warm)]
    f = warm
    for b in range(m):
        if f < m:
            seq.append(("F", f))
            f += 1
        seq.append(("B", b))
    return seq


def iteration_graph(model: Transformer, par: Parallelism, device: Device, *,
                    check_memory: bool = True) -> TaskGraph:
    """The task graph of one iteration (see the module docstring).

    Raises
    ------
    InputError
        For expert parallelism or interleaving, which are not laid out, and for a
        configuration :func:`~topocoll.workload.memory.check_configuration` refuses (the
        same check as the iteration model's; ``check_memory=False`` skips the memory).
    """
    if par.ep > 1 or par.interleave > 1:
        raise InputError("the task graph lays out tp, pp and dp (no ep, no interleaving)",
                         item="parallel")
    check_configuration(model, par, device, check_memory=check_memory)
    b, s, h, t = par.micro_batch, model.seq, model.hidden, par.tp
    m = par.micro_batches
    act = ELEMENT_BYTES * b * s * h
    f_block = block_compute_time(model, par, device)
    recompute, logit, embed = stage_extras(model, par, device)
    layers = stage_layers(model, par)
    tp_of = {r: g for g in groups(par, "tp") for r in g}
    dp_of = {r: g for g in groups(par, "dp") for r in g}
    stage_of, pp_of = {}, {}
    for g in groups(par, "pp"):
        for i, r in enumerate(g):
            stage_of[r], pp_of[r] = i, g
    tp_kinds = [("allgather", act), ("reduce_scatter", act)] if (
        par.sequence_parallel and t > 1) else [("allreduce", act)]
    passes = 2 if par.recompute == "full" else 1       # TP collectives per backward block
    nodes: list[TaskNode] = []

    def build(r: int) -> None:
        st, n = stage_of[r], layers[stage_of[r]]
        base = r * 10_000_000
        nid = [base]
        prev: list[int] = []

        def add(kind: str, name: str, **kw) -> int:
            i = nid[0]
            nid[0] += 1
            # receives are posted at once (data lands while the rank computes); a send is
            # posted when its data is ready and the rank goes on without waiting for it
            nodes.append(TaskNode(i, r, kind, name, deps=() if kind == "recv" else
                                  tuple(prev), **kw))
            if kind == "recv":
                prev.append(i)
            elif kind != "send":
                prev[:] = [i]
            return i

        def tp_comm(label: str) -> None:
            if t > 1:
                for _ in range(2):
                    for kind, size in tp_kinds:
                        add("coll", f"tp {kind} {label}", collective=kind, size=size,
                            group=tp_of[r])

        for op, j in _order(par.pp, st, m):
            if op == "F":
                if st > 0:
                    add("recv", f"recv act {j}", peer=pp_of[r][st - 1], size=act / t,
                        tag=2 * j)
                if st == 0:
                    add("comp", f"embed {j}", duration_s=embed)
                for k in range(n):
                    add("comp", f"F{j} block {k}", duration_s=f_block)
                    tp_comm(f"F{j}")
                if st == par.pp - 1:
                    add("comp", f"logits {j}", duration_s=logit)
                else:
                    add("send", f"send act {j}", peer=pp_of[r][st + 1], size=act / t,
                        tag=2 * j)
            else:
                if st < par.pp - 1:
                    add("recv", f"recv grad {j}", peer=pp_of[r][st + 1], size=act / t,
                        tag=2 * j + 1)
                if st == par.pp - 1:
                    add("comp", f"logits grad {j}", duration_s=2 * logit)
                for k in reversed(range(n)):
                    add("comp", f"B{j} block {k}", duration_s=2 * f_block + recompute)
                    for _ in range(passes):
                        tp_comm(f"B{j}")
                if st == 0:
                    add("comp", f"embed grad {j}", duration_s=2 * embed)
                else:
                    add("send", f"send grad {j}", peer=pp_of[r][st - 1], size=act / t,
                        tag=2 * j + 1)
        p = stage_parameters(model, par, st)
        g = ELEMENT_BYTES * p
        if par.dp > 1:
            if par.zero >= 1:
                add("coll", "dp reduce_scatter", collective="reduce_scatter", size=g,
                    group=dp_of[r])
                add("coll", "dp allgather", collective="allgather", size=g, group=dp_of[r])
            else:
                add("coll", "dp allreduce", collective="allreduce", size=g, group=dp_of[r])
        shard = p / (par.dp if par.zero >= 1 else 1)
        add("comp", "optimizer", duration_s=device.memory_time(2 * 16 * shard))

    for r in range(par.world):
        build(r)
    return TaskGraph(par.world, tuple(nodes), f"{model.name} {par.label()}")
