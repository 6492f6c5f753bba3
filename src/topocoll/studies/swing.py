"""Reproduction of the Swing evaluation (De Sensi et al., NSDI 2024, §5) with the
alpha-beta-congestion model.

Setup (the paper's): 400 Gb/s links, 100 ns link latency, 300 ns per-hop processing,
``2D`` ports per node (every torus link), minimal routing; allreduce of 32 B to 512 MiB
on the tori 8x8, 64x64, 64x16, 128x8, 256x4, 8x8x8, 8x8x8x8 and the HyperX 64x64.

How the model charges it (see :class:`~topocoll.cost.AlphaBeta`): every transfer is
routed (``routing="spray"``: an even split over all minimal paths, our stand-in for
minimal adaptive routing; ``"shortest"`` gives dimension-order routing), bytes of a step
that share a directed link share its bandwidth, and a transfer over ``h`` hops pays
``alpha + h * 100 ns + (h - 1) * 300 ns`` latency, i.e. 400 ns per hop with
``alpha = 300 ns`` (forwarding latency 300 ns on every node). Steps are barriers.

A schedule does not depend on the message size, so each (topology, algorithm) is
synthesized and routed once and costed at all sizes with
:meth:`~topocoll.cost.AlphaBeta.evaluate_sizes`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..cost import AlphaBeta
from ..errors import NotSupportedError, TopologyError
from ..schedule import Schedule
from ..synth import (
    bucket_allreduce,
    hamiltonian_rings_allreduce,
    mirrored_recursive_doubling_allreduce,
    rabenseifner_allreduce,
    recursive_doubling_allreduce,
    ring_allreduce,
    swing_allreduce,
    swing_latency_allreduce,
)
from ..synth.torus import hamiltonian_unsupported_reason
from ..topology import Dim, Link, Topology, hammingmesh, torus
from ..verification import verify
from ._common import write_tables

__all__ = ["StudySetup", "StudyTopology", "parse_study_topology", "TopologyResult",
           "STUDY_ALGORITHMS", "TOPOLOGIES", "study_topology", "run_swing_study",
           "hyperx_with_nics",
           "hamiltonian_rings_time", "PROFILED", "congestion_profile", "write_study",
           "render_markdown", "bandwidth_sweep",
           "render_sweep", "SWEEP_GBPS", "EVEN_SHAPES", "ODD_SHAPES", "EVEN_TABLE_SIZES",
           "even_sizes_study",
           "render_even", "write_even"]

GBIT = 1e9 / 8


@dataclass(frozen=True)
class StudySetup:
    """Network parameters and sizes of the study (SI units).

    Examples
    --------
    >>> s = StudySetup()
    >>> s.bandwidth, len(s.sizes), s.sizes[0], s.sizes[-1] == 512 * 2**20
    (50000000000.0, 25, 32.0, True)
    """

    bandwidth: float = 400 * GBIT
    link_latency: float = 100e-9
    hop_latency: float = 300e-9
    routing: str = "spray"
    sizes: tuple[float, ...] = tuple(float(2 ** k) for k in range(5, 30))
    verify_max_ranks: int = 1024

    def model(self) -> AlphaBeta:
        """The torus cost model: ``alpha`` = one hop's processing (module notes)."""
        return AlphaBeta(alpha=self.hop_latency, routing=self.routing, bound=False)


@dataclass(frozen=True)
class StudyTopology:
    """One topology of the study: ``kind`` is ``'torus'``, ``'hyperx'`` or
    ``'hammingmesh'`` (boards of ``board`` ranks per dimension: the paper's Hx2Mesh and
    Hx4Mesh)."""

    kind: str
    shape: tuple[int, ...]
    board: int = 0

    @property
    def label(self) -> str:
        prefix = {"hyperx": "HyperX ", "hammingmesh": f"Hx{self.board}Mesh "}
        return prefix.get(self.kind, "torus ") + "x".join(map(str, self.shape))

    @property
    def ports(self) -> int:
        """``2D``: the ports the paper gives every node."""
        return 2 * len(self.shape)

    def build(self, setup: StudySetup) -> Topology:
        """The topology with the setup's links and a forwarding latency on every node."""
        if self.kind == "torus":
            t = torus(self.shape, bandwidth=setup.bandwidth, latency=setup.link_latency)
        elif self.kind == "hyperx":
            return hyperx_with_nics(self.shape, setup)
        elif self.kind == "hammingmesh":
            t = hammingmesh(self.shape, self.board, bandwidth=setup.bandwidth,
                            latency=setup.link_latency)
        else:
            raise NotSupportedError(f"unknown study topology kind {self.kind!r}")
        return dataclasses.replace(t, node_latency=(setup.hop_latency,) * t.num_nodes,
                                   routing=setup.routing)

    def alpha(self, setup: StudySetup) -> float:
        """Per-transfer overhead: one hop's processing on a torus or HammingMesh (the rank
        is the router and the model charges intermediate nodes only); 0 on the HyperX,
        whose source and destination routers are switches that the model already
        charges."""
        return 0.0 if self.kind == "hyperx" else setup.hop_latency


def hyperx_with_nics(shape: Sequence[int], setup: StudySetup) -> Topology:
    """A HyperX of routers (a switch per rank, every dimension fully connected) where each
    rank reaches its router through ``2D`` parallel NIC links, so that a node injects at
    most ``2D`` times the link bandwidth, as in the paper's "2D ports per node".

    NIC links have no latency; routers forward in ``setup.hop_latency``; router links
    have ``setup.link_latency``. ``dims`` describe the rank grid, so dimension-aware
    algorithms see the HyperX shape.

    Examples
    --------
    >>> t = hyperx_with_nics((4, 4), StudySetup())
    >>> t.num_ranks, t.num_switches, len(t.links), t.describe()["rank_diameter_hops"]
    (16, 16, 224, 4)
    """
    shape = tuple(shape)
    n = math.prod(shape)
    ports = 2 * len(shape)
    links: list[Link] = []
    for r in range(n):
        for _ in range(ports):
            links.append(Link(r, n + r, setup.bandwidth, 0.0))
            links.append(Link(n + r, r, setup.bandwidth, 0.0))
    stride = 1
    for k, d in enumerate(shape):
        for r in range(n):
            x = (r // stride) % d
            for y in range(d):
                if y != x:
                    links.append(Link(n + r, n + r + (y - x) * stride, setup.bandwidth,
                                      setup.link_latency, k))
        stride *= d
    return Topology("hyperx:" + "x".join(map(str, shape)), n, n, tuple(links),
                    node_latency=(0.0,) * n + (setup.hop_latency,) * n,
                    dims=tuple(Dim("fully_connected", d, setup.bandwidth, setup.link_latency)
                               for d in shape),
                    routing=setup.routing)


def parse_study_topology(text: str) -> StudyTopology:
    """``'torus:8x8'``, ``'hyperx:64x64'`` or ``'hx2mesh:64x64'`` (HammingMesh with boards
    of 2 x 2; ``hx4mesh``: 4 x 4) -> :class:`StudyTopology`.

    Raises
    ------
    TopologyError
        Naming the text if it is not of that form.

    Examples
    --------
    >>> parse_study_topology("torus:8x8x8").label
    'torus 8x8x8'
    >>> parse_study_topology("hx4mesh:16x16").label
    'Hx4Mesh 16x16'
    """
    kind, _, shape = text.strip().lower().partition(":")
    try:
        dims = tuple(int(x) for x in shape.split("x"))
    except ValueError:
        dims = ()
    board = 0
    if m := re.fullmatch(r"hx(\d+)mesh", kind):
        kind, board = "hammingmesh", int(m.group(1))
    if (kind not in ("torus", "hyperx", "hammingmesh") or not dims or min(dims) < 2
            or (board and (board < 1 or any(d % board for d in dims)))):
        raise TopologyError(f"study topology must look like torus:8x8, hyperx:64x64 or "
                            f"hx2mesh:64x64 (the board size dividing every dimension), "
                            f"got {text!r}", item=f"topology '{text}'")
    return StudyTopology(kind, dims, board)


TOPOLOGIES = (
    StudyTopology("torus", (8, 8)), StudyTopology("torus", (16, 16)),
    StudyTopology("torus", (32, 32)), StudyTopology("torus", (64, 64)),
    StudyTopology("torus", (64, 16)), StudyTopology("torus", (128, 8)),
    StudyTopology("torus", (256, 4)), StudyTopology("torus", (8, 8, 8)),
    StudyTopology("torus", (8, 8, 8, 8)), StudyTopology("hyperx", (64, 64)),
    StudyTopology("hammingmesh", (64, 64), 2), StudyTopology("hammingmesh", (64, 64), 4),
)

#: name -> synthesizers whose best time per size is reported under that name (the paper
#: reports Swing as the best of its two variants).
STUDY_ALGORITHMS: dict[str, tuple[Callable[..., Schedule], ...]] = {
    "swing": (swing_allreduce, swing_latency_allreduce),
    "mirrored_recursive_doubling": (
        mirrored_recursive_doubling_allreduce,
        lambda t: mirrored_recursive_doubling_allreduce(t, variant="latency")),
    "recursive_doubling_latency": (recursive_doubling_allreduce,),
    "recursive_doubling_bandwidth": (rabenseifner_allreduce,),
    "bucket": (lambda t: bucket_allreduce(t, dimension_algorithm="ring"),),
    "bucket_direct": (bucket_allreduce,),
    "hamiltonian_rings": (hamiltonian_rings_allreduce,),
    "ring": (ring_allreduce,),
}
#: Our additions that the paper does not evaluate (excluded from the "paper baselines").
NOT_IN_PAPER = ("bucket_direct",)
#: Above this many ranks the Hamiltonian rings (4p transfers per step, 2(p - 1) steps)
#: are costed by :func:`hamiltonian_rings_time` instead of a 134 M-transfer schedule.
HAMILTONIAN_MAX_RANKS = 1024


def hamiltonian_rings_time(topology: Topology, sizes: Sequence[float], alpha: float) -> np.ndarray:
    """Alpha-beta time of :func:`~topocoll.synth.hamiltonian_rings_allreduce` in closed
    form: ``2(p - 1)(alpha + latency + n / (4 p B))``.

    Every transfer crosses one link and every directed link carries one ring, so each of
    the ``2(p - 1)`` steps costs one hop with a quarter block; the tests check this
    against :meth:`AlphaBeta.evaluate` on small tori. Needs uniform links.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> hamiltonian_rings_time(torus((4, 4), bandwidth=1e9, latency=0.0), [64e9], 0.0)
    array([30.])
    """
    bw, lat = topology.link_bandwidth, topology.link_latency
    if np.ptp(bw) or np.ptp(lat):
        raise NotSupportedError("the closed form needs links of equal bandwidth and latency")
    p = topology.num_ranks
    n = np.asarray(sizes, dtype=float)
    return 2 * (p - 1) * (alpha + lat[0] + n / (4 * p) / bw[0])


@dataclass
class TopologyResult:
    """Times (s) per algorithm and size on one topology, with how each was obtained."""

    topology: StudyTopology
    sizes: tuple[float, ...]
    times: dict[str, np.ndarray] = field(default_factory=dict)
    variant: dict[str, list[str]] = field(default_factory=dict)
    verified: dict[str, str] = field(default_factory=dict)
    #: wall seconds of each synthesis and costing (for progress output; never written)
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: per algorithm of :data:`PROFILED`, its bandwidth-optimal schedule's counters
    #: (:func:`congestion_profile`)
    profile: dict[str, dict] = field(default_factory=dict)

    def goodput(self, name: str) -> np.ndarray:
        """Vector bytes over time, in bits/s."""
        return np.asarray(self.sizes) * 8 / self.times[name]

    def best_other(self, name: str = "swing", exclude: Sequence[str] = ()
                   ) -> tuple[list[str], np.ndarray]:
        """Per size, the fastest algorithm other than ``name`` (and ``exclude``) and its
        time."""
        others = [a for a in self.times if a != name and a not in exclude]
        stack = np.stack([self.times[a] for a in others])
        idx = stack.argmin(axis=0)
        return [others[i] for i in idx], stack.min(axis=0)

    def to_dict(self) -> dict:
        return {"topology": self.topology.label, "sizes": list(self.sizes),
                "times_s": {k: v.tolist() for k, v in self.times.items()},
                "variant": self.variant, "verified": self.verified,
                "notes": self.notes, "profile": self.profile}


#: Algorithms whose bandwidth-optimal schedule :func:`study_topology` profiles.
PROFILED = ("swing", "mirrored_recursive_doubling", "bucket")


def congestion_profile(schedule: Schedule, topology: Topology, message_bytes: float, ports: int,
                       alpha: float) -> dict:
    """The counters that separate latency from congestion in the model's time: the
    schedule's steps; ``xi``, its bandwidth term at ``message_bytes`` (per step the most loaded
    link's bytes over its bandwidth, summed) over ``2 size / (ports B)`` = ``n / (D B)``
    (the paper's congestion deficiency; bucket's is ``(p - 1) / p``); ``latency_s``, the
    size-free part (per step ``alpha`` plus the longest route's latency, summed);
    ``switch_bound_steps``, the steps whose most loaded link touches a switch;
    ``injection_xi``, the same sum with each step's busiest *rank* instead of its busiest
    link (its bytes over ``ports * B``): what the steps' sizes alone cost, so that
    ``xi / injection_xi`` is the links' congestion.

    Examples
    --------
    >>> from topocoll.synth import swing_allreduce
    >>> st = StudyTopology("torus", (8, 8)); setup = StudySetup(); t = st.build(setup)
    >>> round(congestion_profile(swing_allreduce(t), t, 2.0**26, 4, 3e-7)["xi"], 3)  # the paper's
    1.078
    """
    from ..cost.kernel import step_loads

    load, lat = step_loads(schedule, topology, message_bytes)
    busy = load / topology.link_bandwidth
    used = np.diff(schedule.step_ptr) > 0
    peak = busy.max(axis=1)
    p = topology.num_ranks
    ideal = 2 * message_bytes / (ports * float(topology.link_bandwidth.min()))
    hot = busy.argmax(axis=1)
    at_switch = ((topology.link_src[hot] >= p) | (topology.link_dst[hot] >= p)) & used
    step = np.repeat(np.arange(schedule.num_steps), np.diff(schedule.step_ptr))
    sent = np.zeros((schedule.num_steps, p))
    np.add.at(sent, (step, schedule.src),
              schedule.chunk_counts() * schedule.collective.chunk_bytes(message_bytes))
    inject = sent.max(axis=1) / (ports * float(topology.link_bandwidth.min()))
    return {"steps": int(used.sum()), "xi": float(peak[used].sum() / ideal),
            "injection_xi": float(inject.sum() / ideal),
            "latency_s": float(np.sum(alpha + lat[used])),
            "switch_bound_steps": int(at_switch.sum())}


def study_topology(st: StudyTopology, setup: StudySetup | None = None, *,
                   algorithms: Sequence[str] | None = None,
                   progress: Callable[[str], None] | None = None) -> TopologyResult:
    """Synthesize, (verify,) and cost every applicable algorithm on one topology.

    Parameters
    ----------
    st : StudyTopology
    setup : StudySetup, optional
    algorithms : sequence of str, optional
        Subset of :data:`STUDY_ALGORITHMS` (default all).
    progress : callable, optional
        Called with a label before each synthesizer.

    Returns
    -------
    TopologyResult

    Examples
    --------
    >>> r = study_topology(StudyTopology("torus", (4, 4)), algorithms=["swing", "ring"])
    >>> sorted(r.times), r.verified["swing"]
    (['ring', 'swing'], 'yes')
    """
    setup = setup or StudySetup()
    topo = st.build(setup)
    model = dataclasses.replace(setup.model(), alpha=st.alpha(setup))
    res = TopologyResult(st, setup.sizes)
    p = topo.num_ranks
    for name in algorithms or STUDY_ALGORITHMS:
        if progress:
            progress(f"{st.label}: {name}")
        t0 = time.perf_counter()
        if name == "bucket_direct" and all(d.kind == "ring" for d in topo.dims):
            continue  # identical to the ring bucket on a torus
        if name == "hamiltonian_rings":
            reason = hamiltonian_unsupported_reason(topo, tuple(range(p)))
            if reason:
                res.notes.append(f"hamiltonian_rings: not applicable ({reason})")
                continue
            if p > HAMILTONIAN_MAX_RANKS:
                res.times[name] = hamiltonian_rings_time(topo, setup.sizes, model.alpha)
                res.variant[name] = ["closed form"] * len(setup.sizes)
                res.verified[name] = "closed form (checked against the schedule on small tori)"
                res.seconds[name] = time.perf_counter() - t0
                continue
        best, which, ok = None, None, []
        for fn in STUDY_ALGORITHMS[name]:
            try:
                s = fn(topo)
            except NotSupportedError as e:
                res.notes.append(f"{name}: {e}")
                continue
            if p <= setup.verify_max_ranks:
                ok.append(verify(s, topo, collect=True).ok)
            t = np.array([r.time for r in model.evaluate_sizes(s, topo, setup.sizes)])
            label = s.meta.get("variant", s.name)
            if name in PROFILED and fn is STUDY_ALGORITHMS[name][0]:
                res.profile[name] = congestion_profile(s, topo, setup.sizes[-1], st.ports,
                                                       model.alpha)
            if best is None:
                best, which = t, [label] * len(t)
            else:
                better = t < best
                which = [label if b else w for b, w in zip(better, which, strict=True)]
                best = np.minimum(best, t)
            del s
        if best is None:
            continue
        res.times[name] = best
        res.variant[name] = which
        res.verified[name] = ("yes" if all(ok) else "NO") if ok else \
            f"not run (> {setup.verify_max_ranks} ranks)"
        res.seconds[name] = time.perf_counter() - t0
    return res


#: The paper's link-bandwidth sweep on the 8x8 torus (Gb/s).
SWEEP_GBPS = (100, 200, 400, 800, 1600, 3200)


def bandwidth_sweep(setup: StudySetup | None = None, *,
                    shape: Sequence[int] = (8, 8), gbps: Sequence[float] = SWEEP_GBPS,
                    progress: Callable[[str], None] | None = None) -> list[dict]:
    """The paper's link-bandwidth sweep: the study on one torus at each link bandwidth,
    summarized per bandwidth as Swing's largest speedup over the best paper baseline (and
    where), its speedup at 32 B and at the largest size, and the largest size up to which
    Swing is at least as fast.

    Examples
    --------
    >>> rows = bandwidth_sweep(StudySetup(sizes=(32.0, 2.0 ** 20)), shape=(4, 4),
    ...                        gbps=(100, 3200))
    >>> [r["gbps"] for r in rows], rows[0]["speedup_at_smallest"] > 1
    ([100, 3200], True)
    """
    setup = setup or StudySetup()
    st = StudyTopology("torus", tuple(shape))
    out = []
    for g in gbps:
        if progress:
            progress(f"{st.label} at {g:g} Gb/s")
        res = study_topology(st, dataclasses.replace(setup, bandwidth=g * GBIT))
        names, other = res.best_other(exclude=NOT_IN_PAPER)
        sp = other / res.times["swing"]
        i = int(np.argmax(sp))
        wins = [n for n, x in zip(res.sizes, sp, strict=True) if x >= 1 - 1e-12]
        out.append({"gbps": g, "max_speedup": float(sp[i]), "at_size": res.sizes[i],
                    "over": names[i], "speedup_at_smallest": float(sp[0]),
                    "speedup_at_largest": float(sp[-1]),
                    "swing_best_up_to": max(wins) if wins else None})
    return out


def render_sweep(rows: Sequence[dict], label: str = "torus 8x8") -> str:
    """The bandwidth sweep as a Markdown table."""
    out = [f"## Link-bandwidth sweep ({label})", "",
           "| link bandwidth | max speedup | at | over | at 32 B | at the largest size | "
           "Swing best up to |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        up = _fmt_size(r["swing_best_up_to"]) if r["swing_best_up_to"] else "-"
        out.append(f"| {r['gbps']:g} Gb/s | {r['max_speedup']:.2f}x | {_fmt_size(r['at_size'])} "
                   f"| {r['over']} | {r['speedup_at_smallest']:.2f}x | "
                   f"{r['speedup_at_largest']:.2f}x | {up} |")
    return "\n".join(out) + "\n"


def run_swing_study(setup: StudySetup | None = None, *,
                    topologies: Sequence[StudyTopology] = TOPOLOGIES,
                    progress: Callable[[str], None] | None = None) -> list[TopologyResult]:
    """Run :func:`study_topology` on every topology of the study."""
    setup = setup or StudySetup()
    return [study_topology(st, setup, progress=progress) for st in topologies]


# ------------------------------------------------------------------ rendering
def _fmt_size(n: float) -> str:
    for unit, k in (("MiB", 20), ("KiB", 10)):
        if n >= 2 ** k:
            return f"{n / 2 ** k:g} {unit}"
    return f"{n:g} B"


def _fmt_time(t: float) -> str:
    if t >= 1e-3:
        return f"{t * 1e3:.3f} ms"
    return f"{t * 1e6:.2f} us"


def _figure(res: TopologyResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    x = np.asarray(res.sizes)
    for name in res.times:
        ax.plot(x, res.goodput(name) / 1e9, marker="o", ms=3,
                lw=2.2 if name == "swing" else 1.2, label=name)
    peak = res.topology.ports / 2 * 400
    ax.axhline(peak, color="grey", ls="--", lw=1, label=f"peak {peak:g} Gb/s (D x 400)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("allreduce vector size (bytes)")
    ax.set_ylabel("goodput (Gb/s)")
    ax.set_title(f"{res.topology.label}: allreduce goodput (alpha-beta-congestion model)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render_markdown(results: Sequence[TopologyResult], setup: StudySetup,
                    figures: dict[str, str]) -> str:
    """The generated results page: per topology the figure, runtimes at the smallest
    size, Swing's speedup over the best other algorithm at every size."""
    out = ["# Swing study: generated results", "",
           "Generated by `topocoll study swing`; do not edit by hand. Discussion: "
           "[swing.md](swing.md).", "",
           f"Model: AlphaBeta, routing `{setup.routing}`, {setup.bandwidth * 8 / 1e9:g} Gb/s "
           f"links, {setup.link_latency * 1e9:g} ns link latency, "
           f"{setup.hop_latency * 1e9:g} ns per hop (alpha and forwarding).", ""]
    for res in results:
        lab = res.topology.label
        out += [f"## {lab}", "", f"![{lab}]({figures[lab]})", ""]
        out += ["| algorithm | time at 32 B | verified |", "|---|---|---|"]
        for name, t in res.times.items():
            out.append(f"| {name} | {_fmt_time(t[0])} | {res.verified[name]} |")
        for note in res.notes:
            out.append(f"\n- {note}")
        if res.profile:
            out += ["", f"Counters of the bandwidth-optimal schedules at "
                    f"{_fmt_size(res.sizes[-1])} (`congestion_profile`):", "",
                    "| algorithm | steps | congestion deficiency xi | injection only | "
                    "latency part | steps bound at a switch port |",
                    "|---|---|---|---|---|---|"]
            for name, pr in res.profile.items():
                out.append(f"| {name} | {pr['steps']} | {pr['xi']:.3f} | "
                           f"{pr['injection_xi']:.3f} | {_fmt_time(pr['latency_s'])} | "
                           f"{pr['switch_bound_steps']} |")
        extra = "bucket_direct" in res.times
        out += ["", "| size | swing | swing variant | best other | its time | speedup |"
                + (" speedup over the paper's baselines |" if extra else ""),
                "|---|---|---|---|---|---|" + ("---|" if extra else "")]
        names, other = res.best_other()
        paper = res.best_other(exclude=NOT_IN_PAPER)[1]
        sw = res.times["swing"]
        for i, n in enumerate(res.sizes):
            out.append(f"| {_fmt_size(n)} | {_fmt_time(sw[i])} | {res.variant['swing'][i]} | "
                       f"{names[i]} | {_fmt_time(other[i])} | {other[i] / sw[i]:.2f} |"
                       + (f" {paper[i] / sw[i]:.2f} |" if extra else ""))
        out.append("")
    return "\n".join(out)


def write_study(out_dir: str | Path, results: Sequence[TopologyResult],
                setup: StudySetup, sweep: Sequence[dict] = ()) -> list[Path]:
    """Write ``swing-results.md``, ``swing-results.json`` and one PNG per topology into
    ``out_dir`` (with ``sweep``, the bandwidth sweep's table and ``swing-sweep.json``);
    returns the written paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written, figures = [], {}
    for res in results:
        fname = "swing-" + res.topology.label.replace(" ", "-").lower() + ".png"
        _figure(res, out / fname)
        figures[res.topology.label] = fname
        written.append(out / fname)
    md = out / "swing-results.md"
    md.write_text(render_markdown(results, setup, figures)
                  + ("\n" + render_sweep(sweep) if sweep else ""))
    js = out / "swing-results.json"
    js.write_text(json.dumps([r.to_dict() for r in results], indent=1))
    if sweep:
        sw = out / "swing-sweep.json"
        sw.write_text(json.dumps(list(sweep), indent=1, sort_keys=True) + "\n")
        written.append(sw)
    return written + [md, js]



#: Even tori whose sizes are not powers of two (the paper: "any shape and size").
EVEN_SHAPES = ((6, 6), (10, 10), (12, 12), (24, 24), (12, 8), (6, 6, 6))
#: Tori with odd sizes (the paper's odd-size procedure: the last coordinate of each odd
#: dimension exchanges its blocks directly; ``synth.block_trees``).
ODD_SHAPES = ((5, 5), (7, 7), (9, 9), (15, 15), (7, 6), (3, 3, 3))
#: The sizes the even-size table shows.
EVEN_TABLE_SIZES = (32.0, 32.0 * 1024, 2.0 * 2**20, 128.0 * 2**20)


def even_sizes_study(setup: StudySetup | None = None,
                     shapes: Sequence[tuple[int, ...]] = EVEN_SHAPES,
                     progress: Callable[[str], None] | None = None) -> list[dict]:
    """Swing on tori that are not powers of two (:data:`EVEN_SHAPES`, :data:`ODD_SHAPES`):
    every algorithm of the study (Swing as the paper runs such sizes: unfolded, each block
    once on its tree, the last coordinate of an odd dimension exchanging directly), and
    Swing folded per dimension onto the largest power of two (the better of its folded
    bandwidth and latency variants). One record per shape: the sizes, per
    algorithm times, ``swing_fold`` times, the best other algorithm per size, verified."""
    from ..synth.multiport import butterfly_schedule, make_plan
    from ..synth.swing import swing_peer

    setup = setup or StudySetup()
    out = []
    for shape in shapes:
        st = StudyTopology("torus", tuple(shape))
        res = study_topology(st, setup, progress=progress)
        topo = st.build(setup)
        model = dataclasses.replace(setup.model(), alpha=st.alpha(setup))
        plan = make_plan(topo, None, swing_peer)
        fold = np.minimum(*(
            np.array([r.time for r in model.evaluate_sizes(
                butterfly_schedule(plan, "allreduce", variant=v, name="swing_fold"), topo,
                setup.sizes)]) for v in ("bandwidth", "latency")))
        names, other = res.best_other("swing")
        out.append({**res.to_dict(), "shape": list(shape),
                    "swing_fold_s": fold.tolist(), "best_other": names,
                    "best_other_s": other.tolist()})
    return out


def render_even(rows: Sequence[dict], name: str = "swing-even") -> str:
    """The table of :func:`even_sizes_study` as Markdown (``<name>.md``)."""
    out = [f"<!-- written by `topocoll study {name}`; do not edit -->", "",
           "Allreduce time (us) and speedup of Swing over the best other algorithm; Swing "
           "unfolded (each block once on its tree; on an odd dimension the last coordinate "
           "exchanges directly) and folded onto the largest power of two.",
           "", "| torus | size | Swing | Swing folded | best other | speedup | speedup folded |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        sizes = list(r["sizes"])
        for size in EVEN_TABLE_SIZES:
            i = sizes.index(size)
            sw, fo = r["times_s"]["swing"][i], r["swing_fold_s"][i]
            ot, on = r["best_other_s"][i], r["best_other"][i]
            out.append(f"| {'x'.join(map(str, r['shape']))} | {_fmt_size(size)} | "
                       f"{sw * 1e6:.2f} | {fo * 1e6:.2f} | {ot * 1e6:.2f} ({on}) | "
                       f"{ot / sw:.2f}x | {ot / fo:.2f}x |")
    out += ["", "Counters of the unfolded Swing allreduce at the largest size "
            "(`congestion_profile`): the bandwidth term over `n / (D B)` with each step's "
            "busiest link (xi) and with its busiest rank (injection only); their ratio is "
            "the links' congestion.", "",
            "| torus | steps | xi | injection only | congestion |", "|---|---|---|---|---|"]
    for r in rows:
        pr = r.get("profile", {}).get("swing")
        if pr:
            out.append(f"| {'x'.join(map(str, r['shape']))} | {pr['steps']} | {pr['xi']:.3f} "
                       f"| {pr['injection_xi']:.3f} | {pr['xi'] / pr['injection_xi']:.3f} |")
    return "\n".join(out) + "\n"


def write_even(out_dir: str | Path, rows: Sequence[dict],
               name: str = "swing-even") -> list[Path]:
    """``<name>.json`` and ``<name>.md`` in ``out_dir``."""
    return write_tables(out_dir, name, rows, render_even(rows, name))
