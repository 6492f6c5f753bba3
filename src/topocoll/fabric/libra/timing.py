"""Time of a LIBRA workload for given bandwidths: LIBRA's model and a richer one.

LIBRA's model (Won et al., ISPASS 2024; ``../shared/reference/algorithms.md`` section 5.3):
a collective puts :func:`~topocoll.fabric.libra.dimension_traffic` bytes per NPU on every
dimension, takes the slowest dimension's ``traffic_i / B_i``, and an iteration adds every
compute time and every collective time (no overlap). :class:`TimeModel` with its defaults
is exactly that.

The richer model keeps the form ``a_i + f_i / B_i`` of every dimension's term, so the
allocation stays a convex program (:mod:`.libra_solve`), and adds:

- **the algorithm per dimension** (``algorithms``): a real schedule of our synthesizers
  (``ring``, ``bidirectional_ring``, ``direct``, ``swing``, ...) for the dimension's phase
  (reduce-scatter, all-gather, all-to-all) among the communicator's members, synthesized
  on the dimension's own building block (Ring, FullyConnected, Switch of its full size,
  members spread evenly) and costed by the alpha-beta model at two message sizes: its time
  is exactly ``a + r M / B`` (``a``: steps and route latencies; ``r``: the bytes the
  busiest link carries per byte of buffer, relative to the NPU's bandwidth in that
  dimension). LIBRA's ideal ``r = (c - 1) / c`` becomes the algorithm's own factor; e.g. a
  direct exchange among 2 of the 8 NPUs of a FullyConnected dimension uses one of their
  seven links, ``r = 7 / 2``. ``choose`` takes the fastest candidate per collective and
  dimension at reference bandwidths (the solver iterates it to a fixed point);
- **latency** (``latency_s``): the link latency of each dimension, charged per step and
  hop through the same schedules; LIBRA's ideal algorithm gets the latency of the
  building block's natural one (bidirectional ring on a Ring, direct otherwise);
- **phases**: ``pipelined`` (LIBRA: chunks stream through the dimensions, the slowest
  dimension sets the pace) or ``sequential`` (one dimension after another, as the
  hierarchical schedule :func:`~topocoll.synth.hierarchical.hierarchical_allreduce` runs);
- **loop**: ``no_overlap`` (LIBRA) or ``overlap``: the per-layer workload of
  :class:`~topocoll.fabric.libra.LibraLayer` runs forward (compute and blocking
  collectives), then backward from the last layer; a layer's weight-gradient collective
  starts when its gradient is computed and the previous one has finished, overlapping
  the rest of the backward pass (ASTRA-sim's data-parallel loop, and PyTorch DDP's);
  the iteration ends when both the compute and the last collective are done.

Examples
--------
>>> from topocoll.fabric.libra import LibraCollective, LibraWorkload, parse_network
>>> net = parse_network("hier:ring(4)x switch(8)")
>>> w = LibraWorkload((LibraCollective("allreduce", 1e9, (4, 8)),), compute_s=0.0)
>>> round(iteration_time(net, w, [100, 100]), 6)       # 2 * 3/4 GB over 100 GB/s
0.015
>>> rich = TimeModel(algorithms=("bidirectional_ring", "direct"), phases="sequential")
>>> round(iteration_time(net, w, [100, 100], rich), 6)  # one dimension after the other
0.019375
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from .model import (
    GB,
    LibraCollective,
    LibraNetwork,
    LibraWorkload,
    LibraWorkloadMix,
    dimension_traffic,
    workload_parts,
)

__all__ = ["TimeModel", "LIBRA_MODEL", "LIBRA_ALGORITHMS", "PHASES", "LOOPS", "dim_profile",
           "collective_terms", "collective_time", "iteration_time", "choose_algorithms",
           "distinct_collectives"]

PHASES = ("pipelined", "sequential")
LOOPS = ("no_overlap", "overlap")
#: Per-dimension algorithms: LIBRA's ideal traffic, ``choose``, or a synthesizer name.
LIBRA_ALGORITHMS = ("libra", "choose", "ring", "bidirectional_ring", "direct", "swing",
              "recursive_halving", "recursive_doubling", "bruck", "pairwise")
#: What ``choose`` tries per phase (those that apply to the members).
CANDIDATES = {"reduce_scatter": ("ring", "bidirectional_ring", "direct", "recursive_halving",
                                 "swing"),
              "allgather": ("ring", "bidirectional_ring", "direct", "recursive_doubling",
                            "bruck", "swing"),
              "alltoall": ("direct", "pairwise")}
_NATURAL = {"Ring": "bidirectional_ring", "FullyConnected": "direct", "Switch": "direct"}
_PHASES_OF = {"allreduce": ("reduce_scatter", "allgather"),
              "reduce_scatter": ("reduce_scatter",), "allgather": ("allgather",),
              "alltoall": ("alltoall",)}


@dataclass(frozen=True)
class TimeModel:
    """How a workload's time depends on the bandwidths (see the module docstring); the
    defaults are LIBRA's model exactly."""

    algorithms: tuple[str, ...] | None = None
    latency_s: tuple[float, ...] | None = None
    phases: str = "pipelined"
    loop: str = "no_overlap"

    def __post_init__(self) -> None:
        if self.phases not in PHASES:
            raise InputError(f"phases must be {' or '.join(PHASES)}, got {self.phases!r}",
                             item="phases")
        if self.loop not in LOOPS:
            raise InputError(f"loop must be {' or '.join(LOOPS)}, got {self.loop!r}",
                             item="loop")
        for a in self.algorithms or ():
            if a not in LIBRA_ALGORITHMS:
                raise InputError(f"algorithm {a!r} is not one of {', '.join(LIBRA_ALGORITHMS)}",
                                 item=f"algorithm '{a}'")
        for x in self.latency_s or ():
            if not (isinstance(x, (int, float)) and x >= 0):
                raise InputError(f"latency must be a non-negative number of seconds, got "
                                 f"{x!r}", item="latency")

    @property
    def is_libra(self) -> bool:
        return self == LIBRA_MODEL

    def check(self, net: LibraNetwork) -> None:
        """Refuse per-dimension lists whose length is not the network's dimensions."""
        D = len(net.dims)
        for name, v in (("algorithm", self.algorithms), ("latency", self.latency_s)):
            if v is not None and len(v) != D:
                raise InputError(f"{name} gives {len(v)} values for {D} dimensions",
                                 item=name)

    def algorithm(self, i: int) -> str:
        return self.algorithms[i] if self.algorithms else "libra"

    def latency(self, i: int) -> float:
        return float(self.latency_s[i]) if self.latency_s else 0.0

    def to_dict(self) -> dict:
        return {"algorithms": list(self.algorithms) if self.algorithms else None,
                "latency_s": list(self.latency_s) if self.latency_s else None,
                "phases": self.phases, "loop": self.loop}


LIBRA_MODEL = TimeModel()


@functools.lru_cache(maxsize=4096)
def dim_profile(block: str, n: int, c: int, phase: str, algorithm: str,
                latency_s: float = 0.0) -> tuple[float, float]:
    """``(a, r)``: ``phase`` (``reduce_scatter``, ``allgather`` or ``alltoall``) by
    ``algorithm`` among ``c`` of the ``n`` NPUs of one ``block`` takes ``a + r M / B``
    seconds for a buffer of ``M`` bytes when each NPU has ``B`` bytes/s in the dimension.
    The members are spread evenly (stride ``n / c``); ``latency_s`` is the link latency.

    Raises
    ------
    InputError
        When ``c`` does not divide ``n`` or the algorithm does not apply.

    Examples
    --------
    >>> a, r = dim_profile("FullyConnected", 8, 2, "reduce_scatter", "direct")
    >>> a, round(r, 9)            # one of seven links, each 1/7 of the NPU's bandwidth
    (0.0, 3.5)
    """
    if c < 2:
        return 0.0, 0.0
    if n % c:
        raise InputError(f"{c} NPUs of a {block}({n}) dimension: the communicator must divide "
                         f"the dimension", item="communicator")
    if algorithm == "libra":
        a = dim_profile(block, n, c, phase, _natural(block, phase), latency_s)[0] \
            if latency_s else 0.0
        return a, (c - 1) / c
    from ...cost import AlphaBeta
    from ...errors import NotSupportedError
    from ...selection import find_algorithm, synthesize
    from ...topology.spec import parse_spec

    kind = {"Ring": "ring", "FullyConnected": "fc", "Switch": "switch"}[block]
    links = 2 if block == "Ring" and n > 2 else (n - 1 if block == "FullyConnected" else 1)
    top = parse_spec(f"hier:{kind}({n},{GB / links:.12g}B/s,{latency_s:.9g}s)")
    members = tuple(range(0, n, n // c))
    try:
        syn = find_algorithm(algorithm, phase)
        sched = synthesize(syn, top, {"ranks": members})
    except (NotSupportedError, InputError) as e:
        raise InputError(f"algorithm {algorithm!r} cannot run {phase} among {c} of the {n} "
                         f"NPUs of a {block}: {e}", item=f"algorithm '{algorithm}'") from None
    model = AlphaBeta(bound=False)
    t1 = model.evaluate(sched, top, GB).time
    t2 = model.evaluate(sched, top, 2 * GB).time
    r = t2 - t1                          # seconds per GB at 1 GB/s: bytes per byte
    return max(t1 - r, 0.0), r


def _natural(block: str, phase: str) -> str:
    """The building block's own algorithm for ``phase``."""
    return "direct" if phase == "alltoall" else _NATURAL[block]


def _best(block: str, n: int, c: int, phase: str, lat: float, M: float, B: float) -> str:
    best, bt = None, float("inf")
    for alg in CANDIDATES[phase]:
        try:
            a, r = dim_profile(block, n, c, phase, alg, lat)
        except InputError:
            continue
        t = a + r * M / B
        if t < bt - 1e-15:
            best, bt = alg, t
    return best or _natural(block, phase)


def collective_terms(net: LibraNetwork, coll: LibraCollective, model: TimeModel,
                     chosen: dict | None = None) -> list[tuple[int, float, float]]:
    """``[(dimension, a seconds, f GB), ...]``: one instance of ``coll`` takes
    ``a + f / B`` seconds on each dimension it uses (``B`` in GB/s), combined by the
    model's phases. ``chosen`` maps ``(collective key, dimension, phase)`` to the algorithm
    that ``choose`` picked (see :func:`choose_algorithms`)."""
    traffic = dimension_traffic(coll.kind, coll.size, coll.comm)
    if model.algorithms is None and model.latency_s is None:
        return [(i, 0.0, t / GB) for i, t in enumerate(traffic) if t > 0]
    out = []
    phases = _PHASES_OF[coll.kind]
    for i, t in enumerate(traffic):
        if t <= 0:
            continue
        d = net.dims[i]
        c = coll.comm[i]
        alg = model.algorithm(i)
        a = f = 0.0
        ideal = (c - 1) / c
        for ph in phases:
            name = _phase_algorithm(alg, ph)
            if name == "choose":
                name = (chosen or {}).get((_key(coll), i, ph)) or _natural(d.block, ph)
            ai, ri = dim_profile(d.block, d.size, c, ph, name, model.latency(i))
            a += ai
            f += (t / len(phases)) / GB * ri / ideal
        out.append((i, a, f))
    return out


def _phase_algorithm(alg: str, phase: str) -> str:
    """The algorithm a dimension named ``alg`` runs for ``phase``: all-to-all phases run
    ``direct`` unless ``pairwise`` is named; halving and doubling pair up."""
    if alg in ("libra", "choose"):
        return alg
    if phase == "alltoall":
        return alg if alg in ("direct", "pairwise") else "direct"
    if alg == "pairwise":
        return "direct"
    if alg in ("recursive_halving", "recursive_doubling"):
        return "recursive_halving" if phase == "reduce_scatter" else "recursive_doubling"
    return alg


def _key(coll: LibraCollective) -> tuple:
    return (coll.kind, float(coll.size), tuple(coll.comm))


def choose_algorithms(net: LibraNetwork, w: LibraWorkload | LibraWorkloadMix, model: TimeModel,
                      bandwidth_GBps: Sequence[float]) -> dict:
    """For the dimensions whose algorithm is ``choose``: the fastest candidate per
    collective, dimension and phase at ``bandwidth_GBps``."""
    out: dict = {}
    if not model.algorithms or "choose" not in model.algorithms:
        return out
    for coll in distinct_collectives(w):
        traffic = dimension_traffic(coll.kind, coll.size, coll.comm)
        for i, t in enumerate(traffic):
            if t <= 0 or model.algorithm(i) != "choose":
                continue
            d, c = net.dims[i], coll.comm[i]
            phases = _PHASES_OF[coll.kind]
            M = t / len(phases) / ((c - 1) / c)          # the phase's buffer, bytes
            for ph in phases:
                out[(_key(coll), i, ph)] = _best(d.block, d.size, c, ph, model.latency(i), M,
                                                 float(bandwidth_GBps[i]) * GB)
    return out


def distinct_collectives(w: LibraWorkload | LibraWorkloadMix) -> list[LibraCollective]:
    """The distinct collectives of ``w`` (of every workload of a mix), first seen first."""
    seen, out = set(), []
    colls = []
    for p, _ in workload_parts(w):
        colls += p.collectives
        for ly in p.layers:
            colls += [*ly.fwd, *ly.ig, *ly.wg]
    for c in colls:
        if _key(c) not in seen:
            seen.add(_key(c))
            out.append(c)
    return out


def _instance(terms, b: np.ndarray, phases: str) -> float:
    vals = [a + f / b[i] for i, a, f in terms]
    if not vals:
        return 0.0
    return float(max(vals) if phases == "pipelined" else sum(vals))


def collective_time(kind: str, message_bytes: float, comm: Sequence[int],
                    bandwidth_GBps: Sequence[float], net: LibraNetwork | None = None,
                    model: TimeModel = LIBRA_MODEL, chosen: dict | None = None) -> float:
    """Seconds of one collective (LIBRA's model: the slowest dimension's traffic over its
    bandwidth; a richer ``model`` needs the ``net``)."""
    coll = LibraCollective(kind, message_bytes, tuple(comm))
    if model.is_libra:
        t = dimension_traffic(kind, message_bytes, comm) / GB
        b = np.asarray(bandwidth_GBps, float)
        return float(max((t[i] / b[i] for i in range(len(t)) if t[i] > 0), default=0.0))
    if net is None:
        raise InputError("a richer time model needs the network", item="network")
    return _instance(collective_terms(net, coll, model, chosen),
                     np.asarray(bandwidth_GBps, float), model.phases)


def iteration_time(net: LibraNetwork, w: LibraWorkload | LibraWorkloadMix,
                   bandwidth_GBps: Sequence[float], model: TimeModel = LIBRA_MODEL,
                   chosen: dict | None = None, times: dict | None = None) -> float:
    """Seconds of one iteration under ``model`` (LIBRA's by default); of a mix, the
    weighted mean of its workloads' iterations. ``times`` maps a collective's key to its
    seconds instead of the model (the flow-level check)."""
    if isinstance(w, LibraWorkloadMix):
        return sum(x * iteration_time(net, p, bandwidth_GBps, model, chosen, times)
                   for p, x in w.parts)
    model.check(net)
    b = np.asarray(bandwidth_GBps, float)
    memo: dict = {}

    def t(coll: LibraCollective) -> float:
        k = _key(coll)
        if times is not None and k in times:
            return times[k]
        if k not in memo:
            memo[k] = _instance(collective_terms(net, coll, model, chosen), b, model.phases)
        return memo[k]

    if model.loop == "no_overlap":
        return w.compute_s + sum(c.count * t(c) for c in w.collectives)
    if not w.layers:
        raise InputError("the overlap loop needs a per-layer workload (a LIBRA text "
                         "workload or a model)", item="loop")
    fwd = sum(ly.fwd_s + sum(c.count * t(c) for c in ly.fwd) for ly in w.layers)
    e = g = fwd
    for ly in reversed(w.layers):
        e += ly.ig_s + ly.wg_s + sum(c.count * t(c) for c in ly.ig)
        wg = sum(c.count * t(c) for c in ly.wg)
        if wg:
            g = max(g, e) + wg
    return max(e, g) + w.tail_s
