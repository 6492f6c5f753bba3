"""Paper reproductions driven from the library (``topocoll study <name>``)."""

from .swing import run_swing_study, study_topology, write_study

__all__ = ["run_swing_study", "study_topology", "write_study"]
