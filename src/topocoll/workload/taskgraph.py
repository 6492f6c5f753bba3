"""Per-rank task graphs of a training iteration, and their replay on a fabric.

A :class:`TaskGraph` holds, for every rank, compute tasks (with a duration), collectives
(kind, bytes, the group of ranks) and point-to-point sends and receives, each with the
tasks of the same rank it depends on. It is what a Chakra execution trace describes
(:mod:`.chakra_et` reads and writes them) and what our models produce.

:func:`replay` times it on a topology the way ASTRA-sim's system layer runs a trace: a
task starts when its dependencies are done and its resource is free; every rank has one
compute stream and one collective stream (as one NCCL stream), each running its tasks in
trace order; the ``k``-th collective of a group on every member is one collective, which
starts when all members have reached it and takes the time of the schedule that
:class:`~topocoll.workload.CollectiveCoster` picks on the fabric; a send and the receive
that matches it (same source, destination and tag, in order) form one transfer, posted as
soon as both sides' dependencies are done (non-blocking, on no stream). The result is
exact for that model: the makespan is the longest path of the DAG of tasks,
dependencies, stream order and collective joins. Not modelled: tasks running at the same
time do not share links (each is timed alone).

Examples
--------
>>> from topocoll.topology.spec import parse_spec
>>> from topocoll.workload import CollectiveCoster
>>> g = TaskGraph(2, (
...     TaskNode(0, 0, "comp", "fwd", duration_s=1e-3),
...     TaskNode(1, 0, "coll", "grads", collective="allreduce", size=1e6, group=(0, 1),
...              deps=(0,)),
...     TaskNode(2, 1, "comp", "fwd", duration_s=2e-3),
...     TaskNode(3, 1, "coll", "grads", collective="allreduce", size=1e6, group=(0, 1),
...              deps=(2,))))
>>> top = parse_spec("ring:2,bw=1GB/s")
>>> r = replay(g, CollectiveCoster(top, algorithms=["ring"]))
>>> round(r.makespan_s, 6)    # rank 1's 2 ms, then two ring steps of 0.5 MB and 1 us
0.003002
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import InputError
from .iteration import CollectiveCoster, Task

__all__ = ["TaskNode", "TaskGraph", "ReplayResult", "replay", "KINDS"]

KINDS = ("comp", "coll", "send", "recv")


@dataclass(frozen=True)
class TaskNode:
    """One task of one rank (see the module docstring); ids are unique in the graph."""

    id: int
    rank: int
    kind: str
    name: str = ""
    duration_s: float = 0.0
    collective: str | None = None
    size: float = 0.0
    group: tuple[int, ...] = ()
    peer: int | None = None
    tag: int = 0
    deps: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"task {self.id}: kind must be one of {', '.join(KINDS)}, got "
                             f"{self.kind!r}", item=f"task {self.id}")
        if not self.duration_s >= 0 or not self.size >= 0:
            raise InputError(f"task {self.id}: negative duration or size",
                             item=f"task {self.id}")


@dataclass(frozen=True)
class TaskGraph:
    """Tasks of ``ranks`` ranks."""

    ranks: int
    nodes: tuple[TaskNode, ...]
    name: str = ""

    def check(self) -> None:
        """Refuse, naming the task, an unknown dependency, a dependency on another rank, a
        rank out of range, a collective whose group misses its own rank, a send without
        a peer, a cycle."""
        ids = {}
        for n in self.nodes:
            if n.id in ids:
                raise InputError(f"task id {n.id} appears twice", item=f"task {n.id}")
            if not 0 <= n.rank < self.ranks:
                raise InputError(f"task {n.id}: rank {n.rank} outside 0..{self.ranks - 1}",
                                 item=f"rank {n.rank}")
            ids[n.id] = n
        for n in self.nodes:
            for d in n.deps:
                if d not in ids:
                    raise InputError(f"task {n.id} depends on unknown task {d}",
                                     item=f"task {n.id}")
                if ids[d].rank != n.rank:
                    raise InputError(f"task {n.id} (rank {n.rank}) depends on task {d} of "
                                     f"rank {ids[d].rank}", item=f"task {n.id}")
            if n.kind == "coll" and (n.rank not in n.group or not n.collective):
                raise InputError(f"task {n.id}: a collective needs a kind and a group "
                                 f"holding its rank {n.rank}", item=f"task {n.id}")
            if n.kind in ("send", "recv") and (n.peer is None or
                                               not 0 <= n.peer < self.ranks):
                raise InputError(f"task {n.id}: a {n.kind} needs a peer rank",
                                 item=f"task {n.id}")


@dataclass(frozen=True)
class ReplayResult:
    """The replay of a task graph."""

    makespan_s: float
    compute_s: tuple[float, ...]            # per rank
    comm_s: dict                            # per collective kind (and p2p), summed
    collectives: int
    transfers: int
    tasks: tuple[Task, ...] = field(repr=False, default=())

    @property
    def exposed_comm_s(self) -> float:
        """Makespan beyond the busiest rank's compute."""
        return max(0.0, self.makespan_s - max(self.compute_s, default=0.0))

    def to_dict(self) -> dict:
        return {"iteration_s": self.makespan_s, "compute_s": max(self.compute_s, default=0.0),
                "exposed_comm_s": self.exposed_comm_s, "comm_s": self.comm_s,
                "collectives": self.collectives, "transfers": self.transfers,
                "compute_per_rank_s": list(self.compute_s)}


def replay(graph: TaskGraph, coster: CollectiveCoster, *, timeline: bool = False,
           contention: bool = False) -> ReplayResult:
    """Time ``graph`` on ``coster``'s topology (see the module docstring). With
    ``contention``, collectives and transfers that run at the same time share links
    (:func:`_fluid`); without, each is timed alone.

    Raises
    ------
    InputError
        For a malformed graph (see :meth:`TaskGraph.check`), a collective whose members
        disagree on its kind or size, an unmatched send or receive, a group larger than
        the topology, or a deadlock (a cycle through collectives).
    """
    graph.check()
    if graph.ranks > coster.topology.num_ranks:
        raise InputError(f"the trace has {graph.ranks} ranks, topology has "
                         f"{coster.topology.num_ranks}", item="topology")
    # joint events: one per collective instance and per send/receive pair
    key_of: dict[int, tuple] = {}
    seq: dict[tuple, int] = defaultdict(int)
    for n in graph.nodes:                 # trace order = id order within a rank
        if n.kind == "coll":
            g = tuple(sorted(n.group))
            k = ("coll", g, seq[(n.rank, g)])
            seq[(n.rank, g)] += 1
        elif n.kind in ("send", "recv"):
            src, dst = (n.rank, n.peer) if n.kind == "send" else (n.peer, n.rank)
            k = ("p2p", src, dst, n.tag, seq[("p2p", n.kind, src, dst, n.tag)])
            seq[("p2p", n.kind, src, dst, n.tag)] += 1
        else:
            k = ("comp", n.id)
        key_of[n.id] = k
    members: dict[tuple, list[TaskNode]] = defaultdict(list)
    for n in graph.nodes:
        members[key_of[n.id]].append(n)
    dur: dict[tuple, float] = {}
    comm: dict[str, float] = defaultdict(float)
    for k, ns in members.items():
        n0 = ns[0]
        if k[0] == "comp":
            dur[k] = n0.duration_s
        elif k[0] == "coll":
            if len(ns) != len(k[1]) or any(
                    (x.collective, x.size) != (n0.collective, n0.size) for x in ns):
                raise InputError(f"collective #{k[2]} of group {list(k[1])}: its members do "
                                 f"not all issue it with the same kind and size",
                                 item=f"task {n0.id}")
            dur[k] = coster.time(f"{n0.collective} {len(k[1])} ranks", n0.collective, k[1],
                                 n0.size)
            comm[n0.collective] += dur[k]
        else:
            if sorted(x.kind for x in ns) != ["recv", "send"]:
                raise InputError(f"{n0.kind} of task {n0.id} ({k[1]} -> {k[2]}, tag {k[3]}) "
                                 f"has no matching {'recv' if n0.kind == 'send' else 'send'}",
                                 item=f"task {n0.id}")
            size = max(x.size for x in ns)
            dur[k] = coster.time(f"p2p {k[1]}->{k[2]}", "broadcast", (k[1], k[2]), size,
                                 root=k[1]) if k[1] != k[2] else 0.0
            comm["p2p"] += dur[k]
    # the DAG over joint events: dependencies and stream order
    preds: dict[tuple, set] = defaultdict(set)
    last: dict[tuple, tuple] = {}
    for n in graph.nodes:
        k = key_of[n.id]
        for d in n.deps:
            if key_of[d] != k:
                preds[k].add(key_of[d])
        if n.kind == "send" or n.kind == "recv":
            continue                 # point-to-point: posted at once, only deps order them
        stream = (n.rank, n.kind)
        if stream in last and last[stream] != k:
            preds[k].add(last[stream])
        last[stream] = k
    succ: dict[tuple, list] = defaultdict(list)
    indeg = {k: 0 for k in members}
    for k, ps in preds.items():
        for p in ps:
            succ[p].append(k)
            indeg[k] += 1
    if contention:
        use = {k: (coster.link_use(ns[0].collective, k[1], ns[0].size) if k[0] == "coll"
                   else coster.link_use("broadcast", (k[1], k[2]),
                                        max(x.size for x in ns), root=k[1])
                   if k[0] == "p2p" and k[1] != k[2] else {})
               for k, ns in members.items() if dur[k] > 0}
        start, end = _fluid(members, preds, succ, indeg, dur, use)
    else:
        start, end = {}, {}
        queue = deque(sorted((k for k, d in indeg.items() if d == 0), key=repr))
        while queue:
            k = queue.popleft()
            start[k] = max((end[p] for p in preds.get(k, ())), default=0.0)
            end[k] = start[k] + dur[k]
            for s in succ[k]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    queue.append(s)
    if len(end) != len(members):
        stuck = min((ns[0].id for k, ns in members.items() if k not in end))
        raise InputError(f"the trace deadlocks: task {stuck} can never start (a cycle "
                         f"through dependencies, stream order and collectives)",
                         item=f"task {stuck}")
    compute = [0.0] * graph.ranks
    for n in graph.nodes:
        if n.kind == "comp":
            compute[n.rank] += n.duration_s
    tasks: Sequence[Task] = ()
    if timeline:
        tasks = tuple(Task(n.rank, n.name or n.collective or n.kind, -1, start[key_of[n.id]],
                           end[key_of[n.id]]) for n in graph.nodes)
    if contention:          # what each kind took, sharing links, not alone
        comm = defaultdict(float)
        for k, ns in members.items():
            if k[0] != "comp":
                comm[ns[0].collective if k[0] == "coll" else "p2p"] += end[k] - start[k]
    return ReplayResult(max(end.values(), default=0.0), tuple(compute), dict(comm),
                        sum(1 for k in members if k[0] == "coll"),
                        sum(1 for k in members if k[0] == "p2p"), tuple(tasks))


def _fluid(members, preds, succ, indeg, dur, use) -> tuple[dict, dict]:
    """Start and end of every joint event when concurrent ones share links.

    Each communication event ``k`` needs ``dur[k]`` seconds alone and then loads link
    ``l`` at the fraction ``use[k][l]`` of its capacity. Running together, events progress
    at rates ``r_k <= 1`` (1: as fast as alone) that are max-min fair under
    ``sum_k r_k use[k][l] <= 1`` on every link (progressive filling); compute runs at rate
    1. Time advances from one start or finish to the next. Exact for this fluid model: a
    collective is taken to load its links evenly over its run, as the flow backend's
    fair sharing does within a step.
    """
    indeg = dict(indeg)
    start: dict = {}
    end: dict = {}
    left: dict = {}
    active: list = []
    t = 0.0
    ready = sorted((k for k, d in indeg.items() if d == 0), key=repr)
    while ready or active:
        for k in ready:
            start[k] = t
            left[k] = dur[k]
            active.append(k)
        ready = []
        rate = _rates(active, use)
        # finish what is done; zero-length events finish at once
        step = min((left[k] / rate[k] for k in active if rate[k] > 0), default=0.0)
        t += step
        still = []
        for k in active:
            left[k] -= rate[k] * step
            if left[k] <= 1e-12 * max(1.0, dur[k]):
                end[k] = t
                for s in succ[k]:
                    indeg[s] -= 1
                    if indeg[s] == 0:
                        ready.append(s)
            else:
                still.append(k)
        active = still
        ready.sort(key=repr)
    return start, end


def _rates(active: list, use: dict) -> dict:
    """Max-min fair rates (progressive filling) of the active events; see :func:`_fluid`."""
    rate = {k: 1.0 for k in active}
    comm = [k for k in active if use.get(k)]
    if len(comm) < 2:
        return rate
    links: dict[int, list] = defaultdict(list)
    for k in comm:
        for link, u in use[k].items():
            links[link].append((k, u))
    shared = {lk: v for lk, v in links.items() if len(v) > 1 and sum(u for _, u in v) > 1}
    if not shared:
        return rate
    frozen: dict = {}
    level = 0.0
    while True:
        best, tight = 1.0, None
        for lk, v in shared.items():
            free = [u for k, u in v if k not in frozen]
            if not free:
                continue
            room = 1.0 - sum(frozen[k] * u for k, u in v if k in frozen)
            lam = room / sum(free)
            if lam < best:
                best, tight = lam, lk
        level = max(level, best)
        if tight is None:
            break
        for k, _ in shared[tight]:
            frozen.setdefault(k, best)
        if all(k in frozen for k in comm):
            break
    for k in comm:
        rate[k] = min(1.0, frozen.get(k, level if level < 1.0 else 1.0))
    return rate
