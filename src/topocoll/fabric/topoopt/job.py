"""A training job on a fabric of servers for TopoOpt: per-layer strategies, a pipeline,
their traffic, and a fast iteration time on any topology.

TopoOpt (Wang et al., NSDI 2023; ``../shared/reference/algorithms.md`` section 1) models
each server as one "big GPU" (``gpus_per_server`` devices) and searches a parallel
configuration per layer (FlexFlow's space). A strategy here is one choice per layer and
two global choices (:meth:`Job.options`):

- an **embedding** table lives on one server (model parallel); in the forward pass that
  server sends every other server the pooled vectors of its samples, in the backward pass
  it receives their gradients (``B_s x dim x 4`` bytes each way per pair, ``B_s`` samples
  per server); its lookups (``bag`` rows per sample for the whole global batch) are
  memory-bound on that server;
- the **pipeline** degree ``P`` (1, 2, 4 or 8): the dense layers are cut into ``P``
  contiguous stages of balanced compute; server ``s`` runs stage ``s mod P`` of replica
  ``s // P``, so a replica is ``P`` consecutive servers (pipeline neighbours one jump
  apart) and the servers of one stage form a strided coset. Each replica trains ``P x
  B_s`` samples in ``m`` **micro-batches** (the second global choice, ``m`` in 1..32,
  at least one sample per GPU); each stage boundary moves one micro-batch's fp32
  activations forward and their gradients backward (``P B_s / m x`` the boundary layer's
  output bytes per pair each way, per micro-batch);
- a **dense** layer is data-parallel inside its stage (``1``: its fp32 gradients
  all-reduced over the ``n / P`` servers of the stage) or tensor-parallel over ``k``
  servers of its stage (``k``: a block of ``k`` servers ``P`` apart computes its samples
  with ``1/k`` of the weights each, all-gathers its output in the forward pass and the
  input gradient in the backward pass, the server's samples' output bytes per ordered
  pair each way, plus gathering its input when the previous layer was not split the same
  way; the ``1/k`` gradient shards are all-reduced over the ``n / (P k)`` servers that hold
  the same shard, a strided group, as TotientPerms assumes).

Iteration time, with the workload layer's rules (:mod:`topocoll.workload.iteration`):
the table lookups, the embedding exchange, then the pipeline scheduled op by op under
1F1B (:func:`~topocoll.workload.pipeline_1f1b`; ``P = m = 1`` is one forward and one
backward), each stage's micro-batch stretched by its tensor-parallel exchanges (not
overlapped, as Megatron-LM), then the part of the gradient all-reduce that the backward
pass does not hide (``max(t_ar - backward, t_ar x bucket / gradients)``, PyTorch DDP's
25 MB buckets; ``overlap=False`` exposes all of it, the rule of the first version and of
LIBRA) and the Adam update (16 bytes per parameter streamed in and out, sharded over the
server's GPUs). Dense layers run at the device's multiply efficiency for the micro-batch's
size, forward and twice that backward.

Each communication phase takes its busiest link's load over capacity
(:mod:`~topocoll.fabric.linkload`) plus per-hop latency: all-reduce runs on the topology's
own rings for a group size when it has them (TotientPerms), otherwise as a logical ring
routed over the fabric (the coin-change multi-hop rings of the released code). Two
simplifications, both conservative on a direct-connect fabric and exact on a switch: the
stages' all-reduces of one group size are costed as if every stage moved the busiest
stage's bytes, and the tensor-parallel time of all stages together is shared among the
stages in proportion to their bytes. Memory (weights, gradients and Adam state, 16 bytes
per parameter, a stage's layers on its servers) must fit in the server's devices.

Examples
--------
>>> from topocoll.workload import LAYERED, find_device
>>> job = Job(LAYERED["dlrm"], servers=16, device=find_device("a100-80g"), batch_per_gpu=128)
>>> s = job.initial_strategy()
>>> s[-2:], job.describe(s)["counts"]["pipeline"]        # no pipeline, one micro-batch
((1, 1), 1)
>>> tr = job.traffic(s)
>>> sorted(tr.allreduce), round(tr.allreduce[16] / 1e9, 3)    # dense gradients, fp32
([16], 1.078)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError
from ...numeric import matmul
from ...topology import Topology
from ...workload import Device, LayeredModel, layered_forward_time
from ...workload.iteration import BUCKET_BYTES
from ..linkload import LinkLoads

__all__ = ["Job", "Traffic", "FabricEval", "Timing", "TOPOOPT_BATCH", "PIPELINE_DEGREES",
           "MICRO_BATCHES", "span_1f1b", "phase_matrices", "phase_flow_time", "flow_check"]

#: Per-GPU batch of TopoOpt's evaluation (algorithms.md section 1.7).
TOPOOPT_BATCH = {"dlrm": 128, "bert-topoopt": 16, "candle-uno": 256, "ncf": 128,
                 "resnet50": 128, "vgg16": 64}

#: Pipeline degrees and micro-batch counts a strategy may take (those that fit the job).
PIPELINE_DEGREES = (1, 2, 4, 8)
MICRO_BATCHES = (1, 2, 4, 8, 16, 32)

_BYTES_PER_PARAM = 16          # fp32 weights and gradients, Adam's two moments


@dataclass(frozen=True)
class Traffic:
    """Bytes and seconds of one iteration under a strategy.

    ``allreduce`` maps a group size to the bytes all-reduced by each such group (groups
    are strided cosets; the busiest stage's bytes); ``tp`` maps a tensor-parallel degree
    ``k`` to the bytes per ordered pair inside each block of ``k`` servers ``pipeline``
    apart; ``embedding[s]`` is the bytes between server ``s`` and each other server, each
    way; ``hops[p]`` the bytes per pair of one micro-batch across stage boundary ``p``, each
    way; ``fwd``/``bwd`` a stage's seconds per micro-batch, ``tp_stage`` a stage's
    tensor-parallel bytes, ``grads`` a stage's gradient bytes per server; ``lookup`` and
    ``optimizer`` seconds per server; ``compute`` every second of compute per server;
    ``memory`` bytes per server; ``mp_phases`` the model-parallel exchanges."""

    allreduce: Mapping[int, float]
    tp: Mapping[int, float]
    embedding: np.ndarray
    compute: np.ndarray
    memory: np.ndarray
    mp_phases: int
    pipeline: int = 1
    micro_batches: int = 1
    hops: tuple[float, ...] = ()
    fwd: np.ndarray = field(default_factory=lambda: np.zeros(1))
    bwd: np.ndarray = field(default_factory=lambda: np.zeros(1))
    tp_stage: np.ndarray = field(default_factory=lambda: np.zeros(1))
    grads: np.ndarray = field(default_factory=lambda: np.zeros(1))
    lookup: np.ndarray = field(default_factory=lambda: np.zeros(1))
    optimizer: np.ndarray = field(default_factory=lambda: np.zeros(1))

    @property
    def allreduce_bytes(self) -> float:
        return float(sum(self.allreduce.values()))

    def mp_matrix(self) -> np.ndarray:
        """The model-parallel demand (bytes over the iteration, ``n x n``): tensor-parallel
        blocks, table stars and pipeline neighbours."""
        n, P = len(self.embedding), self.pipeline
        M = np.zeros((n, n))
        for k, v in self.tp.items():
            M += v * _block(n, k, P)
        M += self.embedding[:, None] + self.embedding[None, :]
        for p, x in enumerate(self.hops):
            M += 2 * self.micro_batches * x * _hop(n, P, p)
        np.fill_diagonal(M, 0.0)
        return M


def phase_matrices(tr: Traffic, rings: Mapping[int, Sequence[int]] | None = None) \
        -> dict[str, np.ndarray]:
    """The exchanges of one iteration under ``tr`` as demand matrices (bytes, ``n x
    n``), each moved all at once, as :class:`FabricEval` costs them: ``embedding`` (every
    table server with every server, both ways), ``tensor`` (every tensor-parallel block),
    ``pipeline`` (one micro-batch across every stage boundary, both ways) and
    ``allreduce`` (ring traffic: on the topology's own ``rings`` for a group size, each
    server to its neighbours ``+-j`` for each jump ``j``, else a logical ring in each
    direction over each strided coset); phases without bytes are left out."""
    n, P = len(tr.embedding), tr.pipeline
    out: dict[str, np.ndarray] = {}
    E = tr.embedding[:, None] + tr.embedding[None, :]
    np.fill_diagonal(E, 0.0)
    out["embedding"] = E
    T = np.zeros((n, n))
    for k, v in tr.tp.items():
        T += v * _block(n, k, P)
    out["tensor"] = T
    H = np.zeros((n, n))
    for p, x in enumerate(tr.hops):
        H += x * _hop(n, P, p)
    out["pipeline"] = H
    A = np.zeros((n, n))
    for g, x in tr.allreduce.items():
        js = (rings or {}).get(g)
        A += x * (_ring_flows(n, g, js) if js else _logical_ring(n, g))
    out["allreduce"] = A
    return {k: v for k, v in out.items() if v.any()}


def _logical_ring(n: int, g: int) -> np.ndarray:
    """Per byte all-reduced by every group of ``g`` (strided cosets): a logical ring in
    each direction over each coset, each carrying half the data."""
    stride = n // g
    D = np.zeros((n, n))
    for s in range(n):
        D[s, (s + stride) % n] += (g - 1) / g
        D[s, (s - stride) % n] += (g - 1) / g
    return D


def _ring_flows(n: int, g: int, jumps: Sequence[int]) -> np.ndarray:
    """Per byte all-reduced by every group of ``g`` on the topology's own rings: every
    server to its neighbours ``+-j`` for each jump ``j``, the data split evenly."""
    per = 2 * (g - 1) / g / (2 * len(jumps))
    D = np.zeros((n, n))
    for j in jumps:
        for r in range(n):
            for b in ((r + j) % n, (r - j) % n):
                D[r, b] += per
    return D


def _block(n: int, k: int, stride: int = 1) -> np.ndarray:
    """Ones between the servers of each tensor-parallel block: ``k`` servers ``stride``
    apart, the blocks of one stage consecutive."""
    s = np.arange(n)
    g = (s % stride) * n + (s // stride) // k
    B = (g[:, None] == g[None, :]).astype(float)
    np.fill_diagonal(B, 0.0)
    return B


def _hop(n: int, P: int, p: int) -> np.ndarray:
    """Ones from every replica's stage ``p`` server to its stage ``p + 1`` server and back."""
    H = np.zeros((n, n))
    src = np.arange(p, n, P)
    H[src, src + 1] = H[src + 1, src] = 1.0
    return H


_ORDERS: dict[tuple[int, int], tuple] = {}


def _order_1f1b(P: int, m: int) -> tuple:
    """The ops of :func:`~topocoll.workload.pipeline_1f1b` in the order it schedules them
    (the order depends on ``P`` and ``m`` only): per op its stage, whether it is a
    forward, the op it waits for (-1: none) and whether a hop separates them."""
    key = (P, m)
    if key in _ORDERS:
        return _ORDERS[key]
    orders = []
    for st in range(P):
        warm = min(P - st - 1, m)
        seq = [(True, j) for j in range(warm)]
        f, b = warm, 0
        while b < m:
            if f < m:
                seq.append((True, f))
                f += 1
            seq.append((False, b))
            b += 1
        orders.append(seq)
    index: dict[tuple[bool, int, int], int] = {}
    ops = []
    pos = [0] * P
    while len(ops) < 2 * P * m:
        for st in range(P):
            while pos[st] < len(orders[st]):
                fw, j = orders[st][pos[st]]
                if fw:
                    dep = -1 if st == 0 else index.get((True, st - 1, j))
                    hop = st > 0
                elif st == P - 1:
                    dep, hop = index.get((True, st, j)), False
                else:
                    dep, hop = index.get((False, st + 1, j)), True
                if dep is None:
                    break
                index[(fw, st, j)] = len(ops)
                ops.append((st, fw, dep, hop))
                pos[st] += 1
    _ORDERS[key] = out = tuple(ops)
    return out


def span_1f1b(P: int, m: int, fwd, bwd, hop: float) -> float:
    """The last stage's finish under 1F1B: :func:`~topocoll.workload.pipeline_1f1b`'s
    ``max``, the same additions in the same order over its op order computed once per
    ``(P, m)`` (what the strategy search calls thousands of times)."""
    if P == 1:
        return float(m * (fwd[0] + bwd[0]))
    end = [0.0] * (2 * P * m)
    free = [0.0] * P
    for k, (st, fw, dep, h) in enumerate(_order_1f1b(P, m)):
        d = 0.0 if dep < 0 else (end[dep] + hop if h else end[dep])
        start = free[st] if free[st] >= d else d
        end[k] = free[st] = start + (fwd[st] if fw else bwd[st])
    return max(free)


def _partition(w: np.ndarray, parts: int) -> np.ndarray:
    """Cut points of ``w`` into ``parts`` contiguous non-empty pieces minimizing the largest
    piece's sum (dynamic program; ties: the earliest cut)."""
    L = len(w)
    pre = np.concatenate([[0.0], np.cumsum(w)])
    INF = float("inf")
    best = np.full((parts + 1, L + 1), INF)
    cut = np.zeros((parts + 1, L + 1), dtype=np.int64)
    best[0, 0] = 0.0
    for q in range(1, parts + 1):
        for j in range(q, L + 1):
            for i in range(q - 1, j):
                v = max(best[q - 1, i], pre[j] - pre[i])
                if v < best[q, j] * (1 - 1e-12):
                    best[q, j], cut[q, j] = v, i
    cuts, j = [], L
    for q in range(parts, 0, -1):
        cuts.append(j)
        j = int(cut[q, j])
    return np.array(cuts[::-1])


@dataclass(frozen=True)
class Job:
    """``model`` on ``servers`` servers of ``gpus_per_server`` ``device``s, each GPU with
    ``batch_per_gpu`` samples (see the module docstring). ``tp_sizes`` are the tensor-
    parallel degrees a dense layer may take, ``pipelines`` the pipeline degrees and
    ``micro_batches`` the micro-batch counts (each kept where it fits ``servers`` and the
    model)."""

    model: LayeredModel
    servers: int
    device: Device
    batch_per_gpu: int
    gpus_per_server: int = 4
    bag: int = 100
    tp_sizes: tuple[int, ...] = (2, 4, 8)
    pipelines: tuple[int, ...] = PIPELINE_DEGREES
    micro_batches: tuple[int, ...] = MICRO_BATCHES
    _dense_ids: np.ndarray = field(default=None, init=False, repr=False, compare=False)
    _times: dict = field(default=None, init=False, repr=False, compare=False)
    _stages: dict = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("servers", "batch_per_gpu", "gpus_per_server", "bag"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} must be a positive integer, got {v!r}", item=name)
        if self.servers < 3:
            raise InputError(f"servers must be >= 3, got {self.servers}", item="servers")
        n = self.servers
        tps = tuple(k for k in self.tp_sizes if 1 < k < n and n % k == 0)
        object.__setattr__(self, "tp_sizes", tps)
        dense = sum(1 for ly in self.model.layers if ly.kind != "embedding")
        pps = tuple(sorted({1} | {P for P in self.pipelines
                                  if 1 < P < n and n % P == 0 and P <= dense}))
        object.__setattr__(self, "pipelines", pps)
        mbs = tuple(sorted({1} | {m for m in self.micro_batches if m >= 1}))
        object.__setattr__(self, "micro_batches", mbs)
        object.__setattr__(self, "_dense_ids", np.array(
            [i for i, ly in enumerate(self.model.layers) if ly.kind != "embedding"],
            dtype=np.int64))
        object.__setattr__(self, "_times", {})
        object.__setattr__(self, "_stages", {})

    @property
    def server_batch(self) -> int:
        return self.batch_per_gpu * self.gpus_per_server

    @property
    def layers(self) -> int:
        """Per-layer positions of a strategy (the last two are the pipeline degree and the
        micro-batch count)."""
        return len(self.model.layers)

    def options(self, i: int) -> tuple[int, ...]:
        """The choices of position ``i``: servers for a table, ``1`` (data parallel) and
        the tensor-parallel degrees for a dense layer with parameters, the pipeline
        degrees at position ``layers``, the micro-batch counts at ``layers + 1``."""
        L = self.layers
        if i == L:
            return self.pipelines
        if i == L + 1:
            return self.micro_batches
        ly = self.model.layers[i]
        if ly.kind == "embedding":
            return tuple(range(self.servers))
        return (1, *self.tp_sizes) if ly.params else (1,)

    def initial_strategy(self, pipeline: int = 1, micro_batches: int = 1) \
            -> tuple[int, ...]:
        """Data parallel, tables round-robin, ``pipeline`` stages of ``micro_batches``
        (default: none, one); where that does not fit in memory, the largest layers are
        split further (tensor parallel, the largest degree that fits the stage) until it
        does."""
        s, t = [], 0
        for ly in self.model.layers:
            if ly.kind == "embedding":
                s.append(t % self.servers)
                t += 1
            else:
                s.append(1)
        s += [pipeline, micro_batches]
        order = sorted((i for i, ly in enumerate(self.model.layers)
                        if ly.kind != "embedding" and ly.params),
                       key=lambda i: -self.model.layers[i].params)
        k = max((k for k in self.tp_sizes if self.servers % (pipeline * k) == 0), default=1)
        for i in order:
            if self.fits(tuple(s)):
                break
            s[i] = k
        st = tuple(s)
        if pipeline != 1 or micro_batches != 1:
            return st
        if not self.fits(st):
            over = self.traffic(st).memory.max() / self.capacity
            raise InputError(f"{self.model.name} does not fit in {self.servers} servers of "
                             f"{self.gpus_per_server} x {self.device.name} even split "
                             f"{max(self.tp_sizes, default=1)} ways ({over:.2f}x the memory)",
                             item="model")
        return st

    @property
    def capacity(self) -> float:
        return self.gpus_per_server * self.device.memory

    def valid(self, strategy: tuple[int, ...]) -> bool:
        """Whether ``strategy``'s choices are compatible: every tensor-parallel degree
        one of the job's and its block inside a stage (``P k`` divides the servers), and
        at least one sample per GPU in a micro-batch."""
        P, m = strategy[-2], strategy[-1]
        if m > P * self.batch_per_gpu:
            return False
        return all(c == 1 or (c in self.tp_sizes and self.servers % (P * c) == 0)
                   for ly, c in zip(self.model.layers, strategy, strict=False)
                   if ly.kind != "embedding")

    def fits(self, strategy: tuple[int, ...]) -> bool:
        return self.valid(self._full(strategy)) and \
            bool(self.traffic(strategy).memory.max() <= self.capacity)

    def _full(self, strategy: tuple[int, ...]) -> tuple[int, ...]:
        L = self.layers
        if len(strategy) == L:
            return (*strategy, 1, 1)
        if len(strategy) != L + 2:
            raise InputError(f"a strategy needs {L + 2} choices ({L} layers, the pipeline "
                             f"degree, the micro-batches), got {len(strategy)}",
                             item="strategy")
        return tuple(strategy)

    def _layer_time(self, i: int, samples: float) -> float:
        """Forward plus backward seconds of dense layer ``i`` for ``samples`` per GPU."""
        key = (i, samples)
        t = self._times.get(key)
        if t is None:
            ly = self.model.layers[i]
            t = self._times[key] = 3 * layered_forward_time(ly.flops, ly.activation_bytes,
                                                            self.device, samples)
        return t

    def stages(self, P: int) -> tuple[tuple[int, ...], ...]:
        """The dense layers of each of ``P`` stages (contiguous, balanced compute)."""
        st = self._stages.get(P)
        if st is None:
            ids = self._dense_ids
            w = np.array([self._layer_time(int(i), float(self.batch_per_gpu)) for i in ids])
            cuts = _partition(w, P)
            starts = np.concatenate([[0], cuts[:-1]])
            st = self._stages[P] = tuple(tuple(int(x) for x in ids[a:b])
                                         for a, b in zip(starts, cuts, strict=True))
        return st

    def describe(self, strategy: tuple[int, ...]) -> dict:
        """The strategy for people: per layer ``dp``, ``tp<k>`` or ``server<s>`` (and its
        stage), counts, the pipeline degree and the micro-batches."""
        s = self._full(strategy)
        P, m = s[-2], s[-1]
        stage_of = {i: p for p, ids in enumerate(self.stages(P)) for i in ids}
        per = []
        counts: dict[str, int] = {}
        for i, (ly, c) in enumerate(zip(self.model.layers, s, strict=False)):
            if ly.kind == "embedding":
                tag, key = f"server{c}", "embedding"
            else:
                tag = "dp" if c == 1 else f"tp{c}"
                key = tag
            row = {"layer": ly.name, "choice": tag}
            if ly.kind != "embedding" and P > 1:
                row["stage"] = stage_of[i]
            per.append(row)
            counts[key] = counts.get(key, 0) + 1
        servers = sorted({c for ly, c in zip(self.model.layers, s, strict=False)
                          if ly.kind == "embedding"})
        if servers:
            counts["table_servers"] = len(servers)
        counts["pipeline"] = P
        counts["micro_batches"] = m
        return {"layers": per, "counts": counts}

    def traffic(self, strategy: tuple[int, ...]) -> Traffic:
        """The traffic, compute and memory of ``strategy`` (see the module docstring)."""
        s = self._full(strategy)
        n, Bs, g = self.servers, self.server_batch, self.gpus_per_server
        layers = self.model.layers
        P, m = s[-2], s[-1]
        if P not in self.pipelines or m not in self.micro_batches:
            raise InputError(f"pipeline {P} x {m} micro-batches is not a choice of this job",
                             item="strategy")
        per_gpu = P * self.batch_per_gpu / m            # samples per GPU per micro-batch
        rep = P * Bs                                    # samples per replica and server
        stage_of = np.arange(n) % P
        ar: dict[int, float] = {}
        tp: dict[int, float] = {}
        emb = np.zeros(n)
        lookup = np.zeros(n)
        memory = np.zeros(n)
        fwd, bwd = np.zeros(P), np.zeros(P)
        tp_stage, grads, params = np.zeros(P), np.zeros(P), np.zeros(P)
        phases = 0
        for i, ly in enumerate(layers):
            if ly.kind != "embedding":
                continue
            c = s[i]
            emb[c] += Bs * 2 * ly.activation_bytes   # pooled fp32 vectors, fwd and bwd
            look = n * Bs * self.bag * 2 * ly.activation_bytes
            lookup[c] += 2 * self.device.memory_time(look) / g
            memory[c] += _BYTES_PER_PARAM * ly.params
        stages = self.stages(P)
        hops = []
        for p, ids in enumerate(stages):
            stage_ar: dict[int, float] = {}
            prev = 1 if p == 0 else 0       # a later stage's input arrives by the hop
            for i in ids:
                ly, c = layers[i], s[i]
                t = self._layer_time(i, per_gpu)
                fwd[p] += t / 3
                bwd[p] += 2 * t / 3
                w = 4.0 * ly.params / c
                grads[p] += w
                params[p] += ly.params / c
                size = n // (P * c)
                if w and size > 1:
                    stage_ar[size] = stage_ar.get(size, 0.0) + w
                if c > 1:
                    act = 2 * ly.activation_bytes * rep   # fp32 outputs of the server's samples
                    if prev != c and i > 0:
                        act += 2 * layers[i - 1].activation_bytes * rep
                    tp[c] = tp.get(c, 0.0) + 2 * act      # forward and backward
                    tp_stage[p] += 2 * act
                    phases += 2 * m
                prev = c
            for size, x in stage_ar.items():
                ar[size] = max(ar.get(size, 0.0), x)
            if p < P - 1:
                hops.append(2.0 * layers[ids[-1]].activation_bytes * rep / m)
            memory[stage_of == p] += _BYTES_PER_PARAM * params[p]
        if emb.any():
            phases += 2
        optimizer = np.array([self.device.memory_time(2 * _BYTES_PER_PARAM * x / g)
                              for x in params])[stage_of]
        compute = lookup + m * (fwd + bwd)[stage_of] + optimizer
        return Traffic(ar, tp, emb, compute, memory, phases, P, m, tuple(hops), fwd, bwd,
                       tp_stage, grads, lookup, optimizer)


@dataclass(frozen=True)
class Timing:
    """One iteration's time and its parts (seconds): ``compute_s`` every second of compute
    on the critical path's servers (lookups, the critical stage's micro-batches, the
    optimizer), ``mp_s`` the model-parallel exchanges (tensor parallel, tables, pipeline
    hops), ``allreduce_s`` the whole gradient all-reduce and ``exposed_allreduce_s`` the part
    the backward pass does not hide, ``bubble_s`` the pipeline's idle time."""

    iteration_s: float
    compute_s: float
    mp_s: float
    allreduce_s: float
    exposed_allreduce_s: float = 0.0
    bubble_s: float = 0.0

    def to_dict(self) -> dict:
        return {"iteration_s": self.iteration_s, "compute_s": self.compute_s,
                "mp_s": self.mp_s, "allreduce_s": self.allreduce_s,
                "exposed_allreduce_s": self.exposed_allreduce_s, "bubble_s": self.bubble_s}


class FabricEval:
    """Scores strategies of ``job`` on ``topology`` (see the module docstring). The
    traffic patterns (a ring all-reduce per group size, a block per tensor-parallel
    degree and pipeline degree, a star per table server, a neighbour pairing per stage
    boundary) are routed once; a score is then a few matrix-vector products and the
    pipeline's schedule.

    ``rings`` maps a group size to the TotientPerms jumps the topology has for it (from
    :func:`~topocoll.fabric.topology_finder`); group sizes without rings all-reduce over
    routed logical rings. ``overlap=False`` exposes the whole all-reduce (no buckets)."""

    def __init__(self, job: Job, topology: Topology, *, rings: Mapping[int, list[int]] | None
                 = None, routing: str = "ecmp", overlap: bool = True) -> None:
        n = job.servers
        if topology.num_ranks != n:
            raise InputError(f"{topology.name} has {topology.num_ranks} ranks, the job "
                             f"{n} servers", item="servers")
        self.job = job
        self.topology = topology
        self.overlap = overlap
        self.links = ll = LinkLoads(topology, routing)
        self.rings = {int(g): list(js) for g, js in (rings or {}).items()}
        sizes = {n}
        for P in job.pipelines:
            for k in (1, *job.tp_sizes):
                if n % (P * k) == 0 and n // (P * k) > 1:
                    sizes.add(n // (P * k))
        self.ar_sizes = sorted(sizes)
        self.blocks = [(k, P) for P in job.pipelines for k in job.tp_sizes
                       if n % (P * k) == 0]
        self.boundaries = [(P, p) for P in job.pipelines for p in range(P - 1)]
        pats = [_logical_ring(n, g) for g in self.ar_sizes]
        pats += [_block(n, k, P) for k, P in self.blocks]
        pats += [_hop(n, P, p) for P, p in self.boundaries]
        for s in range(n):
            star = np.zeros((n, n))
            star[s, :] = star[:, s] = 1.0
            star[s, s] = 0.0
            pats.append(star)
        routed = ll.route(np.array(pats)) / ll.capacity[:, None]
        na, nb, nh = len(self.ar_sizes), len(self.blocks), len(self.boundaries)
        self._ar = routed[:, :na].copy()
        for j, g in enumerate(self.ar_sizes):
            if g in self.rings:
                self._ar[:, j] = self._direct_ring(g)
        self._tp = routed[:, na:na + nb]
        self._block_col = {b: j for j, b in enumerate(self.blocks)}
        hop_max = routed[:, na + nb:na + nb + nh].max(axis=0) if nh else np.zeros(0)
        self._lat = float(ll.latency.max()) if len(ll.latency) else 0.0
        self._hop = {}
        for j, (P, p) in enumerate(self.boundaries):
            src = np.arange(p, n, P)
            hops = int(max(ll.dist[src + 1, src].max(), ll.dist[src, src + 1].max()))
            self._hop[(P, p)] = (float(hop_max[j]), hops * self._lat)
        self._emb = routed[:, na + nb + nh:]
        stride_hops = {}
        for g in self.ar_sizes:
            stride = n // g
            stride_hops[g] = 1 if g in self.rings else int(max(
                ll.dist[(s + stride) % n, s] for s in range(n)))
        self._ring_hops = stride_hops

    def _direct_ring(self, g: int) -> np.ndarray:
        """Per byte over capacity on the topology's own rings for ``g`` (every flow of
        :func:`_ring_flows` on its direct link)."""
        n, ll = self.job.servers, self.links
        D = _ring_flows(n, g, self.rings[g])
        load = np.zeros(len(ll.keys))
        for r, b in zip(*np.nonzero(D), strict=True):
            load[ll.index[(int(r), int(b))]] = D[r, b]
        return load / ll.capacity

    def time(self, tr: Traffic, scale: Mapping[str, float] | None = None) -> Timing:
        """The iteration time of traffic ``tr``; ``scale`` multiplies the bandwidth term
        of a phase of :func:`phase_matrices` (``allreduce``, ``tensor``, ``embedding``,
        ``pipeline``) by a factor, as :func:`flow_check` does with the flow level's."""
        f = {"allreduce": 1.0, "tensor": 1.0, "embedding": 1.0, "pipeline": 1.0,
             **(scale or {})}
        P, m = tr.pipeline, tr.micro_batches
        xa = np.array([tr.allreduce.get(g, 0.0) for g in self.ar_sizes])
        ta = float(matmul(self._ar, xa).max()) * f["allreduce"] if xa.any() else 0.0
        if xa.any():
            ta += max(2 * (g - 1) * self._ring_hops[g] for g, x in zip(self.ar_sizes, xa,
                                                                        strict=True) if x) \
                * self._lat
        lat_phase = self.links.diameter * self._lat
        t_tp = 0.0
        if tr.tp:
            xt = np.zeros(len(self.blocks))
            for k, v in tr.tp.items():
                xt[self._block_col[(k, P)]] = v
            t_tp = float(matmul(self._tp, xt).max()) * f["tensor"]
        t_emb = float(matmul(self._emb, tr.embedding).max()) * f["embedding"] \
            if tr.embedding.any() else 0.0
        tp_phases = tr.mp_phases - (2 if tr.embedding.any() else 0)
        t_emb += (tr.mp_phases - tp_phases) * lat_phase
        t_tp += tp_phases * lat_phase
        # each stage's micro-batch stretched by its share of the tensor-parallel time
        share = tr.tp_stage / tr.tp_stage.max() if tr.tp_stage.any() else tr.tp_stage
        extra = t_tp * share / m
        fwd = tr.fwd + extra / 3
        bwd = tr.bwd + 2 * extra / 3
        hop = max((x * self._hop[(P, p)][0] * f["pipeline"] + self._hop[(P, p)][1]
                   for p, x in enumerate(tr.hops)), default=0.0)
        span = span_1f1b(P, m, fwd.tolist(), bwd.tolist(), hop)
        # the all-reduce behind each stage's backward, the stage with the most gradients
        # moving the measured time (the others scaled by their bytes)
        exposed = 0.0
        if ta > 0:
            for q in range(P):
                if tr.grads[q] <= 0:
                    continue
                t_q = ta * float(tr.grads[q] / tr.grads.max())
                if self.overlap:
                    frac = min(1.0, BUCKET_BYTES / tr.grads[q])
                    exposed = max(exposed, max(t_q - m * bwd[q], t_q * frac))
                else:
                    exposed = max(exposed, t_q)
        look = float(tr.lookup.max())
        opt = float(tr.optimizer.max())
        it = look + t_emb + span + exposed + opt
        crit = int(np.argmax(tr.fwd + tr.bwd))
        compute = look + m * float(tr.fwd[crit] + tr.bwd[crit]) + opt
        pp = 2 * m * hop if P > 1 else 0.0
        mp = t_tp + t_emb + pp
        bubble = max(0.0, span - m * float(fwd[crit] + bwd[crit]) - pp)
        return Timing(float(it), float(compute), float(mp), float(ta), float(exposed),
                      float(bubble))

    def score(self, strategy: tuple[int, ...]) -> Timing | None:
        """The timing of ``strategy``, or None when it does not fit in memory or its
        choices are incompatible (:meth:`Job.valid`)."""
        s = self.job._full(strategy)
        if not self.job.valid(s):
            return None
        tr = self.job.traffic(s)
        if tr.memory.max() > self.job.capacity:
            return None
        return self.time(tr)


def phase_flow_time(links: LinkLoads, demand: np.ndarray, *, hashed: bool = True,
                    seed: int = 0) -> tuple[float, float]:
    """``(fluid, flow)`` seconds to move ``demand`` (bytes, ``n x n``) at once on the
    merged links of ``links``: the busiest link's load over its capacity (what
    :class:`FabricEval` charges), and the flow level's finish time: one flow per pair,
    max-min fair sharing recomputed whenever a flow ends
    (:func:`~topocoll.sim.flow.simulate_transfers`), each flow on one shortest path drawn
    hop by hop (``hashed``, ECMP hashing, seeded) or split as the fluid model splits it.
    Bandwidth terms only (no latency).

    >>> from topocoll.topology.spec import parse_spec
    >>> ll = LinkLoads(parse_spec("ring:4,bw=1GB/s"))
    >>> D = np.zeros((4, 4)); D[0, 2] = D[1, 3] = 1e9      # both two hops away
    >>> phase_flow_time(ll, D, hashed=False)               # split: no link over 1 GB
    (1.0, 1.0)
    """
    from ...sim.flow import simulate_transfers

    D = np.asarray(demand, float)
    fluid = float((links.route(D[None])[:, 0] / links.capacity).max()) if D.any() else 0.0
    pairs = np.argwhere(D > 0)
    if not len(pairs):
        return 0.0, 0.0
    ptr, link, frac = links.flow_routes(pairs, hashed=hashed, seed=seed)
    finish = simulate_transfers(links.capacity, ptr, link, frac, D[pairs[:, 0], pairs[:, 1]],
                                pairs[:, 0], pairs[:, 1], links.nodes)
    return fluid, float(finish.max())


def flow_check(fabric: FabricEval, strategy: tuple[int, ...], *, hashed: bool = True,
               seed: int = 0) -> dict:
    """``strategy``'s iteration on ``fabric`` with every exchange moved at flow level:
    per phase of :func:`phase_matrices` (the pipeline's per stage boundary, the slowest
    kept) the fluid and flow-level seconds (:func:`phase_flow_time`) and their ratio, and
    the iteration with each phase's bandwidth term scaled by its ratio
    (:meth:`FabricEval.time`) beside the fluid one. Returns ``{"phases": {name:
    {"fluid_s", "flow_s", "ratio"}}, "fluid": Timing, "flow": Timing}``."""
    job = fabric.job
    s = job._full(strategy)
    tr = job.traffic(s)
    mats = phase_matrices(tr, fabric.rings)
    mats.pop("pipeline", None)
    n, P = job.servers, tr.pipeline
    phases: dict[str, dict] = {}
    for name, D in mats.items():
        fl, fw = phase_flow_time(fabric.links, D, hashed=hashed, seed=seed)
        phases[name] = {"fluid_s": fl, "flow_s": fw, "ratio": fw / fl if fl > 0 else 1.0}
    for p, x in enumerate(tr.hops):
        if x <= 0:
            continue
        fl, fw = phase_flow_time(fabric.links, x * _hop(n, P, p), hashed=hashed, seed=seed)
        if fl > 0 and ("pipeline" not in phases or fw / fl > phases["pipeline"]["ratio"]):
            phases["pipeline"] = {"fluid_s": fl, "flow_s": fw, "ratio": fw / fl}
    scale = {k: v["ratio"] for k, v in phases.items()}
    return {"phases": phases, "fluid": fabric.time(tr), "flow": fabric.time(tr, scale)}
