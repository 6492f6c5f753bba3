"""The golden cases: about twenty representative CLI runs whose every number is pinned.

Each case is a list of commands run in order in one temporary directory (``{tmp}`` in
an argument is that directory); the ``--json`` output of every command is recorded in
``golden.json`` by ``python tests/golden/capture.py`` and compared by
``tests/test_golden.py``. Captured before the layers were moved (issue 16), so the
move provably changed no number; a number that changes on purpose is re-captured in
the same commit that changes it, with the reason in the commit message.
"""

from __future__ import annotations

HIER = "hier:ring(4,100GB/s,200ns)x switch(8,25GB/s,1500ns)"

CASES: dict[str, list[list[str]]] = {
    # ---- compare: every applicable algorithm, verified and costed
    "compare-ring8-allreduce": [["compare", "-t", "ring:8", "-c", "allreduce",
                                 "-s", "1KiB", "-s", "1MiB", "-s", "64MiB"]],
    "compare-torus4x4-allreduce": [["compare", "-t", "torus:4x4,bw=400Gbps,lat=100ns",
                                    "-c", "allreduce", "-s", "32KiB", "-s", "64MiB"]],
    "compare-fattree4-allgather": [["compare", "-t", "fattree:k=4,routing=ecmp",
                                    "-c", "allgather", "-s", "1MiB"]],
    "compare-hier-allgather": [["compare", "-t", HIER, "-c", "allgather", "-s", "64MiB"]],
    "compare-dgxh100-allreduce": [["compare", "-t", "dgx-h100:2", "-c", "allreduce",
                                   "-s", "64MiB"]],
    "compare-hypercube4-rs": [["compare", "-t", "hypercube:4", "-c", "reduce_scatter",
                               "-s", "1MiB"]],
    "compare-star6-broadcast": [["compare", "-t", "star:6", "-c", "broadcast", "--root", "2",
                                 "-s", "1MiB"]],
    "compare-ring6-alltoall": [["compare", "-t", "ring:6", "-c", "alltoall", "-s", "1MiB"]],
    "compare-random8-allgather": [["compare", "-t", "random:8,spread=10,seed=3",
                                   "-c", "allgather", "-s", "1GiB"]],
    "compare-mi250-optimal": [["compare", "-t", "mi250:2", "-c", "allgather", "-a", "optimal",
                               "-s", "1GiB"]],
    "compare-torus-flow": [["compare", "-t", "torus:4x4", "-c", "allreduce", "--backend",
                            "flow", "-a", "ring", "-a", "swing", "-s", "1MiB"]],
    "compare-subgroup": [["compare", "-t", "fattree:k=4", "-c", "allreduce", "--ranks",
                          "0,1,2,3,8,9", "-s", "4MiB"]],
    # ---- bound: exact optimum and certificates
    "bound-torus444-allgather": [["bound", "-t", "torus:4x4x4", "-c", "allgather"]],
    "bound-dgxa100-allreduce": [["bound", "-t", "dgx-a100:2", "-c", "allreduce"]],
    "bound-random16-broadcast": [["bound", "-t", "random:16,spread=100,seed=3",
                                  "-c", "broadcast", "--root", "2"]],
    "bound-hier-barrier": [["bound", "-t", HIER, "-c", "allgather", "--barrier"]],
    # ---- synth + cost
    "cost-fattree-ring": [
        ["synth", "-t", "fattree:k=4,routing=ecmp", "-c", "allreduce", "-a", "ring",
         "-o", "{tmp}/ring.json"],
        ["cost", "{tmp}/ring.json", "-t", "fattree:k=4,routing=ecmp", "-s", "32KiB",
         "-s", "1MiB", "-s", "64MiB"]],
    "cost-ring8-optimal": [
        ["synth", "-t", "ring:8", "-c", "allgather", "-a", "optimal", "-o", "{tmp}/opt.json"],
        ["cost", "{tmp}/opt.json", "-t", "ring:8", "-s", "1GiB"]],
    "cost-torus-swing-packet": [
        ["synth", "-t", "torus:4x4", "-c", "allreduce", "-a", "swing", "-o", "{tmp}/sw.json"],
        ["cost", "{tmp}/sw.json", "-t", "torus:4x4", "--backend", "packet", "-s", "256KiB"]],
    # ---- simulate
    "simulate-fattree-flow": [
        ["synth", "-t", "fattree:k=4,routing=ecmp", "-c", "allreduce", "-a", "ring",
         "-o", "{tmp}/ring.json"],
        ["simulate", "{tmp}/ring.json", "-t", "fattree:k=4,routing=ecmp", "--backend", "flow"]],
    "simulate-ring-packet-bg": [
        ["synth", "-t", "ring:4,bw=10Gbps", "-c", "allreduce", "-a", "ring",
         "-o", "{tmp}/r4.json"],
        ["simulate", "{tmp}/r4.json", "-t", "ring:4,bw=10Gbps", "--backend", "packet",
         "-s", "1MiB", "--background-load", "0.3", "--seed", "2"]],
}

#: Keys whose values are wall-clock measurements, never compared.
TIMING_KEYS = frozenset({"events_per_s", "lp_seconds", "seconds", "wall_s"})
