"""A self-contained HTML report of a sweep: figures inline (PNG as data URIs), sortable
tables (a few lines of inline script), no network.

Figures, where the results have the fields: time and bus bandwidth against message size
per algorithm (one panel per topology) for ``compare`` sweeps; time against cost for
sweeps that report ``cost_usd`` (the Pareto front marked); iteration time per
configuration for ``train`` sweeps.
"""

from __future__ import annotations

import base64
import html
import io
from collections import defaultdict
from pathlib import Path

from .store import SweepStore

__all__ = ["write_report", "figures", "write_design_report", "pareto_front"]

_SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function (th) {
  th.addEventListener('click', function () {
    // the column within its own table (a page may have several tables)
    var i = th.cellIndex, table = th.closest('table'), body = table.tBodies[0];
    var rows = Array.from(body.rows), asc = th.dataset.asc !== '1';
    rows.sort(function (a, b) {
      var x = a.cells[i].dataset.v, y = b.cells[i].dataset.v;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    th.dataset.asc = asc ? '1' : '0';
  });
});
document.body.dataset.ready = '1';
"""


def _num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def figures(rows: list[dict]) -> list[tuple[str, str]]:
    """(title, data URI) of every figure the rows support."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    sized = [r for r in rows if _num(r.get("size_bytes")) and _num(r.get("time_s"))
             and r.get("algorithm")]
    if sized:
        by_topo: dict = defaultdict(lambda: defaultdict(list))
        for r in sized:
            by_topo[r.get("topology") or r.get("param_topology") or "-"][r["algorithm"]].append(r)
        for topo, algos in sorted(by_topo.items()):
            fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
            for alg, rs in sorted(algos.items()):
                rs = sorted(rs, key=lambda r: _num(r["size_bytes"]))
                xs = [_num(r["size_bytes"]) for r in rs]
                axes[0].plot(xs, [_num(r["time_s"]) for r in rs], "o-", ms=3, label=alg)
                if all(_num(r.get("busbw_Bps")) for r in rs):
                    axes[1].plot(xs, [_num(r["busbw_Bps"]) / 1e9 for r in rs], "o-", ms=3,
                                 label=alg)
            for ax, yl in zip(axes, ("time (s)", "bus bandwidth (GB/s)"), strict=True):
                ax.set_xscale("log", base=2)
                ax.set_xlabel("message size (bytes)")
                ax.set_ylabel(yl)
                ax.grid(alpha=0.3)
            axes[0].set_yscale("log")
            axes[0].legend(fontsize=7)
            fig.suptitle(str(topo))
            fig.tight_layout()
            out.append((f"time and bus bandwidth against size: {topo}", _png(fig)))
            plt.close(fig)
    def _time(r):          # LIBRA reports time_s, TopoOpt and train iteration_s
        return _num(r.get("time_s")) or _num(r.get("iteration_s"))

    costed = [r for r in rows if _num(r.get("cost_usd")) and _time(r)]
    if costed:
        pts = sorted((_num(r["cost_usd"]), _time(r)) for r in costed)
        front = pareto_front(pts)
        fig, ax = plt.subplots(figsize=(6, 3.8))
        ax.plot([c for c, _ in pts], [t for _, t in pts], "o", ms=3, alpha=0.5, label="points")
        ax.plot([c for c, _ in front], [t for _, t in front], "r-o", ms=4, label="Pareto front")
        ax.set_xlabel("cost ($)")
        ax.set_ylabel("time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        out.append(("time against cost", _png(fig)))
        plt.close(fig)
    trained = [r for r in rows if _num(r.get("iteration_s")) and r.get("parallel")]
    if trained:
        trained = sorted(trained, key=lambda r: _num(r["iteration_s"]))[:30]
        fig, ax = plt.subplots(figsize=(7, 0.3 * len(trained) + 1.2))
        labels = [f"{r.get('model', '')} {r['parallel']} {r.get('topology', '')}"
                  for r in trained]
        ax.barh(range(len(trained)), [_num(r["iteration_s"]) for r in trained])
        ax.set_yticks(range(len(trained)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("iteration time (s)")
        fig.tight_layout()
        out.append(("iteration time per configuration (fastest 30)", _png(fig)))
        plt.close(fig)
    return out


def _table(cols: list[str], rows: list[dict]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = []
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c)
            shown = f"{v:.6g}" if isinstance(v, float) else ("" if v is None else str(v))
            cells.append(f'<td data-v="{html.escape(str("" if v is None else v))}">'
                         f"{html.escape(shown)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>'
            + "".join(body) + "</tbody></table>")


def write_report(store: SweepStore, path: str | Path, title: str = "topocoll sweep") -> Path:
    """Write the report of ``store`` to ``path`` (one HTML file)."""
    rows = store.rows()
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols and k != "point_id":
                cols.append(k)
    _, errs = store.query("SELECT point_id, command, params, error FROM points "
                          "WHERE status = 'error' ORDER BY finished")
    (n_ok,), = store.query("SELECT count(*) FROM points WHERE status = 'ok'")[1]
    figs = figures(rows)
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>{n_ok} points ok, {len(errs)} failed; {len(rows)} result rows.</p>"]
    for t, uri in figs:
        parts.append(f'<figure><img alt="{html.escape(t)}" src="{uri}">'
                     f"<figcaption>{html.escape(t)}</figcaption></figure>")
    parts.append("<h2>Results</h2>" + _table(cols, rows))
    if errs:
        parts.append("<h2>Failed points</h2>" + _table(
            ["point_id", "command", "params", "error"],
            [dict(zip(["point_id", "command", "params", "error"], e, strict=True))
             for e in errs]))
    return _write_page(path, title, parts)


def _write_page(path: str | Path, title: str, parts: list[str]) -> Path:
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
            + html.escape(title) + "</title><style>body{font-family:sans-serif;margin:2em}"
            "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
            "padding:2px 6px}th{cursor:pointer;background:#eee}img{max-width:100%}</style>"
            "</head><body>" + "".join(parts) + "<script>" + _SCRIPT + "</script></body></html>")
    p = Path(path)
    p.write_text(page)
    return p


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (cost, time) points no other point beats in both, cheapest first.

    >>> pareto_front([(1, 5), (2, 3), (3, 4), (4, 1)])
    [(1, 5), (2, 3), (4, 1)]
    """
    front, best = [], float("inf")
    for c, t in sorted(points):
        if t < best:
            front.append((c, t))
            best = t
    return front


def write_design_report(record: dict, curve: list[dict], path: str | Path,
                        title: str = "topocoll design") -> Path:
    """The ``topocoll design`` report: iteration time against network cost per family over
    ``curve`` (design records at several budgets, each with a ``designs`` list), the
    Pareto front across families marked, then the answer's designs and every curve point
    as sortable tables."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [d for rec in curve for d in rec["designs"] if d.get("iteration_s")]
    by_fam: dict = defaultdict(list)
    for d in pts:
        by_fam[(d["family"], d["box"], d["oversubscription"])].append(d)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (fam, box, o), ds in sorted(by_fam.items()):
        ds = sorted(ds, key=lambda d: d["cost_usd"])
        label = fam + ("" if len({b for _, b, _ in by_fam}) == 1 else f" ({box})") + (
            "" if o == 1 else f", oversub {o:g}")
        ax.plot([d["cost_usd"] / 1e6 for d in ds], [d["iteration_s"] for d in ds], "o-",
                ms=4, label=label)
    front = pareto_front([(d["cost_usd"], d["iteration_s"]) for d in pts])
    ax.plot([c / 1e6 for c, _ in front], [t for _, t in front], "k--", lw=1,
            label="Pareto front")
    ax.set_xlabel("network cost ($M)")
    ax.set_ylabel("iteration time (s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    uri = _png(fig)
    plt.close(fig)
    cols = ["family", "box", "oversubscription", "rate_gbps", "cost_usd", "power_w",
            "iteration_s", "mfu", "exposed_comm_s", "parallel", "feasible", "reason"]
    w = record.get("winner") or {}
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>{html.escape(str(record.get('model', '')))} on "
             f"{record.get('gpus', '')} GPUs; question: {html.escape(record['mode'])}; "
             f"best: {html.escape(str(w.get('family', 'none')))}.</p>",
             f'<figure><img alt="iteration time against cost" src="{uri}"><figcaption>'
             "iteration time against network cost per family (Pareto front dashed)"
             "</figcaption></figure>",
             "<h2>Designs</h2>" + _table(cols, record["designs"]),
             "<h2>Every point of the curve</h2>" + _table(
                 ["budget_usd", *cols], [{"budget_usd": rec.get("budget_usd"), **d}
                                         for rec in curve for d in rec["designs"]])]
    return _write_page(path, title, parts)
