"""Run any verified schedule with torch.distributed point-to-point operations.

Each rank executes its lowered program (:func:`topocoll.schedule.lower.lower`): for every
step in which it takes part it posts all its sends and receives of that step in one
``dist.batch_isend_irecv`` call, waits for them (with a timeout), and then applies the
received chunks, copies first, then reductions. Sends read the buffer before any receive
of the step is applied, which is the IR's "reads see the start of the step" rule. No
global barrier separates steps: a rank only waits for its own messages, so pipelined
schedules (``split > 1``) overlap across ranks exactly as far as their data dependencies
allow. gloo on CPU and NCCL on GPU are both plain ``torch.distributed`` backends here;
nothing is backend-specific.

Schedule rank ``r`` is group rank ``r`` of the process group (``group=None`` is the default
group). Ranks of the group outside the collective return at once.

Numerics. Integer and bool reductions are associative and commutative (wraparound
included), so their results are bit-exact against ``dist.all_reduce``. Floating-point sums
differ from any other order only by rounding: with ``p`` contributions of absolute sum
``S`` per element, two summation orders differ by at most ``2 (p - 1) u S + O(u^2)`` with
``u = eps / 2``; the tests use ``p * eps * S``. MIN and MAX are exact for every dtype.

References
----------
.. [1] PyTorch, ``torch.distributed.batch_isend_irecv`` and DDP communication hooks,
   https://pytorch.org/docs/stable/distributed.html and ``ddp_comm_hooks``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache

from ..errors import NotSupportedError, ScheduleError, TopocollError
from ..schedule import Schedule
from ..schedule.lower import Program, lower

__all__ = ["CommunicationError", "run_schedule", "all_reduce", "all_gather_into_tensor",
           "reduce_scatter_tensor", "broadcast", "reduce", "all_to_all_single",
           "ddp_comm_hook", "chunk_bounds", "DEFAULT_TIMEOUT", "DuplexGroups",
           "duplex_groups"]

#: Default time a rank waits for the messages of one step before failing.
DEFAULT_TIMEOUT = 60.0


class CommunicationError(TopocollError, RuntimeError):
    """A step of a schedule failed at runtime (a peer died, a timeout, a transport error)."""


def _torch():
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:  # pragma: no cover - exercised only without torch
        raise ImportError("topocoll.runtime needs PyTorch: pip install 'topocoll[torch]'") from e
    return torch, dist


def chunk_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """Split ``n`` elements into ``parts`` contiguous ranges as evenly as possible.

    Examples
    --------
    >>> chunk_bounds(10, 4)
    [(0, 2), (2, 5), (5, 7), (7, 10)]
    """
    cuts = [i * n // parts for i in range(parts + 1)]
    return list(zip(cuts[:-1], cuts[1:], strict=True))


@lru_cache(maxsize=64)
def _program(schedule: Schedule, rank: int) -> Program:
    return lower(schedule, rank)


# ------------------------------------------------------------------------- reductions
def _reducer(op, dtype, torch, dist) -> Callable:
    R = dist.ReduceOp
    is_bool = dtype == torch.bool
    table = {
        R.SUM: (lambda a, b: a.logical_or_(b)) if is_bool else (lambda a, b: a.add_(b)),
        R.AVG: lambda a, b: a.add_(b),
        R.PRODUCT: (lambda a, b: a.logical_and_(b)) if is_bool else (lambda a, b: a.mul_(b)),
        R.MIN: lambda a, b: torch.minimum(a, b, out=a),
        R.MAX: lambda a, b: torch.maximum(a, b, out=a),
        R.BAND: lambda a, b: a.bitwise_and_(b),
        R.BOR: lambda a, b: a.bitwise_or_(b),
        R.BXOR: lambda a, b: a.bitwise_xor_(b),
    }
    if op not in table:
        raise NotSupportedError(f"reduce op {op} is not supported by the schedule executor")
    if op == R.AVG and not dtype.is_floating_point:
        raise NotSupportedError(f"ReduceOp.AVG needs a floating-point tensor, got {dtype}")
    return table[op]


# ------------------------------------------------------------------------- executor
class _Store:
    """Where each chunk lives on this rank: ``chunk -> (base tensor, start, stop)``.
    ``sizes`` gives every chunk's element count (the collective's ``k`` sub-chunk sizes,
    repeated block after block)."""

    def __init__(self, torch, initial: dict, out: Callable, sizes: list[int], like) -> None:
        self.torch, self.loc, self.out, self.like = torch, dict(initial), out, like
        self.prefix = [0]
        for n in sizes:
            self.prefix.append(self.prefix[-1] + n)

    def size(self, c: int) -> int:
        return self.prefix[c + 1] - self.prefix[c]

    def extent(self, chunks: range) -> int:
        """Elements in the consecutive ``chunks`` of a piece (two lookups)."""
        return self.prefix[chunks.stop] - self.prefix[chunks.start]

    def view(self, c: int):
        base, a, b = self.loc[c]
        return base[a:b]

    def target(self, c: int):
        if c not in self.loc:
            n = self.size(c)
            scratch = self.torch.empty(n, dtype=self.like.dtype, device=self.like.device)
            self.loc[c] = self.out(c) or (scratch, 0, n)
        return self.view(c)

    def region(self, chunks: tuple[int, ...]):
        """A view covering ``chunks`` if their destinations are adjacent in one buffer, else
        None (then the message is received into a separate buffer and copied)."""
        locs = [self.loc.get(c) or self.out(c) for c in chunks]
        if any(x is None for x in locs):
            return None
        base, a, b = locs[0]
        for nb, na, nz in locs[1:]:
            if nb is not base or na != b:
                return None
            b = nz
        for c, x in zip(chunks, locs, strict=True):
            self.loc[c] = x
        return base[a:b]

    def span(self, chunks: range):
        """A view of the held ``chunks`` if they are adjacent in one buffer, else None."""
        base, a, b = self.loc[chunks[0]]
        for c in chunks[1:]:
            nb, na, nz = self.loc[c]
            if nb is not base or na != b:
                return None
            b = nz
        return base[a:b]

    def gather(self, chunks: tuple[int, ...]):
        """The payload of ``chunks``: one slice when they are adjacent, else a copy."""
        base, a, b = self.loc[chunks[0]]
        for c in chunks[1:]:
            nb, na, nz = self.loc[c]
            if nb is not base or na != b:
                return self.torch.cat([self.view(x) for x in chunks])
            b = nz
        return base[a:b]


@dataclass(frozen=True)
class DuplexGroups:
    """Two process groups over the same ranks: messages to a higher rank use ``up``, to a
    lower rank ``down``. Made by :func:`duplex_groups`; pass it as ``group``.

    gloo carries both directions between two ranks over one connection per group, and a
    simultaneous send and receive on it took twice the one-way time on the testbed
    (``docs/studies/testbed.md``); with two groups each direction has its own connection.
    """

    up: object
    down: object


def duplex_groups(group=None) -> DuplexGroups:
    """Create :class:`DuplexGroups` over the ranks of ``group`` (default: all ranks).

    Like ``dist.new_group``, every process of the default group must call it, in the same
    order as its other ``new_group`` calls.
    """
    _, dist = _torch()
    ranks = dist.get_process_group_ranks(group) if group is not None else \
        list(range(dist.get_world_size()))
    return DuplexGroups(dist.new_group(ranks), dist.new_group(ranks))


def _base(group):
    return group.up if isinstance(group, DuplexGroups) else group


def _post(dist, sends, recvs, group):
    """Post every send and receive of a step; returns the works to wait for."""
    if not isinstance(group, DuplexGroups):
        ops = [dist.P2POp(dist.isend, t, group=group, group_peer=peer, tag=tag)
               for t, peer, tag in sends]
        ops += [dist.P2POp(dist.irecv, t, group=group, group_peer=peer, tag=tag)
                for t, peer, tag in recvs]
        return dist.batch_isend_irecv(ops) if ops else []
    me = dist.get_rank(group.up)

    def pick(src, dst):
        return group.up if src < dst else group.down

    works = [dist.isend(t, group=pick(me, peer), group_dst=peer, tag=tag)
             for t, peer, tag in sends]
    works += [dist.irecv(t, group=pick(peer, me), group_src=peer, tag=tag)
              for t, peer, tag in recvs]
    return works


def _execute(program: Program, rank: int, store: _Store, reduce_fn, group, timeout: float):
    torch, dist = _torch()
    for st in program.steps_of(rank):
        out = [m.chunks for m in st.sends]
        sends = [(store.gather(cs), m.dst, m.step) for m, cs in zip(st.sends, out, strict=True)]
        read = set().union(*out)
        bufs, direct = [], []
        for m in st.recvs:
            # a pure copy into chunks no send of this step reads lands in place
            buf = None
            cs = m.chunks
            if not any(p.reduce for p in m.pieces) and read.isdisjoint(cs):
                buf = store.region(cs)
            if buf is None:
                buf = torch.empty(sum(store.extent(p.chunks) for p in m.pieces),
                                  dtype=store.like.dtype,
                                  device=store.like.device)
                bufs.append((m, buf))
            else:
                direct.append((m, buf))
        try:
            works = _post(dist, sends, [(b, m.src, m.step) for m, b in bufs + direct], group)
            for w in works:
                w.wait(timeout=timedelta(seconds=timeout))
        except Exception as e:  # transport errors surface as RuntimeError or DistBackendError
            peers = sorted({m.dst for m in st.sends} | {m.src for m in st.recvs})
            raise CommunicationError(
                f"rank {rank}: schedule {program.name or '?'} step {st.step} with peers "
                f"{peers} failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            ) from e
        for reducing in (False, True):
            for m, buf in bufs:
                off = 0
                for piece in m.pieces:
                    n = store.extent(piece.chunks)
                    if piece.reduce == reducing:
                        _apply(store, piece, buf[off: off + n], reducing, reduce_fn)
                    off += n


def _apply(store: _Store, piece, src, reducing: bool, reduce_fn) -> None:
    """Combine or copy a received piece: one operation when its chunks sit side by side
    in one buffer (the usual case), else chunk by chunk. Element for element the same."""
    chunks = piece.chunks
    whole = store.span(chunks) if reducing else store.region(chunks)
    if whole is not None:
        if reducing:
            reduce_fn(whole, src)
        else:
            whole.copy_(src)
        return
    off = 0
    for c in chunks:
        n = store.size(c)
        if reducing:
            reduce_fn(store.view(c), src[off: off + n])
        else:
            store.target(c).copy_(src[off: off + n])
        off += n


def _setup(schedule: Schedule, kind: str | tuple[str, ...], group):
    torch, dist = _torch()
    coll = schedule.collective
    kinds = (kind,) if isinstance(kind, str) else kind
    if coll.kind not in kinds:
        raise ScheduleError(f"schedule {schedule.name!r} implements {coll.describe()}, "
                            f"expected {' or '.join(kinds)}", kind="wrong_collective")
    group = _base(group)
    size = dist.get_world_size(group)
    if max(coll.ranks) >= size:
        raise ScheduleError(f"schedule {schedule.name!r} uses rank {max(coll.ranks)} but the "
                            f"process group has {size} ranks", kind="bad_rank")
    rank = dist.get_rank(group)
    me = rank in coll.ranks
    return torch, dist, coll, rank, me


def _sizes(block: int, k: int, num_chunks: int) -> list[int]:
    """Element count of every chunk: ``block`` cut into ``k`` near-equal sub-chunks, the
    same in every block."""
    return [b - a for a, b in chunk_bounds(block, k)] * (num_chunks // k)


def _block_layout(coll, block: int):
    """Element range of chunk ``c`` inside a buffer of ``p`` blocks of ``block`` elements."""
    k = coll.split
    sub = chunk_bounds(block, k)
    return lambda c: (c // k * block + sub[c % k][0], c // k * block + sub[c % k][1])


def run_schedule(schedule: Schedule, tensor, *, op=None, group=None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
    """Run an allreduce, broadcast or reduce ``schedule`` in place on ``tensor``.

    Parameters
    ----------
    schedule : Schedule
        A verified schedule whose collective is allreduce, broadcast or reduce.
    tensor : torch.Tensor
        Contiguous; chunk ``c`` of ``k = split`` is the ``c``-th of ``k`` near-equal slices.
    op : torch.distributed.ReduceOp, optional
        SUM (default), AVG (floating point), PRODUCT, MIN, MAX, BAND, BOR, BXOR.
    group : ProcessGroup or DuplexGroups, optional
        Schedule rank ``r`` is group rank ``r``. :class:`DuplexGroups` sends each direction
        of a pair over its own connection (see :func:`duplex_groups`).
    timeout : float
        Seconds to wait for the messages of one step.

    Raises
    ------
    ScheduleError
        If the collective kind does not fit or uses ranks outside the group.
    NotSupportedError
        For an unsupported reduce op or dtype combination, or a non-contiguous tensor.
    CommunicationError
        If a step fails (peer died, timeout).
    """
    torch, dist, coll, rank, me = _setup(schedule, ("allreduce", "broadcast", "reduce"), group)
    if not me:
        return
    if not tensor.is_contiguous():
        raise NotSupportedError("the schedule executor needs a contiguous tensor "
                                "(call .contiguous() first)")
    flat = tensor.view(-1)
    op = dist.ReduceOp.SUM if op is None else op
    bounds = chunk_bounds(flat.numel(), coll.split)
    held = {c: (flat, *bounds[c]) for c in coll.pre_sets().containing(rank).tolist()}
    store = _Store(torch, held, lambda c: (flat, *bounds[c]),
                   _sizes(flat.numel(), coll.split, coll.num_chunks), flat)
    _execute(_program(schedule, rank), rank, store, _reducer(op, flat.dtype, torch, dist),
             group, timeout)
    if op == dist.ReduceOp.AVG and coll.kind != "broadcast":
        flat.div_(coll.num_ranks)


def all_reduce(tensor, schedule: Schedule, *, op=None, group=None,
               timeout: float = DEFAULT_TIMEOUT):
    """In-place allreduce of ``tensor`` with ``schedule``; a drop-in for ``dist.all_reduce``.

    Returns ``tensor``. See :func:`run_schedule` for parameters and errors.
    """
    if schedule.collective.kind != "allreduce":
        raise ScheduleError(f"all_reduce needs an allreduce schedule, got "
                            f"{schedule.collective.describe()}", kind="wrong_collective")
    run_schedule(schedule, tensor, op=op, group=group, timeout=timeout)
    return tensor


def broadcast(tensor, schedule: Schedule, *, group=None, timeout: float = DEFAULT_TIMEOUT):
    """Broadcast ``tensor`` from the schedule's root, in place. Returns ``tensor``."""
    _setup(schedule, "broadcast", group)
    run_schedule(schedule, tensor, group=group, timeout=timeout)
    return tensor


def reduce(tensor, schedule: Schedule, *, op=None, group=None, timeout: float = DEFAULT_TIMEOUT):
    """Reduce ``tensor`` to the schedule's root (other ranks' tensors are scratch)."""
    _setup(schedule, "reduce", group)
    run_schedule(schedule, tensor, op=op, group=group, timeout=timeout)
    return tensor


def all_gather_into_tensor(output, input, schedule: Schedule, *, group=None,
                           timeout: float = DEFAULT_TIMEOUT):
    """Allgather: ``output`` (``p * input.numel()`` elements) gets every rank's ``input``.

    Block ``i`` of ``output`` comes from the ``i``-th rank of the collective.
    """
    torch, dist, coll, rank, me = _setup(schedule, "allgather", group)
    if not me:
        return output
    out, inp, p = output.view(-1), input.reshape(-1), coll.num_ranks
    if out.numel() != p * inp.numel():
        raise ScheduleError(f"allgather output has {out.numel()} elements, expected "
                            f"{p} x {inp.numel()}", kind="bad_buffer")
    where = _block_layout(coll, inp.numel())
    i = coll.ranks.index(rank)
    out[i * inp.numel(): (i + 1) * inp.numel()].copy_(inp)
    held = {c: (out, *where(c)) for c in coll.pre_sets().containing(rank).tolist()}
    store = _Store(torch, held, lambda c: (out, *where(c)),
                   _sizes(inp.numel(), coll.split, coll.num_chunks), out)
    _execute(_program(schedule, rank), rank, store, None, group, timeout)
    return output


def reduce_scatter_tensor(output, input, schedule: Schedule, *, op=None, group=None,
                          timeout: float = DEFAULT_TIMEOUT):
    """Reduce-scatter: ``output`` gets block ``i`` of the reduction of every ``input``."""
    torch, dist, coll, rank, me = _setup(schedule, "reduce_scatter", group)
    if not me:
        return output
    out, p = output.view(-1), coll.num_ranks
    work = input.reshape(-1).clone()
    if work.numel() != p * out.numel():
        raise ScheduleError(f"reduce_scatter input has {work.numel()} elements, expected "
                            f"{p} x {out.numel()}", kind="bad_buffer")
    op = dist.ReduceOp.SUM if op is None else op
    where = _block_layout(coll, out.numel())
    held = {c: (work, *where(c)) for c in range(coll.num_chunks)}
    store = _Store(torch, held, lambda c: (work, *where(c)),
                   _sizes(out.numel(), coll.split, coll.num_chunks), work)
    _execute(_program(schedule, rank), rank, store, _reducer(op, work.dtype, torch, dist), group,
             timeout)
    i = coll.ranks.index(rank)
    out.copy_(work[i * out.numel(): (i + 1) * out.numel()])
    if op == dist.ReduceOp.AVG:
        out.div_(p)
    return output


def all_to_all_single(output, input, schedule: Schedule, *, group=None,
                      timeout: float = DEFAULT_TIMEOUT):
    """All-to-all with equal splits: block ``j`` of rank ``i``'s input becomes block ``i``
    of rank ``j``'s output (as ``dist.all_to_all_single`` without split sizes)."""
    torch, dist, coll, rank, me = _setup(schedule, "alltoall", group)
    if not me:
        return output
    out, inp, p, k = output.view(-1), input.reshape(-1), coll.num_ranks, coll.split
    if out.numel() != inp.numel() or inp.numel() % p:
        raise ScheduleError(f"alltoall buffers of {inp.numel()} and {out.numel()} elements; "
                            f"expected equal sizes divisible by {p}", kind="bad_buffer")
    block = inp.numel() // p
    sub = chunk_bounds(block, k)
    i = coll.ranks.index(rank)

    def slot(c, src_side: bool):
        blk = (c // k) % p if src_side else c // (p * k)
        return blk * block + sub[c % k][0], blk * block + sub[c % k][1]

    held = {c: (inp, *slot(c, True)) for c in range(i * p * k, (i + 1) * p * k)}
    mine = {c for c in range(coll.num_chunks) if (c // k) % p == i}

    def out_slot(c):
        return (out, *slot(c, False)) if c in mine else None

    store = _Store(torch, held, out_slot, _sizes(block, k, coll.num_chunks), inp)
    _execute(_program(schedule, rank), rank, store, None, group, timeout)
    for c in sorted(mine):
        dst = out[slice(*slot(c, False))]
        src = store.view(c)
        if src.data_ptr() != dst.data_ptr():
            dst.copy_(src)
    return output


# ------------------------------------------------------------------------- DDP hook
def ddp_comm_hook(schedule: Schedule | Callable[[int], Schedule], *,
                  timeout: float = DEFAULT_TIMEOUT):
    """A ``DistributedDataParallel`` communication hook that averages gradients with a schedule.

    Parameters
    ----------
    schedule : Schedule or callable
        An allreduce schedule over the DDP process group's ranks, or a function of the
        group size that returns one.
    timeout : float
        Seconds per step, as in :func:`run_schedule`.

    Returns
    -------
    callable
        ``hook(state, bucket) -> torch.futures.Future``; register it with
        ``model.register_comm_hook(state, hook)`` where ``state`` is the DDP process group,
        None for the default group, or :class:`DuplexGroups` over the same ranks. The allreduce runs
        synchronously inside the hook (the future is already complete when returned), so
        it does not overlap with the rest of the backward pass.
    """
    torch, dist = _torch()

    def hook(state, bucket):
        buf = bucket.buffer()
        n = dist.get_world_size(_base(state))
        sched = schedule if isinstance(schedule, Schedule) else schedule(n)
        buf.div_(n)
        run_schedule(sched, buf, group=state, timeout=timeout)
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut

    return hook
