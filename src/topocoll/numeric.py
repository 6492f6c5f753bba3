"""Arithmetic that gives the same bits on every machine.

A float result that decides something discrete (which tree a pricing step picks, which
partition wins, where a chunk goes) must not depend on the CPU. Three things in the
numeric stack do:

- **BLAS.** ``a @ b`` on float arrays calls OpenBLAS, which picks a kernel per CPU
  (``OPENBLAS_CORETYPE``: Haswell, SkylakeX, Zen, ...) and per thread count; kernels sum
  in different orders, so the last bits differ. :func:`matmul` and :func:`dot` multiply
  element by element (exact IEEE products) and sum with numpy's own reductions, whose
  order depends only on the shapes.
- **SIMD transcendentals.** numpy has its own AVX-512 ``exp`` and ``log`` for float64 and
  uses the C library's elsewhere; they differ in the last bit. :func:`exp` and
  :func:`log` go through :mod:`math` (the C library) on every machine.
- **Unstable sorts.** ``np.argsort``'s default kind orders ties differently with AVX-512
  and AVX2 sorting networks; every argsort in the library passes ``kind="stable"``
  (``tests/test_reproducible.py`` checks the source).

Examples
--------
>>> import numpy as np
>>> float(dot(np.array([0.1, 0.2, 0.3]), np.array([1.0, 1.0, 1.0])))
0.6000000000000001
>>> matmul(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0])).tolist()
[3.0, 7.0]
>>> matmul(np.array([1.0, 1.0]), np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
[4.0, 6.0]
>>> matmul(np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
[[1.0, 2.0], [3.0, 4.0]]
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["dot", "matmul", "exp", "log"]


def dot(a, b) -> np.floating:
    """``a @ b`` of two vectors, summed in an order that depends only on the length."""
    return np.add.reduce(np.multiply(np.asarray(a, dtype=float), np.asarray(b, dtype=float)))


def matmul(a, b) -> np.ndarray:
    """``a @ b`` for float vectors and matrices without BLAS (see the module notes).

    Shapes as for ``@`` with one- and two-dimensional operands. Memory: one temporary of
    ``a.size`` (matrix times vector) or of ``b.size`` (vector times matrix); matrix times
    matrix goes column by column of ``b``.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.ndim == 1 and b.ndim == 1:
        return dot(a, b)
    if a.ndim == 2 and b.ndim == 1:
        return np.multiply(a, b[None, :]).sum(axis=1)
    if a.ndim == 1 and b.ndim == 2:
        return np.multiply(a[:, None], b).sum(axis=0)
    if a.ndim == 2 and b.ndim == 2:
        out = np.empty((a.shape[0], b.shape[1]))
        for j in range(b.shape[1]):
            out[:, j] = np.multiply(a, b[None, :, j]).sum(axis=1)
        return out
    raise ValueError(f"matmul takes 1-D or 2-D operands, got shapes {a.shape} and {b.shape}")


_exp = np.frompyfunc(math.exp, 1, 1)
_log = np.frompyfunc(math.log, 1, 1)


def exp(x) -> np.ndarray:
    """Element-wise ``e**x`` through the C library on every machine."""
    return np.asarray(_exp(np.asarray(x, dtype=float)), dtype=float)


def log(x) -> np.ndarray:
    """Element-wise natural logarithm through the C library (``x > 0``)."""
    return np.asarray(_log(np.asarray(x, dtype=float)), dtype=float)
