"""A userspace delay line: link latency for kernels without ``sch_netem``.

A delayed cable ``u - v`` of a testbed does not join the two namespaces directly; it runs
through a relay namespace ``tcb<name>-d``::

    u: e<v> ==veth== r<i>u  [relay namespace]  r<i>v ==veth== v: e<u>

One relay process per testbed (:func:`serve`) holds an ``AF_PACKET`` socket on every relay
interface. Every frame received on ``r<i>u`` is written to ``r<i>v`` once the delay of the
direction ``u -> v`` has passed since the kernel received it (and the other way round), so
the relay is a transparent Ethernet cable with latency: ARP, IPv4 and TCP pass unchanged
and the two ends see each other's MAC addresses. Rate shaping stays in the kernel (HTB on
the ranks' and switches' egress interfaces), so a frame is shaped first and delayed after,
as with an HTB class whose child is netem.

How it stays cheap and exact:

- **Frames keep their offload state.** The sockets use ``PACKET_VNET_HDR``: each frame
  comes with the kernel's virtio-net header (checksum still to be filled in, GSO segment
  size) and is written back with the same header, so TCP segmentation offload and partial
  checksums survive the relay. The relay moves TSO super-frames of up to 64 KiB instead
  of 1514-byte frames (far fewer system calls per byte), and it never computes a
  checksum. GSO, TSO and GRO therefore need not be switched off (no ``ethtool``).
- **Arrival times come from the kernel** (``SO_TIMESTAMPNS``), so a frame that waits in the
  socket buffer while the relay is descheduled still leaves at arrival + delay.
- **Real-time priority.** The relay runs ``SCHED_FIFO`` (else ``nice -10``): on two busy
  cores an ordinary process woke up to 9 ms late, adding that to the delay; as a real-time
  process its frames leave within 0.2 ms of their deadline (p99). It only computes when
  frames move (at most about a third of a core, measured), and the kernel's real-time
  throttling caps it at 95 % of a core in any case.
- **One FIFO per direction.** The delay of a direction is constant, so deadlines arrive in
  order and a deque per direction replaces a heap; the loop sleeps in ``select`` (which
  takes microseconds, unlike ``epoll``'s milliseconds) until the earliest head is due.
- **Own frames are ignored** (``PACKET_IGNORE_OUTGOING``), so nothing loops.

This file imports only the standard library and is started as a script
(``python delayline.py CONFIG``), so the relay starts fast and does not load the package.
The CONFIG is a JSON list of ``[in_iface, out_iface, delay_s]``. It prints ``ready`` once
every socket is bound; on SIGUSR1 it writes one JSON line of counters to stderr
(``frames``, ``bytes``, ``late_max_s``: the largest time a frame left after its
deadline, ``late_p99_s``, ``dropped``: frames lost to a full socket buffer, ``cpu_s``:
its CPU time so far); SIGTERM ends it.

Limits, measured in ``docs/design-runtime.md``: a single Python process on a shared core;
beyond a few hundred Mbit/s in total the relay itself becomes the bottleneck and adds
delay (visible in ``late_max_s``).

References
----------
.. [1] S. Hemminger, "Network Emulation with NetEm", linux.conf.au, 2005.
.. [2] L. Rizzo, "Dummynet: a simple approach to the evaluation of network protocols",
   ACM SIGCOMM CCR 27(1), 1997.
"""

from __future__ import annotations

import collections
import json
import os
import select
import signal
import socket
import struct
import sys
import time

__all__ = ["serve", "main"]

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_VNET_HDR = 15
PACKET_IGNORE_OUTGOING = 23
PACKET_STATISTICS = 6
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
SCM_TIMESTAMPNS = SO_TIMESTAMPNS
_FRAME_MAX = 65536 + 10 + 18     # GSO payload + virtio-net header + Ethernet/VLAN header
_RCVBUF = 8 << 20
_BURST = 32
SO_RCVBUFFORCE = 33   # not exported by the socket module


def _open(iface: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, _RCVBUF)
    s.bind((iface, 0))
    return s


def serve(paths: list[tuple[str, str, float]], *, ready=None, poll=None) -> dict:
    """Relay frames between interfaces, each direction after its own delay.

    Parameters
    ----------
    paths : list of (str, str, float)
        ``(in_iface, out_iface, delay_s)``: frames received on ``in_iface`` leave on
        ``out_iface`` ``delay_s`` seconds after the kernel received them. An interface may
        be the input of one path only.
    ready : callable, optional
        Called once every socket is bound.
    poll : callable, optional
        ``poll(counters)`` is called at least every 50 ms; the loop ends when it returns
        True. ``counters()`` returns the counters since its previous call (see Returns).

    Returns
    -------
    dict
        Counters since the last ``counters()`` call: ``frames`` and ``bytes`` relayed,
        ``late_max_s`` and ``late_p99_s`` (time a frame left after its deadline),
        ``dropped`` (frames the kernel dropped because the relay's socket buffer was full).

    Examples
    --------
    >>> serve([("lo", "lo", 0.0), ("lo", "lo", 1.0)])
    Traceback (most recent call last):
    ...
    ValueError: interface lo is the input of more than one delayed direction
    """
    ins = [p[0] for p in paths]
    for name in ins:
        if ins.count(name) > 1:
            raise ValueError(f"interface {name} is the input of more than one delayed direction")
    for _, _, d in paths:
        if not d >= 0:
            raise ValueError(f"delay must be >= 0 s, got {d}")
    socks: dict[str, socket.socket] = {}
    for p in paths:
        for name in p[:2]:
            if name not in socks:
                socks[name] = _open(name)
    route = {socks[i].fileno(): (socks[i], socks[o], float(d), collections.deque())
             for i, o, d in paths}
    queues = [r[3] for r in route.values()]
    readable = [r[0] for r in route.values()]
    buf = bytearray(_FRAME_MAX)
    view = memoryview(buf)
    count = [0, 0]   # frames, bytes
    late: list[float] = []

    def counters() -> dict:
        dropped = 0
        for s in socks.values():
            # struct tpacket_stats {unsigned tp_packets, tp_drops}; reading resets them
            dropped += struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))[1]
        late.sort()
        out = {"frames": count[0], "bytes": count[1],
               "late_max_s": late[-1] if late else 0.0,
               "late_p99_s": late[int(0.99 * (len(late) - 1))] if late else 0.0,
               "dropped": dropped}
        count[:] = [0, 0]
        late.clear()
        return out

    if ready:
        ready()
    while not (poll and poll(counters)):
        now = time.time()
        due = min((q[0][0] for q in queues if q), default=None)
        timeout = None if due is None else max(0.0, due - now)
        if poll and (timeout is None or timeout > 0.05):
            timeout = 0.05
        r, _, _ = select.select(readable, [], [], timeout)
        for s in r:
            _, out, delay, q = route[s.fileno()]
            for _ in range(_BURST):   # bounded, so due frames are not held up by arrivals
                try:
                    n, anc, flags, _ = s.recvmsg_into([view], 64, socket.MSG_DONTWAIT)
                except (BlockingIOError, InterruptedError):
                    break
                stamp = None
                for lvl, typ, data in anc:
                    if lvl == socket.SOL_SOCKET and typ == SCM_TIMESTAMPNS:
                        sec, nsec = struct.unpack("qq", data[:16])
                        stamp = sec + nsec * 1e-9
                if flags & socket.MSG_TRUNC:
                    continue   # larger than any GSO frame: cannot happen on a veth
                q.append(((stamp or time.time()) + delay, bytes(view[:n])))
        now = time.time()
        for _, out, _, q in route.values():
            while q and q[0][0] <= now:
                deadline, frame = q.popleft()
                try:
                    out.send(frame)
                except OSError:
                    continue   # the far end went away (testbed coming down): drop
                count[0] += 1
                count[1] += len(frame)
                if len(late) < 1_000_000:
                    late.append(now - deadline)
    out = counters()
    for s in socks.values():
        s.close()
    return out


def main(argv: list[str] | None = None) -> int:
    """``python delayline.py '[["r0u", "r0v", 0.005], ["r0v", "r0u", 0.005]]'``."""
    argv = sys.argv[1:] if argv is None else argv
    paths = [(str(i), str(o), float(d)) for i, o, d in json.loads(argv[0])]
    try:   # frames wait for this process: wake it ahead of the workers it serves
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except OSError:
        try:
            os.nice(-10)
        except OSError:   # no privilege: normal priority; lateness shows in the stats
            pass
    flags: set[str] = set()
    signal.signal(signal.SIGTERM, lambda *_: flags.add("stop"))
    signal.signal(signal.SIGUSR1, lambda *_: flags.add("report"))

    def report(counters) -> None:
        flags.discard("report")
        c = counters()
        c["cpu_s"] = sum(os.times()[:2])
        sys.stderr.write(json.dumps(c) + "\n")
        sys.stderr.flush()

    def poll(counters) -> bool:
        if "report" in flags:
            report(counters)
        return "stop" in flags

    serve(paths, ready=lambda: print("ready", flush=True), poll=poll)
    return 0


if __name__ == "__main__":
    sys.exit(main())
