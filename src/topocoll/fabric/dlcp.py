"""DLCP's scenario: data-parallel gradient exchange through a parameter server on a
switched fabric under background load, with DLCP's mechanisms added one at a time.

Wang et al., "Domain-specific Communication Optimization for Distributed DNN Training"
(DLCP, arXiv 2020); ``../shared/reference/algorithms.md`` section 4. Every iteration:

- the model's gradients (fp32) are cut into buckets of about ``bucket`` bytes in layer
  order (as frameworks bucket them); each of ``workers`` hosts is also the parameter
  server of ``1/workers`` of every bucket (co-located, sharded PS), so each bucket is a
  push from every worker to every other server (loss allowed: the budget ``eps``), then a
  pull of the reduced shard back (reliable: replicas must stay identical,
  :func:`~topocoll.sim.bounded_loss.loss_allowed`);
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

from collections.abc import Callable, Sequence

import numpy as np

from ..errors import InputError
from ..sim.dlcp_engine import Background, Message, shortest_paths, simulate_messages
from ..sim.gradient_packets import NUM_QUEUES, packetize
from ..sim.queue_policies import DropTail, ECNMarking, SelectiveDrop, StrictPriority
from ..sim.transport_policies import DCTCP
from ..topology import Topology
from ..workload import LayeredModel

__all__ = ["PATTERNS", "SCHEMES", "run_dlcp", "dlcp_messages", "background_flows",
           "loss_profile", "profile_summary"]

PATTERNS = ("ps", "ring", "tree")
SCHEMES = ("baseline", "dctcp", "layer_priority", "spray", "packet_priority",
           "selective_drop", "dlcp")
#: Schemes with the baseline's flat priority, FIFO ports and ECMP per message.
_FLAT = ("baseline", "dctcp")
_BG_CLASS = 4


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


def _lossy_packets(scheme, mid, nbytes, payload, b, layer_rank, rng):
    """Packets of a message that may lose (push, reduce-scatter) under ``scheme``."""
    npk = max(1, -(-nbytes // payload))
    scores = rng.lognormal(0.0, 1.0, npk)
    if scheme in _FLAT:
        return packetize(mid, nbytes, payload, layer=b, flat_priority=1)
    if scheme in ("layer_priority", "spray"):
        return packetize(mid, nbytes, payload, layer=b, flat_priority=1 + layer_rank)
    return packetize(mid, nbytes, payload, layer=b, layer_rank=layer_rank, scores=scores,
                     buckets=2, a=1, b=3, queues=NUM_QUEUES)


def _reliable_packets(scheme, mid, nbytes, payload, b, layer_rank):
    """Packets of a message that must arrive (pull, all-gather, broadcast): the message's
    layer class, one class for the baseline."""
    return packetize(mid, nbytes, payload, layer=b,
                     flat_priority=1 if scheme in _FLAT else 1 + layer_rank)


def _ring_messages(bks, workers, scheme, eps, payload, rng):
    """Ring all-reduce per bucket: ``W - 1`` reduce-scatter steps (loss allowed, each
    message charged for the contributions its chunk carries), then ``W - 1`` all-gather
    steps (reliable); worker ``i`` sends to ``i + 1``, each step after its previous
    receive."""
    msgs, pushed, mid = [], 0, 0
    nb = len(bks)
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
                if lossy:
                    pk = _lossy_packets(scheme, mid, chunk, payload, b, layer_rank, rng)
                    pushed += chunk
                else:
                    pk = _reliable_packets(scheme, mid, chunk, payload, b, layer_rank)
                msgs.append(Message(mid, i, j, tuple(pk),
                                    eps=eps if (lossy and scheme == "dlcp") else 0.0,
                                    deps=deps, weight=float(step + 1) if lossy else 1.0))
                cur[j] = mid
                mid += 1
            prev = cur
    return msgs, pushed


def _tree_messages(bks, workers, scheme, eps, payload, rng):
    """Tree all-reduce per bucket on the binary tree of ranks (parent of ``i`` is
    ``(i - 1) // 2``): every child sends its partial sum up once its own children's have
    arrived (loss allowed, charged for the workers its subtree holds), then the root's
    result goes down the same tree (reliable), each child after its parent received."""
    msgs, lossy, mid = [], 0, 0
    nb = len(bks)

    def subtree(i):
        return 0 if i >= workers else 1 + subtree(2 * i + 1) + subtree(2 * i + 2)

    for b, (_, nbytes) in enumerate(bks):
        layer_rank = 4 * b // max(nb, 1)
        up = {}
        for i in range(workers - 1, 0, -1):          # leaves first
            deps = tuple(up[c] for c in (2 * i + 1, 2 * i + 2) if c in up)
            pk = _lossy_packets(scheme, mid, nbytes, payload, b, layer_rank, rng)
            msgs.append(Message(mid, i, (i - 1) // 2, tuple(pk),
                                eps=eps if scheme == "dlcp" else 0.0, deps=deps,
                                weight=float(subtree(i))))
            lossy += nbytes
            up[i] = mid
            mid += 1
        down = {0: tuple(up[c] for c in (1, 2) if c in up)}
        for i in range(1, workers):
            pk = _reliable_packets(scheme, mid, nbytes, payload, b, layer_rank)
            parent = (i - 1) // 2
            msgs.append(Message(mid, parent, i, tuple(pk), deps=down[parent]))
            down[i] = (mid,)
            mid += 1
    return msgs, lossy


def dlcp_messages(model: LayeredModel, workers: int, scheme: str, *, eps: float,
                  payload: int, bucket: float, scale: float, rng: np.random.Generator,
                  pattern: str = "ps") -> tuple[list[Message], int]:
    """The messages of one iteration under ``scheme`` and the bytes that may lose, for
    the parameter server (``"ps"``) or ring all-reduce (``"ring"``)."""
    bks = _buckets(model, bucket, scale)
    if pattern == "ring":
        return _ring_messages(bks, workers, scheme, eps, payload, rng)
    if pattern == "tree":
        return _tree_messages(bks, workers, scheme, eps, payload, rng)
    if pattern != "ps":
        raise InputError(f"pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}",
                         item="--pattern")
    nb = len(bks)
    msgs: list[Message] = []
    pushed = 0
    mid = 0
    for b, (_, nbytes) in enumerate(bks):
        layer_rank = 4 * b // max(nb, 1)                    # 0..3, input side first
        shard = max(1, nbytes // workers)
        for s in range(workers):                            # s serves this shard
            push_ids = []
            for w in range(workers):
                if w == s:
                    continue
                pk = _lossy_packets(scheme, mid, shard, payload, b, layer_rank, rng)
                msgs.append(Message(mid, w, s, tuple(pk),
                                    eps=eps if scheme == "dlcp" else 0.0))
                push_ids.append(mid)
                pushed += shard
                mid += 1
            for w in range(workers):                        # pulls: reliable
                if w == s:
                    continue
                pk = _reliable_packets(scheme, mid, shard, payload, b, layer_rank)
                msgs.append(Message(mid, s, w, tuple(pk), deps=tuple(push_ids)))
                mid += 1
    return msgs, pushed


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


def loss_profile(messages: Sequence[Message], lost: Sequence[tuple]) -> list[list[float]]:
    """Per message that may lose (a budget above zero): where its lost packets sit in its
    importance order, as quantiles in [0, 1) (0: its least important packet; packets
    ranked by class, lowest importance first, then by index), ``[]`` when it lost none.
    The empirical pattern of the engine's drops that :mod:`topocoll.studies.dlcp_convergence`
    trains with (pattern ``engine``)."""
    missing = {mid: idx for mid, idx in lost}
    out = []
    for m in messages:
        if m.eps <= 0:
            continue
        idx = missing.get(m.id, ())
        if not idx:
            out.append([])
            continue
        n = len(m.packets)
        order = sorted(range(n), key=lambda i: (-m.packets[i].priority, i))
        rank = {i: r for r, i in enumerate(order)}
        out.append(sorted(rank[i] / n for i in idx))
    return out


def profile_summary(profile: Sequence[Sequence[float]]) -> dict:
    """What a loss profile says in three numbers: messages that may lose, those that
    lost, and the mean importance quantile of what they lost (0: least important)."""
    lossy = [q for q in profile if q]
    return {"messages_that_may_lose": len(profile), "lossy_messages": len(lossy),
            "mean_lost_quantile": float(np.mean([x for q in lossy for x in q]))
            if lossy else None}


def _policy(scheme: str, buffer: int, mark: int):
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
             background_class: int = _BG_CLASS,
             progress: Callable[[str], None] | None = None) -> list[dict]:
    """One record per scheme: ``scheme``, ``p50_s`` and ``p99_s`` of the iteration
    communication time, ``loss_fraction`` (pushed bytes taken as zero), mean
    ``retransmitted_bytes`` per iteration, ``drops`` (gradient packets),
    ``iterations_s`` and ``loss_profile`` (:func:`loss_profile` of every iteration).
    Iteration ``i`` uses the same background and magnitudes under every scheme (seeded
    by ``seed`` and ``i``). ``scale`` shrinks the gradients (tests); ``mark`` is the ECN
    threshold of the ``dctcp`` scheme in bytes (default: a fifth of ``buffer``);
    ``background_class`` the class of the background traffic (1-7; the gradients' classes
    are 1-6 by layer and magnitude)."""
    for s in schemes:
        if s not in SCHEMES:
            raise InputError(f"unknown scheme {s!r} (known: {', '.join(SCHEMES)})",
                             item="--schemes")
    n = topology.num_ranks
    if isinstance(workers, bool) or not isinstance(workers, int) or not 2 <= workers <= n:
        raise InputError(f"workers must be 2..{n} (the hosts of the topology), got "
                         f"{workers!r}", item="--workers")
    if not 0 <= background_load < 1:
        raise InputError(f"background load must be in [0, 1), got {background_load}",
                         item="--background-load")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise InputError(f"iterations must be a positive integer, got {iterations!r}",
                         item="--iterations")
    if not 0 < eps < 1:
        raise InputError(f"eps must be in (0, 1), got {eps}", item="--eps")
    if isinstance(background_class, bool) or not isinstance(background_class, int) or \
            not 1 <= background_class <= 7:
        raise InputError(f"background class must be 1..7, got {background_class!r}",
                         item="--background-class")
    if pattern not in PATTERNS:
        raise InputError(f"pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}",
                         item="--pattern")
    paths = shortest_paths(topology)
    host_bw = min(lk.bandwidth for lk in topology.links if lk.src < n)
    total = 4.0 * model.parameters * scale
    # the window over which background arrives: a few times the ideal exchange
    bg_window = 3 * 2 * total * (workers - 1) / workers / host_bw
    out = []
    for sch in schemes:
        times, zero, pushed, retx = [], 0, 0, 0
        drops = np.zeros(8, np.int64)
        profile: list[list[float]] = []
        for it in range(iterations):
            if progress is not None:
                progress(f"{sch} iteration {it + 1}")
            rng = np.random.default_rng([seed, it])
            bg = background_flows(n, host_bw, background_load, bg_window, rng,
                                  priority=background_class)
            msgs, p = dlcp_messages(model, workers, sch, eps=eps, payload=payload,
                                    bucket=bucket * scale, scale=scale, rng=rng,
                                    pattern=pattern)
            r = simulate_messages(topology, msgs,
                                  _policy(sch, buffer, buffer // 5 if mark is None else mark),
                                  spray=sch not in (*_FLAT, "layer_priority"),
                                  tail_timer=tail_timer, rto=rto, background=bg,
                                  payload=payload, paths=paths, seed=seed + it,
                                  window=window,
                                  transport=DCTCP(init_window=max(1, 15_000 // payload))
                                  if sch == "dctcp" else None)
            times.append(float(r.finish.max()))
            profile += loss_profile(msgs, r.lost_packets)
            zero += int(r.zero_filled.sum())
            pushed += p
            retx += r.retransmitted_bytes
            drops += r.drops
        out.append({"scheme": sch, "p50_s": float(np.percentile(times, 50)),
                    "p99_s": float(np.percentile(times, 99)),
                    "loss_fraction": zero / pushed if pushed else 0.0,
                    "retransmitted_bytes": retx / iterations,
                    "drops": int(drops.sum()), "iterations_s": times,
                    "loss_profile": profile})
    return out
