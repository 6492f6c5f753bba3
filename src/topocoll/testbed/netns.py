"""An emulated cluster in Linux network namespaces: one namespace per rank and per switch.

:func:`up` turns a :class:`~topocoll.topology.Topology` into a live network on this machine:

- every node (rank or switch) is a namespace ``<prefix>-<node>`` with IPv4 forwarding on
  (switches are layer-3 forwarders, which keeps one mechanism for every fabric);
- every cable (a pair of nodes joined by links in either direction) is a veth pair created
  directly inside the two namespaces (nothing is ever created in the root namespace), with a
  /30 subnet from ``10.64.0.0/10``; inside a namespace the interface is called ``e<peer>``.
  Every testbed uses the same addresses, each inside its own namespaces, so testbeds
  never collide on addresses, interface names or ports, only on their names;
- every direction is shaped on its egress interface with HTB at the link's bandwidth
  (parallel links of a bundle add up) and a short FIFO; link latency is emulated by
  ``sch_netem`` (a netem child instead of the FIFO) when the kernel has it, else by the
  userspace delay line of :mod:`topocoll.testbed.delayline`: a delayed cable then runs
  through the relay namespace ``tcb<name>-d``, where one relay process per testbed holds
  every frame for its direction's latency (``Testbed.delay_mode`` says which);
- a rank's address is the address of its first interface; every namespace has one host
  route per rank along ``topology.path`` (next hop by next hop, so routing is
  destination-based shortest path); routes in a rank's namespace carry the rank's address
  as preferred source, so every connection is between two rank addresses.

Every namespace is named ``tcb<name>-<id>``, so :func:`down` finds and removes exactly this
testbed's namespaces, the processes inside them (workers, the relay) and with them every
interface, even after a crash (no state needed), idempotently. Traffic only uses addresses
that exist inside the namespaces the testbed created; the root namespace has no route to
them. Needs root and iproute2 (``ip``, ``tc``); :class:`TestbedError` says which is missing.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import TopocollError
from ..topology import Topology

__all__ = ["TestbedError", "Testbed", "up", "down", "load", "require_tools", "STATE_DIR",
           "netem_available", "delay_line_stats", "DELAY_MODES", "RELAY_MIN_DELAY",
           "check_name"]

STATE_DIR = Path(os.environ.get("TOPOCOLL_TESTBED_STATE", "/run/topocoll-testbed"))
_NAME = re.compile(r"^[a-z0-9]{1,12}$")
DELAY_MODES = ("auto", "netem", "relay", "off")
RELAY_MIN_DELAY = 100e-6   # the delay line's own resolution; shorter latencies stay unemulated
_RELAY_SCRIPT = Path(__file__).with_name("delayline.py")
_RELAYS: dict[str, subprocess.Popen] = {}   # relays this process started, reaped by down()
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
        False only when links have latency that is not applied (``delay="off"``).
    delay_mode : str
        How latency is applied: ``"netem"``, ``"relay"`` (the userspace delay line of
        :mod:`topocoll.testbed.delayline`), ``"none"`` (every latency is 0, or below
        :data:`RELAY_MIN_DELAY` where the delay line would be needed) or ``"off"``.
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
    delay_mode: str = "none"

    @property
    def prefix(self) -> str:
        """Prefix of every namespace and interface this testbed owns."""
        return f"tcb{self.name}"

    def ns(self, node: int) -> str:
        """Namespace name of ``node``."""
        return f"{self.prefix}-{node}"

    @property
    def relay_ns(self) -> str:
        """Namespace of the delay line (exists only when ``delay_mode == "relay"``)."""
        return f"{self.prefix}-d"


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
       queue_packets: int = 100, delay: str = "auto",
       band_limits: tuple[int, ...] | None = None) -> Testbed:
    """Build the emulated cluster for ``topology`` and return its description.

    Parameters
    ----------
    topology : Topology
        Bandwidths in bytes/s become HTB rates in bit/s; choose rates the CPU can carry
        (tens to hundreds of Mbit/s).
    name : str
        1-12 lower-case letters or digits; several testbeds with different names coexist
        (tests use their process id in the name).
    spec : str
        Recorded for ``testbed run`` and ``testbed bench``.
    queue_packets : int
        Queue length of every shaped direction. Short queues keep the TCP acknowledgements
        of a flow from waiting behind a full queue of another flow's data where both
        directions of a link are busy (bufferbloat); 100 packets is about 12 ms at 100 Mbit/s.
    band_limits : tuple of int, optional
        Switch ports as IEEE 802.1Q strict priority: eight bands selected by the DSCP
        field (DSCP ``c`` -> band ``c``, higher DSCP values in the last band), band ``b``
        a FIFO of ``band_limits[b]`` packets (DLCP's per-class drop thresholds, per band
        rather than over one shared buffer). Only on switch egress; hosts keep their FIFO.
        Not with netem (the bands replace its queue; use ``delay="relay"`` or ``"off"``).
    delay : {"auto", "netem", "relay", "off"}
        How link latency is emulated: ``auto`` uses netem when the kernel has it and the
        userspace delay line otherwise; ``off`` leaves it out. Links without latency never
        need either; the delay line leaves latencies below :data:`RELAY_MIN_DELAY` (its own
        resolution, e.g. the 1 us default of the topology generators) to the veth.

    Raises
    ------
    TestbedError
        Without root or iproute2, for a bad name or delay mode, if a testbed of that name
        exists, if ``delay="netem"`` and the kernel lacks it, or if a command fails
        (everything created so far is removed again).
    """
    require_tools()
    check_name(name)
    if delay not in DELAY_MODES:
        raise TestbedError(f"delay mode {delay!r}: use one of {', '.join(DELAY_MODES)}")
    pfx = f"tcb{name}"
    exists = TestbedError(f"testbed {name!r} already exists; run 'topocoll testbed down "
                          f"--name {name}' first")
    if any(n.startswith(pfx + "-") for n in _namespaces()):
        raise exists
    if band_limits is not None and (len(band_limits) != 8 or any(
            not isinstance(b, int) or b < 1 for b in band_limits)):
        raise TestbedError(f"band_limits needs 8 positive packet counts, got {band_limits!r}")
    if band_limits is not None and delay in ("auto", "netem") and netem_available() and \
            any(lk.latency > 0 for lk in topology.links):
        raise TestbedError("priority bands replace netem's queue: use delay 'relay' or 'off'")
    mode = "none"
    if any(lk.latency > 0 for lk in topology.links):
        mode = "off" if delay == "off" else "relay" if delay == "relay" else \
            "netem" if netem_available() else "relay"
        if delay == "netem" and mode != "netem":
            raise TestbedError("delay mode 'netem': this kernel has no sch_netem "
                               "(use --delay auto or relay)")
        if mode == "relay" and all(lk.latency < RELAY_MIN_DELAY for lk in topology.links):
            mode = "none"
    nodes = tuple(range(topology.num_nodes))
    # claiming namespace 0 is atomic: of two concurrent up() with one name, one fails here
    # and must not tear down the other's testbed
    if subprocess.run(["ip", "netns", "add", f"{pfx}-0"], capture_output=True).returncode:
        raise exists
    try:
        return _build(topology, name, pfx, nodes, spec, mode, queue_packets, band_limits)
    except BaseException:
        down(name)
        raise


def check_name(name: str) -> None:
    """Raise :class:`TestbedError` unless ``name`` is 1-12 lower-case letters or digits."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise TestbedError(f"testbed name {name!r}: use 1-12 lower-case letters or digits")


def _bands(dev: str, rate: int, limits: tuple[int, ...]) -> list[str]:
    """tc lines: strict priority over 8 bands with HTB (this kernel has no sch_prio): under
    the link's class 1:1, band ``b`` is class ``1:2b`` with a token rate of 8 kbit/s,
    ceiling the link rate and HTB priority ``b``, so every byte is borrowed and the lowest
    non-empty band always borrows first; its queue is a FIFO of ``limits[b]`` packets; a
    u32 filter on the DSCP field picks the band (non-IP frames go to band 7)."""
    lines = [f"qdisc add dev {dev} root handle 1: htb default 27",
             f"class add dev {dev} parent 1: classid 1:1 htb rate {rate}bit ceil {rate}bit "
             f"quantum 60000"]
    for b, k in enumerate(limits):
        lines += [f"class add dev {dev} parent 1:1 classid 1:2{b} htb rate 8kbit "
                  f"ceil {rate}bit prio {b} quantum 1514",
                  f"qdisc add dev {dev} parent 1:2{b} handle {30 + b}: pfifo limit {k}",
                  f"filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip "
                  f"tos {b << 2:#x} 0xfc flowid 1:2{b}"]
    return lines


def _build(topology, name, pfx, nodes, spec, mode, queue_packets, band_limits=None) \
        -> Testbed:
    for v in nodes[1:]:
        _run("ip", "netns", "add", f"{pfx}-{v}")
    cables = _cables(topology)
    relay_ns = f"{pfx}-d"
    delayed = {c for c, dirs in cables.items()
               if any(lat >= RELAY_MIN_DELAY for _, lat in dirs.values())}
    if mode != "relay":
        delayed = set()
    if delayed:
        _run("ip", "netns", "add", relay_ns)
        _run("ip", "netns", "exec", relay_ns, "sysctl", "-qw",   # no IPv6 chatter of its own
             "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
    links, relay_up, paths = [], ["link set lo up"], []
    addr: dict[tuple[int, int], str] = {}      # (node, peer) -> address of node on that cable
    cmds: dict[int, list[str]] = {v: ["link set lo up"] for v in nodes}
    tcs: dict[int, list[str]] = {v: [] for v in nodes}
    shaped = []
    for i, ((u, v), dirs) in enumerate(sorted(cables.items())):
        nu, nv = f"{pfx}-{u}", f"{pfx}-{v}"
        if (u, v) in delayed:   # u: e<v> -- r<i>u [relay] r<i>v -- v: e<u>
            links += [f"link add e{v} netns {nu} type veth peer name r{i}u netns {relay_ns}",
                      f"link add e{u} netns {nv} type veth peer name r{i}v netns {relay_ns}"]
            relay_up += [f"link set r{i}u up", f"link set r{i}v up"]
            lat = {d: dirs[d][1] if d in dirs else 0.0 for d in ((u, v), (v, u))}
            paths += [(f"r{i}u", f"r{i}v", lat[(u, v)]), (f"r{i}v", f"r{i}u", lat[(v, u)])]
        else:
            links.append(f"link add e{v} netns {nu} type veth peer name e{u} netns {nv}")
        base = _LINK_NET + 4 * i
        addr[(u, v)] = str(ipaddress.IPv4Address(base + 1))
        addr[(v, u)] = str(ipaddress.IPv4Address(base + 2))
        for x, y in ((u, v), (v, u)):
            cmds[x] += [f"addr add {addr[(x, y)]}/30 dev e{y}", f"link set e{y} up"]
        for (s, d), (bw, lat) in dirs.items():
            rate = int(round(bw * 8))
            if band_limits is not None and s >= topology.num_ranks:
                tcs[s] += _bands(f"e{d}", rate, tuple(band_limits))
                shaped.append((s, d, float(rate), float(lat)))
                continue
            tcs[s] += [f"qdisc add dev e{d} root handle 1: htb default 1",
                       f"class add dev e{d} parent 1: classid 1:1 htb rate {rate}bit "
                       f"ceil {rate}bit quantum 60000"]
            if mode == "netem" and lat > 0:
                tcs[s].append(f"qdisc add dev e{d} parent 1:1 handle 10: netem delay "
                              f"{lat * 1e6:.0f}us limit {queue_packets}")
            else:
                tcs[s].append(f"qdisc add dev e{d} parent 1:1 handle 10: pfifo "
                              f"limit {queue_packets}")
            shaped.append((s, d, float(rate), float(lat)))
    _batch(None, links)
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
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    if delayed:
        _batch(relay_ns, relay_up)
        _start_relay(name, relay_ns, paths)
    tb = Testbed(name, spec or topology.name, n, nodes, rank_addr,
                 tuple(f"e{p}" for p in rank_peer), tuple(shaped), mode != "off", mode)
    (STATE_DIR / f"{name}.json").write_text(json.dumps(asdict(tb)))
    return tb


def _start_relay(name: str, relay_ns: str, paths: list, timeout: float = 30.0) -> None:
    """Start the delay line in ``relay_ns`` and wait until its sockets are bound."""
    log = STATE_DIR / f"{name}.delayline.log"
    with open(log, "w") as err:
        p = subprocess.Popen(["ip", "netns", "exec", relay_ns, sys.executable,
                              str(_RELAY_SCRIPT), json.dumps(paths)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                             start_new_session=True, text=True)
    _RELAYS[name] = p
    ok = select.select([p.stdout], [], [], timeout)[0] and p.stdout.readline().strip() == "ready"
    p.stdout.close()   # the relay prints nothing more; its counters go to the log
    if not ok:
        raise TestbedError(f"the delay line of testbed {name!r} did not start: "
                           f"{log.read_text().strip()[-300:] or 'no output'}")


def delay_line_stats(tb: Testbed, timeout: float = 5.0) -> dict:
    """Counters of a testbed's delay line so far (it keeps running).

    Sends SIGUSR1 to the relay and returns the JSON line it appends to
    ``STATE_DIR/<name>.delayline.log``: ``frames``, ``bytes``, ``late_max_s``,
    ``late_p99_s``, ``dropped`` (counted since the previous report), and ``cpu_s``, the
    relay's CPU time since it started.

    Raises
    ------
    TestbedError
        If the testbed has no delay line, or it does not answer.
    """
    pids = _run("ip", "netns", "pids", tb.relay_ns, check=False).split()
    if tb.delay_mode != "relay" or not pids:
        raise TestbedError(f"testbed {tb.name!r} has no delay line (delay mode {tb.delay_mode})")
    log = STATE_DIR / f"{tb.name}.delayline.log"
    before = log.read_text().count("\n") if log.exists() else 0
    os.kill(int(pids[0]), signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        if len(lines) > before and lines[-1].startswith("{"):
            return json.loads(lines[-1])
        time.sleep(0.02)
    raise TestbedError(f"the delay line of testbed {tb.name!r} did not report its counters")


def _namespaces() -> list[str]:
    return [line.split()[0] for line in _run("ip", "netns", "list").splitlines() if line.strip()]


def down(name: str) -> list[str]:
    """Remove every namespace and leftover interface of testbed ``name``; idempotent.

    Works without the state file (after a crash): it removes what carries the prefix.
    Returns the names of the namespaces removed.
    """
    require_tools()
    check_name(name)
    pfx = f"tcb{name}"
    removed = []
    for ns in _namespaces():
        # exactly tcb<name>-<node> and tcb<name>-d: names have no '-', so another
        # testbed's namespaces never match
        if ns.startswith(pfx + "-") and re.fullmatch(r"\d+|d", ns[len(pfx) + 1:]):
            pids = _run("ip", "netns", "pids", ns, check=False).split()
            for pid in pids:   # workers and the relay inside belong to this testbed
                subprocess.run(["kill", "-9", pid], capture_output=True)
            _run("ip", "netns", "del", ns, check=False)
            removed.append(ns)
    relay = _RELAYS.pop(name, None)
    if relay is not None:   # started by this process: reap it
        relay.kill()
        relay.wait()
    (STATE_DIR / f"{name}.json").unlink(missing_ok=True)
    (STATE_DIR / f"{name}.delayline.log").unlink(missing_ok=True)
    return removed


def load(name: str) -> Testbed:
    """The running testbed ``name``.

    Raises
    ------
    TestbedError
        If it does not exist (or its namespaces are gone).
    """
    check_name(name)
    path = STATE_DIR / f"{name}.json"
    if not path.exists():
        raise TestbedError(f"no testbed named {name!r} is up (topocoll testbed up ...)")
    d = json.loads(path.read_text())
    tb = Testbed(d["name"], d["spec"], d["num_ranks"], tuple(d["nodes"]),
                 tuple(d["rank_addr"]), tuple(d["rank_iface"]),
                 tuple(tuple(x) for x in d["links"]), d["delay_emulated"],
                 d.get("delay_mode", "none"))
    if tb.ns(0) not in _namespaces():
        raise TestbedError(f"testbed {name!r} has a state file but no namespaces; run "
                           f"'topocoll testbed down --name {name}'")
    return tb
