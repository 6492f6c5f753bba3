"""Cost and limits of the userspace delay line (topocoll.testbed.delayline).

For each shaped rate, builds ``line:2`` twice, with the link latency applied by the delay
line and without latency (no relay), and measures one TCP flow's goodput for a few
seconds, the relay's CPU time per second of traffic, how late the relay sent frames
(p99, max) and the idle UDP round trip. The last rate is effectively unshaped, so it shows
the most the relay carries. Needs root and iproute2. Run with::

    .venv/bin/python benchmarks/bench_delayline.py             # about 1 minute
    .venv/bin/python benchmarks/bench_delayline.py --delay 10ms --seconds 5

Prints a Markdown table (results in docs/design-runtime.md and docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import statistics

from topocoll.testbed.launch import measure_rtt, measure_throughput
from topocoll.testbed.netns import delay_line_stats, down, up
from topocoll.topology.spec import parse_spec
from topocoll.units import parse_time

RATES_MBIT = (100, 400, 1000, 100_000)


def one(rate_mbit: int, delay_s: float, seconds: float) -> dict:
    name = f"dl{os.getpid()}"
    row = {"rate_mbit": rate_mbit}
    for lat, key in ((delay_s, "relay"), (0.0, "direct")):
        down(name)
        tb = up(parse_spec(f"line:2,bw={rate_mbit}Mbps,lat={lat}s"), name=name, delay="relay")
        try:
            rtt = measure_rtt(tb, 0, 1, 20)
            if key == "relay":
                delay_line_stats(tb)   # reset the counters
            row[f"{key}_goodput_mbit"] = measure_throughput(tb, 0, 1, seconds) * 8 / 1e6
            row[f"{key}_rtt_ms"] = statistics.median(rtt) * 1e3
            if key == "relay":
                before = delay_line_stats(tb)
                row.update({k: before[k] for k in ("late_p99_s", "late_max_s", "dropped")})
                cpu0 = before["cpu_s"]
                measure_throughput(tb, 0, 1, seconds)
                c = delay_line_stats(tb)
                row["cpu_per_s"] = (c["cpu_s"] - cpu0) / seconds
                row["frame_bytes"] = c["bytes"] / max(1, c["frames"])
        finally:
            down(name)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", default="5ms")
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    delay = parse_time(a.delay)
    rows = [one(r, delay, a.seconds) for r in RATES_MBIT]
    print(f"\nline:2, one TCP flow, delay {delay * 1e3:g} ms per direction; load average "
          f"{os.getloadavg()[0]:.1f} on 2 shared cores\n")
    print("| shaped rate | goodput via relay | goodput direct | RTT via relay | RTT direct "
          "| relay CPU | mean frame | late p99 / max | dropped |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        rate = "unshaped" if r["rate_mbit"] >= 100_000 else f"{r['rate_mbit']} Mbit/s"
        print(f"| {rate} | {r['relay_goodput_mbit']:.0f} Mbit/s | "
              f"{r['direct_goodput_mbit']:.0f} Mbit/s | {r['relay_rtt_ms']:.2f} ms | "
              f"{r['direct_rtt_ms']:.2f} ms | {100 * r['cpu_per_s']:.0f} % of a core | "
              f"{r['frame_bytes'] / 1e3:.1f} kB | {r['late_p99_s'] * 1e3:.2f} / "
              f"{r['late_max_s'] * 1e3:.2f} ms | {r['dropped']} |")


if __name__ == "__main__":
    main()
