"""Swing's study at packet level: the paper's claim tested at the fidelity it was made.

The paper (De Sensi et al., NSDI 2024) simulated packets (SST, minimal adaptive routing);
:mod:`.swing` costs schedules with the alpha-beta-congestion model, whose steps are
barriers and whose links share bandwidth evenly. Here the same schedules run through
the project's packet engine (:class:`~topocoll.sim.PacketSim`, compiled): 4 KiB packets
plus 64-byte headers, store-and-forward with 300 ns forwarding on every node and 100 ns
links (the study's setup), a reliable windowed transport (no losses arise on tori:
their nodes have host buffers; a HammingMesh's line switches have the engine's shared
16 MiB buffers, and the rows count any retransmit), packets sprayed at random over the
minimal paths (our stand-in for minimal adaptive routing), and no barriers (a transfer
starts when the data it needs has arrived).

Every variant of every algorithm of :data:`~.swing.STUDY_ALGORITHMS` is simulated at a size
when its alpha-beta time is within :data:`PACKET_MARGIN` of the best alpha-beta time on
its side (Swing's variants against Swing's best; the baselines' against the best
baseline). A variant outside the margin would have to gain more than that factor at
packet level over the best of its side to matter; the rows record the packet/alpha-beta
ratio of everything simulated, which says how far that is from happening.

Counters per simulated run: packet-level time, the alpha-beta time, events, the largest
output queue (bytes) and the mean utilization of the links (bytes on the wire over
capacity times the run's time). Wall-clock times are not stored.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import NotSupportedError
from ..sim import PacketSim
from ..units import format_size
from .swing import NOT_IN_PAPER, STUDY_ALGORITHMS, StudySetup, StudyTopology

__all__ = ["PACKET_MARGIN", "PACKET_TOPOLOGIES", "PacketRow", "packet_model",
           "packet_study", "render_packet_table", "write_packet_rows", "write_packet_markdown"]

#: A variant is simulated when its alpha-beta time is at most this factor above the best
#: alpha-beta time on its side (Swing or the baselines).
PACKET_MARGIN = 1.5
#: The tori of the packet-level rows (the issue's "at least 8x8 and 16x16").
PACKET_TOPOLOGIES = (StudyTopology("torus", (8, 8)), StudyTopology("torus", (16, 16)))


def packet_model(st: StudyTopology, setup: StudySetup, *, mtu: int = 4096) -> PacketSim:
    """The packet engine as the study runs it (module docstring): per-packet spraying
    over minimal paths, reordering tolerated (``dupthresh`` 64), the setup's per-transfer
    overhead."""
    return PacketSim(mtu=mtu, alpha=st.alpha(setup), ecmp="spray", dupthresh=64,
                     bound=False, seed=0)


@dataclass
class PacketRow:
    """One size on one torus: per simulated variant ``(family, variant)`` its alpha-beta
    and packet times and counters; Swing's and the best baseline's times at both
    fidelities."""

    size: float
    runs: list[dict] = field(default_factory=list)

    def _best(self, swing: bool, key: str) -> dict:
        side = [r for r in self.runs if (r["family"] == "swing") == swing]
        return min(side, key=lambda r: (r[key], r["family"], r["variant"]))

    @property
    def swing(self) -> dict:
        return self._best(True, "packet_s")

    @property
    def other(self) -> dict:
        return self._best(False, "packet_s")

    @property
    def speedup_packet(self) -> float:
        return self.other["packet_s"] / self.swing["packet_s"]

    @property
    def speedup_ab(self) -> float:
        return self._best(False, "ab_s")["ab_s"] / self._best(True, "ab_s")["ab_s"]

    def to_dict(self) -> dict:
        return {"size": self.size, "runs": self.runs, "speedup_packet": self.speedup_packet,
                "speedup_alpha_beta": self.speedup_ab, "swing": self.swing["variant"],
                "best_other": self.other["family"]}


def _variants(st: StudyTopology, setup: StudySetup) -> list[tuple[str, str, object]]:
    topo = st.build(setup)
    out = []
    for family, fns in STUDY_ALGORITHMS.items():
        if family in NOT_IN_PAPER:
            continue
        for fn in fns:
            try:
                s = fn(topo)
            except NotSupportedError:
                continue
            out.append((family, s.meta.get("variant", s.name), s))
    return out


def packet_study(st: StudyTopology, setup: StudySetup | None = None, *,
                 sizes: Sequence[float] | None = None, margin: float = PACKET_MARGIN,
                 mtu: int = 4096, progress: Callable[[str], None] | None = None,
                 row_done: Callable[[PacketRow], None] | None = None) -> list[PacketRow]:
    """Swing against the paper's baselines at packet level on one torus (or HammingMesh),
    one row per size
    (the setup's sizes by default); ``row_done`` is called after each row (to save
    partial results of a long run).

    Examples
    --------
    >>> rows = packet_study(StudyTopology("torus", (4, 4)), sizes=[32.0, 65536.0])
    >>> [r.swing["family"] for r in rows], all(r.speedup_packet > 0.5 for r in rows)
    (['swing', 'swing'], True)
    """
    setup = setup or StudySetup()
    topo = st.build(setup)
    ab = dataclasses.replace(setup.model(), alpha=st.alpha(setup))
    pk = packet_model(st, setup, mtu=mtu)
    variants = _variants(st, setup)
    sizes = list(sizes or setup.sizes)
    times = {(f, v): np.array([r.time for r in ab.evaluate_sizes(s, topo, sizes)])
             for f, v, s in variants}
    rows = []
    for i, n in enumerate(sizes):
        best = {side: min(t[i] for (f, _), t in times.items() if (f == "swing") == side)
                for side in (True, False)}
        row = PacketRow(float(n))
        for f, v, s in variants:
            t_ab = float(times[(f, v)][i])
            if t_ab > margin * best[f == "swing"]:
                continue
            if progress:
                progress(f"{st.label} {n:g} B: {v}")
            run = pk.run(s, topo, n)
            t = float(run.result.time)
            busy = float(run.link_bytes.sum())
            cap = float(topo.link_bandwidth.sum()) * t
            row.runs.append({"family": f, "variant": v, "ab_s": t_ab, "packet_s": t,
                             "ratio": t / t_ab, "events": int(run.stats["events"]),
                             "retransmits": int(run.stats["retransmits"]),
                             "queue_peak_bytes": float(np.max(run.queue_peak)),
                             "utilization": busy / cap if cap > 0 else 0.0})
        rows.append(row)
        if row_done:
            row_done(row)
    return rows


def render_packet_table(label: str, rows: Sequence[PacketRow]) -> str:
    """Markdown: per size Swing's and the best baseline's time at packet level, the
    speedup at packet level beside the alpha-beta one, and the counters that explain
    the difference."""
    out = [f"### {label}", "",
           "| size | Swing (packet) | best baseline (packet) | its time | speedup packet | "
           "speedup alpha-beta | packet / alpha-beta: Swing, baseline | link utilization: "
           "Swing, baseline | peak queue (KiB): Swing, baseline | variants simulated |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s, o = r.swing, r.other
        out.append(
            f"| {format_size(r.size)} | {s['packet_s'] * 1e6:.2f} us ({s['variant']}) | "
            f"{o['family']} ({o['variant']}) | {o['packet_s'] * 1e6:.2f} us | "
            f"{r.speedup_packet:.2f} | {r.speedup_ab:.2f} | {s['ratio']:.3f}, "
            f"{o['ratio']:.3f} | {s['utilization']:.2f}, {o['utilization']:.2f} | "
            f"{s['queue_peak_bytes'] / 1024:.0f}, {o['queue_peak_bytes'] / 1024:.0f} | "
            f"{len(r.runs)} |")
    return "\n".join(out) + "\n"


def write_packet_rows(path: str | Path, label: str, rows: Sequence[PacketRow]) -> Path:
    """Merge ``rows`` for ``label`` into the JSON file at ``path`` (other tori kept)."""
    p = Path(path)
    doc = json.loads(p.read_text()) if p.exists() else {}
    doc[label] = [r.to_dict() for r in rows]
    p.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return p


def write_packet_markdown(json_path: str | Path, md_path: str | Path) -> Path:
    """``swing-packet.md``: the table of every torus in ``json_path``."""
    doc = json.loads(Path(json_path).read_text())
    p = Path(md_path)
    p.write_text("# Swing at packet level: generated tables\n\nGenerated by `topocoll study "
                 "swing-packet`; discussion in [swing.md](swing.md).\n\n" + "\n".join(
                     render_packet_table(label, [PacketRow(r["size"], r["runs"])
                                                 for r in rows])
                     for label, rows in sorted(doc.items())))
    return p
