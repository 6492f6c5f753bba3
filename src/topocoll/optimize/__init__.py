"""Search and selection: which schedule is fastest here, and how far from optimal."""

from .compare import MAX_ROUTE_ENTRIES, CompareRow, compare_algorithms, route_entries

__all__ = ["CompareRow", "compare_algorithms", "route_entries", "MAX_ROUTE_ENTRIES"]
