"""Multi-port butterfly engine on (virtual) tori: the machinery shared by Swing and the
mirrored recursive doubling.

A *butterfly* family is given by one rule, ``step(x, q, sigma)``: the coordinate that
coordinate ``x`` of a dimension of power-of-two size ``q`` is paired with at the
``sigma``-th step spent in that dimension (Swing: ``x +- rho(sigma)``; recursive doubling:
``x ^ 2**sigma``). The rule must be an involution without fixed points for every
``sigma < log2(q)``. From it the engine builds, for any shape:

- **ports**: instance ``j`` of ``2D`` (``D`` dimensions) starts its round-robin over the
  dimensions at ``j mod D``, skipping dimensions that used up their ``log2 q`` steps;
  instances ``j >= D`` are *mirrored*: coordinates are negated (``x -> -x mod q``) before
  and after the rule, so every distance flips sign. Each instance moves its own ``1/(2D)``
  of the data, and at each step the instances use different ports (De Sensi et al. §4).
- **block sets** (bandwidth-optimal reduce-scatter / allgather): ``R_L(v) = {v}``,
  ``R_s(v) = R_{s+1}(v) + R_{s+1}(peer_s(v))`` (disjoint for power-of-two sizes); in
  reduce-scatter step ``s`` rank ``v`` sends the peer's half ``R_{s+1}(peer_s(v))``; the
  allgather runs the steps backwards sending ``R_{s+1}(v)``.
- **block trees** for sizes that are not powers of two, where the rule allows
  (``make_plan(unfolded=True)``, Swing): the whole shape, no fold, each block once on the
  product of per-dimension trees (:mod:`~topocoll.synth.block_trees`).
- **folding** for the other sizes that are not powers of two: dimension by dimension, coordinates
  ``x >= q = 2**floor(log2 d)`` hand their data to ``x - q`` (one step per folded
  dimension), the ``prod(q)`` core ranks run the power-of-two algorithm, and the data is
  handed back in reverse order. Cost: one extra step each way per folded dimension and
  one extra vector on the folded ranks' links, the fold of Thakur et al. applied per
  dimension (this is also what the Swing library does for its latency-optimal variant).

Everything is vectorized over ranks; nothing here knows about Swing.

References
----------
.. [1] De Sensi, Bonato, Saam and Hoefler, "Swing: Short-cutting Rings for Higher
   Bandwidth Allreduce", NSDI 2024.
.. [2] Thakur, Rabenseifner and Gropp, "Optimization of collective communication
   operations in MPICH", IJHPCA 19(1), 2005.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..collective import Collective
from ..errors import InputError
from ..schedule import Op, Schedule, ScheduleBuilder, Symmetry
from ..schedule.transforms import reverse
from ..topology import Topology
from ._common import grid_shifts, require, resolve_group
from .block_trees import core_size, product_sends

__all__ = ["StepRule", "Plan", "make_plan", "butterfly_schedule", "block_order", "logical_shape",
           "port_dims", "TREE_MAX_RANKS", "plan_translations", "plan_symmetries", "half_turns"]

#: ``rule(x, q, sigma) -> peer coordinate`` for an array of coordinates ``x`` in ``0..q-1``.
StepRule = Callable[[np.ndarray, int, int], np.ndarray]


@dataclass(frozen=True, eq=False)
class Plan:
    """The shape, folding and per-port peer tables of one butterfly collective.

    Attributes
    ----------
    group : ndarray
        Rank id of each group position.
    shape : tuple of int
        Logical torus shape (dimension 0 fastest); ``(p,)`` for a 1-D group.
    core : tuple of int
        Largest power of two ``<= shape[k]`` per dimension.
    core_pos : ndarray
        Group position of each core index (mixed radix over ``core``).
    peers : ndarray, shape (ports, L, Q)
        ``peers[j, s, v]``: core index that core index ``v`` pairs with at step ``s`` of
        port ``j``.
    dims_used : ndarray, shape (ports, L)
        Dimension of each step of each port.
    folds : list of (senders, receivers)
        Group positions of one fold step each, in fold order.
    sends : tuple or None
        A *tree plan* (a shape that is not a power of two, unfolded): per port, the
        reduce-scatter :class:`~topocoll.synth.block_trees.Transfers` of every step, on
        the product of the dimensions' block trees (then ``peers`` is None, the core is
        the whole shape); None otherwise.
    """

    group: np.ndarray
    shape: tuple[int, ...]
    core: tuple[int, ...]
    core_pos: np.ndarray
    peers: np.ndarray | None
    dims_used: np.ndarray
    folds: list
    sends: tuple | None = None

    @property
    def num_ports(self) -> int:
        return self.dims_used.shape[0]

    @property
    def num_steps(self) -> int:
        """Core steps ``L = sum_k ceil(log2(q_k))`` (``q_k``: ``core[k]``, or on a tree
        plan :func:`~topocoll.synth.block_trees.core_size`)."""
        return self.dims_used.shape[1]

    @property
    def p(self) -> int:
        return len(self.group)

    @property
    def q(self) -> int:
        return len(self.core_pos)


def _coords(idx: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    out = np.empty((len(shape), len(idx)), dtype=np.int64)
    rest = idx.astype(np.int64)
    for k, d in enumerate(shape):
        out[k] = rest % d
        rest = rest // d
    return out


def _index(coords: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    idx = np.zeros(coords.shape[1], dtype=np.int64)
    for k in reversed(range(len(shape))):
        idx = idx * shape[k] + coords[k]
    return idx


def logical_shape(topology: Topology, group: tuple[int, ...]) -> tuple[int, ...]:
    """The torus shape a butterfly runs on: ``topology.dims`` when the group is every rank
    in rank order, else one dimension of ``len(group)``.

    Examples
    --------
    >>> from topocoll.topology import torus, star
    >>> logical_shape(torus((4, 2)), tuple(range(8))), logical_shape(star(6), tuple(range(6)))
    ((4, 2), (6,))
    """
    if topology.dims and group == tuple(range(topology.num_ranks)):
        return tuple(d.size for d in topology.dims)
    return (len(group),)


def port_dims(core: Sequence[int], port: int) -> list[tuple[int, int]]:
    """``(dimension, relative step)`` of every step of ``port``: round-robin from
    dimension ``port mod D``, skipping dimensions that finished their ``ceil(log2 q)``
    steps.

    Examples
    --------
    >>> port_dims((8, 2), 0)
    [(0, 0), (1, 0), (0, 1), (0, 2)]
    >>> port_dims((8, 2), 1)
    [(1, 0), (0, 0), (0, 1), (0, 2)]
    """
    D = len(core)
    left = [(int(q) - 1).bit_length() for q in core]
    used = [0] * D
    out, k = [], port % D
    while sum(left):
        if left[k]:
            out.append((k, used[k]))
            used[k] += 1
            left[k] -= 1
        k = (k + 1) % D
    return out


def make_plan(topology: Topology, ranks: Sequence[int] | None, rule: StepRule, *,
              multiport: bool = True, unfolded: bool = False) -> Plan:
    """Resolve the group, its logical torus, the folds and every port's peer table.

    Parameters
    ----------
    topology : Topology
    ranks : sequence of int, optional
    rule : StepRule
        The family's pairing rule (see the module docstring).
    multiport : bool
        ``2D`` instances (all ports of a torus node) if True, else one.
    unfolded : bool
        When a dimension is not a power of two, run on the whole shape without folding, as
        De Sensi et al. do (:mod:`~topocoll.synth.block_trees`: even sizes pair every
        coordinate for ``ceil(log2 d)`` steps, odd ones let the last coordinate exchange
        directly), if every block's tree reaches every rank; the rule must then be an
        involution without fixed points on even sizes too (Swing's is).
    """
    group = resolve_group(topology, ranks)
    shape = logical_shape(topology, group)
    if unfolded and any(d & (d - 1) for d in shape) and math.prod(shape) <= TREE_MAX_RANKS:
        qs = tuple(core_size(d) for d in shape)
        nports = 2 * len(shape) if multiport and math.prod(qs) > 1 else 1
        orders = [port_dims(qs, j) for j in range(nports)]
        sends = tuple(product_sends(shape, rule, orders[j], j >= len(shape))
                      for j in range(nports))
        if all(x is not None for x in sends):
            p = len(group)
            return Plan(np.asarray(group, dtype=np.int64), shape, shape,
                        np.arange(p, dtype=np.int64), None,
                        np.array([[k for k, _ in o] for o in orders], dtype=np.int64)
                        .reshape(nports, -1), [], sends)
    core = tuple(1 << (d.bit_length() - 1) for d in shape)
    return _plan(group, shape, core, rule, multiport)


def _plan(group, shape, core, rule, multiport) -> Plan:
    """The plan of ``group`` on ``shape`` with core ``core`` (see :func:`make_plan`)."""
    D = len(shape)
    Q = math.prod(core)
    vc = _coords(np.arange(Q), core)
    core_pos = _index(vc, shape)
    nports = 2 * D if multiport and Q > 1 else 1
    L = sum((q - 1).bit_length() for q in core)
    peers = np.empty((nports, L, Q), dtype=np.int64)
    dims_used = np.empty((nports, L), dtype=np.int64)
    for j in range(nports):
        mirror = j >= D
        for s, (k, sigma) in enumerate(port_dims(core, j)):
            q = core[k]
            x = vc[k]
            y = (-rule((-x) % q, q, sigma)) % q if mirror else rule(x, q, sigma) % q
            c = vc.copy()
            c[k] = y
            peers[j, s] = _index(c, core)
            dims_used[j, s] = k
    folds = []
    pc = _coords(np.arange(len(group)), shape)
    alive = np.ones(len(group), dtype=bool)
    for k, (d, q) in enumerate(zip(shape, core, strict=True)):
        if d == q:
            continue
        send = np.flatnonzero(alive & (pc[k] >= q))
        stride = math.prod(shape[:k])
        folds.append((send, send - q * stride))
        alive[send] = False
    return Plan(np.asarray(group, dtype=np.int64), shape, core, core_pos, peers, dims_used,
                folds)


#: Largest group run unfolded on block trees (the schedule grows as ranks squared, and the
#: registry's memory floors count the power-of-two core); larger shapes fold.
TREE_MAX_RANKS = 4096


def _tree_exchange(b: ScheduleBuilder, plan: Plan, kind: str) -> None:
    """Append the reduce-scatter (``'rs'``) or allgather (``'ag'``) steps of a tree plan
    (:func:`~topocoll.synth.block_trees.product_sends`): chunk ``block * P + port``."""
    g = plan.group
    L, P = plan.num_steps, plan.num_ports
    for s in (range(L) if kind == "rs" else range(L - 1, -1, -1)):
        b.new_step()
        for j in range(P):
            t = plan.sends[j][s]
            src, dst = (t.src, t.dst) if kind == "rs" else (t.dst, t.src)
            b.add_many(g[src], g[dst], (t.ptr, t.blocks * P + j),
                       Op.REDUCE if kind == "rs" else Op.COPY)


# ------------------------------------------------------------------ core phases
def _block_sets(peers: np.ndarray) -> list[np.ndarray]:
    """``sets[s] = R_s`` as a (Q, 2**(L-s)) array, for s = 0..L."""
    L, Q = peers.shape
    sets = [None] * (L + 1)
    R = np.arange(Q, dtype=np.int64)[:, None]
    sets[L] = R
    for s in range(L - 1, -1, -1):
        R = np.concatenate([R, R[peers[s]]], axis=1)
        sets[s] = R
    return sets


def _expand(rows: np.ndarray, rep_ptr: np.ndarray, rep_ids: np.ndarray,
            nports: int, port: int):
    """Virtual blocks per row -> chunk ids ``position * nports + port`` of every group
    position they stand for, as a 2-D array (no folding) or a CSR pair."""
    if rep_ptr is None:
        return rows * nports + port
    cnt = np.diff(rep_ptr)[rows]                     # (m, w)
    flat = rows.reshape(-1)
    c = cnt.reshape(-1)
    starts = rep_ptr[flat]
    idx = np.repeat(starts - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(cnt.sum(axis=1), out=ptr[1:])
    return ptr, rep_ids[idx] * nports + port


def _core_exchange(b: ScheduleBuilder, plan: Plan, kind: str, rep) -> None:
    """Append the core reduce-scatter (``kind='rs'``) or allgather (``'ag'``) steps of all
    ports, step-aligned (every port has ``L`` steps)."""
    g = plan.group[plan.core_pos]
    L, nports = plan.num_steps, plan.num_ports
    sets = [_block_sets(plan.peers[j]) for j in range(nports)]
    order = range(L) if kind == "rs" else range(L - 1, -1, -1)
    for s in order:
        b.new_step()
        for j in range(nports):
            pr = plan.peers[j, s]
            blocks = sets[j][s + 1][pr] if kind == "rs" else sets[j][s + 1]
            ch = _expand(blocks, *rep, nports, j) if rep is not None else blocks * nports + j
            b.add_many(g, g[pr], ch, Op.REDUCE if kind == "rs" else Op.COPY)


def block_order(peers: np.ndarray) -> np.ndarray:
    """The block renumbering ``phi`` under which every block set ``R_s(v)`` of one port is
    a contiguous, aligned range (the paper's logical remapping that makes each message
    contiguous).

    ``R_s(v)`` splits into ``R_{s+1}(v)`` and ``R_{s+1}(peer_s(v))``; bit ``s`` (counted
    from the top) of ``phi(b)`` says which half holds ``b``: 0 for the half containing the
    smallest block of ``R_s(b)``. Class minima follow bottom-up from
    ``min R_s(b) = min(min R_{s+1}(b), min R_{s+1}(peer_s(b)))``, so no set is built.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> from topocoll.synth.swing import _rule
    >>> plan = make_plan(ring(8), None, _rule, multiport=False)
    >>> block_order(plan.peers[0]).tolist()
    [0, 4, 6, 1, 2, 7, 5, 3]
    """
    L, Q = peers.shape
    cid = np.arange(Q, dtype=np.int64)
    phi = np.zeros(Q, dtype=np.int64)
    for s in range(L - 1, -1, -1):
        up = np.minimum(cid, cid[peers[s]])
        phi |= (cid != up).astype(np.int64) << (L - 1 - s)
        cid = up
    return phi


def _direct(plan: Plan, collective: Collective, phases: Sequence[str], port_major: bool,
            name: str, meta: dict) -> Schedule:
    """The core reduce-scatter and/or allgather of an unfolded plan, written straight into
    the final columns (the fast path for thousands of ranks).

    With the renumbering of :func:`block_order`, the blocks a rank sends at step ``s`` are
    the ``2**(L-s-1)`` consecutive positions starting at the prefix of ``phi`` of the
    peer (reduce-scatter) or of itself (allgather). An allreduce (``port_major``) names
    position ``x`` of port ``j`` chunk ``j * Q + x``, so every message is a contiguous
    chunk range; reduce-scatter and allgather must name owners, chunk ``b * P + j`` for
    block ``b = phi^-1(x)``. Transfers of a step are ordered by their first position, so
    consecutive transfers touch the same chunks (memory locality for the verifier).
    """
    P, L, Q = plan.num_ports, plan.num_steps, plan.q
    g = plan.group[plan.core_pos].astype(np.int32)
    widths = [1 << (L - s - 1) for s in range(L)]         # chunks per transfer at step s
    order = [(ph, s) for ph in phases for s in (range(L) if ph == "rs" else range(L - 1, -1, -1))]
    T = P * Q * len(order)
    src = np.empty(T, dtype=np.int32)
    dst = np.empty(T, dtype=np.int32)
    op = np.empty(T, dtype=np.int8)
    cnt = np.empty(T, dtype=np.int64)
    lo_all = np.empty(T, dtype=np.int64)
    for j in range(P):
        phi = block_order(plan.peers[j])
        for t, (ph, s) in enumerate(order):
            pr = plan.peers[j, s]
            w = widths[s]
            lo = (phi[pr] if ph == "rs" else phi) & ~(w - 1)
            srt = np.argsort(lo, kind="stable")
            a = (t * P + j) * Q
            src[a:a + Q] = g[srt]
            dst[a:a + Q] = g[pr[srt]]
            op[a:a + Q] = Op.REDUCE if ph == "rs" else Op.COPY
            cnt[a:a + Q] = w
            lo_all[a:a + Q] = lo[srt] + (j * Q if port_major else 0)
    chunk_ptr = np.zeros(T + 1, dtype=np.int64)
    np.cumsum(cnt, out=chunk_ptr[1:])
    chunks = np.empty(int(chunk_ptr[-1]), dtype=np.int32)
    lo32 = lo_all.astype(np.int32)
    invs = None if port_major else \
        [np.argsort(block_order(plan.peers[j]), kind="stable").astype(np.int32) * P + j
         for j in range(P)]
    for t, (_, s) in enumerate(order):       # one vectorized fill per step: lo + 0..w-1
        w = widths[s]
        a, b = t * P * Q, (t + 1) * P * Q
        rows = chunks[chunk_ptr[a]:chunk_ptr[b]].reshape(P * Q, w)
        np.add(lo32[a:b, None], np.arange(w, dtype=np.int32), out=rows)
        if invs is not None:                 # positions -> owner chunk ids, per port
            for j in range(P):
                part = rows[j * Q:(j + 1) * Q]
                part[:] = invs[j][part]
    step_ptr = np.arange(len(order) + 1, dtype=np.int64) * (P * Q)
    unit = len(chunks) == T          # one chunk per transfer: the pointer is implicit
    return Schedule(collective, step_ptr, src, dst, op, None if unit else chunk_ptr, chunks,
                    name=name, meta=meta)


def plan_translations(plan: Plan, kind: str, by: int) -> list[Symmetry]:
    """The shifts by ``by`` along each dimension of an unfolded plan's torus
    (:func:`~topocoll.synth._common.grid_shifts`), as :func:`plan_symmetries`: they hold
    where the step rule commutes with the shift (Swing's peers depend on the parity of a
    coordinate, so a shift by 2)."""
    if not _direct_plan(plan):
        return []
    return plan_symmetries(plan, kind, grid_shifts(plan.core, by))


def half_turns(plan: Plan, kind: str) -> list[Symmetry]:
    """The shifts by half of each dimension of an unfolded plan's torus, as
    :func:`plan_symmetries`.

    On a dimension of ``q = 2**k`` positions, adding ``q/2`` flips the top bit: it is the
    XOR translation by ``q/2``, which commutes with recursive doubling's partners ``x ^
    2**s`` and with their mirror images ``-((-x) ^ 2**s)`` alike (the only nonzero
    translation that commutes with both for ``q >= 8``), so it holds on every port of the
    mirrored recursive doubling. Two dimensions leave orbits of four chunks.

    >>> from topocoll.topology import torus
    >>> from topocoll.synth.torus import _xor_rule
    >>> plan = make_plan(torus((8, 4)), None, _xor_rule)
    >>> [y.rank_images[:2].tolist() for y in half_turns(plan, "allreduce")]
    [[4, 5], [16, 17]]
    """
    if not _direct_plan(plan):
        return []
    v = np.arange(plan.q)
    maps, stride = [], 1
    for q in plan.core:
        if q > 1:
            a = (v // stride) % q
            maps.append(v + ((a + q // 2) % q - a) * stride)
        stride *= q
    return plan_symmetries(plan, kind, maps)


def _direct_plan(plan: Plan) -> bool:
    """Whether :func:`butterfly_schedule` writes ``plan``'s bandwidth-optimal collectives
    with :func:`_direct` (no fold, no block trees)."""
    return not (plan.folds or plan.sends is not None or plan.peers is None
                or not plan.num_steps)


def plan_symmetries(plan: Plan, kind: str, maps: Sequence[np.ndarray]) -> list[Symmetry]:
    """Permutations ``w`` of the core indices of an unfolded plan as symmetries
    (:class:`~topocoll.schedule.Symmetry`) of the schedule :func:`_direct` writes for it:
    a rank moves to its image and its chunks with it (block ``v`` of port ``j``: chunk
    ``j Q + phi_j(v)`` of an allreduce, ``v P + j`` otherwise), on the ports whose
    partners ``w`` commutes with at every step (``w(peer(v)) = peer(w(v))``: then ``w``
    maps every block set onto another, and every message onto one); a map that commutes
    with no port is left out. The verifier checks them. Empty for other plans."""
    if not _direct_plan(plan):
        return []
    P, Q = plan.num_ports, plan.q
    g = plan.group[plan.core_pos].astype(np.int64)
    v = np.arange(Q)
    phis = [block_order(plan.peers[j]) for j in range(P)] if kind == "allreduce" else None
    out = []
    for w in maps:
        ports = [j for j in range(P)
                 if np.array_equal(plan.peers[j][:, w], w[plan.peers[j]])]
        if not ports:
            continue
        if kind == "allreduce":
            c = np.concatenate([j * Q + phis[j] for j in ports])
            img = np.concatenate([j * Q + phis[j][w] for j in ports])
        else:
            pj = np.asarray(ports)
            c = (v[:, None] * P + pj).reshape(-1)
            img = (w[:, None] * P + pj).reshape(-1)
        out.append(Symmetry(g, g[w], c, img))
    return out


def _fold_steps(b: ScheduleBuilder, plan: Plan, chunks_of, op: Op, inward: bool) -> None:
    steps = plan.folds if inward else plan.folds[::-1]
    for i, (send, recv) in enumerate(steps):
        k = i if inward else len(steps) - 1 - i
        src, dst = (send, recv) if inward else (recv, send)
        b.new_step().add_many(plan.group[src], plan.group[dst], chunks_of(k, send), op)


def _subtrees(plan: Plan) -> list[list[np.ndarray]]:
    """``out[k][i]``: group positions whose data fold sender ``plan.folds[k][0][i]`` holds
    when it folds (itself plus everything folded into it before)."""
    owner = np.arange(plan.p)
    out = []
    for send, recv in plan.folds:
        members = [np.flatnonzero(owner == u) for u in send]
        out.append(members)
        for u, v in zip(send, recv, strict=True):
            owner[owner == u] = v
    return out


def _reps(plan: Plan) -> tuple[np.ndarray, np.ndarray]:
    """CSR: for each core index, the group positions folded into it (itself included)."""
    owner = np.arange(plan.p)
    for send, recv in plan.folds:
        m = np.full(plan.p, -1)
        m[send] = recv
        moved = m[owner] >= 0
        owner[moved] = m[owner[moved]]
    core_of = np.full(plan.p, -1)
    core_of[plan.core_pos] = np.arange(plan.q)
    v = core_of[owner]
    order = np.argsort(v, kind="stable")
    ptr = np.zeros(plan.q + 1, dtype=np.int64)
    np.cumsum(np.bincount(v, minlength=plan.q), out=ptr[1:])
    return ptr, order.astype(np.int64)


def _csr(rows: list[np.ndarray]):
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=ptr[1:])
    return ptr, (np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64))


# ------------------------------------------------------------------ collectives
def butterfly_schedule(plan: Plan, kind: str, *, variant: str = "bandwidth",
                       root: int | None = None, name: str,
                       meta: dict | None = None) -> Schedule:
    """Build ``kind`` from ``plan``.

    Parameters
    ----------
    plan : Plan
    kind : {'allreduce', 'reduce_scatter', 'allgather', 'broadcast', 'reduce'}
    variant : {'bandwidth', 'latency'}
        Allreduce only: reduce-scatter + allgather on blocks, or whole-vector exchanges.
    root : int, optional
        Root rank (broadcast and reduce; default the first group member).
    name : str
    meta : dict, optional

    Returns
    -------
    Schedule
        Chunk ``c`` of a reduce-scatter or allgather is port ``c % P`` of block ``c // P``
        (``P`` ports); an allreduce has ``Q * P`` chunks (bandwidth) or ``P`` chunks
        (latency); broadcast and reduce have ``P`` chunks.
    """
    P, L = plan.num_ports, plan.num_steps
    g = plan.group
    meta = dict(meta or {})
    meta.update(shape="x".join(map(str, plan.shape)), ports=str(P))
    ranks = tuple(int(x) for x in g)
    if plan.sends is not None:
        if kind not in ("allreduce", "allgather", "reduce_scatter") or variant != "bandwidth":
            raise ValueError("a tree plan builds the bandwidth-optimal allreduce, "
                             "reduce-scatter and allgather only")
        K = plan.q * P if kind == "allreduce" else P
        b = ScheduleBuilder(Collective(kind, ranks, K))
        for ph in {"allreduce": ("rs", "ag"), "allgather": ("ag",),
                   "reduce_scatter": ("rs",)}[kind]:
            _tree_exchange(b, plan, ph)
        return b.build(name=name, meta=meta)
    if not plan.folds and kind in ("allreduce", "allgather", "reduce_scatter") and \
            variant == "bandwidth" and L:
        phases = {"allreduce": ("rs", "ag"), "allgather": ("ag",),
                  "reduce_scatter": ("rs",)}[kind]
        K = plan.q * P if kind == "allreduce" else P
        return _direct(plan, Collective(kind, ranks, K), phases, kind == "allreduce", name,
                       meta)
    if kind == "allreduce":
        K = plan.q * P if variant == "bandwidth" else P
        b = ScheduleBuilder(Collective("allreduce", ranks, K))
        every = np.arange(K)
        _fold_steps(b, plan, lambda k, send: np.broadcast_to(every, (len(send), K)),
                    Op.REDUCE, inward=True)
        if variant == "bandwidth":
            _core_exchange(b, plan, "rs", None)
            _core_exchange(b, plan, "ag", None)
        else:
            gc = g[plan.core_pos]
            for s in range(L):
                b.new_step()
                for j in range(P):
                    b.add_many(gc, gc[plan.peers[j, s]], np.full(plan.q, j), Op.REDUCE)
        _fold_steps(b, plan, lambda k, send: np.broadcast_to(every, (len(send), K)),
                    Op.COPY, inward=False)
        return b.build(name=name, meta=meta)
    if kind == "reduce_scatter":
        ag = butterfly_schedule(plan, "allgather", name=name, meta=meta)
        return reverse(ag, Collective("reduce_scatter", ag.collective.ranks, P), name=name,
                       meta=ag.meta)
    if kind == "allgather":
        b = ScheduleBuilder(Collective("allgather", tuple(int(x) for x in g), P))
        subs = _subtrees(plan)
        ports = np.arange(P)

        def own(k, send):  # everything the sender holds: its subtree's chunks
            return _csr([(m[:, None] * P + ports).reshape(-1) for m in subs[k]])

        def rest(k, send):  # everything except what the receiver already holds
            allc = np.arange(plan.p * P)
            rows = []
            for m in subs[k]:
                mask = np.ones(plan.p * P, dtype=bool)
                mask[(m[:, None] * P + ports).reshape(-1)] = False
                rows.append(allc[mask])
            return _csr(rows)

        _fold_steps(b, plan, own, Op.COPY, inward=True)
        _core_exchange(b, plan, "ag", _reps(plan) if plan.folds else None)
        _fold_steps(b, plan, rest, Op.COPY, inward=False)
        return b.build(name=name, meta=meta)
    if kind in ("broadcast", "reduce"):
        bc = _broadcast(plan, root, name, meta)
        if kind == "broadcast":
            return bc
        return reverse(bc, Collective("reduce", bc.collective.ranks, P,
                                      root=bc.collective.root), name=name, meta=bc.meta)
    raise InputError(f"unknown collective kind {kind!r}", item="kind")


def _broadcast(plan: Plan, root: int | None, name: str, meta: dict) -> Schedule:
    P, L = plan.num_ports, plan.num_steps
    g = plan.group
    root = int(g[0]) if root is None else int(root)
    require(root in g, f"root {root} is not one of the ranks {g.tolist()}")
    rpos = int(np.flatnonzero(g == root)[0])
    b = ScheduleBuilder(Collective("broadcast", tuple(int(x) for x in g), P, root=root))
    every = np.arange(P)
    # the root's image in the core after all folds
    pos = rpos
    for send, recv in plan.folds:
        hit = np.flatnonzero(send == pos)
        if len(hit):
            pos = int(recv[hit[0]])
    if pos != rpos:
        b.new_step().add_many(g[[rpos]], g[[pos]], every[None, :])
    core_of = np.full(plan.p, -1)
    core_of[plan.core_pos] = np.arange(plan.q)
    gc = g[plan.core_pos]
    holders = np.zeros((P, plan.q), dtype=bool)
    holders[:, core_of[pos]] = True
    for s in range(L - 1, -1, -1):
        b.new_step()
        for j in range(P):
            pr = plan.peers[j, s]
            send = np.flatnonzero(holders[j] & ~holders[j][pr])
            if len(send):
                b.add_many(gc[send], gc[pr[send]], np.full(len(send), j))
            holders[j][pr[send]] = True
    for send, recv in plan.folds[::-1]:
        keep = send != rpos
        if keep.any():
            b.new_step().add_many(g[recv[keep]], g[send[keep]],
                                  np.broadcast_to(every, (int(keep.sum()), P)))
    return b.build(name=name, meta=meta)
