"""Start processes inside a testbed's namespaces: torch workers and a link-rate probe.

Every worker is started with ``ip netns exec <ns> <argv>`` and gets the usual
torch.distributed environment: ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` (rank 0's testbed
address), ``MASTER_PORT`` and ``GLOO_SOCKET_IFNAME`` (the interface holding the rank's
address), so gloo only talks over the addresses the testbed created.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass

from .netns import Testbed, TestbedError

__all__ = ["WorkerResult", "start_workers", "run_workers", "measure_throughput", "measure_rtt",
           "worker_env"]


@dataclass(frozen=True)
class WorkerResult:
    """Exit status and combined output of one rank's worker."""

    rank: int
    returncode: int
    output: str


def worker_env(tb: Testbed, rank: int, port: int, extra: dict | None = None) -> dict:
    """Environment of rank ``rank``'s worker."""
    env = dict(os.environ)
    env.update({"RANK": str(rank), "WORLD_SIZE": str(tb.num_ranks), "MASTER_ADDR": tb.rank_addr[0],
                "MASTER_PORT": str(port), "GLOO_SOCKET_IFNAME": tb.rank_iface[rank],
                "TOPOCOLL_TESTBED": tb.name, "TOPOCOLL_RANK_ADDRS": ",".join(tb.rank_addr),
                "OMP_NUM_THREADS": "1"})
    env.update(extra or {})
    return env


def start_workers(tb: Testbed, argv: list[str], *, port: int = 29511,
                  env: dict | None = None) -> list[subprocess.Popen]:
    """Start ``argv`` once per rank inside the rank's namespace; returns the processes.

    ``ip netns exec`` replaces itself with ``argv``, so each process id is the worker's.
    """
    procs = []
    for r in range(tb.num_ranks):
        procs.append(subprocess.Popen(["ip", "netns", "exec", tb.ns(r), *argv],
                                      env=worker_env(tb, r, port, env), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    return procs


def run_workers(tb: Testbed, argv: list[str], *, timeout: float = 600.0, port: int = 29511,
                env: dict | None = None) -> list[WorkerResult]:
    """Run ``argv`` on every rank and wait for all; kills every worker after ``timeout``.

    Raises
    ------
    TestbedError
        If the workers do not finish within ``timeout`` seconds.
    """
    procs = start_workers(tb, argv, port=port, env=env)
    deadline = time.monotonic() + timeout
    out = []
    try:
        for r, p in enumerate(procs):
            try:
                text = p.communicate(timeout=max(0.1, deadline - time.monotonic()))[0]
            except subprocess.TimeoutExpired as e:
                raise TestbedError(f"testbed {tb.name}: rank {r} still running after "
                                   f"{timeout:g} s") from e
            out.append(WorkerResult(r, p.returncode, text))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return out


_SINK = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0; t0 = None; buf = bytearray(1 << 20)
while True:
    k = c.recv_into(buf)
    if not k: break
    if t0 is None: t0 = time.monotonic(); first = k
    else: n += k
    t1 = time.monotonic()
print(n, t1 - t0, flush=True)
"""

_SOURCE = """
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])))
end = time.monotonic() + float(sys.argv[3])
data = bytes(1 << 16)
while time.monotonic() < end: c.sendall(data)
c.close()
"""


def measure_throughput(tb: Testbed, src: int, dst: int, seconds: float = 2.0,
                       port: int = 29611) -> float:
    """TCP goodput from rank ``src`` to rank ``dst`` in bytes/s, measured at the receiver.

    The first received segment only starts the clock, so connection set-up and slow start
    on an empty pipe are excluded as far as possible; the result is payload bytes, so it is
    a few percent below the shaped rate (TCP/IP/Ethernet headers).

    Raises
    ------
    TestbedError
        If a probe fails.
    """
    sink = subprocess.Popen(["ip", "netns", "exec", tb.ns(dst), sys.executable, "-c", _SINK,
                             tb.rank_addr[dst], str(port)], stdout=subprocess.PIPE, text=True)
    try:
        if sink.stdout.readline().strip() != "ready":
            raise TestbedError(f"throughput probe could not listen on rank {dst}")
        src_p = subprocess.run(["ip", "netns", "exec", tb.ns(src), sys.executable, "-c", _SOURCE,
                                tb.rank_addr[dst], str(port), str(seconds)],
                               capture_output=True, text=True, timeout=seconds + 60)
        if src_p.returncode:
            raise TestbedError(f"throughput probe from rank {src} failed: {src_p.stderr[-300:]}")
        n, dt = sink.communicate(timeout=60)[0].split()
        return float(n) / float(dt)
    finally:
        if sink.poll() is None:
            sink.kill()


_ECHO = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2]))); print("ready", flush=True)
s.settimeout(float(sys.argv[3]))
try:
    while True:
        d, a = s.recvfrom(2048); s.sendto(d, a)
except socket.timeout:
    pass
"""

_PING = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
s.connect((sys.argv[1], int(sys.argv[2])))
for i in range(int(sys.argv[3])):
    t0 = time.perf_counter(); s.send(i.to_bytes(4, "big") + bytes(60))
    while int.from_bytes(s.recv(2048)[:4], "big") != i: pass
    print(time.perf_counter() - t0, flush=True); time.sleep(0.01)
"""


def measure_rtt(tb: Testbed, src: int, dst: int, count: int = 20,
                port: int = 29612) -> list[float]:
    """Round-trip times in seconds of ``count`` 64-byte UDP datagrams from ``src`` to ``dst``
    and back (echoed by a process in ``dst``'s namespace), in order.

    Like ``ping`` but needs no ICMP tool; the probes are 10 ms apart, so they never queue
    behind each other.

    Raises
    ------
    TestbedError
        If a probe fails or a datagram gets no answer within 5 s.
    """
    echo = subprocess.Popen(["ip", "netns", "exec", tb.ns(dst), sys.executable, "-c", _ECHO,
                             tb.rank_addr[dst], str(port), "10"], stdout=subprocess.PIPE,
                            text=True)
    try:
        if echo.stdout.readline().strip() != "ready":
            raise TestbedError(f"rtt probe could not listen on rank {dst}")
        p = subprocess.run(["ip", "netns", "exec", tb.ns(src), sys.executable, "-c", _PING,
                            tb.rank_addr[dst], str(port), str(count)],
                           capture_output=True, text=True, timeout=60 + count)
        if p.returncode:
            raise TestbedError(f"rtt probe from rank {src} to rank {dst} failed: "
                               f"{p.stderr.strip().splitlines()[-1:]}")
        return [float(x) for x in p.stdout.split()]
    finally:
        echo.kill()
        echo.wait()
