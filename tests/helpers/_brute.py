"""Exhaustive cheapest timed arborescence, the reference for the pricing tests."""

from __future__ import annotations

import itertools

import numpy as np


def brute_timed_tree(D: np.ndarray, root: int) -> float:
    """Cheapest timed tree of ``root`` under step costs ``D`` (H, N, N), by enumerating
    every (parent, step) of every other member."""
    H, N, _ = D.shape
    others = [v for v in range(N) if v != root]
    best = np.inf
    for combo in itertools.product(range(N), range(1, H + 1), repeat=len(others)):
        par = {v: combo[2 * i] for i, v in enumerate(others)}
        tm = {root: 0, **{v: combo[2 * i + 1] for i, v in enumerate(others)}}
        if all(par[v] != v and tm[par[v]] < tm[v] for v in others):
            best = min(best, sum(D[tm[v] - 1, par[v], v] for v in others))
    return best
