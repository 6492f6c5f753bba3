"""Sweep results in an embedded DuckDB file.

Schema (documented in ``docs/sweeps.md``):

``points``
    ``point_id`` (primary key), ``spec_hash``, ``command``, ``params`` (JSON),
    ``status`` (``ok`` or ``error``), ``error``, ``metrics`` (JSON: the command's ``--json``
    output), ``seconds`` (wall time of the point), ``version`` (topocoll), ``finished``
    (insertion order).
``results`` (view)
    one row per output record (a command that prints a list gives one row per element),
    with the point's parameters and the record's scalar fields as columns.

Only the sweep's driver writes; every point is one transaction, so a sweep killed at any
moment leaves whole points only.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError

__all__ = ["SweepStore", "SCHEMA", "is_duckdb"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS points (
    point_id VARCHAR PRIMARY KEY,
    spec_hash VARCHAR,
    command VARCHAR,
    params JSON,
    status VARCHAR,
    error VARCHAR,
    metrics JSON,
    seconds DOUBLE,
    version VARCHAR,
    finished BIGINT
);
"""


def is_duckdb(path: str | Path) -> bool:
    """DuckDB's file header: a checksum, then the magic bytes ``DUCK`` at offset 8."""
    with open(path, "rb") as f:
        return f.read(12)[8:12] == b"DUCK"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class SweepStore:
    """The DuckDB file of a sweep (one writer: the driver)."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        import duckdb

        self.path = Path(path)
        if read_only and not self.path.exists():
            raise InputError(f"no sweep database at {self.path}", item=str(self.path))
        if self.path.is_file() and self.path.stat().st_size and not is_duckdb(self.path):
            raise InputError(f"{self.path} exists and is not a DuckDB database (refusing to "
                             "touch it)", item=str(self.path))
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as e:
            raise InputError(f"cannot open {self.path} as a DuckDB database: {e}",
                             item=str(self.path)) from None
        if not read_only:
            self.con.execute(SCHEMA)

    def close(self) -> None:
        self.con.close()

    def done(self) -> set[str]:
        """Ids of the points already recorded (ok or error)."""
        return {r[0] for r in self.con.execute("SELECT point_id FROM points").fetchall()}

    def record(self, point_id: str, spec_hash: str, command: str, params: dict, status: str,
               error: str | None, metrics, seconds: float, version: str) -> None:
        """Insert one point (ignored if it is already there)."""
        self.record_many([(point_id, spec_hash, command, params, status, error, metrics,
                           seconds, version)])

    def record_many(self, rows: list[tuple]) -> None:
        """Insert points in one transaction, each a tuple of :meth:`record`'s arguments
        (those already there are ignored). A kill before the commit loses none of the
        points already committed; the ones in flight are simply run again."""
        if not rows:
            return
        n = self.con.execute("SELECT count(*) FROM points").fetchone()[0]
        self.con.execute("BEGIN TRANSACTION")
        try:
            # one statement for the batch (DuckDB's executemany runs one per row)
            values = [v for i, (pid, sh, cmd, params, status, error, metrics, sec, ver)
                      in enumerate(rows)
                      for v in (pid, sh, cmd, json.dumps(params, sort_keys=True), status,
                                error,
                                None if metrics is None else json.dumps(metrics,
                                                                        sort_keys=True),
                                sec, ver, n + i)]
            self.con.execute("INSERT OR IGNORE INTO points VALUES "
                             + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows)),
                             values)
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def rows(self) -> list[dict]:
        """Every output record with its point's parameters (what the ``results`` view
        shows), in insertion order; a record with a ``designs`` list (``topocoll
        design``) gives one row per design."""
        out = []
        for pid, cmd, params, metrics in self.con.execute(
                "SELECT point_id, command, params, metrics FROM points WHERE status = 'ok' "
                "ORDER BY finished").fetchall():
            p = json.loads(params)
            m = json.loads(metrics) if metrics else {}
            recs = m if isinstance(m, list) else [m]
            if isinstance(m, dict) and isinstance(m.get("designs"), list):
                # `topocoll design`: one row per design, the answer's scalars repeated
                top = {k: v for k, v in m.items() if k != "designs"}
                recs = [{**top, **d} for d in m["designs"] if isinstance(d, dict)]
            for rec in recs:
                if not isinstance(rec, dict):
                    continue
                row = {"point_id": pid, "command": cmd}
                row.update({f"param_{k}": v for k, v in p.items()
                            if isinstance(v, (int, float, str, bool))})
                row.update({k: v for k, v in rec.items()
                            if isinstance(v, (int, float, str, bool)) or v is None})
                out.append(row)
        return out

    def refresh_view(self) -> None:
        """(Re)create the ``results`` view over every parameter and scalar record field
        seen so far (a point printing a list gives one row per element)."""
        rows = self.rows()
        pkeys: list[str] = []
        mkeys: list[str] = []
        for r in rows:
            for k in r:
                if k in ("point_id", "command"):
                    continue
                lst = pkeys if k.startswith("param_") else mkeys
                if k not in lst:
                    lst.append(k)
        def numeric(k: str) -> bool:
            vals = [r[k] for r in rows if r.get(k) is not None]
            return bool(vals) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                      for v in vals)

        def col(src: str, path: str, k: str) -> str:
            e = f"json_extract_string({src}, '$.\"{path}\"')"
            return (f"TRY_CAST({e} AS DOUBLE) AS {_ident(k)}" if numeric(k)
                    else f"{e} AS {_ident(k)}")

        cols = ["p.point_id", "p.command"]
        cols += [col("p.params", k[6:], k) for k in pkeys]
        cols += [col("r.rec", k, k) for k in mkeys]
        sql = ("CREATE OR REPLACE VIEW results AS SELECT " + ", ".join(cols) +
               " FROM points p, LATERAL (SELECT unnest(CASE WHEN json_type(p.metrics) = "
               "'ARRAY' THEN CAST(p.metrics AS JSON[]) ELSE [p.metrics] END) AS rec) r "
               "WHERE p.status = 'ok'")
        self.con.execute(sql)

    def query(self, sql: str) -> tuple[list[str], list[tuple]]:
        """Column names and rows of ``sql``.

        Raises
        ------
        InputError
            With DuckDB's message for a bad query.
        """
        import duckdb

        try:
            cur = self.con.execute(sql)
        except duckdb.Error as e:
            raise InputError(f"query failed: {str(e).splitlines()[0]}", item="SQL") from None
        cols = [d[0] for d in cur.description] if cur.description else []
        return cols, cur.fetchall() if cols else []
