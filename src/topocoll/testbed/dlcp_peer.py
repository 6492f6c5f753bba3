"""A bounded-loss gradient message over UDP between two testbed namespaces (DLCP).

Run inside the namespaces by :func:`run_message`: ``python -m topocoll.testbed.dlcp_peer
recv|send ...``. The sender cuts ``nbytes`` into packets of ``payload`` bytes, each with a
header ``(kind, index, round, last, priority)`` and marked with DSCP ``priority`` (IP TOS
``priority << 2``, eight classes), and keeps ``window`` packets in flight, clocked by the
receiver's acknowledgements. The receiver runs the same
:class:`~topocoll.sim.dlcp.bounded_loss.BoundedLossReceiver` as the simulator: at the round's
last packet (or after ``tail_timer`` of silence) it completes the message within the
budget ``eps`` or NACKs what is missing, most important first; the sender resends those as
a new round. The sender also resends what is unacknowledged after ``rto`` of silence (a
lost NACK or DONE). Both print one JSON line: the sender its elapsed time from the first
packet to the DONE, the receiver what it got.

:func:`run_message` runs one message on a testbed and the packet engine
(:mod:`topocoll.sim.dlcp.engine`) on the same topology, so the two can be compared.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import subprocess
import sys
import time

from ..sim.dlcp.bounded_loss import BoundedLossReceiver
from .netns import Testbed, TestbedError

__all__ = ["run_message", "run_messages", "compare_message", "compare_contended",
           "band_limits", "receiver", "sender", "main"]

_HDR = struct.Struct("!BIIBB")          # kind, index, round, last, priority
DATA, ACK, NACK, DONE = 1, 2, 3, 4


def _sizes(nbytes: int, payload: int) -> list[int]:
    n = max(1, -(-nbytes // payload))
    return [min(payload, nbytes - i * payload) for i in range(n)]


def _priority(i: int, n: int) -> int:
    """The class of packet ``i`` of ``n``: front of the tensor first (1..6)."""
    return 1 + (6 * i) // max(n, 1)


def _classes(n: int, cls: int) -> list[int]:
    """Every packet's class: ``cls`` for all of them, or by position when ``cls < 0``."""
    return [cls if cls >= 0 else _priority(i, n) for i in range(n)]


def receiver(addr: str, port: int, nbytes: int, payload: int, eps: float,
             tail_timer: float, timeout: float, cls: int = -1) -> dict:
    sizes = _sizes(nbytes, payload)
    pr = _classes(len(sizes), cls)
    r = BoundedLossReceiver(sizes, eps)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.bind((addr, port))
    print("ready", flush=True)
    peer = None
    rounds, nacks = 1, 0
    last_seen = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        wait = tail_timer if last_seen is not None else 1.0
        ready, _, _ = select.select([s], [], [], wait)
        if not ready:
            if last_seen is None:
                continue
            verdict = "tail"
        else:
            data, peer = s.recvfrom(65536)
            kind, idx, rnd, last, _ = _HDR.unpack_from(data)
            if kind != DATA:
                continue
            last_seen = time.monotonic()
            r.receive(idx)
            s.sendto(_HDR.pack(ACK, idx, rnd, 0, 0), peer)
            if not (last or r.completed):
                continue
            verdict = "end"
        decision, missing = r.decide(pr)
        if decision == "complete":
            for _ in range(5):
                s.sendto(_HDR.pack(DONE, 0, rounds, 0, 0), peer)
            return {"complete": True, "zero_filled": r.zero_filled, "rounds": rounds,
                    "nacks": nacks, "by": verdict}
        rounds += 1
        nacks += len(missing)
        body = struct.pack(f"!{len(missing)}I", *missing[:16000])
        s.sendto(_HDR.pack(NACK, len(missing[:16000]), rounds, 0, 0) + body, peer)
        last_seen = time.monotonic()
    return {"complete": False}


def sender(addr: str, port: int, nbytes: int, payload: int, window: int, rto: float,
           timeout: float, cls: int = -1, start_at: float = 0.0) -> dict:
    sizes = _sizes(nbytes, payload)
    n = len(sizes)
    pr = _classes(n, cls)
    socks = {}
    for c in range(8):
        sk = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sk.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, c << 2)
        sk.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
        sk.connect((addr, port))
        sk.setblocking(False)
        socks[c] = sk
    body = bytes(payload)
    todo = list(range(n))
    inflight: set[int] = set()
    rnd, sent_bytes = 1, 0
    if start_at > 0:                    # a common start for concurrent senders
        while (wait := start_at - time.time()) > 0:
            time.sleep(min(wait, 0.05))
        t0 = time.perf_counter() - (time.time() - start_at)
    else:
        t0 = time.perf_counter()
    last_heard = time.monotonic()
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        while todo and len(inflight) < window:
            i = todo.pop(0)
            c = pr[i]
            try:
                socks[c].send(_HDR.pack(DATA, i, rnd, int(not todo), c) + body[:sizes[i]])
            except BlockingIOError:
                todo.insert(0, i)
                break
            except ConnectionRefusedError:
                # an ICMP error from a send after the receiver finished: its DONE is on
                # the way (or lost, then the RTO repeats); the packet counts as sent
                pass
            inflight.add(i)
            sent_bytes += sizes[i]
        ready, _, _ = select.select(list(socks.values()), [], [], rto / 4)
        for sk in ready:
            while True:
                try:
                    data = sk.recv(65536)
                except (BlockingIOError, ConnectionRefusedError):
                    # refused: the ICMP error of a send after the receiver finished,
                    # reported on this socket; its DONE comes on the socket it answered
                    break
                last_heard = time.monotonic()
                kind, idx, r, _, _ = _HDR.unpack_from(data)
                if kind == ACK:
                    inflight.discard(idx)
                elif kind == NACK:
                    miss = struct.unpack_from(f"!{idx}I", data, _HDR.size)
                    rnd = r
                    inflight.difference_update(miss)
                    todo = [i for i in todo if i not in miss] + list(miss)
                elif kind == DONE:
                    return {"elapsed_s": time.perf_counter() - t0, "sent_bytes": sent_bytes,
                            "packets": n}
        if time.monotonic() - last_heard > rto and (inflight or not todo):
            todo = sorted(inflight) + todo if inflight else [n - 1]
            inflight.clear()
            rnd += 1
            last_heard = time.monotonic()
    return {"elapsed_s": None}


def run_messages(tb: Testbed, flows, *, payload: int = 1400, eps: float = 0.02,
                 window: int = 64, tail_timer: float = 5e-3, rto: float = 0.2,
                 port: int = 29711, timeout: float = 120.0, lead: float = 2.0) -> list[dict]:
    """Send concurrent messages on testbed ``tb``, ``flows`` as ``(src, dst, nbytes,
    cls)`` (``cls`` the DSCP class of every packet, or -1 for classes by position): one
    receiver per message (UDP port ``port + j``), all senders starting at one wall-clock
    instant ``lead`` seconds after the receivers are ready (with one flow, at once); each
    sender's elapsed time counts from that instant. Returns per message the sender's and
    the receiver's JSON records.

    Raises
    ------
    TestbedError
        If a peer fails or a message does not complete in ``timeout``.
    """
    rxs, txs = [], []
    try:
        for j, (_, dst, nbytes, cls) in enumerate(flows):
            rxs.append(subprocess.Popen(
                ["ip", "netns", "exec", tb.ns(dst), sys.executable, "-m",
                 "topocoll.testbed.dlcp_peer", "recv", tb.rank_addr[dst], str(port + j),
                 str(nbytes), str(payload), str(eps), str(tail_timer), str(timeout),
                 str(cls)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for (_, dst, _, _), rx in zip(flows, rxs, strict=True):
            if rx.stdout.readline().strip() != "ready":
                raise TestbedError(f"the DLCP receiver on rank {dst} did not start: "
                                   f"{rx.stderr.read()[-300:]}")
        start_at = time.time() + lead if len(flows) > 1 else 0.0
        for j, (src, dst, nbytes, cls) in enumerate(flows):
            txs.append(subprocess.Popen(
                ["ip", "netns", "exec", tb.ns(src), sys.executable, "-m",
                 "topocoll.testbed.dlcp_peer", "send", tb.rank_addr[dst], str(port + j),
                 str(nbytes), str(payload), str(window), str(rto), str(timeout), str(cls),
                 repr(start_at)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True))
        out = []
        for (src, dst, _, _), tx, rx in zip(flows, txs, rxs, strict=True):
            so, se = tx.communicate(timeout=timeout + lead + 30)
            if tx.returncode:
                raise TestbedError(f"the DLCP sender on rank {src} failed: {se[-300:]}")
            rec = json.loads(so.strip().splitlines()[-1])
            got = json.loads(rx.communicate(timeout=timeout + 30)[0].strip().splitlines()[-1])
            if rec.get("elapsed_s") is None or not got.get("complete"):
                raise TestbedError(f"the message from rank {src} to rank {dst} did not "
                                   "complete")
            out.append({"sender": rec, "receiver": got})
        return out
    finally:
        for p in rxs + txs:
            if p.poll() is None:
                p.kill()
                p.wait()


def run_message(tb: Testbed, src: int, dst: int, nbytes: int, **kw) -> dict:
    """One message from rank ``src`` to rank ``dst`` (:func:`run_messages` with one flow,
    classes by position)."""
    return run_messages(tb, [(src, dst, nbytes, -1)], **kw)[0]


def band_limits(queue_packets: int) -> tuple[int, ...]:
    """The eight bands' limits in packets for ports of ``queue_packets``: DLCP's
    selective-drop thresholds (:class:`~topocoll.sim.dlcp.queue_policies.SelectiveDrop`),
    each band a FIFO of its own."""
    from ..sim.dlcp.queue_policies import SelectiveDrop

    return tuple(max(1, int(t)) for t in SelectiveDrop(queue_packets, queues=8).thresholds)


def _engine_policy(bands, queue_packets: int, payload: int):
    """The engine's port for the testbed's: one drop-tail FIFO, or a FIFO per band with
    the same limits (``bands`` True for :func:`band_limits`, or the limits)."""
    from ..sim.dlcp.queue_policies import BandLimits, DropTail

    size = payload + 64
    if bands is False or bands is None:
        return DropTail(queue_packets * size)
    limits = band_limits(queue_packets) if bands is True else tuple(bands)
    return BandLimits(tuple(x * size for x in limits))


def compare_message(tb: Testbed, topology, src: int, dst: int, nbytes: int, *,
                    payload: int = 1400, eps: float = 0.02, window: int = 64,
                    queue_packets: int = 100, tail_timer: float = 5e-3,
                    bands: bool | tuple[int, ...] = False) -> dict:
    """One message measured on the testbed beside the packet engine's prediction for the
    same topology, packets, window, budget and queue length (drop-tail ports of
    ``queue_packets`` packets; with ``bands``, the testbed's strict-priority bands as the
    engine's :class:`~topocoll.sim.dlcp.queue_policies.BandLimits`: ``True`` for
    :func:`band_limits`, or the eight limits in packets given to the testbed)."""
    from ..sim.dlcp.engine import Message, simulate_messages
    from ..sim.dlcp.gradient_packets import GradientPacket

    got = run_message(tb, src, dst, nbytes, payload=payload, eps=eps, window=window,
                      tail_timer=tail_timer)
    sizes = _sizes(nbytes, payload)
    pk = tuple(GradientPacket(0, 0, i * payload, ln, _priority(i, len(sizes)))
               for i, ln in enumerate(sizes))
    policy = _engine_policy(bands, queue_packets, payload)
    e = simulate_messages(topology, [Message(0, src, dst, pk, eps=eps)], policy,
                          window=window,
                          payload=payload, tail_timer=tail_timer)
    meas, pred = got["sender"]["elapsed_s"], float(e.finish[0])
    return {"bytes": nbytes, "eps": eps, "window": window, "measured_s": meas,
            "predicted_s": pred, "error": meas / pred - 1,
            "measured_zero_filled": got["receiver"]["zero_filled"],
            "predicted_zero_filled": int(e.zero_filled[0]),
            "measured_retransmitted_bytes": got["sender"]["sent_bytes"] - nbytes,
            "predicted_retransmitted_bytes": e.retransmitted_bytes,
            "rounds": got["receiver"]["rounds"]}


def compare_contended(tb: Testbed, topology, flows, *, payload: int = 1400,
                      eps: float = 0.0, window: int = 32, queue_packets: int = 100,
                      tail_timer: float = 1.0, rto: float = 2.0,
                      bands: bool | tuple[int, ...] = True) -> list[dict]:
    """Concurrent messages ``flows`` (``(src, dst, nbytes, cls)``, every packet of a
    message in class ``cls``) measured on the testbed from one common start, beside the
    packet engine's prediction for the same messages: switch ports as strict-priority
    bands (``bands`` as in :func:`compare_message`: the engine's
    :class:`~topocoll.sim.dlcp.queue_policies.BandLimits`, a FIFO per band with the same
    limits) or one drop-tail FIFO of ``queue_packets`` packets. With ``window`` below the
    last band's limit (the default 32 against 100-packet ports, whose last bands hold
    30) nothing drops and the two differ only in how the port is shared; beyond it the
    starved class drops, which the testbed's sender learns from the receiver's NACK or its
    RTO and the engine's at once (a selective NACK per drop), so the times part.

    A message of a low class is starved while a higher one passes: the receiver's
    ``tail_timer`` and the sender's ``rto`` (silence before giving up on the rest of a
    round) must outlast that, or the testbed resends what was only waiting (the engine's
    timers start at a known end of round)."""
    from ..sim.dlcp.engine import Message, simulate_messages
    from ..sim.dlcp.gradient_packets import GradientPacket

    got = run_messages(tb, flows, payload=payload, eps=eps, window=window,
                       tail_timer=tail_timer, rto=rto)
    msgs = []
    for j, (src, dst, nbytes, cls) in enumerate(flows):
        sizes = _sizes(nbytes, payload)
        pr = _classes(len(sizes), cls)
        msgs.append(Message(j, src, dst, tuple(
            GradientPacket(j, 0, i * payload, ln, pr[i]) for i, ln in enumerate(sizes)),
            eps=eps))
    policy = _engine_policy(bands, queue_packets, payload)
    e = simulate_messages(topology, msgs, policy, window=window, payload=payload,
                          tail_timer=tail_timer)
    rows = []
    for j, ((src, dst, nbytes, cls), g) in enumerate(zip(flows, got, strict=True)):
        meas, pred = g["sender"]["elapsed_s"], float(e.finish[j])
        rows.append({"src": src, "dst": dst, "bytes": nbytes, "class": cls,
                     "bands": bands is not False, "measured_s": meas, "predicted_s": pred,
                     "error": meas / pred - 1,
                     "measured_retransmitted_bytes": g["sender"]["sent_bytes"] - nbytes,
                     "predicted_drops": int(e.drops.sum())})
    return rows


def main(argv: list[str]) -> int:
    if argv[0] == "recv":
        a, p, nb, pay, eps, tail, to = argv[1:8]
        cls = int(argv[8]) if len(argv) > 8 else -1
        out = receiver(a, int(p), int(nb), int(pay), float(eps), float(tail), float(to),
                       cls)
    else:
        a, p, nb, pay, win, rto, to = argv[1:8]
        cls = int(argv[8]) if len(argv) > 8 else -1
        start_at = float(argv[9]) if len(argv) > 9 else 0.0
        out = sender(a, int(p), int(nb), int(pay), int(win), float(rto), float(to), cls,
                     start_at)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
