"""DLCP's scenario: data-parallel gradient exchange through a parameter server on a
switched fabric under background load, with DLCP's mechanisms added one at a time.

Wang et al., "Domain-specific Communication Optimization for Distributed DNN Training"
(DLCP, arXiv 2020); ``../shared/reference/algorithms.md`` section 4. Every iteration:

- the model's gradients (fp32) are cut into buckets of about ``bucket`` bytes in layer
  order (as frameworks bucket them); each of ``workers`` hosts is also the parameter
  server of ``1/workers`` of every bucket (co-located, sharded PS), so each bucket is a
  push from every worker to every other server (loss allowed: the budget ``eps``), then a
  pull of the reduced shard back (reliable: replicas must stay identical,
  :func:`~topocoll.sim.dlcp.bounded_loss.loss_allowed`);
- background flows arrive as a Poisson process at every host, ``background_load`` of its
  link on average, exponential sizes (mean 1 MB), to random hosts, in the middle traffic
  class;
- per-block gradient magnitudes are drawn (log-normal, seeded) to set packet priorities.

With ``pattern="ring"`` each bucket is a ring all-reduce instead: ``W - 1`` reduce-scatter
steps whose messages may lose (charged per contribution: a chunk at step ``k`` carries
``k + 1`` workers' gradients) and ``W - 1`` reliable all-gather steps; with
``pattern="tree"`` a binary-tree reduce (a partial sum charged for its subtree's workers)
and a reliable broadcast down the same tree.

Schemes, each adding one mechanism to the previous one (the ablation of the issue):

``baseline``        drop-tail FIFO ports, ECMP per message, reliable transport (a TCP-like
                    tail: a lost last packet is found after ``rto``)
``dctcp``           the baseline with ECN marking at ``mark`` bytes and DCTCP's window
                    (the other baseline of the issue; not part of the chain below)
``layer_priority``  strict priority by layer, one class per message (ByteScheduler-like)
``spray``           packets sprayed over every shortest path
``packet_priority`` per-packet classes by layer and magnitude
``selective_drop``  per-class admission thresholds (low classes dropped first)
``dlcp``            the bounded-loss receiver on pushes (``eps``), tail timer instead of RTO

The transport keeps a fixed window of ``window`` packets in flight per message, clocked by
acknowledgements, without congestion control (``dctcp``: DCTCP's window, starting from
Linux's ten 1500-byte segments' worth of packets, at least one); the fabric's queues and
policies decide the rest. Iteration communication time
is the time until every pull has completed.

Examples
--------
>>> from topocoll.topology.spec import parse_spec
>>> from topocoll.workload import LAYERED
>>> t = parse_spec("leafspine:leaves=2,spines=2,hosts=2,bw=10Gbps")
>>> recs = run_dlcp(t, LAYERED["resnet50"], workers=4, iterations=2, seed=1,
...                 schemes=("baseline", "dlcp"), background_load=0.0, scale=0.05)
>>> [r["scheme"] for r in recs], recs[0]["loss_fraction"]
(['baseline', 'dlcp'], 0.0)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..sim.dlcp.engine import Background, Message, MessageTable, shortest_paths, simulate_messages
from ..sim.dlcp.gradient_packets import NUM_QUEUES
from ..sim.dlcp.queue_policies import DropTail, ECNMarking, SelectiveDrop, StrictPriority
from ..sim.dlcp.transport_policies import DCTCP
from ..sim.stats import quantile_ci
from ..topology import Topology
from ..workload import LayeredModel

__all__ = ["PATTERNS", "SCHEMES", "TRANSPORTS", "run_dlcp", "dlcp_messages", "dlcp_table",
           "background_flows", "packet_scores", "GradientExchange", "exchange_gradients",
           "loss_profile", "profile_summary"]

PATTERNS = ("ps", "ring", "tree")
#: how messages pace themselves: a fixed window, or DCTCP (with ECN marks) in every scheme
TRANSPORTS = ("fixed", "dctcp")
SCHEMES = ("baseline", "dctcp", "layer_priority", "spray", "packet_priority",
           "selective_drop", "dlcp")
#: Schemes with the baseline's flat priority, FIFO ports and ECMP per message.
_FLAT = ("baseline", "dctcp")
_BG_CLASS = 4
#: packets per scheme-iteration from which worker processes pay for their start
PARALLEL_MIN_PACKETS = 200_000


def _buckets(model: LayeredModel, bucket: float, scale: float) -> list[tuple[int, int]]:
    """(first layer index, bytes) of each gradient bucket, input side first."""
    out, cur, first = [], 0.0, 0
    layers = [ly for ly in model.layers if ly.params]
    for i, ly in enumerate(layers):
        cur += 4.0 * ly.params * scale
        if cur >= bucket:
            out.append((first, int(cur)))
            cur, first = 0.0, i + 1
    if cur > 0:
        out.append((first, int(cur)))
    return out


class _Specs:
    """The messages of an iteration as they are created (one row each); :meth:`base`
    makes every packet at once (the magnitudes drawn in creation order, as one draw per
    message would). A message that may lose also says what it carries: the sum of the
    gradients of ``members`` from byte ``first`` of the model's flat gradient on."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []    # src, dst, nbytes, lossy, layer, rank, weight, first
        self.deps: list[tuple[int, ...]] = []
        self.members: list[tuple[int, ...]] = []

    def add(self, src: int, dst: int, nbytes: int, lossy: bool, layer: int, rank: int,
            deps: tuple[int, ...] = (), weight: float = 1.0, first: int = 0,
            members: tuple[int, ...] = ()) -> int:
        self.rows.append((src, dst, nbytes, lossy, layer, rank, weight, first))
        self.deps.append(deps)
        self.members.append(members if lossy else ())
        return len(self.rows) - 1

    def base(self, payload: int, rng: np.random.Generator, pushed: int,
             gradients: np.ndarray | None = None) -> _Base:
        """Packets of ``payload`` bytes (the last shorter). The packets of a message that
        may lose are ranked by magnitude within it: by the mean ``|g|`` of what they carry
        when ``gradients`` (one flat fp32 gradient per worker) are given
        (:func:`packet_scores`), else by log-normal scores drawn whatever the scheme, so
        every scheme sees the same random stream."""
        i64 = np.int64
        r = np.array(self.rows, dtype=float).reshape(-1, 8)
        nbytes = r[:, 2].astype(i64)
        lossy = r[:, 3].astype(bool)
        npk = np.maximum(1, -(-nbytes // payload))
        off = np.concatenate([[0], np.cumsum(npk)]).astype(i64)
        msg = np.repeat(np.arange(len(npk), dtype=i64), npk)
        pos = np.arange(off[-1], dtype=i64) - off[msg]
        length = np.where(nbytes[msg] > 0, np.minimum(payload, nbytes[msg] - pos * payload),
                          0).astype(i64)
        first = r[:, 7].astype(i64)
        mem_off = np.concatenate([[0], np.cumsum([len(m) for m in self.members])]).astype(i64)
        mem = np.fromiter(itertools.chain.from_iterable(self.members), i64, int(mem_off[-1]))
        # magnitude buckets (2) of the lossy packets: rank by score within the message
        lp = np.flatnonzero(lossy[msg])
        if gradients is None:
            scores = rng.lognormal(0.0, 1.0, len(lp))
        else:
            scores = packet_scores(gradients, first, mem_off, mem, off, length,
                                   payload)[lp]
        order = np.lexsort((-scores, msg[lp]))       # stable: ties keep their place
        within = np.empty(len(lp), i64)             # largest score first, ties by place
        within[order] = np.arange(len(lp)) - np.searchsorted(lp, off[msg[lp][order]])
        mb = np.zeros(len(msg), i64)
        mb[lp] = within * 2 // npk[msg[lp]]
        deps_off = np.concatenate([[0], np.cumsum([len(d) for d in self.deps])]).astype(i64)
        deps = np.fromiter(itertools.chain.from_iterable(self.deps), i64, int(deps_off[-1]))
        return _Base(r[:, 0].astype(i64), r[:, 1].astype(i64), r[:, 6].copy(),
                     r[:, 4].astype(i64), lossy, deps_off, deps, off, length,
                     lossy[msg], r[:, 5].astype(i64)[msg], mb, pushed, first, mem_off, mem,
                     payload)


def _elements(first: int, pos: np.ndarray, length: np.ndarray, payload: int):
    """Element ranges ``[lo, hi)`` of fp32 gradient that packets at positions ``pos`` of
    a message starting at byte ``first`` carry (a packet edge inside an element counts
    the element in both packets)."""
    lo = (first + pos * payload) // 4
    hi = -(-(first + pos * payload + length) // 4)
    return lo, hi


def packet_scores(gradients: np.ndarray, first: np.ndarray, mem_off: np.ndarray,
                  mem: np.ndarray, pkt_off: np.ndarray, length: np.ndarray,
                  payload: int) -> np.ndarray:
    """Mean ``|g|`` of what each packet carries (0 for packets of messages without
    members): message ``k`` carries the sum of the gradients of workers
    ``mem[mem_off[k]:mem_off[k + 1]]`` from byte ``first[k]`` of the flat gradient."""
    g = np.asarray(gradients)
    out = np.zeros(int(pkt_off[-1]))
    for k in np.flatnonzero(np.diff(mem_off) > 0).tolist():
        a, b = int(pkt_off[k]), int(pkt_off[k + 1])
        lo, hi = _elements(int(first[k]), np.arange(b - a), length[a:b], payload)
        if hi[-1] > g.shape[1]:
            raise InputError(f"gradients have {g.shape[1]} elements per worker, a message "
                             f"carries element {int(hi[-1]) - 1}", item="gradients")
        members = mem[mem_off[k]:mem_off[k + 1]]
        seg = np.abs(g[members[0], lo[0]:hi[-1]].astype(np.float64))
        if len(members) > 1:
            seg = np.abs(g[members, lo[0]:hi[-1]].astype(np.float64).sum(axis=0))
        csum = np.concatenate([[0.0], np.cumsum(seg)])
        cnt = np.maximum(hi - lo, 1)
        out[a:b] = (csum[hi - lo[0]] - csum[lo - lo[0]]) / cnt
    return out


@dataclass(frozen=True)
class _Base:
    """An iteration's messages with everything but what the scheme decides (classes and
    loss budgets)."""

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    layer: np.ndarray
    lossy: np.ndarray
    deps_off: np.ndarray
    deps: np.ndarray
    pkt_off: np.ndarray
    length: np.ndarray
    lossy_pk: np.ndarray
    rank_pk: np.ndarray
    mb: np.ndarray
    pushed: int
    first: np.ndarray
    mem_off: np.ndarray
    mem: np.ndarray
    payload: int

    def missing(self, lost: Sequence[tuple], workers: int, elements: int) -> np.ndarray:
        """Which gradient elements of which worker never reached the sum, shape
        ``(workers, elements)``: each lost packet (``lost``: the engine's
        ``lost_packets``, ``(message id, packet indices)``) takes out the contributions
        of the workers its message carries, over the elements it carries (a partial sum
        lost on the way loses every member's part)."""
        out = np.zeros((workers, elements), bool)
        for mid, idx in lost:
            k = int(mid)
            members = self.mem[self.mem_off[k]:self.mem_off[k + 1]]
            if not len(members) or not len(idx):
                continue
            pos = np.asarray(idx, np.int64)
            lo, hi = _elements(int(self.first[k]), pos,
                               self.length[self.pkt_off[k] + pos], self.payload)
            for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
                out[members, a:b] = True
        return out

    def table(self, scheme: str, eps: float) -> MessageTable:
        """The messages under ``scheme``: its packet classes (:func:`_priorities`), and
        the budget ``eps`` on the messages that may lose under ``dlcp``."""
        m = len(self.src)
        budget = np.where(self.lossy, eps, 0.0) if scheme == "dlcp" else np.zeros(m)
        return MessageTable(np.arange(m, dtype=np.int64), self.src, self.dst, budget,
                            np.zeros(m), self.weight, self.layer, self.deps_off, self.deps,
                            self.pkt_off, self.length,
                            _priorities(scheme, self.lossy_pk, self.rank_pk, self.mb))


def _priorities(scheme: str, lossy: np.ndarray, rank: np.ndarray,
                mb: np.ndarray) -> np.ndarray:
    """Class of each packet: 1 for the flat schemes, ``1 + layer_rank`` for the
    flow-level ones and for every reliable packet, and for a packet that may lose under
    the per-packet schemes :func:`~topocoll.sim.dlcp.gradient_packets.packet_priority` with
    ``a = 1``, ``b = 3`` over two magnitude buckets."""
    if scheme in _FLAT:
        return np.ones(len(lossy), np.int64)
    layer = 1 + rank
    if scheme in ("layer_priority", "spray"):
        return layer.astype(np.int64)
    per_packet = np.clip(rank + 3 * mb, 1, NUM_QUEUES - 1)
    return np.where(lossy, per_packet, layer).astype(np.int64)


def _starts(bks) -> list[int]:
    """Byte offset of each bucket in the model's flat gradient."""
    return np.concatenate([[0], np.cumsum([nb for _, nb in bks])]).astype(int).tolist()


def _ring_messages(bks, workers, out: _Specs) -> int:
    """Ring all-reduce per bucket: ``W - 1`` reduce-scatter steps (loss allowed, each
    message charged for the contributions its chunk carries), then ``W - 1`` all-gather
    steps (reliable); worker ``i`` sends to ``i + 1``, each step after its previous
    receive; at reduce-scatter step ``k`` worker ``i`` sends chunk ``i - k`` (mod ``W``),
    the sum of workers ``i - k .. i``. Returns the bytes that may lose."""
    pushed = 0
    nb = len(bks)
    starts = _starts(bks)
    for b, (_, nbytes) in enumerate(bks):
        layer_rank = 4 * b // max(nb, 1)
        chunk = max(1, nbytes // workers)
        prev = [None] * workers           # the message worker i last received
        for step in range(2 * (workers - 1)):
            lossy = step < workers - 1
            cur = [None] * workers
            for i in range(workers):
                j = (i + 1) % workers
                deps = () if prev[i] is None else (prev[i],)
                pushed += chunk if lossy else 0
                c = (i - step) % workers
                cur[j] = out.add(i, j, chunk, lossy, b, layer_rank, deps=deps,
                                 weight=float(step + 1) if lossy else 1.0,
                                 first=starts[b] + c * chunk,
                                 members=tuple((i - m) % workers for m in range(step + 1)))
            prev = cur
    return pushed


def _tree_messages(bks, workers, out: _Specs) -> int:
    """Tree all-reduce per bucket on the binary tree of ranks (parent of ``i`` is
    ``(i - 1) // 2``): every child sends its partial sum up once its own children's have
    arrived (loss allowed, charged for the workers its subtree holds), then the root's
    result goes down the same tree (reliable), each child after its parent received."""
    lossy = 0
    nb = len(bks)

    def subtree(i):
        return 0 if i >= workers else 1 + subtree(2 * i + 1) + subtree(2 * i + 2)

    def members(i):
        return () if i >= workers else (i, *members(2 * i + 1), *members(2 * i + 2))

    starts = _starts(bks)
    for b, (_, nbytes) in enumerate(bks):
        layer_rank = 4 * b // max(nb, 1)
        up = {}
        for i in range(workers - 1, 0, -1):          # leaves first
            deps = tuple(up[c] for c in (2 * i + 1, 2 * i + 2) if c in up)
            up[i] = out.add(i, (i - 1) // 2, nbytes, True, b, layer_rank, deps=deps,
                            weight=float(subtree(i)), first=starts[b],
                            members=tuple(sorted(members(i))))
            lossy += nbytes
        down = {0: tuple(up[c] for c in (1, 2) if c in up)}
        for i in range(1, workers):
            parent = (i - 1) // 2
            down[i] = (out.add(parent, i, nbytes, False, b, layer_rank, deps=down[parent]),)
    return lossy


def _iteration_base(model: LayeredModel, workers: int, *, payload: int, bucket: float,
                    scale: float, rng: np.random.Generator, pattern: str,
                    gradients: np.ndarray | None = None) -> _Base:
    """The scheme-independent part of an iteration's messages (see :func:`dlcp_table`);
    ``gradients``: one flat gradient per worker, in the model's layer order, that rank
    the packets by magnitude instead of log-normal draws."""
    if pattern not in PATTERNS:
        raise InputError(f"pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}",
                         item="pattern")
    bks = _buckets(model, bucket, scale)
    out = _Specs()
    if pattern == "ring":
        pushed = _ring_messages(bks, workers, out)
    elif pattern == "tree":
        pushed = _tree_messages(bks, workers, out)
    else:
        pushed = 0
        nb = len(bks)
        starts = _starts(bks)
        for b, (_, nbytes) in enumerate(bks):
            layer_rank = 4 * b // max(nb, 1)                # 0..3, input side first
            shard = max(1, nbytes // workers)
            for s in range(workers):                        # s serves this shard
                push_ids = tuple(out.add(w, s, shard, True, b, layer_rank,
                                         first=starts[b] + s * shard, members=(w,))
                                 for w in range(workers) if w != s)
                pushed += shard * len(push_ids)
                for w in range(workers):                    # pulls: reliable
                    if w != s:
                        out.add(s, w, shard, False, b, layer_rank, deps=push_ids)
    if gradients is not None and np.shape(gradients)[0] != workers:
        raise InputError(f"gradients of {np.shape(gradients)[0]} workers for {workers} "
                         "workers", item="gradients")
    return out.base(payload, rng, pushed, gradients)


def dlcp_table(model: LayeredModel, workers: int, scheme: str, *, eps: float,
               payload: int, bucket: float, scale: float, rng: np.random.Generator,
               pattern: str = "ps") -> tuple[MessageTable, int]:
    """The messages of one iteration under ``scheme`` as a table (the engine's fast
    input) and the bytes that may lose, for the parameter server (``"ps"``), ring
    (``"ring"``) or tree (``"tree"``) all-reduce."""
    base = _iteration_base(model, workers, payload=payload, bucket=bucket, scale=scale,
                           rng=rng, pattern=pattern)
    return base.table(scheme, eps), base.pushed


def dlcp_messages(model: LayeredModel, workers: int, scheme: str, *, eps: float,
                  payload: int, bucket: float, scale: float, rng: np.random.Generator,
                  pattern: str = "ps") -> tuple[list[Message], int]:
    """:func:`dlcp_table`'s messages as :class:`~topocoll.sim.dlcp.engine.Message`
    objects (each packet a :class:`~topocoll.sim.dlcp.gradient_packets.GradientPacket`)."""
    table, pushed = dlcp_table(model, workers, scheme, eps=eps, payload=payload,
                               bucket=bucket, scale=scale, rng=rng, pattern=pattern)
    return table.messages(), pushed


def background_flows(hosts: int, bandwidth: float, load: float, window: float,
                     rng: np.random.Generator, mean_bytes: float = 1e6,
                     priority: int = _BG_CLASS) -> list[Background]:
    """Poisson arrivals at every host over ``window`` seconds, ``load`` of ``bandwidth``
    on average, exponential sizes, random destinations, in class ``priority``."""
    if load <= 0:
        return []
    rate = load * bandwidth / mean_bytes
    out = []
    for h in range(hosts):
        t = rng.exponential(1 / rate)
        while t < window:
            d = int(rng.integers(hosts - 1))
            d += d >= h
            out.append(Background(float(t), h, d, max(1, int(rng.exponential(mean_bytes))),
                                  priority))
            t += rng.exponential(1 / rate)
    return out


def loss_profile(messages: Sequence[Message] | MessageTable,
                 lost: Sequence[tuple]) -> list[list[float]]:
    """Per message that may lose (a budget above zero): where its lost packets sit in its
    importance order, as quantiles in [0, 1) (0: its least important packet; packets
    ranked by class, lowest importance first, then by index), ``[]`` when it lost none.
    The empirical pattern of the engine's drops that :mod:`topocoll.studies.dlcp_convergence`
    trains with (pattern ``engine``)."""
    t = messages if isinstance(messages, MessageTable) else MessageTable.from_messages(
        messages)
    missing = {mid: idx for mid, idx in lost}
    out = []
    for k in np.flatnonzero(t.eps > 0).tolist():
        idx = missing.get(int(t.id[k]), ())
        if not idx:
            out.append([])
            continue
        prio = t.priority[t.pkt_off[k]:t.pkt_off[k + 1]]
        n = len(prio)
        order = np.lexsort((np.arange(n), -prio))
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n)
        out.append(sorted(float(rank[i]) / n for i in idx))
    return out


def profile_summary(profile: Sequence[Sequence[float]]) -> dict:
    """What a loss profile says in three numbers: messages that may lose, those that
    lost, and the mean importance quantile of what they lost (0: least important)."""
    lossy = [q for q in profile if q]
    return {"messages_that_may_lose": len(profile), "lossy_messages": len(lossy),
            "mean_lost_quantile": float(np.mean([x for q in lossy for x in q]))
            if lossy else None}


def _policy(scheme: str, buffer: int, mark: int, ecn: bool = False):
    """The scheme's switch ports; ``ecn``: every scheme's ports mark at ``mark`` bytes
    (DCTCP under every scheme)."""
    inner = _ports(scheme, buffer, mark)
    if ecn and not isinstance(inner, ECNMarking):
        return ECNMarking(inner, mark)
    return inner


def _ports(scheme: str, buffer: int, mark: int):
    if scheme == "baseline":
        return DropTail(buffer)
    if scheme == "dctcp":
        return ECNMarking(DropTail(buffer), mark)
    if scheme == "selective_drop" or scheme == "dlcp":
        return SelectiveDrop(buffer, queues=NUM_QUEUES)
    return StrictPriority(buffer)


def run_dlcp(topology: Topology, model: LayeredModel, *, workers: int = 16,
             background_load: float = 0.5, iterations: int = 5, seed: int = 0,
             schemes: Sequence[str] = SCHEMES, eps: float = 0.02, buffer: int = 1 << 20,
             payload: int = 64 * 1024, bucket: float = 25e6, scale: float = 1.0,
             tail_timer: float = 50e-6, rto: float = 1e-3, window: int = 2,
             pattern: str = "ps", mark: int | None = None,
             background_class: int = _BG_CLASS, jobs: int = 1,
             transport: str = "fixed",
             progress: Callable[[str], None] | None = None) -> list[dict]:
    """One record per scheme: ``scheme``, ``p50_s`` and ``p99_s`` of the iteration
    communication time, ``loss_fraction`` (pushed bytes taken as zero), mean
    ``retransmitted_bytes`` per iteration, ``drops`` (gradient packets),
    ``iterations_s`` and ``loss_profile`` (:func:`loss_profile` of every iteration),
    ``p50_ci_s`` and ``p99_ci_s`` (95% order-statistic intervals,
    :func:`~topocoll.sim.stats.quantile_ci`; None where the iterations are too few to
    bound that side) with their exact ``ci_coverage``.
    Iteration ``i`` uses the same background and magnitudes under every scheme (seeded
    by ``seed`` and ``i``). ``scale`` shrinks the gradients (tests); ``mark`` is the ECN
    threshold of the ``dctcp`` scheme in bytes (default: a fifth of ``buffer``);
    ``background_class`` the class of the background traffic (1-7; the gradients' classes
    are 1-6 by layer and magnitude). ``transport``: ``fixed`` (a window of ``window``
    packets, DCTCP only in the ``dctcp`` scheme) or ``dctcp`` (congestion control in
    every scheme: every port marks ECN at ``mark``, every message runs DCTCP from Linux's
    ten 1,500-byte segments; ``window`` is then unused). ``jobs`` worker processes share
    the scheme-iterations when there are several and each is big
    (:data:`PARALLEL_MIN_PACKETS`); the records do not depend on it."""
    for s in schemes:
        if s not in SCHEMES:
            raise InputError(f"unknown scheme {s!r} (known: {', '.join(SCHEMES)})",
                             item="schemes")
    n = topology.num_ranks
    if isinstance(workers, bool) or not isinstance(workers, int) or not 2 <= workers <= n:
        raise InputError(f"workers must be 2..{n} (the hosts of the topology), got "
                         f"{workers!r}", item="workers")
    if not 0 <= background_load < 1:
        raise InputError(f"background load must be in [0, 1), got {background_load}",
                         item="background_load")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise InputError(f"iterations must be a positive integer, got {iterations!r}",
                         item="iterations")
    if not 0 < eps < 1:
        raise InputError(f"eps must be in (0, 1), got {eps}", item="eps")
    if isinstance(background_class, bool) or not isinstance(background_class, int) or \
            not 1 <= background_class <= 7:
        raise InputError(f"background class must be 1..7, got {background_class!r}",
                         item="background_class")
    if pattern not in PATTERNS:
        raise InputError(f"pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}",
                         item="pattern")
    if transport not in TRANSPORTS:
        raise InputError(f"transport must be one of {', '.join(TRANSPORTS)}, got "
                         f"{transport!r}", item="transport")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"jobs must be a positive integer, got {jobs!r}", item="jobs")
    paths = shortest_paths(topology)
    host_bw = min(lk.bandwidth for lk in topology.links if lk.src < n)
    total = 4.0 * model.parameters * scale
    # the window over which background arrives: a few times the ideal exchange
    bg_window = 3 * 2 * total * (workers - 1) / workers / host_bw
    common = dict(topology=topology, model=model, workers=workers,
                  background_load=background_load, seed=seed, eps=eps, buffer=buffer,
                  payload=payload, bucket=bucket, scale=scale, tail_timer=tail_timer,
                  rto=rto, window=window, pattern=pattern, mark=mark,
                  background_class=background_class, paths=paths, host_bw=host_bw,
                  bg_window=bg_window, transport=transport)
    tasks = [(sch, it) for it in range(iterations) for sch in schemes]
    # packets one task simulates: gradients both ways and the background, all hosts
    work = (2 * total + background_load * host_bw * bg_window * n) / payload
    done: dict[tuple[str, int], dict] = {}
    if jobs > 1 and len(tasks) > 1 and work >= PARALLEL_MIN_PACKETS:
        from ..procs import process_pool

        with process_pool(min(jobs, len(tasks))) as pool:
            futures = {pool.submit(_iteration, sch, it, **common): (sch, it)
                       for sch, it in tasks}
            from concurrent.futures import as_completed

            for f in as_completed(futures):
                sch, it = futures[f]
                done[(sch, it)] = f.result()
                if progress is not None:
                    progress(f"{sch} iteration {it + 1}")
    else:
        for sch, it in tasks:
            if progress is not None:
                progress(f"{sch} iteration {it + 1}")
            done[(sch, it)] = _iteration(sch, it, **common)
    out = []
    for sch in schemes:
        runs = [done[(sch, it)] for it in range(iterations)]
        times = [r["time"] for r in runs]
        pushed = sum(r["pushed"] for r in runs)
        zero = sum(r["zero"] for r in runs)
        p50, p99 = quantile_ci(times, 0.5), quantile_ci(times, 0.99)
        out.append({"scheme": sch, "p50_s": float(np.percentile(times, 50)),
                    "p99_s": float(np.percentile(times, 99)),
                    "p50_ci_s": p50.as_list(), "p99_ci_s": p99.as_list(),
                    "ci_coverage": [p50.coverage, p99.coverage],
                    "loss_fraction": zero / pushed if pushed else 0.0,
                    "retransmitted_bytes": sum(r["retx"] for r in runs) / iterations,
                    "drops": int(sum(r["drops"] for r in runs)), "iterations_s": times,
                    "loss_profile": [q for r in runs for q in r["profile"]]})
    return out


#: the last iteration's background and messages in this process (the schemes of one
#: iteration share them; tasks come iteration by iteration)
_LAST: dict = {}


def _iteration(sch: str, it: int, *, topology, model, workers, background_load, seed, eps,
               buffer, payload, bucket, scale, tail_timer, rto, window, pattern, mark,
               background_class, paths, host_bw, bg_window, transport) -> dict:
    """Iteration ``it`` of scheme ``sch`` (its own seed: the same in any process)."""
    n = topology.num_ranks
    key = (model, n, workers, background_load, seed, payload, bucket, scale, pattern,
           background_class, host_bw, bg_window, it)
    if _LAST.get("key") != key:
        rng = np.random.default_rng([seed, it])
        bg = background_flows(n, host_bw, background_load, bg_window, rng,
                              priority=background_class)
        base = _iteration_base(model, workers, payload=payload, bucket=bucket * scale,
                               scale=scale, rng=rng, pattern=pattern)
        _LAST.clear()
        _LAST.update(key=key, bg=bg, base=base)
    bg, base = _LAST["bg"], _LAST["base"]
    msgs = base.table(sch, eps)
    r = _simulate(sch, msgs, bg, topology=topology, buffer=buffer, mark=mark,
                  payload=payload, tail_timer=tail_timer, rto=rto, paths=paths,
                  seed=seed + it, window=window, transport=transport)
    return {"time": float(r.finish.max()), "profile": loss_profile(msgs, r.lost_packets),
            "zero": int(r.zero_filled.sum()), "pushed": int(base.pushed),
            "retx": int(r.retransmitted_bytes), "drops": int(r.drops.sum())}


def _simulate(sch: str, msgs: MessageTable, bg, *, topology, buffer, mark, payload,
              tail_timer, rto, paths, seed, window, transport):
    """One run of the engine: ``msgs`` under scheme ``sch`` beside background ``bg``."""
    cc = transport == "dctcp" or sch == "dctcp"
    return simulate_messages(topology, msgs,
                             _policy(sch, buffer, buffer // 5 if mark is None else mark,
                                     ecn=cc),
                             spray=sch not in (*_FLAT, "layer_priority"),
                             tail_timer=tail_timer, rto=rto, background=bg,
                             payload=payload, paths=paths, seed=seed, window=window,
                             transport=DCTCP(init_window=max(1, 15_000 // payload))
                             if cc else None)


@dataclass(frozen=True)
class GradientExchange:
    """One iteration's exchange of real gradients through the engine
    (:func:`exchange_gradients`).

    ``time``: seconds until every pull completed; ``missing``: which elements of which
    worker's gradient never reached the sum (shape ``(workers, elements)``; the receiver
    took them as zero); ``zero_bytes``, ``pushed_bytes``, ``drops`` (gradient packets),
    ``retransmitted_bytes``."""

    time: float
    missing: np.ndarray
    zero_bytes: int
    pushed_bytes: int
    drops: int
    retransmitted_bytes: int


def exchange_gradients(topology: Topology, model: LayeredModel, scheme: str,
                       gradients: np.ndarray, *, step: int = 0, seed: int = 0,
                       magnitudes: str = "gradients", background_load: float = 0.5,
                       background_class: int = _BG_CLASS, eps: float = 0.02,
                       buffer: int = 1 << 20, payload: int = 1500, bucket: float = 25e6,
                       window: int = 87, pattern: str = "ps", transport: str = "fixed",
                       tail_timer: float = 50e-6, rto: float = 1e-3,
                       mark: int | None = None, paths: dict | None = None
                       ) -> GradientExchange:
    """The exchange of the real ``gradients`` (one flat fp32 gradient per worker, in the
    order of ``model``'s layers, which must hold exactly the gradients' elements) in
    iteration ``step``, as :func:`run_dlcp` runs an iteration: the same messages, the
    background seeded by ``seed`` and ``step``, the packets of each push ranked by the
    mean ``|g|`` they carry (``magnitudes="lognormal"``: by :func:`run_dlcp`'s draws
    instead), and which gradient elements the engine's drops took out of the sum."""
    if scheme not in SCHEMES:
        raise InputError(f"unknown scheme {scheme!r} (known: {', '.join(SCHEMES)})",
                         item="scheme")
    if magnitudes not in ("gradients", "lognormal"):
        raise InputError(f"magnitudes must be 'gradients' or 'lognormal', got "
                         f"{magnitudes!r}", item="magnitudes")
    g = np.asarray(gradients)
    if g.ndim != 2 or g.shape[1] != model.parameters:
        raise InputError(f"gradients must be (workers, {model.parameters}) for "
                         f"{model.name}, got shape {g.shape}", item="gradients")
    workers, n = g.shape[0], topology.num_ranks
    if not 2 <= workers <= n:
        raise InputError(f"workers must be 2..{n} (the hosts of the topology), got "
                         f"{workers}", item="gradients")
    host_bw = min(lk.bandwidth for lk in topology.links if lk.src < n)
    total = 4.0 * model.parameters
    bg_window = 3 * 2 * total * (workers - 1) / workers / host_bw
    rng = np.random.default_rng([seed, step])
    bg = background_flows(n, host_bw, background_load, bg_window, rng,
                          priority=background_class)
    base = _iteration_base(model, workers, payload=payload, bucket=bucket, scale=1.0,
                           rng=rng, pattern=pattern,
                           gradients=g if magnitudes == "gradients" else None)
    msgs = base.table(scheme, eps)
    r = _simulate(scheme, msgs, bg, topology=topology, buffer=buffer, mark=mark,
                  payload=payload, tail_timer=tail_timer, rto=rto,
                  paths=shortest_paths(topology) if paths is None else paths,
                  seed=seed + step, window=window, transport=transport)
    return GradientExchange(float(r.finish.max()),
                            base.missing(r.lost_packets, workers, g.shape[1]),
                            int(r.zero_filled.sum()), int(base.pushed), int(r.drops.sum()),
                            int(r.retransmitted_bytes))
