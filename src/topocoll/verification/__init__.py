"""Consumers that judge correctness: symbolic verification of schedules."""

from .core import EXACT_STATE_LIMIT, VerificationReport, verify
from .semantics import VIOLATION_KINDS, Violation

__all__ = ["verify", "VerificationReport", "Violation", "VIOLATION_KINDS", "EXACT_STATE_LIMIT"]
