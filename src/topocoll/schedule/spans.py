"""Chunk spans inside compiled kernels, for a stored or an implicit ``chunk_ptr``.

A kernel takes :attr:`Schedule.compact_chunk_ptr <topocoll.schedule.Schedule.compact_chunk_ptr>`
(empty when every transfer carries one chunk) and reads transfer ``t``'s entries as
``range(chunk_start(ptr, t), chunk_start(ptr, t + 1))``: the same entries either way,
without making or streaming an identity pointer.
"""

from __future__ import annotations

from numba import njit

__all__ = ["chunk_start"]


@njit(cache=True, inline="always")
def chunk_start(chunk_ptr, t):
    """Index in ``chunks`` of transfer ``t``'s first chunk (``t <= T``): ``t`` when
    ``chunk_ptr`` is empty (one chunk per transfer), else ``chunk_ptr[t]``."""
    if chunk_ptr.shape[0] == 0:
        return t
    return chunk_ptr[t]
