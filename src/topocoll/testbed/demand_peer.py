"""One rank of :func:`topocoll.testbed.demand.run_phases`, run inside its namespace.

``python -m topocoll.testbed.demand_peer PLAN RANK``. The plan (JSON) has every rank's
address, the port and the phases. Protocol on stdin/stdout, one line each: print
``listening``; on ``next`` connect to every rank this one sends to (the first 4 bytes
name the sender) and print ``connected``; on ``next`` wait until every rank that sends
here has connected and print ``accepted``; on ``go K`` send this rank's row of phase
``K`` and print ``done K <end> <first>`` (monotonic seconds) once this rank's column of
phase ``K`` has arrived (``first``: its first byte; both ``end`` when it receives
nothing); ``quit`` ends. Senders and receivers are threads (the socket calls release the
GIL); the data is one zero buffer sent again and again.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time

__all__ = ["main"]

_CHUNK = 1 << 20


def main(argv: list[str] | None = None) -> int:
    plan_path, rank = (argv or sys.argv[1:])[:2]
    me = int(rank)
    plan = json.loads(open(plan_path).read())
    addrs, port, phases = plan["addrs"], int(plan["port"]), plan["phases"]
    n = len(addrs)
    dsts = [t for t in range(n) if t != me and any(ph[me][t] for ph in phases)]
    srcs = [s for s in range(n) if s != me and any(ph[s][me] for ph in phases)]
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((addrs[me], port))
    lst.listen(n)
    print("listening", flush=True)
    _wait("next")
    out = {}
    for t in dsts:
        c = socket.create_connection((addrs[t], port), timeout=60)
        c.settimeout(None)
        c.sendall(me.to_bytes(4, "big"))
        out[t] = c
    print("connected", flush=True)
    _wait("next")
    inc = {}
    while len(inc) < len(srcs):
        c, _ = lst.accept()
        who = int.from_bytes(_read_exact(c, 4), "big")
        inc[who] = c
    print("accepted", flush=True)
    got = {s: 0 for s in srcs}
    need = {s: 0 for s in srcs}
    first = [None]                         # when this phase's first byte arrived
    cond = threading.Condition()

    def receive(s: int, c: socket.socket) -> None:
        buf = bytearray(_CHUNK)
        while True:
            k = c.recv_into(buf)
            if not k:
                return
            with cond:
                if first[0] is None:
                    first[0] = time.monotonic()
                got[s] += k
                cond.notify_all()

    for s, c in inc.items():
        threading.Thread(target=receive, args=(s, c), daemon=True).start()
    data = memoryview(bytes(_CHUNK))

    def send(c: socket.socket, nbytes: int) -> None:
        while nbytes > 0:
            k = min(nbytes, _CHUNK)
            c.sendall(data[:k])
            nbytes -= k

    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        k = int(cmd[1])
        ph = phases[k]
        with cond:
            first[0] = None
        threads = [threading.Thread(target=send, args=(out[t], int(ph[me][t])))
                   for t in dsts if ph[me][t]]
        for th in threads:
            th.start()
        with cond:
            for s in srcs:
                need[s] += int(ph[s][me])
            cond.wait_for(lambda: all(got[s] >= need[s] for s in srcs))
            end = time.monotonic()
        for th in threads:
            th.join()
        print(f"done {k} {end!r} {first[0] if first[0] is not None else end!r}", flush=True)
    for c in out.values():
        c.close()
    return 0


def _wait(word: str) -> None:
    line = sys.stdin.readline().strip()
    if line != word:
        raise SystemExit(f"expected {word!r} on stdin, got {line!r}")


def _read_exact(c: socket.socket, k: int) -> bytes:
    b = b""
    while len(b) < k:
        x = c.recv(k - len(b))
        if not x:
            raise SystemExit("a sender closed before naming itself")
        b += x
    return b


if __name__ == "__main__":
    sys.exit(main())
