"""Block trees of a bandwidth-optimal butterfly on any torus shape: one tree per dimension,
their product per block (De Sensi et al.'s procedure for sizes that are not powers of two).

In a reduce-scatter every block travels to its owner on a tree, and the allgather runs the
trees forwards. On a power-of-two dimension the trees are the halving sets of recursive
doubling; on other sizes the paper arranges the steps so that no block is sent twice:

- **even** ``d``: the pairing rule is a perfect matching at every step (Swing's is), and
  ``ceil(log2 d)`` steps reach every coordinate. A coordinate receives a digit from its
  step-``s`` peer when the peer holds it and it does not (the allgather, steps run
  backwards from the last); the reduce-scatter sends partial sums back along the same
  edges.
- **odd** ``d``: the ``d - 1`` first coordinates run the even procedure on their own
  digits, and the last coordinate ``e = d - 1`` exchanges its blocks *directly*: at
  relative step ``s`` with ``(d - 1) / 2**(s+1)`` core coordinates (the rest at the last
  step), nearest first. In the reduce-scatter it sends core coordinate ``x`` its
  contribution to ``x``'s digit and receives ``x``'s contribution to its own, so every
  coordinate sends ``d - 1`` digits in all, the bandwidth-optimal volume
  (``algorithms.md`` §6.6).

On ``D`` dimensions the step sequence visits the dimensions round-robin; at a step in
dimension ``k`` rank ``v`` sends its partner the blocks whose digit ``k`` the 1-D edge
carries and whose other digits ``v`` still holds in those dimensions (the 1-D held sets
after the steps not yet run). A block's tree is the product of its digits' 1-D trees, so
every rank contributes to every block exactly once (the verifier checks it in the tests).
The tables are per dimension (``d x d``), never ranks squared.

References
----------
.. [1] De Sensi, Bonato, Saam and Hoefler, "Swing: Short-cutting Rings for Higher
   Bandwidth Allreduce", NSDI 2024, §3.3.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Transfers", "core_size", "extra_partners", "line_trees", "product_sends"]


@dataclass(frozen=True)
class Transfers:
    """The reduce-scatter transfers of one step: ``src[i]`` sends ``dst[i]`` its partial
    sums of blocks ``blocks[ptr[i]:ptr[i+1]]`` (ascending); positions are group positions
    (dimension 0 fastest), blocks are owner positions."""

    src: np.ndarray
    dst: np.ndarray
    ptr: np.ndarray
    blocks: np.ndarray


def core_size(d: int) -> int:
    """The coordinates of a dimension of size ``d`` that pair at every step: ``d`` if even,
    ``d - 1`` if odd (the last one exchanges directly), 1 for ``d = 1``.

    Examples
    --------
    >>> [core_size(d) for d in (1, 2, 5, 6, 7)]
    [1, 2, 4, 6, 6]
    """
    return d if d % 2 == 0 or d == 1 else d - 1


def extra_partners(d: int) -> list[np.ndarray]:
    """For odd ``d``: the core coordinates the last coordinate exchanges with at each
    relative step, ``q / 2**(s+1)`` of them (``q = d - 1``) and the remainder at the last
    step, nearest to it on the ring first (ties: lower coordinate).

    Examples
    --------
    >>> [x.tolist() for x in extra_partners(7)]     # q = 6, 3 steps: 3, 1, 2 partners
    [[0, 1, 5], [4], [2, 3]]
    >>> [x.tolist() for x in extra_partners(3)]
    [[0, 1]]
    """
    q = core_size(d)
    L = (q - 1).bit_length()
    x = np.arange(q)
    order = np.lexsort((x, np.minimum(d - 1 - x, x + 1)))
    sizes = [q >> (s + 1) for s in range(L - 1)]
    sizes.append(q - sum(sizes))
    cuts = np.cumsum([0, *sizes])
    return [np.sort(order[cuts[s]:cuts[s + 1]]) for s in range(L)]


def line_trees(d: int, rule: Callable[[np.ndarray, int, int], np.ndarray], mirror: bool):
    """The 1-D trees of a dimension of size ``d``.

    Returns ``(edges, held)`` or None when the core pairing does not reach every
    coordinate. ``edges[s]``: the edges of relative step ``s`` as ``(receiver, sender,
    digits)`` in the allgather direction (the reduce-scatter sends the partial sums of
    ``digits`` from receiver to sender); ``held[c]``: a ``(d, d)`` bool table,
    ``held[c][x, b]`` when coordinate ``x`` holds digit ``b`` after the allgather ran
    relative steps ``L-1 .. c`` (``held[L]`` is the identity, ``held[0]`` all True).

    Examples
    --------
    >>> from topocoll.synth.swing import swing_peer
    >>> edges, held = line_trees(3, swing_peer, False)
    >>> [(int(x), int(y), b.tolist()) for x, y, b in edges[0]]
    [(0, 1, [1]), (1, 0, [0]), (2, 0, [0]), (2, 1, [1]), (0, 2, [2]), (1, 2, [2])]
    >>> bool(held[0].all())
    True
    """
    q = core_size(d)
    L = (q - 1).bit_length()
    x = np.arange(q)
    extra = extra_partners(d) if q < d else None
    if extra is not None and mirror:                      # the mirror image about d - 1
        extra = [np.sort(d - 2 - y) for y in extra]
    h = np.eye(d, dtype=bool)
    edges: list = [None] * L
    held: list = [None] * (L + 1)
    held[L] = h.copy()
    for s in range(L - 1, -1, -1):
        peer = (-rule((-x) % q, q, s)) % q if mirror else rule(x, q, s) % q
        step = []
        got = h[peer, :q] & ~h[x, :q]                      # core digits only
        for v in range(q):
            digits = np.flatnonzero(got[v])
            if len(digits):
                step.append((v, int(peer[v]), digits))
        new = h.copy()
        new[x, :q] |= got
        if extra is not None:
            for y in extra[s]:                             # the last coordinate: y's digit
                step.append((d - 1, int(y), np.array([y])))
                new[d - 1, y] = True
            for y in extra[s]:                             # y: the last one's digit
                step.append((int(y), d - 1, np.array([d - 1])))
                new[y, d - 1] = True
        h = new
        edges[s] = step
        held[s] = h.copy()
    if not h.all():
        return None
    return edges, held


def _gather_csr(keys: np.ndarray, ptr: np.ndarray, ids: np.ndarray):
    """Rows ``ids[ptr[k]:ptr[k+1]]`` for each ``k`` of ``keys`` as one CSR pair."""
    cnt = ptr[keys + 1] - ptr[keys]
    out_ptr = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(cnt, out=out_ptr[1:])
    idx = np.repeat(ptr[keys] - out_ptr[:-1], cnt) + np.arange(int(out_ptr[-1]))
    return out_ptr, ids[idx]


def _outer(a_ptr, a_ids, b_ptr, b_ids):
    """Row ``i``: every ``a + b`` for ``a`` in row ``i`` of A and ``b`` in row ``i`` of B,
    A-major (both CSR pairs over the same rows)."""
    m, n = np.diff(a_ptr), np.diff(b_ptr)
    ptr = np.zeros(len(m) + 1, dtype=np.int64)
    np.cumsum(m * n, out=ptr[1:])
    arow = np.repeat(np.arange(len(m)), m)            # the row of every A element
    seg = n[arow]                                     # one segment of B per A element
    starts = np.zeros(len(seg), dtype=np.int64)
    np.cumsum(seg[:-1], out=starts[1:])
    local = np.arange(int(ptr[-1])) - np.repeat(starts, seg)
    return ptr, np.repeat(a_ids, seg) + b_ids[np.repeat(b_ptr[arow], seg) + local]


def _held_csr(held: np.ndarray, stride: int):
    """Per coordinate, the digits it holds times ``stride``, as a CSR pair."""
    x, b = np.nonzero(held)
    ptr = np.zeros(held.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(x, minlength=held.shape[0]), out=ptr[1:])
    return ptr, b.astype(np.int64) * stride


def product_sends(shape: Sequence[int], rule: Callable[[np.ndarray, int, int], np.ndarray],
                  steps: Sequence[tuple[int, int]], mirror: bool) -> list[Transfers] | None:
    """The reduce-scatter transfers of one port at every step, on the product of the
    dimensions' :func:`line_trees`.

    Parameters
    ----------
    shape : sequence of int
        The torus shape (dimension 0 fastest).
    rule : callable
        The pairing rule ``rule(x, q, s)``; an involution without fixed points on every
        even ``q`` (Swing's).
    steps : sequence of (dimension, relative step)
        The port's step order (``multiport.port_dims`` over :func:`core_size` of each
        dimension).
    mirror : bool
        Negate the core coordinates around the rule (the mirrored ports).

    Returns
    -------
    list of Transfers or None
        One per step, transfers ordered by sender; None when a dimension's pairing does
        not reach every coordinate.

    Examples
    --------
    >>> from topocoll.synth.swing import swing_peer
    >>> t = product_sends((3,), swing_peer, [(0, 0)], False)
    >>> t[0].src.tolist(), t[0].dst.tolist(), np.diff(t[0].ptr).tolist()
    ([0, 0, 1, 1, 2, 2], [1, 2, 0, 2, 0, 1], [1, 1, 1, 1, 1, 1])
    """
    D = len(shape)
    trees = [line_trees(d, rule, mirror) for d in shape]
    if any(t is None for t in trees):
        return None
    strides = [math.prod(shape[:k]) for k in range(D)]
    p = math.prod(shape)
    pos = np.arange(p)
    coords = [(pos // strides[k]) % shape[k] for k in range(D)]
    done = [0] * D                                     # steps run so far per dimension
    out = []
    for k, sigma in steps:
        done[k] += 1
        edges = trees[k][0][sigma]
        lines = pos[coords[k] == 0]                    # one rank per line of dimension k
        E, N = len(edges), len(lines)
        ex = np.array([e[0] for e in edges], dtype=np.int64)
        ey = np.array([e[1] for e in edges], dtype=np.int64)
        eptr = np.zeros(E + 1, dtype=np.int64)
        np.cumsum([len(e[2]) for e in edges], out=eptr[1:])
        eids = np.concatenate([e[2] for e in edges]).astype(np.int64) * strides[k]
        # rows: line-major, then edge; every row's blocks built minor dimension last
        row_line = np.repeat(np.arange(N), E)
        row_edge = np.tile(np.arange(E), N)
        ptr = ids = None
        for kk in range(D - 1, -1, -1):
            if kk == k:
                b = _gather_csr(row_edge, eptr, eids)
            else:
                hptr, hids = _held_csr(trees[kk][1][done[kk]], strides[kk])
                b = _gather_csr(coords[kk][lines][row_line], hptr, hids)
            ptr, ids = b if ptr is None else _outer(ptr, ids, *b)
        src = lines[row_line] + ex[row_edge] * strides[k]
        dst = lines[row_line] + ey[row_edge] * strides[k]
        order = np.argsort(src, kind="stable")
        ptr, ids = _gather_csr(order, ptr, ids)
        out.append(Transfers(src[order], dst[order], ptr, ids))
    return out
