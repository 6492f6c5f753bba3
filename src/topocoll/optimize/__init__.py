"""Search and selection: which schedule is fastest here, and how far from optimal."""

from .compare import CompareRow, compare_algorithms

__all__ = ["CompareRow", "compare_algorithms"]
