"""A small conic program for LIBRA's allocations, solved by Clarabel directly.

Every time term of LIBRA's model (and of the richer one in :mod:`.libra_time`) has the form
``u >= a + f / B`` with ``f >= 0``: the epigraph of a convex function of the bandwidth
``B``. With ``x = u - a`` it is the hyperbolic constraint ``x * B >= f`` (``x, B >= 0``),
which is the three-dimensional second-order cone ``||(2 sqrt f, x - B)|| <= x + B``.
Everything else is linear. The program is therefore a second-order cone program, which
Clarabel (an interior-point solver) solves to a primal-dual pair; the duality gap between
the two objective values is the certificate that the solution is globally optimal.

Building the cone program directly instead of through cvxpy keeps a LIBRA solve in
milliseconds and the command line under two seconds (importing cvxpy alone takes about
two); the tests check it against the same problem written in cvxpy.

Examples
--------
>>> p = Conic()
>>> b, u = p.var(), p.var()
>>> p.hyperbolic({u: 1.0}, 0.0, b, 4.0)       # u * b >= 4
>>> p.linear({b: 1.0}, "<=", 2.0)              # b <= 2
>>> sol = p.minimize({u: 1.0})
>>> round(float(sol.x[u]), 6), round(float(sol.x[b]), 6)
(2.0, 2.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ...errors import InfeasibleError, InputError

__all__ = ["Conic", "ConicSolution", "ACCEPT"]

#: An answer Clarabel calls "almost solved" is accepted when its primal and dual
#: residuals and its relative duality gap are at most these (its full tolerances are
#: 1e-8; the gap is what certifies optimality).
ACCEPT = {"residual": 1e-6, "gap": 1e-7}


@dataclass(frozen=True)
class ConicSolution:
    """Values of the variables and Clarabel's primal and dual objective values."""

    x: np.ndarray
    primal: float
    dual: float
    iterations: int

    @property
    def gap(self) -> float:
        """Relative duality gap: the certificate of global optimality (near 0)."""
        return abs(self.primal - self.dual) / max(1.0, abs(self.primal))


class Conic:
    """Variables, linear rows and hyperbolic constraints ``x * y >= f`` (see the module
    docstring); ``minimize`` solves with Clarabel and checks the status."""

    def __init__(self) -> None:
        self.n = 0
        self._zero: list[tuple[dict, float]] = []
        self._nonneg: list[tuple[dict, float]] = []
        self._soc: list[tuple[dict, float, dict, float, float]] = []

    def var(self) -> int:
        """A new variable; its index."""
        self.n += 1
        return self.n - 1

    def linear(self, coefs: Mapping[int, float], op: str, rhs: float) -> None:
        """``sum coefs[v] x_v  op  rhs`` with ``op`` one of ``<=``, ``>=``, ``==``."""
        row = {k: float(v) for k, v in coefs.items() if v}
        if op == "==":
            self._zero.append((row, float(rhs)))
        elif op == "<=":
            self._nonneg.append((row, float(rhs)))
        elif op == ">=":
            self._nonneg.append(({k: -v for k, v in row.items()}, -float(rhs)))
        else:
            raise ValueError(op)

    def hyperbolic(self, x: Mapping[int, float], x0: float, y: int, f: float) -> None:
        """``(sum x[v] x_v + x0) * x_y >= f`` with both factors non-negative (``f >= 0``)."""
        if f < 0:
            raise ValueError(f)
        self._soc.append(({k: float(v) for k, v in x.items()}, float(x0), {y: 1.0}, 0.0,
                          float(f)))

    def minimize(self, objective: Mapping[int, float], *, max_iter: int = 200
                 ) -> ConicSolution:
        """Solve. Raises :class:`InfeasibleError` when no point satisfies the constraints or
        the solver does not reach an optimal solution (an inaccurate one is refused), and
        :class:`InputError` when the objective is unbounded. An "almost solved" answer is
        accepted only within :data:`ACCEPT`."""
        import clarabel
        from scipy import sparse

        rows, cols, vals, b = [], [], [], []

        def put(coefs: Mapping[int, float], rhs: float, sign: float = 1.0) -> None:
            r = len(b)
            for k, v in coefs.items():
                rows.append(r)
                cols.append(k)
                vals.append(sign * v)
            b.append(rhs)

        for coefs, rhs in self._zero:           # A x + s = b, s = 0
            put(coefs, rhs)
        for coefs, rhs in self._nonneg:         # a x <= rhs: s = rhs - a x >= 0
            put(coefs, rhs)
        for x, x0, y, y0, f in self._soc:        # s = (x + y, 2 sqrt f, x - y)
            plus = dict(x)
            minus = dict(x)
            for k, v in y.items():
                plus[k] = plus.get(k, 0.0) + v
                minus[k] = minus.get(k, 0.0) - v
            put(plus, x0 + y0, -1.0)
            put({}, 2.0 * math.sqrt(f))
            put(minus, x0 - y0, -1.0)
        A = sparse.csc_matrix((vals, (rows, cols)), shape=(len(b), self.n))
        q = np.zeros(self.n)
        for k, v in objective.items():
            q[k] += v
        P = sparse.csc_matrix((self.n, self.n))
        cones = []
        if self._zero:
            cones.append(clarabel.ZeroConeT(len(self._zero)))
        if self._nonneg:
            cones.append(clarabel.NonnegativeConeT(len(self._nonneg)))
        cones += [clarabel.SecondOrderConeT(3) for _ in self._soc]
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        settings.max_iter = max_iter
        sol = clarabel.DefaultSolver(P, q, A, np.asarray(b, float), cones, settings).solve()
        st = str(sol.status)
        if st.endswith("PrimalInfeasible") and "Almost" not in st:
            raise InfeasibleError("no allocation satisfies the constraints")
        if st.endswith("DualInfeasible") and "Almost" not in st:
            raise InputError("the problem is unbounded: constrain the total bandwidth or the "
                             "cost (e.g. constraint 'B0 + B1 + B2 == 500')",
                             item="constraint")
        out = ConicSolution(np.asarray(sol.x, float), float(sol.obj_val),
                            float(sol.obj_val_dual), int(sol.iterations))
        solved = st.endswith("Solved") and "Almost" not in st
        # "almost solved" is Clarabel stopping at its reduced tolerances; accepted only
        # when the residuals and the duality gap, checked here, are tight anyway
        verified = st.endswith("AlmostSolved") and sol.r_prim <= ACCEPT["residual"] and \
            sol.r_dual <= ACCEPT["residual"] and out.gap <= ACCEPT["gap"]
        if not (solved or verified):
            raise InfeasibleError(f"the solver stopped with status {st.split('.')[-1]!r} "
                                  f"(primal residual {sol.r_prim:.1e}, dual residual "
                                  f"{sol.r_dual:.1e}, gap {out.gap:.1e}); not accepted")
        return out
