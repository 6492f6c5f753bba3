"""TopoOpt's direct-connect fabric as a 12-server prototype on the emulated cluster: one
DLRM-like iteration's traffic run for real over host forwarding along TotientPerms rings
and matchings, measured against the prediction (``docs/studies/topoopt.md``).

The design: DLRM on 12 servers of 4 A100s with 4 ports of 100 Gb/s, the strategy from
TopoOpt's alternating optimization with the paper's proportional split (which makes
DLRM's dense layers tensor-parallel here, so the iteration has model-parallel traffic),
and its TopologyFinder topology with the ports split 2 to rings, 2 to matchings (so that
both kinds of port carry traffic). The testbed (:mod:`topocoll.testbed.netns`) is that
topology with every port shaped to ``rate`` and no added latency; every server forwards
for the others along :meth:`Topology.path`. The iteration's exchanges
(:func:`~topocoll.fabric.phase_matrices`: the embedding exchange, the tensor-parallel
blocks, the gradient all-reduce's ring traffic), scaled by one factor so that the
largest takes about ``target_s`` at the emulated rate, run one after another
(:func:`~topocoll.testbed.demand.run_phases`) ``repeats`` times.

Predicted per phase: the fluid time on the testbed's paths with TCP/IP framing
(:func:`~topocoll.testbed.demand.predict_phase`); beside it max-min fair flows on the same
paths (:func:`~topocoll.testbed.demand.maxmin_phase`) and the search's own model (ECMP
over every shortest path, no framing), which is what the strategy search uses. Measured
per phase and repeat: the time, when the first byte arrived and when the first receiver
had all its bytes (how unevenly TCP shares the links).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..fabric import FabricEval, Job, optimize, phase_matrices, topology_finder
from ..fabric.linkload import LinkLoads
from ..testbed.demand import maxmin_phase, predict_phase, run_phases
from ..testbed.netns import down, up
from ..topology import Link, Topology
from ..workload import LAYERED, find_device

__all__ = ["PROTO_SERVERS", "PROTO_DEGREE", "PROTO_RATE", "prototype_design",
           "run_prototype", "write_prototype"]

PROTO_SERVERS = 12
PROTO_DEGREE = 4
#: Emulated port rate (bytes/s): 25 Mbit/s, what two cores forward for 48 busy ports.
PROTO_RATE = 25e6 / 8
_PORT = 100e9 / 8


def prototype_design(*, rate: float = PROTO_RATE, target_s: float = 4.0, seed: int = 0,
                     steps: int = 600) -> dict:
    """The design, its emulated topology, the scaled phases and their predictions."""
    job = Job(LAYERED["dlrm"], servers=PROTO_SERVERS, device=find_device("a100-80g"),
              batch_per_gpu=128)
    r = optimize(job, degree=PROTO_DEGREE, port_bandwidth=_PORT, rounds=2,
                 steps=steps // 2, seed=seed, split="proportional")
    tr = job.traffic(r.strategy)
    groups = {g: x for g, x in tr.allreduce.items() if x > 0}
    fr = topology_finder(PROTO_SERVERS, PROTO_DEGREE, allreduce=groups, mp=tr.mp_matrix(),
                         bandwidth=_PORT, allreduce_ports=2)
    links = tuple(Link(lk.src, lk.dst, rate, 0.0) for lk in fr.topology.links)
    emu = Topology(f"topoopt-proto:{PROTO_SERVERS},d={PROTO_DEGREE}", PROTO_SERVERS, 0, links,
                   meta=dict(fr.topology.meta))
    phases = phase_matrices(tr, fr.jumps)
    biggest = max(predict_phase(emu, M) for M in phases.values())
    scale = target_s / biggest
    scaled = {k: np.rint(M * scale) for k, M in phases.items()}
    ll = LinkLoads(emu)
    fe = FabricEval(job, fr.topology, rings=fr.jumps)
    rows = []
    for k, M in scaled.items():
        ecmp = float((ll.route(M[None])[:, 0] / ll.capacity).max())
        rows.append({"phase": k, "bytes": float(M.sum()), "predicted_s": predict_phase(emu, M),
                     "maxmin_s": maxmin_phase(emu, M), "ecmp_fluid_s": ecmp})
    return {"servers": PROTO_SERVERS, "degree": PROTO_DEGREE, "rate_bps": rate * 8,
            "strategy": job.describe(r.strategy)["counts"], "jumps": {str(g): js for g, js
                                                                      in fr.jumps.items()},
            "matchings": [[list(p) for p in m] for m in fr.matchings],
            "scale": scale, "iteration_at_100g_s": fe.score(r.strategy).iteration_s,
            "phases": rows, "_topology": emu, "_matrices": scaled}


def run_prototype(*, name: str = "proto", repeats: int = 3, rate: float = PROTO_RATE,
                  target_s: float = 4.0) -> dict:
    """Build the testbed, run the phases ``repeats`` times, take it down; the design's
    record with every measured time, the median per phase, and the totals."""
    d = prototype_design(rate=rate, target_s=target_s)
    topo, mats = d.pop("_topology"), d.pop("_matrices")
    names = list(mats)
    tb = up(topo, name=name, spec=topo.name, delay="off")
    try:
        runs = [run_phases(tb, [mats[k] for k in names], detail=True)
                for _ in range(repeats)]
    finally:
        down(name)
    for i, row in enumerate(d["phases"]):
        row["measured_s"] = [r[i]["s"] for r in runs]
        # when the receivers had their bytes: the first and the last, per repeat
        row["first_receiver_done_s"] = [min(r[i]["ends_s"]) for r in runs]
        row["first_byte_s"] = [r[i]["first_byte_s"] for r in runs]
        row["median_s"] = float(np.median(row["measured_s"]))
        row["ratio"] = row["median_s"] / row["predicted_s"]
    d["predicted_total_s"] = sum(r["predicted_s"] for r in d["phases"])
    d["measured_total_s"] = sum(r["median_s"] for r in d["phases"])
    d["error"] = d["measured_total_s"] / d["predicted_total_s"] - 1
    d["repeats"] = repeats
    return d


def write_prototype(directory: str | Path, res: dict) -> Path:
    """``topoopt-prototype.json`` in ``directory``."""
    p = Path(directory) / "topoopt-prototype.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    return p
