"""What a simulation run shows a person: utilization over time, a trace, a heat map.

All functions take a :class:`~topocoll.sim.flow.FlowRun` (utilization integrated from
its rate log) or a :class:`~topocoll.sim.packet.PacketRun` (utilization from its
per-bin byte counts; the trace then also carries queue-occupancy counters).

- :func:`link_utilization`: a ``(bins, links)`` matrix of the fraction of each link's
  capacity used, averaged over each time bin, integrated exactly from the rate log.
- :func:`trace_events` / :func:`write_trace`: Chrome trace-event JSON (opens in
  ui.perfetto.dev and chrome://tracing). One process per rank; one complete event
  (``"ph": "X"``) per transfer from ready to finish, on the sending rank, placed in lanes
  (threads) so that events of a lane never overlap; counter events (``"ph": "C"``) with
  the utilization of the busiest links.
- :func:`plot_utilization`: a links x time heat map (matplotlib, ``[plot]`` extra).

References
----------
.. [1] "Trace Event Format", Google (the JSON format read by chrome://tracing and
   Perfetto).

Examples
--------
>>> from topocoll.topology import ring
>>> from topocoll.synth.ring import ring_allreduce
>>> from topocoll.sim import FlowSim
>>> t = ring(4, bandwidth=1e9, latency=0.0)
>>> run = FlowSim().run(ring_allreduce(t), t, 4e9)
>>> edges, util = link_utilization(run, bins=6)
>>> util.shape, util[:, 0].round(6).tolist()     # link 0->1 is busy all the time
((6, 8), [1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
>>> sorted({e["ph"] for e in trace_events(run)["traceEvents"]})
['C', 'M', 'X']
"""

from __future__ import annotations

import json
import os
from typing import Any

import numba
import numpy as np

from ..errors import InputError

__all__ = ["link_utilization", "trace_events", "write_trace", "plot_utilization",
           "write_utilization_csv", "busiest_links"]


def _segments(run) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Constant-rate pieces ``(t0, t1, flow, rate)`` of every flow, rate > 0."""
    order = np.lexsort((np.arange(len(run.log_time)), run.log_time, run.log_flow))
    t, f, r = run.log_time[order], run.log_flow[order], run.log_rate[order]
    same = np.zeros(len(f), dtype=bool)
    same[:-1] = f[1:] == f[:-1]
    t1 = np.where(same, np.roll(t, -1), t)
    keep = (r > 0) & same
    return t[keep], t1[keep], f[keep], r[keep]


@numba.njit(cache=True)
def _bin_bytes(t0, t1, flow, rate, ptr, link, frac, edges, out):
    nb = len(edges) - 1
    width = edges[1] - edges[0]
    for i in range(len(t0)):
        a, b = t0[i], t1[i]
        ba = min(nb - 1, max(0, int((a - edges[0]) / width)))
        bb = min(nb - 1, max(0, int((b - edges[0]) / width)))
        for k in range(ba, bb + 1):
            ov = min(b, edges[k + 1]) - max(a, edges[k])
            if ov <= 0:
                continue
            for e in range(ptr[flow[i]], ptr[flow[i] + 1]):
                out[k, link[e]] += rate[i] * frac[e] * ov


def link_utilization(run, bins: int = 100, end: float | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Time-binned utilization of every link.

    Parameters
    ----------
    run : FlowRun
    bins : int
        Number of equal time bins over ``[0, end]``.
    end : float, optional
        End of the time axis; defaults to the completion time of the run (for a packet
        run, the end of its last statistics bin if that is later).

    Returns
    -------
    edges : ndarray, shape (bins + 1,)
        Bin edges in seconds.
    util : ndarray, shape (bins, links)
        Bytes carried in each bin divided by ``bandwidth x bin width``: the average
        fraction of capacity used, in [0, 1]. For a packet-level run the bytes are those
        recorded per statistics bin (at the end of each packet's serialization), spread
        uniformly inside that bin, so values can exceed 1 slightly at bin edges.

    Raises
    ------
    ValueError
        If ``bins < 1``.
    """
    if bins < 1:
        raise InputError(f"bins must be >= 1, got {bins}", item="bins")
    if end is None:
        end = run.result.time
        if hasattr(run, "link_bytes"):  # cover every recorded statistics bin
            end = max(end, len(run.link_bytes) * run.bin_width)
    end = float(end)
    edges = np.linspace(0.0, end if end > 0 else 1.0, bins + 1)
    bw = run.topology.link_bandwidth[None, :]
    if hasattr(run, "link_bytes"):  # packet level: rebin the recorded bytes per bin
        fine = np.arange(len(run.link_bytes) + 1) * run.bin_width
        cum = np.vstack([np.zeros((1, run.link_bytes.shape[1])),
                         np.cumsum(run.link_bytes, axis=0)])
        at = np.stack([np.interp(edges, fine, cum[:, l]) for l in range(cum.shape[1])], 1)
        return edges, np.diff(at, axis=0) / (bw * (edges[1] - edges[0]))
    out = np.zeros((bins, len(run.topology.links)))
    t0, t1, f, r = _segments(run)
    if len(t0):
        _bin_bytes(t0, t1, f.astype(np.int64), r, run.route_ptr, run.route_link,
                   run.route_frac, edges, out)
    return edges, out / (bw * (edges[1] - edges[0]))


def write_utilization_csv(run, path: str | os.PathLike, bins: int = 100) -> None:
    """Write :func:`link_utilization` of ``run`` as CSV: one row per time bin
    (``t_start_s``, ``t_end_s``), one column per link (``src->dst#index``)."""
    edges, util = link_utilization(run, bins=bins)
    t = run.topology
    head = "t_start_s,t_end_s," + ",".join(
        f"{int(a)}->{int(b)}#{i}" for i, (a, b) in enumerate(zip(t.link_src, t.link_dst,
                                                                  strict=True)))
    np.savetxt(path, np.column_stack([edges[:-1], edges[1:], util]), delimiter=",",
               header=head, comments="", fmt="%.6g")


def busiest_links(run, k: int = 5, bins: int = 100) -> list[dict[str, Any]]:
    """The ``k`` links with the highest mean utilization over the run (busy ones only):
    ``link`` index, ``src``, ``dst``, ``mean_utilization``."""
    _, util = link_utilization(run, bins=bins)
    busy = util.mean(axis=0)
    t = run.topology
    top = [int(i) for i in busy.argsort(kind="stable")[::-1][:k] if busy[i] > 0]
    return [{"link": i, "src": int(t.link_src[i]), "dst": int(t.link_dst[i]),
             "mean_utilization": float(busy[i])} for i in top]


def _lanes(start: np.ndarray, finish: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Interval partitioning per owner: the lowest lane free at each start."""
    lane = np.zeros(len(start), dtype=np.int64)
    free: dict[int, list[float]] = {}
    for i in np.lexsort((finish, start, owner)):
        ends = free.setdefault(int(owner[i]), [])
        for k, e in enumerate(ends):
            if e <= start[i]:
                lane[i] = k
                ends[k] = finish[i]
                break
        else:
            lane[i] = len(ends)
            ends.append(finish[i])
    return lane


def trace_events(run, *, counters: int = 16, bins: int = 200) -> dict[str, Any]:
    """The run as a Chrome/Perfetto trace-event JSON object.

    Parameters
    ----------
    run : FlowRun
    counters : int
        Utilization counters for this many of the busiest links (0 for none).
    bins : int
        Time resolution of the counters (see :func:`link_utilization`).

    Returns
    -------
    dict
        ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}`` with
        times in microseconds, as the format requires.
    """
    s, res, topo = run.schedule, run.result, run.topology
    start, finish = res.transfer_start, res.transfer_finish
    steps = s.transfer_steps()
    lane = _lanes(start, finish, s.src)
    ev: list[dict[str, Any]] = []
    for u in np.unique(s.src).tolist():
        kind = "switch" if u >= topo.num_ranks else "rank"
        ev.append({"ph": "M", "name": "process_name", "pid": u, "tid": 0,
                   "args": {"name": f"{kind} {u}"}})
        ev.append({"ph": "M", "name": "process_sort_index", "pid": u, "tid": 0,
                   "args": {"sort_index": u}})
    ops = ("copy", "reduce")
    for t in range(s.num_transfers):
        src, dst = int(s.src[t]), int(s.dst[t])
        ev.append({"ph": "X", "cat": "transfer", "name": f"{src}->{dst}", "pid": src,
                   "tid": int(lane[t]), "ts": float(start[t]) * 1e6,
                   "dur": float(finish[t] - start[t]) * 1e6,
                   "args": {"transfer": t, "step": int(steps[t]), "dst": dst,
                            "op": ops[int(s.op[t])], "bytes": float(run.transfer_bytes[t])}})
    if counters > 0 and res.time > 0:
        edges, util = link_utilization(run, bins=bins)
        busiest = np.argsort(-util.sum(axis=0), kind="stable")[:counters]
        cpid = topo.num_nodes
        ev.append({"ph": "M", "name": "process_name", "pid": cpid, "tid": 0,
                   "args": {"name": "link utilization"}})
        for l in busiest.tolist():
            name = f"link {l} ({int(topo.link_src[l])}->{int(topo.link_dst[l])})"
            for k in range(bins):
                ev.append({"ph": "C", "name": name, "pid": cpid, "ts": float(edges[k]) * 1e6,
                           "args": {"utilization": round(float(util[k, l]), 6)}})
            if hasattr(run, "queue_max"):  # packet level: queue occupancy per stats bin
                for k in range(len(run.queue_max)):
                    ev.append({"ph": "C", "name": f"queue {name}", "pid": cpid,
                               "ts": k * run.bin_width * 1e6,
                               "args": {"bytes": int(run.queue_max[k, l])}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"model": res.model, "topology": topo.name,
                          "schedule": s.name, "message_bytes": run.message_bytes,
                          "time_s": res.time}}


def write_trace(run, path: str | os.PathLike, **kwargs: Any) -> None:
    """Write :func:`trace_events` of ``run`` to ``path`` as JSON."""
    with open(path, "w") as fh:
        json.dump(trace_events(run, **kwargs), fh, separators=(",", ":"))


def plot_utilization(run, path: str | os.PathLike, *, bins: int = 200,
                     max_links: int = 256) -> None:
    """Save a heat map of link utilization (links x time) to ``path`` (PNG, SVG...).

    Shows the ``max_links`` busiest links (by bytes), busiest at the top.

    Raises
    ------
    ImportError
        If matplotlib is missing (install the ``[plot]`` extra).
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError("plot_utilization needs matplotlib: pip install "
                          "'topocoll[plot]'") from e
    edges, util = link_utilization(run, bins=bins)
    order = np.argsort(-util.sum(axis=0), kind="stable")[:max_links]
    fig, ax = plt.subplots(figsize=(9, 2 + 0.02 * len(order)))
    im = ax.imshow(util[:, order].T, aspect="auto", interpolation="nearest", vmin=0, vmax=1,
                   cmap="viridis", extent=(0, edges[-1] * 1e3, len(order), 0))
    ax.set_xlabel("time (ms)")
    ax.set_ylabel(f"links ({len(order)} busiest)")
    ax.set_title(f"{run.result.model}: {run.schedule.name or 'schedule'} on "
                 f"{run.topology.name}")
    fig.colorbar(im, ax=ax, label="utilization")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
