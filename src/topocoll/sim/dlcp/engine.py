"""A packet-level engine for gradient messages with pluggable queue and transport policies.

Built for DLCP's mechanisms (``../shared/reference/algorithms.md`` section 4): every
switch output port runs a queue policy (:mod:`topocoll.sim.dlcp.queue_policies`: admission and
service class); every message runs the bounded-loss receiver
(:class:`~topocoll.sim.dlcp.bounded_loss.BoundedLossReceiver`, ``eps = 0`` for reliable
delivery); paths are per packet (spraying over every shortest path) or per message (ECMP
hashing by message id). The engine only calls the policies, so a new queue discipline or
transport is a new object, not a branch here.

Model:

- A message is ready when its start time has come and every message it depends on has
  completed. Its sender then keeps at most ``window`` of its packets in flight: a packet
  enters the NIC queue when a slot is free, and its slot frees when the acknowledgement
  (or, for a dropped packet, the selective NACK) is back after the path's one-way latency.
  The window is the transport policy's (:mod:`topocoll.sim.dlcp.transport_policies`): fixed
  by default, or DCTCP reacting to the ECN marks that a marking queue policy sets and the
  acknowledgements echo. Host NICs never drop; switch ports drop what their policy does
  not admit. Each packet carries a 64-byte header.
- A port serializes one packet at a time at its link's bandwidth, then the packet arrives
  at the next node after the link's latency.
- Loss recovery: when every packet of the current round is delivered or dropped, the
  receiver decides. If the round's last packet (the end marker) arrived, the decision is
  at the later of its arrival and the last resolution; if the end marker was dropped, the
  receiver learns of the round's end by a timer: ``tail_timer`` for the bounded-loss
  receiver, the retransmission timeout ``rto`` for a reliable one (TCP's tail loss). A
  message within its budget completes (missing gradients zero); otherwise the missing
  packets are sent again after a one-way delay (the NACK's trip), most important first.
- Background packets are sent once (no recovery); they load the ports.
- The run ends when the last message completes: what the background does afterwards
  cannot change a message's result (``events`` and ``background_drops`` count up to
  that moment).

Two loops run this model: a compiled one (:mod:`topocoll.sim.dlcp._core`, numba) and the
Python one below, the reference. They push the same events in the same order, so they
agree bit for bit (``tests/sim/test_dlcp_compiled.py``); ``engine="auto"`` takes the
compiled loop whenever the policies state themselves as tables (``port_tables``,
``compiled``), which every policy in :mod:`~topocoll.sim.dlcp.queue_policies` and
:mod:`~topocoll.sim.dlcp.transport_policies` does. Messages may come as
:class:`Message` objects or, for millions of packets, as one columnar
:class:`MessageTable`.

Examples
--------
>>> from topocoll.topology.spec import parse_spec
>>> from topocoll.sim.dlcp.queue_policies import DropTail
>>> from topocoll.sim.dlcp.gradient_packets import packetize
>>> t = parse_spec("leafspine:leaves=2,spines=2,hosts=2,bw=10Gbps")
>>> m = Message(0, src=0, dst=3, packets=tuple(packetize(0, 100_000, 9000)))
>>> r = simulate_messages(t, [m], DropTail(buffer=200_000))
>>> round(float(r.finish[0]) * 1e6, 1), r.retransmitted_bytes   # (11 + 3) full packets
(106.4, 0)
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError
from ...topology import Topology
from .bounded_loss import BoundedLossReceiver
from .gradient_packets import GradientPacket

__all__ = ["Message", "MessageTable", "Background", "EngineResult", "simulate_messages",
           "HEADER_BYTES", "shortest_paths", "ENGINES"]

#: the loops that run the model (``auto``: compiled when the policies allow it)
ENGINES = ("auto", "compiled", "python")

HEADER_BYTES = 64
#: delays with a FIFO of their own in the compiled loop (the next event is found by
#: scanning the FIFOs' heads)
MAX_FIFOS = 12


@dataclass(frozen=True)
class Message:
    """Gradient message ``id`` from host ``src`` to host ``dst``: its packets, its loss
    budget ``eps`` (0: reliable; only where :func:`~topocoll.sim.dlcp.bounded_loss.
    loss_allowed`), the earliest ``start`` and the messages it waits for."""

    id: int
    src: int
    dst: int
    packets: tuple[GradientPacket, ...]
    eps: float = 0.0
    start: float = 0.0
    deps: tuple[int, ...] = ()
    weight: float = 1.0


@dataclass(frozen=True)
class MessageTable:
    """Messages as columns (the compiled loop's input; a million packets as a few arrays
    instead of a million objects). Per message: ``id``, ``src``, ``dst``, ``eps``,
    ``start``, ``weight``, ``layer``; its dependencies at ``deps[deps_off[k]:
    deps_off[k+1]]`` (message ids) and its packets at ``pkt_off[k]:pkt_off[k+1]`` of
    ``length`` and ``priority`` (offsets follow from the lengths)."""

    id: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    eps: np.ndarray
    start: np.ndarray
    weight: np.ndarray
    layer: np.ndarray
    deps_off: np.ndarray
    deps: np.ndarray
    pkt_off: np.ndarray
    length: np.ndarray
    priority: np.ndarray

    def __len__(self) -> int:
        return len(self.id)

    @classmethod
    def from_messages(cls, messages: Sequence[Message]) -> MessageTable:
        """The table of ``messages`` (in order)."""
        i64 = np.int64
        pk = [p for m in messages for p in m.packets]
        return cls(
            np.array([m.id for m in messages], i64), np.array([m.src for m in messages], i64),
            np.array([m.dst for m in messages], i64),
            np.array([m.eps for m in messages], float),
            np.array([m.start for m in messages], float),
            np.array([m.weight for m in messages], float),
            np.array([m.packets[0].layer if m.packets else 0 for m in messages], i64),
            np.concatenate([[0], np.cumsum([len(m.deps) for m in messages])]).astype(i64),
            np.array([d for m in messages for d in m.deps], i64),
            np.concatenate([[0], np.cumsum([len(m.packets) for m in messages])]).astype(i64),
            np.array([p.length for p in pk], i64), np.array([p.priority for p in pk], i64))

    def messages(self) -> list[Message]:
        """The same messages as :class:`Message` objects (the Python loop's input)."""
        out = []
        length, prio = self.length.tolist(), self.priority.tolist()
        for k in range(len(self.id)):
            a, b = int(self.pkt_off[k]), int(self.pkt_off[k + 1])
            mid, layer, off, pks = int(self.id[k]), int(self.layer[k]), 0, []
            for j in range(a, b):
                pks.append(GradientPacket(mid, layer, off, length[j], prio[j]))
                off += length[j]
            deps = tuple(int(d) for d in self.deps[self.deps_off[k]:self.deps_off[k + 1]])
            out.append(Message(mid, int(self.src[k]), int(self.dst[k]), tuple(pks),
                               eps=float(self.eps[k]), start=float(self.start[k]), deps=deps,
                               weight=float(self.weight[k])))
        return out


@dataclass(frozen=True)
class Background:
    """A background flow: ``nbytes`` from ``src`` to ``dst`` at ``start`` in class
    ``priority``, sent once in ``payload``-byte packets."""

    start: float
    src: int
    dst: int
    nbytes: int
    priority: int = 4


@dataclass(frozen=True)
class EngineResult:
    """Per message: ``finish`` (seconds), ``zero_filled`` bytes; totals: bytes sent
    again, packets dropped per class, background packets dropped, events handled."""

    finish: np.ndarray
    zero_filled: np.ndarray
    retransmitted_bytes: int
    drops: np.ndarray
    background_drops: int
    events: int
    lost_packets: tuple = field(default=(), repr=False)


def shortest_paths(topology: Topology, limit: int = 16) -> dict:
    """Every shortest path (as link indices, at most ``limit``, in a fixed order) between
    every pair of ranks: :func:`topocoll.topology.routing.shortest_path_sets`."""
    from ...topology.routing import shortest_path_sets

    return shortest_path_sets(topology, range(topology.num_ranks), limit)


def simulate_messages(topology: Topology, messages: Sequence[Message] | MessageTable,
                      policy, *, spray: bool = False, tail_timer: float = 50e-6,
                      rto: float = 1e-3, background: Sequence[Background] = (),
                      payload: int = 9000, paths: dict | None = None, seed: int = 0,
                      window: int = 1 << 30, transport=None,
                      engine: str = "auto") -> EngineResult:
    """Run ``messages`` (and ``background``) to completion (see the module docstring);
    ``transport`` (:mod:`topocoll.sim.dlcp.transport_policies`) sets each message's window,
    default a fixed ``window``. ``engine``: ``compiled``, ``python`` (the reference) or
    ``auto`` (compiled unless a policy has no tables)."""
    if engine not in ENGINES:
        raise InputError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}",
                         item="engine")
    if transport is None:
        from .transport_policies import FixedWindow

        transport = FixedWindow(window)
    table = messages if isinstance(messages, MessageTable) else None
    if engine != "python":
        if table is None:
            table = MessageTable.from_messages(messages)
        res = _simulate_compiled(topology, table, policy, spray=spray,
                                 tail_timer=tail_timer, rto=rto, background=background,
                                 payload=payload, paths=paths, seed=seed,
                                 transport=transport, required=engine == "compiled")
        if res is not None:
            return res
    if isinstance(messages, MessageTable):
        messages = messages.messages()
    return _simulate_python(topology, messages, policy, spray=spray, tail_timer=tail_timer,
                            rto=rto, background=background, payload=payload, paths=paths,
                            seed=seed, transport=transport)


def _check_table(n: int, t: MessageTable) -> None:
    bad = np.flatnonzero((t.src < 0) | (t.src >= n) | (t.dst < 0) | (t.dst >= n) |
                         (t.src == t.dst))
    if len(bad):
        k = int(bad[0])
        raise InputError(f"message {int(t.id[k])}: bad endpoints {int(t.src[k])} -> "
                         f"{int(t.dst[k])}", item=f"message {int(t.id[k])}")
    known = np.isin(t.deps, t.id)
    if not known.all():
        e = int(np.flatnonzero(~known)[0])
        k = int(np.searchsorted(t.deps_off, e, side="right") - 1)
        raise InputError(f"message {int(t.id[k])} waits for unknown message "
                         f"{int(t.deps[e])}", item=f"message {int(t.id[k])}")


def _flat_paths(paths: dict, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(plinks, poff, pairoff)``: the links of path ``p`` at ``plinks[poff[p]:
    poff[p+1]]``, the paths of pair ``s * n + d`` numbered ``pairoff[pair]..
    pairoff[pair+1] - 1`` (in ``paths``' order)."""
    plinks: list[int] = []
    poff = [0]
    pairoff = [0]
    for s in range(n):
        for d in range(n):
            for p in paths.get((s, d), ()) if s != d else ():
                plinks.extend(p)
                poff.append(len(plinks))
            pairoff.append(len(poff) - 1)
    return (np.array(plinks, np.int64), np.array(poff, np.int64),
            np.array(pairoff, np.int64))


def _simulate_compiled(topology, t: MessageTable, policy, *, spray, tail_timer, rto,
                       background, payload, paths, seed, transport,
                       required) -> EngineResult | None:
    """The compiled loop; None (the caller falls back to Python) when a policy has no
    tables, an InputError instead when ``required``."""
    from ._core import dlcp_simulate

    n = topology.num_ranks
    _check_table(n, t)
    bg_prio = np.array([b.priority for b in background], np.int64)
    maxp = int(max(t.priority.max(initial=0), bg_prio.max(initial=0)))
    low = int(min(t.priority.min(initial=0), bg_prio.min(initial=0)))
    tables = getattr(policy, "port_tables", None)
    tables = tables(maxp) if tables is not None and low >= 0 else None
    tparams = getattr(transport, "compiled", None)
    tparams = tparams() if tparams is not None else None
    if tables is None or tparams is None:
        if required:
            raise InputError(f"policy {type(policy).__name__} or transport "
                             f"{type(transport).__name__} has no compiled form (tables)",
                             item="engine")
        return None
    links = topology.links
    bw = np.array([float(lk.bandwidth) for lk in links])
    lat_l = [float(lk.latency) for lk in links]
    host_port = np.array([lk.src < n for lk in links], np.bool_)
    paths = paths if paths is not None else shortest_paths(topology)
    plinks, poff, pairoff = _flat_paths(paths, n)
    # one-way latencies as the Python loop sums them (left to right, per pair)
    plat: dict = {}

    def one_way(s: int, d: int) -> float:
        v = plat.get((s, d))
        if v is None:
            v = plat[(s, d)] = sum(lat_l[x] for x in paths[(s, d)][0])
        return v

    src, dst = t.src.tolist(), t.dst.tolist()
    fwd = np.array([one_way(a, b) for a, b in zip(src, dst, strict=True)], float)
    back = np.array([float(one_way(b, a)) for a, b in zip(src, dst, strict=True)], float)
    # children of each message, in the order the Python loop lists them
    nm = len(t)
    byid = {int(m): k for k, m in enumerate(t.id.tolist())}
    ndeps = np.diff(t.deps_off)
    parent = np.array([byid[int(d)] for d in t.deps.tolist()], np.int64)
    kid = np.repeat(np.arange(nm, dtype=np.int64), ndeps)
    o = np.argsort(parent, kind="stable")
    child = kid[o]
    choff = np.concatenate([[0], np.cumsum(np.bincount(parent, minlength=nm))]).astype(
        np.int64)
    # background packets: sizes and paths drawn as the Python loop draws them (one
    # bounded integer per packet, in order: the same stream as one draw per packet)
    i64 = np.int64
    nb = np.array([b.nbytes for b in background], i64)
    pair = np.array([b.src * n + b.dst for b in background], i64)
    bnpk = np.maximum(1, -(-nb // payload))
    boff = np.concatenate([[0], np.cumsum(bnpk)]).astype(i64)
    bflow = np.repeat(np.arange(len(nb), dtype=i64), bnpk)
    bpos = np.arange(boff[-1], dtype=i64) - boff[bflow]
    bsize = (np.minimum(payload, nb[bflow] - payload * bpos) + HEADER_BYTES).astype(i64)
    bpr = np.repeat(np.array([b.priority for b in background], i64), bnpk)
    npaths = (pairoff[pair + 1] - pairoff[pair])[bflow]
    rng = np.random.default_rng(seed)
    bpath = (pairoff[pair][bflow] + rng.integers(0, npaths)).astype(i64) if len(npaths) \
        else np.zeros(0, i64)
    bstart = np.array([float(b.start) for b in background], float)

    # one FIFO per delay (a link's latency, a message's one-way latencies, the most
    # common packet's serialization on each link), for the MAX_FIFOS most used delays;
    # the others wait in the heap
    lat = np.array(lat_l)
    nl = len(lat)
    sizes = np.concatenate([t.length + HEADER_BYTES, bsize])
    wire = int(np.bincount(sizes).argmax()) if len(sizes) else 0
    tx = wire / bw
    vals, inv, cnt = np.unique(np.concatenate([lat, back, fwd, tx]), return_inverse=True,
                               return_counts=True)
    keep = np.argsort(-cnt, kind="stable")[:MAX_FIFOS]
    fid = np.full(len(vals), -1, np.int64)
    fid[keep] = np.arange(len(keep))
    fifo = fid[inv]
    tk, wsize, dinit, dg, dmax = tparams
    finish, zero, retx, drops, bg_drops, events, have, order = dlcp_simulate(
        n, bw, lat, host_port, plinks, poff, pairoff,
        *(np.asarray(a, i64) for a in (t.src, t.dst, t.id)),
        *(np.asarray(a, float) for a in (t.eps, t.start, t.weight)),
        *(np.asarray(a, i64) for a in (t.pkt_off, t.length, t.priority)),
        choff, child, ndeps.astype(i64), fwd, back,
        bstart, boff, bsize, bpr, bpath,
        tables.order, tables.limit, bool(tables.per_class), int(tables.mark),
        int(tables.order.max()) + 1, bool(spray), float(tail_timer), float(rto),
        HEADER_BYTES, int(tk), int(wsize), int(dinit), float(dg), int(dmax),
        fifo[:nl], fifo[nl:nl + nm], fifo[nl + nm:nl + 2 * nm], len(keep),
        fifo[nl + 2 * nm:], wire)
    if np.isnan(finish).any():
        k = int(np.flatnonzero(np.isnan(finish))[0])
        raise InputError(f"message {int(t.id[k])} never completed (a dependency cycle?)",
                         item=f"message {int(t.id[k])}")
    lossy = np.flatnonzero(zero > 0)
    lossy = lossy[np.argsort(order[lossy], kind="stable")]       # in order of completion
    lost = tuple((int(t.id[k]), tuple(int(i) for i in np.flatnonzero(
        ~have[t.pkt_off[k]:t.pkt_off[k + 1]]))) for k in lossy)
    return EngineResult(finish, zero, int(retx), drops, int(bg_drops), int(events), lost)


def _simulate_python(topology: Topology, messages: Sequence[Message], policy, *,
                     spray: bool, tail_timer: float, rto: float,
                     background: Sequence[Background], payload: int, paths: dict | None,
                     seed: int, transport) -> EngineResult:
    """The reference loop (see the module docstring)."""
    n = topology.num_ranks
    for m in messages:
        if not (0 <= m.src < n and 0 <= m.dst < n) or m.src == m.dst:
            raise InputError(f"message {m.id}: bad endpoints {m.src} -> {m.dst}",
                             item=f"message {m.id}")
    links = topology.links
    # plain lists, not numpy arrays: the loop below touches them a million times
    bw = [float(lk.bandwidth) for lk in links]
    lat = [float(lk.latency) for lk in links]
    is_host_port = [lk.src < n for lk in links]
    paths = paths if paths is not None else shortest_paths(topology)
    byid = {m.id: k for k, m in enumerate(messages)}
    nm = len(messages)
    finish = np.full(nm, np.nan)
    zero = np.zeros(nm, np.int64)
    drops = [0] * 8
    recv = [BoundedLossReceiver([p.length for p in m.packets], m.eps) for m in messages]
    waiting = [len(m.deps) for m in messages]
    children: dict[int, list[int]] = {}
    for k, m in enumerate(messages):
        for d in m.deps:
            if d not in byid:
                raise InputError(f"message {m.id} waits for unknown message {d}",
                                 item=f"message {m.id}")
            children.setdefault(byid[d], []).append(k)
    # per-link queues: class -> deque of packet records (only non-empty classes kept);
    # occupancy in bytes
    queues: list[dict[int, deque]] = [dict() for _ in links]
    occ = [0] * len(links)
    busy = [False] * len(links)
    heap: list = []
    heappush, heappop = heapq.heappush, heapq.heappop
    counter = itertools.count()
    events = 0
    retx = 0
    bg_drops = 0
    lost: list = []
    remaining = nm
    # round state per message: packets of the round unresolved, end marker, timer
    pending = [0] * nm
    round_end = [(-1, 0.0)] * nm        # (packet index of the end marker, its send time)
    end_arrived = [None] * nm
    last_resolved = [0.0] * nm
    rng = np.random.default_rng(seed)
    rr = {}
    admit, order = policy.admit, policy.order
    marker = getattr(policy, "mark", None)
    # per-class admission (a FIFO per band): bytes queued per link and class
    cocc = [dict() for _ in links] if getattr(policy, "per_class", False) else None
    win, on_ack = transport.window, transport.on_ack
    todo: list[deque] = [deque() for _ in messages]
    inflight = [0] * nm
    fwd_paths = [paths[(m.src, m.dst)] for m in messages]
    back_lat = [float(sum(lat[x] for x in paths[(m.dst, m.src)][0])) for m in messages]
    fwd_lat = [sum(lat[x] for x in ps[0]) for ps in fwd_paths]

    def push(t, kind, data):
        heappush(heap, (t, next(counter), kind, data))

    def path_for(k, m):
        ps = fwd_paths[k]
        if spray:
            key = (m.src, m.dst)
            j = rr.get(key, 0)
            rr[key] = j + 1
            return ps[j % len(ps)]
        return ps[m.id % len(ps)]

    def enqueue(t, link, rec):
        # rec: [size, priority, path, hop, kind, msg k, packet i, ECN mark]
        size, pr = rec[0], rec[1]
        cls = order(pr)
        if not is_host_port[link]:
            if not admit(occ[link] if cocc is None else cocc[link].get(cls, 0), size, pr):
                return False
            if marker is not None and marker(occ[link], size, pr):
                rec[7] = True
        if cocc is not None:
            cocc[link][cls] = cocc[link].get(cls, 0) + size
        q = queues[link]
        d = q.get(cls)
        if d is None:
            q[cls] = deque((rec,))
        else:
            d.append(rec)
        occ[link] += size
        if not busy[link]:
            start_tx(t, link)
        return True

    def start_tx(t, link):
        q = queues[link]
        if not q:
            busy[link] = False
            return
        cls = min(q)
        d = q[cls]
        rec = d.popleft()
        if not d:
            del q[cls]
        busy[link] = True
        heappush(heap, (t + rec[0] / bw[link], next(counter), 0, (link, rec)))

    def send_round(t, k, idxs):
        pending[k] = len(idxs)
        end_arrived[k] = None
        todo[k].extend(idxs)
        pump(t, k)

    def pump(t, k):
        m = messages[k]
        tk = todo[k]
        packets = m.packets
        while tk and inflight[k] < win(k):
            i = tk.popleft()
            p = packets[i]
            rec = [p.length + HEADER_BYTES, p.priority, path_for(k, m), 0, "g", k, i,
                   False]
            if not tk:
                round_end[k] = (i, t)
            inflight[k] += 1
            enqueue(t, rec[2][0], rec)

    def release(t, k):
        m = messages[k]
        send_round(t, k, list(range(len(m.packets))))

    def resolve(t, k, i, delivered, marked=False):
        m = messages[k]
        # the slot frees when the (N)ACK is back, echoing the mark
        push(t + back_lat[k], 6, (k, marked, delivered))
        pending[k] -= 1
        if t > last_resolved[k]:
            last_resolved[k] = t
        if delivered:
            recv[k].receive(i)
            if i == round_end[k][0]:
                end_arrived[k] = t
        if pending[k] == 0:
            if end_arrived[k] is not None:
                tdec = max(end_arrived[k], last_resolved[k])
            else:
                timer = tail_timer if m.eps > 0 else rto
                tdec = max(last_resolved[k], round_end[k][1] + timer)
            push(tdec, 2, k)

    def decide(t, k):
        nonlocal retx, remaining
        m = messages[k]
        verdict, missing = recv[k].decide([p.priority for p in m.packets], m.weight)
        if verdict == "complete":
            finish[k] = t
            remaining -= 1
            zero[k] = recv[k].zero_filled
            if recv[k].zero_filled:
                lost.append((m.id, tuple(int(i) for i in np.flatnonzero(~recv[k].have))))
            for c in children.get(k, []):
                waiting[c] -= 1
                if waiting[c] == 0:
                    push(max(t, messages[c].start), 1, c)
            return
        retx += sum(m.packets[i].length for i in missing)
        push(t + fwd_lat[k], 3, (k, missing))

    for k, m in enumerate(messages):
        if waiting[k] == 0:
            push(m.start, 1, k)
    for b in background:
        ps = paths[(b.src, b.dst)]
        npk = max(1, -(-b.nbytes // payload))
        for j in range(npk):
            size = min(payload, b.nbytes - j * payload) + HEADER_BYTES
            p = ps[int(rng.integers(len(ps)))]
            push(b.start, 4, [size, b.priority, p, 0, "b", -1, j, False])
    while heap and remaining:
        t, _, kind, data = heappop(heap)
        events += 1
        if kind == 0:                       # a port finished serializing a packet
            link, rec = data
            occ[link] -= rec[0]
            if cocc is not None:
                cocc[link][order(rec[1])] -= rec[0]
            start_tx(t, link)
            heappush(heap, (t + lat[link], next(counter), 5, rec))
        elif kind == 5:                     # arrival at the next node
            rec = data
            hop = rec[3] + 1
            rec[3] = hop
            path = rec[2]
            if hop == len(path):
                if rec[4] == "g":
                    resolve(t, rec[5], rec[6], True, rec[7])
                continue
            if not enqueue(t, path[hop], rec):
                if rec[4] == "g":
                    drops[min(rec[1], 7)] += 1
                    resolve(t, rec[5], rec[6], False)
                else:
                    bg_drops += 1
        elif kind == 6:
            k, marked, delivered = data
            inflight[k] -= 1
            on_ack(k, marked, delivered)
            pump(t, k)
        elif kind == 1:
            release(t, data)
        elif kind == 2:
            decide(t, data)
        elif kind == 3:
            k, missing = data
            send_round(t, k, list(missing))
        elif kind == 4:
            enqueue(t, data[2][0], data)
    if np.isnan(finish).any():
        k = int(np.flatnonzero(np.isnan(finish))[0])
        raise InputError(f"message {messages[k].id} never completed (a dependency cycle?)",
                         item=f"message {messages[k].id}")
    return EngineResult(finish, zero, int(retx), np.array(drops, np.int64), bg_drops, events,
                        tuple(lost))
