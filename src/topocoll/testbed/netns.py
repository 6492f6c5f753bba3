"""An emulated cluster in Linux network namespaces: one namespace per rank and per switch.

:func:`up` turns a :class:`~topocoll.topology.Topology` into a live network on this machine:

- every node (rank or switch) is a namespace ``<prefix>-<node>`` with IPv4 forwarding on
  (switches are layer-3 forwarders, which keeps one mechanism for every fabric);
- every cable (a pair of nodes joined by links in either direction) is a veth pair with a
  /30 subnet from ``10.64.0.0/10``; inside a namespace the interface is called ``e<peer>``;
- every direction is shaped on its egress interface with HTB at the link's bandwidth
  (parallel links of a bundle add up) and, when the kernel has ``sch_netem``, a netem
  child with the link's latency. Without netem, latency is *not* emulated: the testbed
  records this (``delay_emulated``) and the CLI says so;
- a rank's address is the address of its first interface; every namespace has one host
  route per rank along ``topology.path`` (next hop by next hop, so routing is
  destination-based shortest path); routes in a rank's namespace carry the rank's address
  as preferred source, so every connection is between two rank addresses.

Everything is named with the prefix ``tcb<name>``, so :func:`down` finds and removes it
all even after a crash (no state needed) and is idempotent. Traffic only uses addresses
that exist inside the namespaces the testbed created; the root namespace has no route to
them. Needs root and iproute2 (``ip``, ``tc``); :class:`TestbedError` says which is missing.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import TopocollError
from ..topology import Topology

__all__ = ["TestbedError", "Testbed", "up", "down", "load", "require_tools", "STATE_DIR",
           "netem_available"]

STATE_DIR = Path(os.environ.get("TOPOCOLL_TESTBED_STATE", "/run/topocoll-testbed"))
_NAME = re.compile(r"^[a-z0-9]{1,5}$")
_LINK_NET = int(ipaddress.IPv4Address("10.64.0.0"))


class TestbedError(TopocollError, RuntimeError):
    """The emulated cluster cannot be built, used or removed (message says why)."""

    __test__ = False   # not a pytest test class despite the name


@dataclass(frozen=True)
class Testbed:
    """A running emulated cluster (also stored as JSON under :data:`STATE_DIR`).

    Attributes
    ----------
    name : str
        Short id given to :func:`up`; the prefix of every object is ``tcb<name>``.
    spec : str
        The topology spec or file it was built from.
    num_ranks : int
    nodes : tuple of int
        Every namespace's node id (ranks first, then switches).
    rank_addr : tuple of str
        IPv4 address of each rank.
    rank_iface : tuple of str
        Interface that holds each rank's address (for ``GLOO_SOCKET_IFNAME``).
    links : tuple of tuple
        ``(src, dst, rate_bit_s, delay_s)`` per shaped direction.
    delay_emulated : bool
        True when netem applied the link latencies.
    """

    __test__ = False

    name: str
    spec: str
    num_ranks: int
    nodes: tuple[int, ...]
    rank_addr: tuple[str, ...]
    rank_iface: tuple[str, ...]
    links: tuple[tuple[int, int, float, float], ...]
    delay_emulated: bool

    @property
    def prefix(self) -> str:
        """Prefix of every namespace and interface this testbed owns."""
        return f"tcb{self.name}"

    def ns(self, node: int) -> str:
        """Namespace name of ``node``."""
        return f"{self.prefix}-{node}"


def require_tools() -> None:
    """Raise :class:`TestbedError` unless running as root with ``ip`` and ``tc`` installed."""
    if os.geteuid() != 0:
        raise TestbedError(f"the testbed needs root (running as uid {os.geteuid()})")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise TestbedError(f"the testbed needs iproute2: '{tool}' not found "
                               f"(apt-get install iproute2)")


def _run(*args: str, check: bool = True, input: str | None = None) -> str:
    p = subprocess.run(args, capture_output=True, text=True, input=input)
    if check and p.returncode != 0:
        raise TestbedError(f"{' '.join(args[:6])}... failed: {p.stderr.strip() or p.stdout}")
    return p.stdout


def _batch(ns: str | None, lines: list[str], tool: str = "ip") -> None:
    if lines:
        base = [tool] + (["-n", ns] if ns else [])
        _run(*base, "-batch", "-", input="\n".join(lines) + "\n")


def netem_available() -> bool:
    """True if the kernel can add a netem qdisc (checked in a throw-away namespace)."""
    require_tools()
    ns = f"tcbprobe{os.getpid()}"
    _run("ip", "netns", "add", ns)
    try:
        _run("ip", "-n", ns, "link", "add", "name", "pa", "type", "veth", "peer", "name", "pb")
        return subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", "pa", "root", "netem",
                               "delay", "1ms"], capture_output=True).returncode == 0
    finally:
        _run("ip", "netns", "del", ns, check=False)


def _cables(topology: Topology) -> dict[tuple[int, int], dict[tuple[int, int], list]]:
    """(u, v) with u < v -> {direction: [bandwidth sum, max latency]}."""
    out: dict = {}
    for lk in topology.links:
        key = (min(lk.src, lk.dst), max(lk.src, lk.dst))
        d = out.setdefault(key, {}).setdefault((lk.src, lk.dst), [0.0, 0.0])
        d[0] += lk.bandwidth
        d[1] = max(d[1], lk.latency)
    return out


def up(topology: Topology, *, name: str = "0", spec: str = "",
       queue_packets: int = 100) -> Testbed:
    """Build the emulated cluster for ``topology`` and return its description.

    Parameters
    ----------
    topology : Topology
        Bandwidths in bytes/s become HTB rates in bit/s; choose rates the CPU can carry
        (tens to hundreds of Mbit/s).
    name : str
        1-5 lower-case letters or digits; several testbeds with different names coexist.
    spec : str
        Recorded for ``testbed run`` and ``testbed bench``.
    queue_packets : int
        Queue length of every shaped direction. Short queues keep the TCP acknowledgements
        of a flow from waiting behind a full queue of another flow's data where both
        directions of a link are busy (bufferbloat); 100 packets is about 12 ms at 100 Mbit/s.

    Raises
    ------
    TestbedError
        Without root or iproute2, for a bad name, if a testbed of that name exists, or if a
        command fails (everything created so far is removed again).
    """
    require_tools()
    if not _NAME.match(name):
        raise TestbedError(f"testbed name {name!r}: use 1-5 lower-case letters or digits")
    pfx = f"tcb{name}"
    if any(n.startswith(pfx + "-") for n in _namespaces()):
        raise TestbedError(f"testbed {name!r} already exists; run 'topocoll testbed down "
                           f"--name {name}' first")
    delay_ok = netem_available()
    nodes = tuple(range(topology.num_nodes))
    try:
        return _build(topology, name, pfx, nodes, spec, delay_ok, queue_packets)
    except BaseException:
        down(name)
        raise


def _build(topology, name, pfx, nodes, spec, delay_ok, queue_packets) -> Testbed:
    for v in nodes:
        _run("ip", "netns", "add", f"{pfx}-{v}")
    cables = _cables(topology)
    addr: dict[tuple[int, int], str] = {}      # (node, peer) -> address of node on that cable
    cmds: dict[int, list[str]] = {v: ["link set lo up"] for v in nodes}
    tcs: dict[int, list[str]] = {v: [] for v in nodes}
    shaped = []
    for i, ((u, v), dirs) in enumerate(sorted(cables.items())):
        a, b = f"{pfx}v{i}a", f"{pfx}v{i}b"
        _run("ip", "link", "add", "name", a, "type", "veth", "peer", "name", b)
        _run("ip", "link", "set", a, "netns", f"{pfx}-{u}", "name", f"e{v}")
        _run("ip", "link", "set", b, "netns", f"{pfx}-{v}", "name", f"e{u}")
        base = _LINK_NET + 4 * i
        addr[(u, v)] = str(ipaddress.IPv4Address(base + 1))
        addr[(v, u)] = str(ipaddress.IPv4Address(base + 2))
        for x, y in ((u, v), (v, u)):
            cmds[x] += [f"addr add {addr[(x, y)]}/30 dev e{y}", f"link set e{y} up"]
        for (s, d), (bw, lat) in dirs.items():
            rate = int(round(bw * 8))
            tcs[s] += [f"qdisc add dev e{d} root handle 1: htb default 1",
                       f"class add dev e{d} parent 1: classid 1:1 htb rate {rate}bit "
                       f"ceil {rate}bit quantum 60000"]
            if delay_ok and lat > 0:
                tcs[s].append(f"qdisc add dev e{d} parent 1:1 handle 10: netem delay "
                              f"{lat * 1e6:.0f}us limit {queue_packets}")
            else:
                tcs[s].append(f"qdisc add dev e{d} parent 1:1 handle 10: pfifo "
                              f"limit {queue_packets}")
            shaped.append((s, d, float(rate), float(lat)))
    n = topology.num_ranks
    rank_peer = [min(p for (x, p) in addr if x == r) for r in range(n)]
    rank_addr = tuple(addr[(r, rank_peer[r])] for r in range(n))
    for v in nodes:
        for d in range(n):
            if d != v:
                nh = topology.path(v, d)[1]
                src = f" src {rank_addr[v]}" if v < n else ""   # replies come back to it
                cmds[v].append(f"route add {rank_addr[d]}/32 via {addr[(nh, v)]} dev e{nh}{src}")
    for v in nodes:
        _batch(f"{pfx}-{v}", cmds[v])
        _batch(f"{pfx}-{v}", tcs[v], tool="tc")
        _run("ip", "netns", "exec", f"{pfx}-{v}", "sysctl", "-qw", "net.ipv4.ip_forward=1",
             "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0")
    tb = Testbed(name, spec or topology.name, n, nodes, rank_addr,
                 tuple(f"e{p}" for p in rank_peer), tuple(shaped), delay_ok)
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    (STATE_DIR / f"{name}.json").write_text(json.dumps(asdict(tb)))
    return tb


def _namespaces() -> list[str]:
    return [line.split()[0] for line in _run("ip", "netns", "list").splitlines() if line.strip()]


def down(name: str) -> list[str]:
    """Remove every namespace and leftover interface of testbed ``name``; idempotent.

    Works without the state file (after a crash): it removes what carries the prefix.
    Returns the names of the namespaces removed.
    """
    require_tools()
    if not _NAME.match(name):
        raise TestbedError(f"testbed name {name!r}: use 1-5 lower-case letters or digits")
    pfx = f"tcb{name}"
    removed = []
    for ns in _namespaces():
        if ns.startswith(pfx + "-"):
            pids = _run("ip", "netns", "pids", ns, check=False).split()
            for pid in pids:   # workers still running inside belong to this testbed
                subprocess.run(["kill", "-9", pid], capture_output=True)
            _run("ip", "netns", "del", ns, check=False)
            removed.append(ns)
    for line in _run("ip", "-o", "link", "show").splitlines():
        m = re.match(r"^\d+: ([^:@]+)", line)
        if m and re.fullmatch(rf"{pfx}v\d+[ab]", m.group(1)):
            _run("ip", "link", "del", m.group(1), check=False)
    (STATE_DIR / f"{name}.json").unlink(missing_ok=True)
    return removed


def load(name: str) -> Testbed:
    """The running testbed ``name``.

    Raises
    ------
    TestbedError
        If it does not exist (or its namespaces are gone).
    """
    path = STATE_DIR / f"{name}.json"
    if not path.exists():
        raise TestbedError(f"no testbed named {name!r} is up (topocoll testbed up ...)")
    d = json.loads(path.read_text())
    tb = Testbed(d["name"], d["spec"], d["num_ranks"], tuple(d["nodes"]),
                 tuple(d["rank_addr"]), tuple(d["rank_iface"]),
                 tuple(tuple(x) for x in d["links"]), d["delay_emulated"])
    if tb.ns(0) not in _namespaces():
        raise TestbedError(f"testbed {name!r} has a state file but no namespaces; run "
                           f"'topocoll testbed down --name {name}'")
    return tb
