"""Benchmark: DLCP's packet engine and study (issue 21).

Prints one table row per case. Run with::

    .venv/bin/python benchmarks/bench_dlcp.py            # the engine, 16/32/64 workers
    .venv/bin/python benchmarks/bench_dlcp.py --study    # plus the whole study

Target: ``topocoll study dlcp`` in under 20 minutes on 2 cores. The engine rows time one
ResNet-50 iteration of the ``baseline`` scheme (co-located parameter server, 50%
background, 64 KiB segments) on the study's fabrics; the events per second are the
engine's speed.
"""

from __future__ import annotations

import os
import platform
import sys
import time


def main(argv: list[str]) -> None:
    from topocoll.fabric import run_dlcp
    from topocoll.sim.dlcp_engine import simulate_messages
    from topocoll.studies.dlcp import SCALE, STUDY_TOPOLOGY
    from topocoll.topology.spec import parse_spec
    from topocoll.workload import LAYERED

    events = []
    import topocoll.fabric.dlcp as mod

    def counting(*a, **kw):             # the engine, counting its events
        r = simulate_messages(*a, **kw)
        events.append(r.events)
        return r

    mod.simulate_messages = counting
    rows = []
    for w, spec in ((16, STUDY_TOPOLOGY), *SCALE):
        events.clear()
        t0 = time.perf_counter()
        run_dlcp(parse_spec(spec), LAYERED["resnet50"], workers=w, iterations=1, seed=1,
                 schemes=("baseline",))
        dt = time.perf_counter() - t0
        rows.append((f"engine: ResNet-50, {w} workers, 1 baseline iteration", dt, None,
                     f"{sum(events) / dt / 1e3:.0f}k events/s"))
    mod.simulate_messages = simulate_messages
    if "--study" in argv:
        from topocoll.studies.dlcp import run_dlcp_study

        t0 = time.perf_counter()
        res = run_dlcp_study()
        dt = time.perf_counter() - t0
        rows.append(("topocoll study dlcp (run_dlcp_study)", dt, 1200.0,
                     f"{res['wall_s']['simulation']} s simulation, "
                     f"{res['wall_s']['training']} s training"))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'case':<52} {'seconds':>9} {'target':>8}  met  note")
    for name, t, target, note in rows:
        tgt = f"{target:8.0f}" if target else f"{'':>8}"
        met = ("yes" if t <= target else "no ") if target else "   "
        print(f"{name:<52} {t:9.2f} {tgt}  {met}  {note}")


if __name__ == "__main__":
    main(sys.argv[1:])
