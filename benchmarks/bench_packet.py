"""Benchmark: packet-level simulator speed, and wall time against ns-3 on the same scenarios.

Run with::

    .venv/bin/python benchmarks/bench_packet.py [--quick] [--no-ns3]

Part 1 (issue-6 target: >= 1 million packet events per second on one core): packet
events handled per second of CPU time (``time.process_time``) and of wall time, for
uncontended and contended scenarios. numba kernels are compiled before timing.

Part 2 (ns-3 cross-check scenarios, 10 Gb/s links, 1 us latency, 4 MB and 16 MB):
simulated time of our packet level and of ns-3 (``topocoll.sim.ns3.Ns3Sim``: TCP
NewReno, fixed seeds), and the wall-time ratio of ``Simulator::Run`` to our run. Our
packet level runs the same stated transport, ``Ns3Sim().packet_equivalent()`` (see
docs/design-sim.md). Importing ns-3 (tens of seconds) is not counted. Prints Markdown
tables.
"""

from __future__ import annotations

import argparse
import time


def _incast(n: int):
    from topocoll.collective import allgather
    from topocoll.schedule import ScheduleBuilder

    b = ScheduleBuilder(allgather(n + 1)).new_step()
    for i in range(1, n + 1):
        b.add(i, 0, [0])
    return b.build(name=f"{n}-to-1 incast")


def speed_cases(quick: bool):
    from topocoll.sim import poisson_traffic
    from topocoll.synth.ring import ring_allreduce
    from topocoll.topology import ring, star
    from topocoll.topology.spec import parse_spec

    k = 0.25 if quick else 1.0
    r8 = ring(8, bandwidth=12.5e9, latency=1e-6)
    ft = parse_spec("fattree:k=4,bw=100Gbps,lat=1us,routing=ecmp")
    shuffled = (0, 5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12, 1, 6, 11)
    yield "ring allreduce, 8-rank ring", r8, ring_allreduce(r8), 256e6 * k, {}
    yield ("16-to-1 incast, star, 256 KiB buffers", star(17, bandwidth=12.5e9, latency=1e-6),
           _incast(16), 17 * 4e6 * k, dict(buffer_bytes=2**18, drop_bytes=2**18,
                                            ecn_bytes=2**16, rto=2e-4))
    yield ("shuffled ring allreduce, k=4 fat-tree, per-packet spray", ft,
           ring_allreduce(ft, ranks=shuffled), 64e6 * k, dict(ecmp="spray", dupthresh=64))
    yield ("ring allreduce + 30% web-search background, k=4 fat-tree", ft, ring_allreduce(ft),
           64e6 * k, dict(background=poisson_traffic(ft, 0.3, 2e-3 * k, seed=1)))


def ns3_cases(quick: bool):
    from topocoll.synth.ring import ring_allreduce
    from topocoll.topology import ring, star
    from topocoll.topology.spec import parse_spec

    ft = parse_spec("fattree:k=4,bw=10Gbps,lat=1us,routing=ecmp")
    for mb in (1, 4) if quick else (4, 16):
        yield (f"ring allreduce, 8-rank ring, {mb} MB", ring(8, bandwidth=1.25e9, latency=1e-6),
               ring_allreduce(ring(8)), mb * 1e6)
        yield (f"16-to-1 incast, star, 16 x {mb / 16:g} MB",
               star(17, bandwidth=1.25e9, latency=1e-6), _incast(16), 17 * mb * 1e6 / 16)
        yield (f"ring allreduce, k=4 fat-tree, per-packet ECMP, {mb} MB", ft,
               ring_allreduce(ft), mb * 1e6)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-ns3", action="store_true", help="skip the ns-3 comparison")
    args = ap.parse_args(argv)
    from topocoll.sim import FlowSim, PacketSim
    from topocoll.synth.ring import ring_allreduce
    from topocoll.topology import ring

    warm = ring(4)
    PacketSim().run(ring_allreduce(warm), warm, 2**20)
    PacketSim(background=None, handshake=True, ack_priority=None).run(
        ring_allreduce(warm), warm, 2**20)
    print("| scenario | packets | events | drops | retransmits | wall s | CPU s | "
          "M events/s (CPU) | M events/s (wall) | packet / flow time |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, topo, sched, size, kw in speed_cases(args.quick):
        c0, w0 = time.process_time(), time.perf_counter()
        run = PacketSim(**kw).run(sched, topo, size)
        c1, w1 = time.process_time(), time.perf_counter()
        st = run.stats
        flow = FlowSim(bound=False).evaluate(sched, topo, size).time
        print(f"| {name} | {st['packets']:,} | {st['events']:,} | {st['drops']:,} | "
              f"{st['retransmits']:,} | {w1 - w0:.2f} | {c1 - c0:.2f} | "
              f"{st['events'] / (c1 - c0) / 1e6:.2f} | {st['events'] / (w1 - w0) / 1e6:.2f} | "
              f"{run.result.time / flow:.3f} |", flush=True)
    if args.no_ns3:
        return
    from topocoll.sim.ns3 import Ns3Sim, ns3_available

    if ns3_available():
        print(f"\nns-3 comparison skipped: {ns3_available()}")
        return
    t0 = time.perf_counter()
    from topocoll.sim.ns3 import _ns
    _ns()
    print(f"\nns-3 import and driver compilation: {time.perf_counter() - t0:.1f} s\n")
    print("| scenario | ns-3 time | our packet time | difference | ns-3 wall s (Run) | "
          "our wall s | wall ratio ns-3 / ours |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, topo, sched, size in ns3_cases(args.quick):
        ns = Ns3Sim().run(sched, topo, size)
        w0 = time.perf_counter()
        ours = Ns3Sim().packet_equivalent().run(sched, topo, size)
        w = time.perf_counter() - w0
        d = ours.result.time / ns.result.time - 1
        print(f"| {name} | {ns.result.time * 1e3:.3f} ms | {ours.result.time * 1e3:.3f} ms | "
              f"{100 * d:+.1f}% | {ns.wall_s:.2f} | {w:.2f} | {ns.wall_s / w:.0f}x |", flush=True)


if __name__ == "__main__":
    main()
