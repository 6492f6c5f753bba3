"""A training job on a fabric of servers for TopoOpt: per-layer strategies, their
traffic, and a fast iteration time on any topology.

TopoOpt (Wang et al., NSDI 2023; ``../shared/reference/algorithms.md`` section 1) models
each server as one "big GPU" (``gpus_per_server`` devices) and searches a parallel
configuration per layer. Ours:

- an **embedding** table lives on one server (model parallel); in the forward pass that
  server sends every other server the pooled vectors of its samples, in the backward pass
  it receives their gradients (``B_s x dim x 4`` bytes each way per pair, ``B_s`` samples
  per server); its lookups (``bag`` rows per sample for the whole global batch) are
  memory-bound on that server;
- a **dense** layer is data-parallel (``1``: its fp32 gradients all-reduced over all ``n``
  servers) or tensor-parallel over ``k`` consecutive servers (``k``: the group computes
  its ``k x B_s`` samples with ``1/k`` of the weights each, all-gathers its output in the
  forward pass and the input gradient in the backward pass, ``B_s x`` output bytes per
  ordered pair each way, plus gathering its input when the previous layer was not split
  the same way; the ``1/k`` gradient shards are all-reduced over the ``n/k`` servers that
  hold the same shard, a strided group, as TotientPerms assumes).

Iteration time = compute (the slowest server: dense layers at the device's multiply
efficiency, forward and twice that backward, plus its tables' lookups) + model-parallel
communication + gradient all-reduce, without overlap (as LIBRA; the same rule for every
fabric, so comparisons stay fair). Each communication phase takes its busiest link's load
over capacity (:mod:`~topocoll.fabric.linkload`) plus per-hop latency: all-reduce runs on
the topology's own rings for a group size when it has them (TotientPerms), otherwise as a
logical ring routed over the fabric (the coin-change multi-hop rings of the released
code); memory (weights, gradients and Adam state, 16 bytes per parameter) must fit in the
server's devices.

Examples
--------
>>> from topocoll.workload import LAYERED, find_device
>>> job = Job(LAYERED["dlrm"], servers=16, device=find_device("a100-80g"), batch_per_gpu=128)
>>> s = job.initial_strategy()
>>> tr = job.traffic(s)
>>> sorted(tr.allreduce), round(tr.allreduce[16] / 1e9, 3)    # dense gradients, fp32
([16], 1.078)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..numeric import matmul
from ..topology import Topology
from ..workload import Device, LayeredModel
from .linkload import LinkLoads

__all__ = ["Job", "Traffic", "FabricEval", "Timing", "TOPOOPT_BATCH"]

#: Per-GPU batch of TopoOpt's evaluation (algorithms.md section 1.7).
TOPOOPT_BATCH = {"dlrm": 128, "bert-topoopt": 16, "candle-uno": 256, "ncf": 128,
                 "resnet50": 128, "vgg16": 64}

_BYTES_PER_PARAM = 16          # fp32 weights and gradients, Adam's two moments


@dataclass(frozen=True)
class Traffic:
    """Bytes of one iteration under a strategy.

    ``allreduce`` maps a group size to the bytes all-reduced by each such group (groups
    are strided cosets); ``tp`` maps a tensor-parallel degree ``k`` to the bytes per
    ordered pair inside each block of ``k`` consecutive servers; ``embedding[s]`` is the
    bytes between server ``s`` and each other server, each way; ``compute`` is seconds per
    server; ``memory`` bytes per server; ``mp_phases`` the model-parallel exchanges."""

    allreduce: Mapping[int, float]
    tp: Mapping[int, float]
    embedding: np.ndarray
    compute: np.ndarray
    memory: np.ndarray
    mp_phases: int

    @property
    def allreduce_bytes(self) -> float:
        return float(sum(self.allreduce.values()))

    def mp_matrix(self) -> np.ndarray:
        """The model-parallel demand (bytes, ``n x n``)."""
        n = len(self.embedding)
        M = np.zeros((n, n))
        for k, v in self.tp.items():
            M += v * _block(n, k)
        M += self.embedding[:, None] + self.embedding[None, :]
        np.fill_diagonal(M, 0.0)
        return M


def _block(n: int, k: int) -> np.ndarray:
    g = np.arange(n) // k
    B = (g[:, None] == g[None, :]).astype(float)
    np.fill_diagonal(B, 0.0)
    return B


@dataclass(frozen=True)
class Job:
    """``model`` on ``servers`` servers of ``gpus_per_server`` ``device``s, each GPU with
    ``batch_per_gpu`` samples (see the module docstring). ``tp_sizes`` are the tensor-
    parallel degrees a dense layer may take (those dividing ``servers``)."""

    model: LayeredModel
    servers: int
    device: Device
    batch_per_gpu: int
    gpus_per_server: int = 4
    bag: int = 100
    tp_sizes: tuple[int, ...] = (2, 4, 8)
    _dense_time: np.ndarray = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("servers", "batch_per_gpu", "gpus_per_server", "bag"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} must be a positive integer, got {v!r}",
                                 item=f"--{name.replace('_', '-')}")
        if self.servers < 3:
            raise InputError(f"servers must be >= 3, got {self.servers}", item="--servers")
        tps = tuple(k for k in self.tp_sizes if 1 < k < self.servers and self.servers % k == 0)
        object.__setattr__(self, "tp_sizes", tps)
        b = self.batch_per_gpu
        t = np.array([0.0 if ly.kind == "embedding" else
                      3 * (self.device.gemm_time(ly.flops * b)
                           + self.device.memory_time(2 * ly.activation_bytes * b))
                      for ly in self.model.layers])
        object.__setattr__(self, "_dense_time", t)

    @property
    def server_batch(self) -> int:
        return self.batch_per_gpu * self.gpus_per_server

    def options(self, i: int) -> tuple[int, ...]:
        """The choices of layer ``i``: servers for a table, else ``1`` (data parallel)
        and the tensor-parallel degrees (none for layers without parameters)."""
        ly = self.model.layers[i]
        if ly.kind == "embedding":
            return tuple(range(self.servers))
        return (1, *self.tp_sizes) if ly.params else (1,)

    def initial_strategy(self) -> tuple[int, ...]:
        """Data parallel, tables round-robin; where that does not fit in memory, the
        largest layers are split further (tensor parallel) until it does."""
        s, t = [], 0
        for ly in self.model.layers:
            if ly.kind == "embedding":
                s.append(t % self.servers)
                t += 1
            else:
                s.append(1)
        order = sorted((i for i, ly in enumerate(self.model.layers)
                        if ly.kind != "embedding" and ly.params),
                       key=lambda i: -self.model.layers[i].params)
        for i in order:
            if self.fits(tuple(s)):
                break
            s[i] = max(self.tp_sizes, default=1)
        st = tuple(s)
        if not self.fits(st):
            over = self.traffic(st).memory.max() / self.capacity
            raise InputError(f"{self.model.name} does not fit in {self.servers} servers of "
                             f"{self.gpus_per_server} x {self.device.name} even split "
                             f"{max(self.tp_sizes, default=1)} ways ({over:.2f}x the memory)",
                             item="--model")
        return st

    @property
    def capacity(self) -> float:
        return self.gpus_per_server * self.device.memory

    def fits(self, strategy: tuple[int, ...]) -> bool:
        return bool(self.traffic(strategy).memory.max() <= self.capacity)

    def traffic(self, strategy: tuple[int, ...]) -> Traffic:
        """The traffic, compute and memory of ``strategy`` (see the module docstring)."""
        n, Bs = self.servers, self.server_batch
        layers = self.model.layers
        if len(strategy) != len(layers):
            raise InputError(f"a strategy needs {len(layers)} choices, got {len(strategy)}",
                             item="strategy")
        ar: dict[int, float] = {}
        tp: dict[int, float] = {}
        emb = np.zeros(n)
        compute = np.zeros(n)
        memory = np.zeros(n)
        dense = 0.0
        phases = 0
        prev = 1
        for i, (ly, c) in enumerate(zip(layers, strategy, strict=True)):
            if ly.kind == "embedding":
                # pooled fp32 vectors of each server's samples, forward and backward
                emb[c] += Bs * 2 * ly.activation_bytes
                look = n * Bs * self.bag * 2 * ly.activation_bytes
                compute[c] += 2 * self.device.memory_time(look) / self.gpus_per_server
                memory[c] += _BYTES_PER_PARAM * ly.params
                continue
            dense += self._dense_time[i]
            grads = 4.0 * ly.params
            if c == 1:
                if grads:
                    ar[n] = ar.get(n, 0.0) + grads
                memory += _BYTES_PER_PARAM * ly.params
            else:
                if n // c > 1:
                    ar[n // c] = ar.get(n // c, 0.0) + grads / c
                act = 2 * ly.activation_bytes * Bs          # fp32 outputs of one server's samples
                if prev != c and i > 0:
                    act += 2 * layers[i - 1].activation_bytes * Bs
                tp[c] = tp.get(c, 0.0) + 2 * act            # forward and backward
                memory += _BYTES_PER_PARAM * ly.params / c
                phases += 2
            prev = c
        if emb.any():
            phases += 2
        compute += dense
        return Traffic(ar, tp, emb, compute, memory, phases)


@dataclass(frozen=True)
class Timing:
    """One iteration's time and its parts (seconds)."""

    iteration_s: float
    compute_s: float
    mp_s: float
    allreduce_s: float

    def to_dict(self) -> dict:
        return {"iteration_s": self.iteration_s, "compute_s": self.compute_s,
                "mp_s": self.mp_s, "allreduce_s": self.allreduce_s}


class FabricEval:
    """Scores strategies of ``job`` on ``topology`` (see the module docstring). The
    traffic patterns (a ring all-reduce per group size, a block per tensor-parallel
    degree, a star per table server) are routed once; a score is then a few
    matrix-vector products.

    ``rings`` maps a group size to the TotientPerms jumps the topology has for it (from
    :func:`~topocoll.fabric.topology_finder`); group sizes without rings all-reduce over
    routed logical rings."""

    def __init__(self, job: Job, topology: Topology, *, rings: Mapping[int, list[int]] | None
                 = None, routing: str = "ecmp") -> None:
        n = job.servers
        if topology.num_ranks != n:
            raise InputError(f"{topology.name} has {topology.num_ranks} ranks, the job "
                             f"{n} servers", item="--servers")
        self.job = job
        self.topology = topology
        self.links = ll = LinkLoads(topology, routing)
        self.rings = {int(g): list(js) for g, js in (rings or {}).items()}
        self.ar_sizes = sorted({n} | {n // k for k in job.tp_sizes if n // k > 1})
        pats = [self._ring_demand(g) for g in self.ar_sizes]
        pats += [_block(n, k) for k in job.tp_sizes]
        for s in range(n):
            star = np.zeros((n, n))
            star[s, :] = star[:, s] = 1.0
            star[s, s] = 0.0
            pats.append(star)
        routed = ll.route(np.array(pats)) / ll.capacity[:, None]
        na, nt = len(self.ar_sizes), len(job.tp_sizes)
        self._ar = routed[:, :na].copy()
        for j, g in enumerate(self.ar_sizes):
            if g in self.rings:
                self._ar[:, j] = self._direct_ring(g)
        self._tp = routed[:, na:na + nt]
        self._emb = routed[:, na + nt:]
        self._lat = float(ll.latency.max()) if len(ll.latency) else 0.0
        stride_hops = {}
        for g in self.ar_sizes:
            stride = n // g
            stride_hops[g] = 1 if g in self.rings else int(max(
                ll.dist[(s + stride) % n, s] for s in range(n)))
        self._ring_hops = stride_hops

    def _ring_demand(self, g: int) -> np.ndarray:
        """Per byte all-reduced by every group of ``g``: a logical ring in each direction
        over each strided coset, each carrying half the data."""
        n = self.job.servers
        stride = n // g
        D = np.zeros((n, n))
        for s in range(n):
            D[s, (s + stride) % n] += (g - 1) / g
            D[s, (s - stride) % n] += (g - 1) / g
        return D

    def _direct_ring(self, g: int) -> np.ndarray:
        """Per byte over capacity on the topology's own rings for ``g``."""
        n, ll = self.job.servers, self.links
        js = self.rings[g]
        per = 2 * (g - 1) / g / (2 * len(js))
        load = np.zeros(len(ll.keys))
        for j in js:
            for r in range(n):
                for b in ((r + j) % n, (r - j) % n):
                    load[ll.index[(r, b)]] += per
        return load / ll.capacity

    def time(self, tr: Traffic) -> Timing:
        """The iteration time of traffic ``tr``."""
        xa = np.array([tr.allreduce.get(g, 0.0) for g in self.ar_sizes])
        ta = float(matmul(self._ar, xa).max()) if xa.any() else 0.0
        if xa.any():
            ta += max(2 * (g - 1) * self._ring_hops[g] for g, x in zip(self.ar_sizes, xa,
                                                                        strict=True) if x) \
                * self._lat
        xt = np.array([tr.tp.get(k, 0.0) for k in self.job.tp_sizes])
        tm = float((matmul(self._tp, xt) + matmul(self._emb, tr.embedding)).max())
        if tr.mp_phases:
            tm += tr.mp_phases * self.links.diameter * self._lat
        c = float(tr.compute.max())
        return Timing(c + tm + ta, c, tm, ta)

    def score(self, strategy: tuple[int, ...]) -> Timing | None:
        """The timing of ``strategy``, or None when it does not fit in memory."""
        tr = self.job.traffic(strategy)
        if tr.memory.max() > self.job.capacity:
            return None
        return self.time(tr)
