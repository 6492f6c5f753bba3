"""LIBRA's case studies with our solver: 3-D and 4-D networks of 4096 NPUs, transformer
workloads, the optimum against an equal split (``docs/studies/libra.md``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..fabric import parse_network, solve, workload_from_model
from ..workload import find_device, parse_model, parse_parallel

__all__ = ["LIBRA_NETWORKS", "LIBRA_WORKLOADS", "LibraCase", "run_libra_study",
           "write_libra_study"]

#: LIBRA's shipped networks (algorithms.md section 5.2).
LIBRA_NETWORKS = {"3d": "hier:ring(16)x fc(8)x switch(32)",
                  "4d": "hier:ring(4)x fc(8)x ring(4)x switch(32)"}
#: Workloads as LIBRA's communicator files parallelize them (section 5.6); Turing-NLG's
#: shape from its announcement (17.2 B: hidden 4256, 28 heads, 78 layers).
LIBRA_WORKLOADS = {
    "GPT-3 (TP-16, DP-256)": ("gpt3-175b", "tp=16,dp=256"),
    "MSFT-1T (TP-128, DP-32)": ("megatron-1t", "tp=128,dp=32"),
    "Turing-NLG (DP-4096)": ("transformer:hidden=4256,ffn=17024,heads=28,layers=78,seq=1024,"
                             "vocab=50257", "tp=1,dp=4096"),
}


@dataclass(frozen=True)
class LibraCase:
    network: str
    workload: str
    objective: str
    bandwidth_GBps: tuple[float, ...]
    time_s: float
    cost_usd: float
    equal_time_s: float
    equal_cost_usd: float

    @property
    def speedup(self) -> float:
        return self.equal_time_s / self.time_s

    @property
    def perf_per_cost_gain(self) -> float:
        """(1 / (T C)) of the optimum over that of the equal split."""
        return (self.equal_time_s * self.equal_cost_usd) / (self.time_s * self.cost_usd)


def run_libra_study(total_GBps: float = 500.0) -> list[LibraCase]:
    """Every network x workload, ``perf`` and ``perf-per-cost`` under
    ``B0 + ... == total_GBps`` (LIBRA's ``total_bw_500gbps`` constraint)."""
    dev = find_device("a100-80g")
    out = []
    for nname, spec in LIBRA_NETWORKS.items():
        net = parse_network(spec)
        cons = [" + ".join(f"B{i}" for i in range(len(net.dims))) + f" == {total_GBps:g}"]
        for wname, (model, par) in LIBRA_WORKLOADS.items():
            try:
                w = workload_from_model(net, parse_model(model), parse_parallel(par), dev)
            except Exception as e:          # a TP size that does not fit the network
                if "tp=" in str(e):
                    continue
                raise
            for obj in ("perf", "perf-per-cost"):
                r = solve(net, w, objective=obj, constraints=cons)
                out.append(LibraCase(nname, wname, obj, r.bandwidth_GBps, r.time_s,
                                     r.cost_usd, r.equal_split_time_s,
                                     r.equal_split_cost_usd))
    return out


def write_libra_study(directory: str | Path, cases: list[LibraCase]) -> list[Path]:
    """``libra-results.json`` in ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    p = d / "libra-results.json"
    p.write_text(json.dumps([{**c.__dict__, "speedup": c.speedup,
                              "perf_per_cost_gain": c.perf_per_cost_gain} for c in cases],
                            indent=1, sort_keys=True) + "\n")
    return [p]
