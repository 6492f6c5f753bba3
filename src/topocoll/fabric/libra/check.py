"""Check a LIBRA allocation by simulating the fabric it describes.

An allocation ``B`` turns the network into a ``hier:`` topology
(:meth:`~topocoll.fabric.libra.LibraNetwork.spec`). Each collective of the workload runs
among the NPUs its communicator names; the groups of one collective are translates of
each other and use disjoint links (a dimension's links join NPUs that differ only in that
coordinate), and LIBRA's loop runs one collective at a time, so one group on its own
sub-fabric is exact. The sub-fabric keeps, per used dimension, the ``c`` members (spread
evenly) with the links they really have:

- Ring(n): a ring of ``c`` whose hops are ``n / c`` physical links each (the same
  ``B / 2`` per direction, ``n / c`` times the latency). Two members of a larger ring
  keep ``B / 2``: routing is deterministic, so both halves of a bidirectional exchange
  take the same shortest path, as they do in the dimension's own schedule;
- FullyConnected(n): a fully connected ``c`` with the original per-link ``B / (n - 1)``,
  so a communicator that uses few of the NPUs uses few of the links;
- Switch(n): a switch of ``c`` ports of ``B`` each.

On it the hierarchical schedule (all-reduce, reduce-scatter, all-gather: one dimension
after another, bidirectional ring on rings, direct elsewhere;
:mod:`topocoll.synth.hierarchical`) or the direct all-to-all (every pair at once, routed
across the dimensions) is synthesized and costed at flow level (max-min fair sharing of
every link). The
iteration is then recomposed with the same loop as the model, each collective taking its
simulated time, so both numbers can be set side by side.

Examples
--------
>>> from topocoll.fabric.libra import LibraCollective, LibraWorkload, parse_network
>>> from topocoll.fabric.libra.timing import TimeModel
>>> net = parse_network("hier:ring(4)x fc(8)")
>>> w = LibraWorkload((LibraCollective("allreduce", 1e8, (4, 2)),), compute_s=0.0)
>>> c = check_allocation(net, w, [50.0, 50.0])
>>> c["iteration_s"] < c["flow_iteration_s"]       # LIBRA assumes all 7 FC links usable
True
>>> seq = TimeModel(algorithms=("bidirectional_ring", "direct"), phases="sequential")
>>> c = check_allocation(net, w, [50.0, 50.0], seq)
>>> abs(c["flow_iteration_s"] / c["iteration_s"] - 1) < 1e-6
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .model import GB, LibraNetwork, LibraWorkload, LibraWorkloadMix, check_workload
from .timing import LIBRA_MODEL, TimeModel, collective_time, iteration_time

__all__ = ["check_allocation", "sub_fabric", "MAX_ALLTOALL_RANKS"]

#: Largest group whose direct all-to-all is simulated (its n (n - 1) transfers); larger
#: ones are reported as not checked and keep the model's time in the recomposed iteration.
MAX_ALLTOALL_RANKS = 512

_KIND = {"Ring": "ring", "FullyConnected": "fc", "Switch": "switch"}


def sub_fabric(net: LibraNetwork, comm: Sequence[int], bandwidth_GBps: Sequence[float],
               latency_s: Sequence[float] | None = None) -> str:
    """The ``hier:`` spec of one group of a communicator (see the module docstring).

    Examples
    --------
    >>> from topocoll.fabric.libra import parse_network
    >>> sub_fabric(parse_network("hier:ring(8)x fc(8)x switch(4)"), (4, 2, -1), [100, 70, 10])
    'hier:ring(4,5e+10B/s,0s)x fc(2,1e+10B/s,0s)'
    """
    parts = []
    for i, (d, c) in enumerate(zip(net.dims, comm, strict=True)):
        if c is None or c < 2:
            continue
        B = float(bandwidth_GBps[i]) * GB
        lat = float(latency_s[i]) if latency_s else 0.0
        if d.block == "Ring":
            link = B if d.size == 2 else B / 2
            lat *= d.size // c
        elif d.block == "FullyConnected":
            link = B / (d.size - 1)
        else:
            link = B
        parts.append(f"{_KIND[d.block]}({c},{link:.9g}B/s,{lat:.9g}s)")
    return "hier:" + "x ".join(parts)


class _Simulator:
    """Flow-level times of collectives on sub-fabrics, each schedule synthesized once per
    (kind, sub-fabric). Without latency, max-min fair sharing is scale-free (every rate
    and every finish time scales with the bytes), so one simulation per schedule gives
    every size. With latency the time of a schedule is affine in the size when its
    transfers finish in lockstep (the hierarchical schedule on these fabrics); that is
    not assumed but verified: the smallest and largest sizes are simulated, the line
    through them is tested at a third size, and only if it holds to ``1e-9`` are the
    other sizes read from it; otherwise each size is simulated."""

    def __init__(self, backend: str, latency: bool) -> None:
        self.backend, self.latency = backend, latency
        self._sched: dict = {}
        self._known: dict = {}
        self.simulations = 0

    def schedule(self, spec: str, kind: str):
        from ...selection import find_algorithm, synthesize
        from ...topology.spec import parse_spec

        key = (kind, spec)
        if key not in self._sched:
            top = parse_spec(spec)
            alg = "direct" if kind == "alltoall" else "hierarchical"
            self._sched[key] = (top, synthesize(find_algorithm(alg, kind), top,
                                                {"ranks": tuple(range(top.num_ranks))}), alg)
        return self._sched[key]

    def _run(self, spec: str, kind: str, size: float) -> tuple[float, float]:
        from ...cost import AlphaBeta
        from ...sim.backends import cost_model

        top, sched, _ = self.schedule(spec, kind)
        self.simulations += 1
        return (cost_model(self.backend).evaluate(sched, top, size).time,
                AlphaBeta(bound=False).evaluate(sched, top, size).time)

    def times(self, spec: str, kind: str, sizes: Sequence[float]) -> dict:
        """``{size: (flow s, alpha-beta s)}`` for the schedule's own sizes."""
        sizes = sorted(set(sizes))
        if not self.latency:
            f, a = self._run(spec, kind, GB)
            return {x: (f * x / GB, a * x / GB) for x in sizes}
        if len(sizes) <= 3:
            return {x: self._run(spec, kind, x) for x in sizes}
        lo, hi, mid = sizes[0], sizes[-1], sizes[len(sizes) // 2]
        got = {x: self._run(spec, kind, x) for x in (lo, mid, hi)}

        def line(x: float) -> tuple[float, ...]:
            w = (x - lo) / (hi - lo)
            return tuple(p + w * (q - p) for p, q in zip(got[lo], got[hi], strict=True))

        if all(abs(u - v) <= 1e-9 * max(v, 1e-12) for u, v in
               zip(line(mid), got[mid], strict=True)):
            return {x: got.get(x) or line(x) for x in sizes}
        return {x: got.get(x) or self._run(spec, kind, x) for x in sizes}


def check_allocation(net: LibraNetwork, w: LibraWorkload | LibraWorkloadMix,
                     bandwidth_GBps: Sequence[float], model: TimeModel = LIBRA_MODEL,
                     chosen: dict | None = None, *, backend: str = "flow") -> dict:
    """Simulate every distinct collective of ``w`` on the fabric of ``bandwidth_GBps``
    (see the module docstring) and recompose the iteration. A mix is checked workload
    by workload (each runs alone on the fabric) and its times are the weighted means;
    ``workloads`` then holds each workload's own check.

    Returns
    -------
    dict
        ``iteration_s`` (the model's), ``flow_iteration_s`` (with simulated collectives),
        ``ratio`` (flow over model), ``complete`` (False when an all-to-all larger than
        :data:`MAX_ALLTOALL_RANKS` kept the model's time) and ``collectives``: per
        distinct collective its kind, bytes, communicator, count, ``model_s``,
        ``flow_s``, ``analytical_s`` (the same schedule under the alpha-beta model), the
        schedule and the sub-fabric.
    """
    if isinstance(w, LibraWorkloadMix):
        each = [check_allocation(net, p, bandwidth_GBps, model, chosen, backend=backend)
                for p, _ in w.parts]
        t_model = sum(x * c["iteration_s"] for (_, x), c in zip(w.parts, each, strict=True))
        t_flow = sum(x * c["flow_iteration_s"]
                     for (_, x), c in zip(w.parts, each, strict=True))
        return {"backend": backend, "iteration_s": t_model, "flow_iteration_s": t_flow,
                "ratio": t_flow / t_model if t_model else None,
                "complete": all(c["complete"] for c in each),
                "simulations": sum(c["simulations"] for c in each),
                "collectives": [r for c in each for r in c["collectives"]],
                "workloads": [{"name": p.name, "weight": x, **c}
                              for (p, x), c in zip(w.parts, each, strict=True)]}
    check_workload(net, w)
    b = np.asarray(bandwidth_GBps, float)
    seen: dict = {}
    counts: dict = {}
    for c in [*w.collectives, *(x for ly in w.layers for x in (*ly.fwd, *ly.ig, *ly.wg))]:
        k = (c.kind, float(c.size), tuple(c.comm))
        seen.setdefault(k, c)
    for c in w.collectives:
        k = (c.kind, float(c.size), tuple(c.comm))
        counts[k] = counts.get(k, 0.0) + c.count
    latency = bool(model.latency_s) and any(model.latency_s)
    sim = _Simulator(backend, latency)
    plan: dict = {}                      # (kind, sub-fabric) -> [(key, collective)]
    rows, times = [], {}
    for k, c in seen.items():
        spec = sub_fabric(net, c.comm, b, model.latency_s)
        if spec == "hier:":
            continue
        ranks = int(np.prod([x for x in c.comm if x and x > 1]))
        row = {"kind": c.kind, "size_bytes": c.size, "comm": list(c.comm),
               "count": counts.get(k, 0.0),
               "model_s": collective_time(c.kind, c.size, c.comm, b, net, model, chosen),
               "flow_s": None, "analytical_s": None, "schedule": None, "fabric": spec}
        rows.append(row)
        if c.kind == "alltoall" and ranks > MAX_ALLTOALL_RANKS:
            row["skipped"] = (f"a direct all-to-all of {ranks} ranks "
                              f"({ranks * (ranks - 1)} transfers) is not simulated")
            continue
        plan.setdefault((c.kind, spec), []).append((k, c, row))
    for (kind, spec), items in plan.items():
        # the schedules' sizes: all-gather's is the gathered buffer; LIBRA's the shard
        n = sim.schedule(spec, kind)[0].num_ranks
        size = {k: c.size * n if kind == "allgather" else c.size for k, c, _ in items}
        got = sim.times(spec, kind, list(size.values()))
        for k, _, row in items:
            row["flow_s"], row["analytical_s"] = got[size[k]]
            row["schedule"] = sim.schedule(spec, kind)[2]
            times[k] = row["flow_s"]
    t_model = iteration_time(net, w, b, model, chosen)
    t_flow = iteration_time(net, w, b, model, chosen, times=times)
    return {"backend": backend, "iteration_s": t_model, "flow_iteration_s": t_flow,
            "ratio": t_flow / t_model if t_model else None,
            "complete": not any("skipped" in r for r in rows),
            "simulations": sim.simulations, "collectives": rows}
