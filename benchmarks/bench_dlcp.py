"""Benchmark: DLCP's packet engine, its command and its study (issues 21 and 33).

Prints one table row per case. Run with::

    .venv/bin/python benchmarks/bench_dlcp.py            # the engine, 16/32/64 workers
    .venv/bin/python benchmarks/bench_dlcp.py --target   # plus the command, cold and warm
    .venv/bin/python benchmarks/bench_dlcp.py --study    # plus the whole study
    .venv/bin/python benchmarks/bench_dlcp.py --loop     # plus the engine in the loop

Targets (2 cores): ``topocoll dlcp --payload 1500 --workers 16 --iterations 30`` in
under 4 minutes (issue 33: 7 schemes x 30 iterations of ResNet-50 with MTU-sized
packets, the command's defaults otherwise: every core, a window of 2 packets); ``topocoll
study dlcp`` in under 20 minutes. The engine rows time one ResNet-50 iteration of the
``baseline`` scheme (co-located parameter server, 50% background, 1,500-byte packets,
87 in flight per message as in the study) on the study's fabrics in this process, after
one warm-up run (the numba kernel compiled or loaded); the events per second are the
engine's speed. "Cold" is the command with the engine's numba cache removed first (the
kernel compiles in every worker), "warm" the same command again. ``--loop``: one epoch
(5 steps) of ``topocoll study dlcp-loop``'s training with the engine in the loop, per
scheme it runs (the study: 6 cases x 3 seeds x 20 epochs).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

TARGET = ["dlcp", "--payload", "1500", "--workers", "16", "--iterations", "30", "--json"]


def _clear_engine_cache() -> int:
    """Remove the compiled engine's numba cache files; returns how many."""
    import topocoll.sim as sim

    root = Path(sim.__file__).parent
    gone = 0
    for cache, prefix in ((root / "dlcp" / "__pycache__", "_core."),
                          (root / "__pycache__", "events.")):
        for f in cache.glob("*"):
            if f.name.startswith(prefix) and f.suffix in (".nbi", ".nbc"):
                f.unlink()
                gone += 1
    return gone


def _command(argv: list[str]) -> float:
    exe = Path(sys.executable).with_name("topocoll")
    t0 = time.perf_counter()
    subprocess.run([str(exe), *argv], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str]) -> None:
    from topocoll.sim.dlcp.engine import simulate_messages
    from topocoll.studies.dlcp import SCALE, STUDY_TOPOLOGY, window_for
    from topocoll.studies.dlcp_scenario import run_dlcp
    from topocoll.topology.spec import parse_spec
    from topocoll.workload import LAYERED

    events = []
    import topocoll.studies.dlcp_scenario as mod

    def counting(*a, **kw):             # the engine, counting its events
        r = simulate_messages(*a, **kw)
        events.append(r.events)
        return r

    mod.simulate_messages = counting
    rows = []
    load0 = os.getloadavg()[0]
    for w, spec in ((16, STUDY_TOPOLOGY), *SCALE):
        kw = dict(workers=w, iterations=1, seed=1, schemes=("baseline",), payload=1500,
                  window=window_for(1500))
        run_dlcp(parse_spec(spec), LAYERED["resnet50"], **kw)       # warm-up
        events.clear()
        t0 = time.perf_counter()
        run_dlcp(parse_spec(spec), LAYERED["resnet50"], **kw)
        dt = time.perf_counter() - t0
        rows.append((f"engine: ResNet-50, {w} workers, 1 baseline iteration, 1500 B", dt,
                     None, f"{sum(events) / dt / 1e6:.1f} M events/s, {sum(events):,} events"))
    mod.simulate_messages = simulate_messages
    if "--target" in argv:
        n = _clear_engine_cache()
        rows.append(("topocoll " + " ".join(TARGET[:-1]) + " (cold)", _command(TARGET), 240.0,
                     f"{n} cache files removed first"))
        rows.append(("the same, warm", _command(TARGET), 240.0, ""))
    if "--study" in argv:
        from topocoll.procs import available_cores
        from topocoll.studies.dlcp import run_dlcp_study

        t0 = time.perf_counter()
        res = run_dlcp_study(jobs=available_cores())
        dt = time.perf_counter() - t0
        rows.append(("topocoll study dlcp (run_dlcp_study)", dt, 1200.0,
                     f"{res['wall_s']['simulation']} s simulation, "
                     f"{res['wall_s']['training']} s training"))
    if "--loop" in argv:
        from topocoll.studies.dlcp_loop import train_in_loop

        train_in_loop("baseline", epochs=1)               # warm-up: torch, the kernel
        for scheme in ("baseline", "layer_priority", "dlcp"):
            t0 = time.perf_counter()
            r = train_in_loop(scheme, epochs=1)
            dt = time.perf_counter() - t0
            rows.append((f"dlcp-loop: {scheme}, one epoch ({len(r['accuracy'])} steps, "
                         "16 workers)", dt, None, f"{dt / len(r['accuracy']):.3f} s per step"))
    print(f"machine: {_cpu()}, {os.cpu_count()} cores, "
          f"load {load0:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"{'case':<72} {'seconds':>9} {'target':>8}  met  note")
    for name, t, target, note in rows:
        tgt = f"{target:8.0f}" if target else f"{'':>8}"
        met = ("yes" if t <= target else "no ") if target else "   "
        print(f"{name:<72} {t:9.2f} {tgt}  {met}  {note}")


if __name__ == "__main__":
    main(sys.argv[1:])
