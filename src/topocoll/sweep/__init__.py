"""Design-space sweeps: specs, a resumable runner (local pool or Ray), results in DuckDB,
HTML reports
(``docs/sweeps.md``)."""

from .report import figures, pareto_front, write_design_report, write_report
from .run import FLUSH_POINTS, SWEEP_BACKENDS, SweepSummary, run_sweep, spec_hash
from .spec import Point, SweepSpec, load_sweep, parse_sweep, point_id, to_argv
from .store import SCHEMA, SweepStore

__all__ = ["figures", "write_report", "write_design_report", "pareto_front", "SweepSummary",
           "run_sweep", "spec_hash", "Point",
           "SweepSpec", "load_sweep", "parse_sweep", "point_id", "to_argv", "SCHEMA",
           "SweepStore", "SWEEP_BACKENDS", "FLUSH_POINTS"]
