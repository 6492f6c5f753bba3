"""Design-space sweeps: specs, a resumable local runner, results in DuckDB, HTML reports
(``docs/sweeps.md``)."""

from .report import figures, write_report
from .run import SweepSummary, run_sweep, spec_hash
from .spec import Point, SweepSpec, load_sweep, parse_sweep, point_id, to_argv
from .store import SCHEMA, SweepStore

__all__ = ["figures", "write_report", "SweepSummary", "run_sweep", "spec_hash", "Point",
           "SweepSpec", "load_sweep", "parse_sweep", "point_id", "to_argv", "SCHEMA",
           "SweepStore"]
