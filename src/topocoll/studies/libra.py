"""LIBRA's case studies with our solver: 3-D and 4-D networks of 4096 NPUs; GPT-3,
MSFT-1T, Turing-NLG, ResNet-50 and DLRM; the optimum against an equal split, each optimum
checked by a flow-level simulation of its fabric, and the richer model's optimum beside
LIBRA's (``docs/studies/libra.md``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import InputError
from ..fabric import (
    LibraWorkloadMix,
    TimeModel,
    check_allocation,
    iteration_time,
    parse_network,
    read_communicator,
    read_libra_workload,
    slowdown_mix,
    solve,
    workload_from_layered,
    workload_from_model,
    write_libra_inputs,
)
from ..workload import LAYERED, find_device, parse_model, parse_parallel

__all__ = ["LIBRA_NETWORKS", "LIBRA_WORKLOADS", "RICH_LATENCY_S", "LibraCase",
           "rich_model", "run_libra_study", "write_libra_study", "render_tables", "MixCase",
           "run_libra_mix", "render_mix_table", "input_stem"]

#: LIBRA's shipped networks (algorithms.md section 5.2).
LIBRA_NETWORKS = {"3d": "hier:ring(16)x fc(8)x switch(32)",
                  "4d": "hier:ring(4)x fc(8)x ring(4)x switch(32)"}
#: Workloads as LIBRA's communicator files parallelize them (section 5.6): a transformer
#: with ``tp=..,dp=..``, or a layered model data-parallel on every NPU with its batch per
#: NPU. Turing-NLG's shape from its announcement (17.2 B: hidden 4256, 28 heads, 78 layers).
LIBRA_WORKLOADS: dict[str, tuple[str, str | int]] = {
    "GPT-3 (TP-16, DP-256)": ("gpt3-175b", "tp=16,dp=256"),
    "MSFT-1T (TP-128, DP-32)": ("megatron-1t", "tp=128,dp=32"),
    "Turing-NLG (DP-4096)": ("transformer:hidden=4256,ffn=17024,heads=28,layers=78,seq=1024,"
                             "vocab=50257", "tp=1,dp=4096"),
    "ResNet-50 (DP-4096, 32/NPU)": ("resnet50", 32),
    "DLRM (DP-4096, tables model-parallel, 128/NPU)": ("dlrm", 128),
}
#: Link latency of the richer model, every dimension: ASTRA-sim's analytical examples
#: use hundreds of ns per link (formats.md section 2.3 shows 200 and 1500 ns).
RICH_LATENCY_S = 500e-9


def rich_model(dims: int) -> TimeModel:
    """The richer model of the study: ``choose`` per dimension, 500 ns links, one
    dimension after another (as the hierarchical schedule runs), weight-gradient
    collectives overlapped with the backward pass."""
    return TimeModel(algorithms=("choose",) * dims, latency_s=(RICH_LATENCY_S,) * dims,
                     phases="sequential", loop="overlap")


@dataclass(frozen=True)
class LibraCase:
    """One optimum: ``model`` is ``libra`` or ``rich``; ``flow_time_s`` the flow-level
    simulation of its fabric (same loop and latency as its model; None when an
    all-to-all was too large to simulate); for ``rich`` rows, ``libra_alloc_*`` are
    LIBRA's ``perf`` optimum judged by the richer model and by simulation."""

    network: str
    workload: str
    objective: str
    model: str
    bandwidth_GBps: tuple[float, ...]
    time_s: float
    cost_usd: float
    equal_time_s: float
    equal_cost_usd: float
    flow_time_s: float | None = None
    libra_alloc_time_s: float | None = None
    libra_alloc_flow_time_s: float | None = None

    @property
    def speedup(self) -> float:
        return self.equal_time_s / self.time_s

    @property
    def perf_per_cost_gain(self) -> float:
        """(1 / (T C)) of the optimum over that of the equal split."""
        return (self.equal_time_s * self.equal_cost_usd) / (self.time_s * self.cost_usd)


def _workload(net, name: str):
    model, par = LIBRA_WORKLOADS[name]
    dev = find_device("a100-80g")
    if model in LAYERED:
        return workload_from_layered(net, LAYERED[model], dev, batch_per_npu=int(par))
    return workload_from_model(net, parse_model(model), parse_parallel(str(par)), dev)


def _network(name: str, total_GBps: float):
    """One of LIBRA's networks and its ``B0 + ... == total`` constraint."""
    net = parse_network(LIBRA_NETWORKS[name])
    return net, [" + ".join(f"B{i}" for i in range(len(net.dims))) + f" == {total_GBps:g}"]


def input_stem(network: str, workload: str) -> str:
    """The file stem of a case's LIBRA inputs: ``4d_GPT-3``, ``3d_ResNet-50``."""
    return f"{network}_{workload.split(' (')[0].replace(' ', '_')}"


def _libra_workload(net, nname: str, wname: str, inputs: Path | None):
    """The case's workload as LIBRA reads it: written to LIBRA's three files in
    ``inputs`` and read back (``None``: the workload itself)."""
    w = _workload(net, wname)
    if inputs is None:
        return w
    _, txt, comm = write_libra_inputs(inputs, input_stem(nname, wname), net, w)
    return read_libra_workload(txt, read_communicator(comm, len(net.dims)), name=w.name)


def _flow(c: dict) -> float | None:
    return c["flow_iteration_s"] if c["complete"] else None


def run_libra_study(total_GBps: float = 500.0, *, check: bool = True,
                    networks: Sequence[str] | None = None,
                    workloads: Sequence[str] | None = None,
                    step: Callable[[str], None] | None = None,
                    inputs: str | Path | None = None) -> list[LibraCase]:
    """Every network x workload (or those named): LIBRA's ``perf`` and ``perf-per-cost``
    under ``B0 + ... == total_GBps`` (LIBRA's ``total_bw_500gbps`` constraint), and the
    richer model's ``perf``; with ``check``, each ``perf`` optimum simulated at flow
    level. With ``inputs``, LIBRA's rows run from LIBRA-format files written there
    (:func:`~topocoll.fabric.write_libra_inputs`, one set per case) and read back; the
    richer model's rows keep the workload itself (its per-collective latencies need the
    collective counts that LIBRA's format folds into sizes)."""
    inputs = Path(inputs) if inputs is not None else None
    out = []
    for nname in networks or LIBRA_NETWORKS:
        net, cons = _network(nname, total_GBps)
        D = len(net.dims)
        rich = rich_model(D)
        for wname in workloads or LIBRA_WORKLOADS:
            if step:
                step(f"{nname} {wname}")
            try:
                w = _workload(net, wname)
            except InputError as e:          # a TP size that does not fit the network
                if e.item == "tp":
                    continue
                raise
            lw = _libra_workload(net, nname, wname, inputs)
            lib = None
            for obj in ("perf", "perf-per-cost"):
                r = solve(net, lw, objective=obj, constraints=cons)
                flow = _flow(check_allocation(net, lw, r.bandwidth_GBps)) \
                    if check and obj == "perf" else None
                lib = lib or r
                out.append(LibraCase(nname, wname, obj, "libra", r.bandwidth_GBps, r.time_s,
                                     r.cost_usd, r.equal_split_time_s,
                                     r.equal_split_cost_usd, flow))
            r = solve(net, w, constraints=cons, model=rich)
            chosen = dict(r.algorithms)
            flow = old_flow = None
            if check:
                flow = _flow(check_allocation(net, w, r.bandwidth_GBps, rich, chosen))
                old_flow = _flow(check_allocation(net, w, lib.bandwidth_GBps, rich, chosen))
            out.append(LibraCase(nname, wname, "perf", "rich", r.bandwidth_GBps, r.time_s,
                                 r.cost_usd, r.equal_split_time_s, r.equal_split_cost_usd,
                                 flow, iteration_time(net, w, lib.bandwidth_GBps, rich,
                                                      chosen), old_flow))
    return out


@dataclass(frozen=True)
class MixCase:
    """One network designed for every workload at once (LIBRA's multi-workload objective):
    ``weights`` is ``time`` (equal weights on iteration times) or ``slowdown`` (equal
    weights on each job's time over its own optimum's); per workload, in
    :data:`LIBRA_WORKLOADS` order, its slowdown against its own optimum at the mix's
    allocation and at the equal split."""

    network: str
    model: str
    weights: str
    bandwidth_GBps: tuple[float, ...]
    cost_usd: float
    slowdown: tuple[float, ...]
    equal_slowdown: tuple[float, ...]

    @property
    def mean_slowdown(self) -> float:
        return sum(self.slowdown) / len(self.slowdown)

    @property
    def equal_mean_slowdown(self) -> float:
        return sum(self.equal_slowdown) / len(self.equal_slowdown)


def run_libra_mix(total_GBps: float = 500.0, *, networks: Sequence[str] | None = None,
                  workloads: Sequence[str] | None = None,
                  step: Callable[[str], None] | None = None,
                  inputs: str | Path | None = None) -> list[MixCase]:
    """Per network, one allocation for all the workloads (or those named) under
    ``B0 + ... == total_GBps``, with LIBRA's model and the richer one, weighed by time and
    by slowdown; each workload's time at it against its own ``perf`` optimum. With
    ``inputs``, LIBRA's rows read the workloads from LIBRA-format files written there (as
    :func:`run_libra_study` does)."""
    inputs = Path(inputs) if inputs is not None else None
    out = []
    for nname in networks or LIBRA_NETWORKS:
        net, cons = _network(nname, total_GBps)
        D = len(net.dims)
        names = list(workloads or LIBRA_WORKLOADS)
        for mname, model in (("libra", TimeModel()), ("rich", rich_model(D))):
            mix = LibraWorkloadMix(tuple(
                (_libra_workload(net, nname, n, inputs if mname == "libra" else None), 1.0)
                for n in names))
            for weights in ("time", "slowdown"):
                if step:
                    step(f"{nname} mix {mname} {weights}")
                m = mix if weights == "time" else slowdown_mix(net, mix, constraints=cons,
                                                               model=model)
                r = solve(net, m, constraints=cons, model=model)
                own = [x["own_optimum_time_s"] for x in r.workloads]
                out.append(MixCase(
                    nname, mname, weights, r.bandwidth_GBps, r.cost_usd,
                    tuple(x["time_s"] / t for x, t in zip(r.workloads, own, strict=True)),
                    tuple(x["equal_split_time_s"] / t
                          for x, t in zip(r.workloads, own, strict=True))))
    return out


def render_mix_table(mixes: list[MixCase], names: Sequence[str] | None = None) -> str:
    """The multi-workload table of ``docs/studies/libra.md`` (Markdown): each workload's
    slowdown against its own optimum at the shared allocation (equal split in
    brackets)."""
    names = list(names or LIBRA_WORKLOADS)
    short = [n.split(" (")[0] for n in names]
    head = ("| net | model | weights | B (GB/s per NPU) | cost ($M) | "
            + " | ".join(short) + " | mean | equal split mean |\n|"
            + "---|" * (7 + len(names)))
    rows = [head]
    for c in mixes:
        cells = [f"{x:.3f} ({e:.3f})" for x, e in zip(c.slowdown, c.equal_slowdown,
                                                       strict=True)]
        rows.append(f"| {c.network} | {c.model} | {c.weights} | "
                    f"{' / '.join(f'{x:.1f}' for x in c.bandwidth_GBps)} | "
                    f"{c.cost_usd / 1e6:.2f} | " + " | ".join(cells)
                    + f" | {c.mean_slowdown:.3f} | {c.equal_mean_slowdown:.3f} |")
    return "\n".join(rows) + "\n"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{1e3 * x:.1f}" if x >= 0.1 else f"{1e3 * x:.3f}"


def render_tables(cases: list[LibraCase]) -> str:
    """The two tables of ``docs/studies/libra.md`` (Markdown)."""
    head = ("| net | workload | objective | B (GB/s per NPU, dim 0 first) | time (ms) | "
            "equal split (ms) | speedup | cost ($M) | equal-split cost ($M) | "
            "perf/cost gain | flow-level (ms) |\n|" + "---|" * 11)
    rows = [head]
    for c in cases:
        if c.model != "libra":
            continue
        rows.append(f"| {c.network} | {c.workload} | {c.objective} | "
                    f"{' / '.join(f'{x:.1f}' for x in c.bandwidth_GBps)} | {_ms(c.time_s)} | "
                    f"{_ms(c.equal_time_s)} | {c.speedup:.3f} | {c.cost_usd / 1e6:.2f} | "
                    f"{c.equal_cost_usd / 1e6:.2f} | {c.perf_per_cost_gain:.3f} | "
                    f"{_ms(c.flow_time_s)} |")
    rich = ["| net | workload | B richer optimum | richer: model (ms) | richer: flow (ms) | "
            "LIBRA's optimum: model (ms) | LIBRA's optimum: flow (ms) | gain (flow) | "
            "speedup over equal split |\n|" + "---|" * 9]
    for c in cases:
        if c.model != "rich":
            continue
        gain = (f"{c.libra_alloc_flow_time_s / c.flow_time_s:.3f}"
                if c.flow_time_s and c.libra_alloc_flow_time_s else "-")
        rich.append(f"| {c.network} | {c.workload} | "
                    f"{' / '.join(f'{x:.1f}' for x in c.bandwidth_GBps)} | {_ms(c.time_s)} | "
                    f"{_ms(c.flow_time_s)} | {_ms(c.libra_alloc_time_s)} | "
                    f"{_ms(c.libra_alloc_flow_time_s)} | {gain} | {c.speedup:.3f} |")
    return "\n".join(rows) + "\n\n" + "\n".join(rich) + "\n"


def write_libra_study(directory: str | Path, cases: list[LibraCase],
                      mixes: Sequence[MixCase] = ()) -> list[Path]:
    """``libra-results.json`` and ``libra-results.md`` (the tables) in ``directory``; with
    ``mixes``, also ``libra-mix.json`` and the multi-workload table."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    p = d / "libra-results.json"
    p.write_text(json.dumps([{**asdict(c), "speedup": c.speedup,
                              "perf_per_cost_gain": c.perf_per_cost_gain} for c in cases],
                            indent=1, sort_keys=True) + "\n")
    m = d / "libra-results.md"
    text = render_tables(cases)
    out = [p, m]
    if mixes:
        text += "\n" + render_mix_table(list(mixes))
        x = d / "libra-mix.json"
        x.write_text(json.dumps([{**asdict(c), "workloads": list(LIBRA_WORKLOADS),
                                  "mean_slowdown": c.mean_slowdown,
                                  "equal_mean_slowdown": c.equal_mean_slowdown}
                                 for c in mixes], indent=1, sort_keys=True) + "\n")
        out.append(x)
    m.write_text(text)
    return out
