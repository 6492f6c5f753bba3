"""The schedule IR: the hub between synthesizers and every consumer.

A :class:`Schedule` is an ordered list of *steps*; each step is a set of *transfers* that
may run concurrently; each transfer sends some chunks from ``src`` to ``dst`` as a COPY
(overwrite) or a REDUCE (combine into what ``dst`` holds), optionally along an explicit
node path. Steps define *order*, not time: each cost model states how it turns steps
into time.

The IR never depends on message size (chunks are fractions of the buffer; see
:mod:`topocoll.collective`) and never imports the topology: it names rank ids and
optionally paths, so it can be stored, diffed and re-costed on another topology.

Representation. A 4096-rank ring allreduce has 33.5 million transfers, so transfers are
stored *columnar*, in flat read-only numpy arrays sorted by step:

=============  ========  ===============================================================
array          dtype     meaning
=============  ========  ===============================================================
step_ptr       int64     transfers of step ``s`` are ``step_ptr[s] : step_ptr[s+1]``
src, dst       int32     endpoints of each transfer
op             int8      :class:`Op` of each transfer
chunk_ptr      int64     chunks of transfer ``t`` are ``chunks[chunk_ptr[t]:chunk_ptr[t+1]]``
                         (implicit where every transfer carries one chunk, see below)
chunks         int32     chunk ids (>= 1 per transfer)
path_ptr       int64     optional; empty range means "route with the topology"
path_nodes     int32     optional; explicit node paths ``src, ..., dst``
=============  ========  ===============================================================

A schedule of one chunk per transfer (rings, pairwise exchanges, most schedules at scale)
has ``chunk_ptr == arange(T + 1)``: it is built with ``chunk_ptr=None`` and not stored
(1 GB for the 134 million transfers of the 64x64 torus's Hamiltonian rings). Reading
``schedule.chunk_ptr`` makes it on first use; compiled kernels take
:attr:`Schedule.compact_chunk_ptr` (empty for such schedules) and
:func:`topocoll.schedule.spans.chunk_start`, and never need it.

Readable access (``schedule.steps``, :class:`Transfer`) is provided for small schedules
and tests; synthesizers for large schedules use :class:`ScheduleBuilder.add_many`.

Pipelined schedules are ordinary steps in which different chunks are at different
depths of a tree; multi-port schedules are steps in which a rank sends to several peers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from ..collective import Collective
from ..digest import content_digest
from ..errors import ScheduleError

__all__ = ["Op", "Transfer", "Schedule", "ScheduleBuilder", "Symmetry"]


class Op(IntEnum):
    """What a transfer does at its destination."""

    COPY = 0
    REDUCE = 1


@dataclass(frozen=True, slots=True)
class Transfer:
    """One send of ``chunks`` from ``src`` to ``dst`` (a readable view of one IR row).

    Examples
    --------
    >>> Transfer(0, 1, (3,), Op.REDUCE)
    Transfer(src=0, dst=1, chunks=(3,), op=<Op.REDUCE: 1>, path=None)
    """

    src: int
    dst: int
    chunks: tuple[int, ...]
    op: Op = Op.COPY
    path: tuple[int, ...] | None = None


@dataclass(frozen=True, eq=False)
class Symmetry:
    """A symmetry a synthesizer claims for its schedule: renaming every rank
    ``ranks[i]`` to ``rank_images[i]`` (others unchanged) and every chunk ``chunks[j]`` to
    ``chunk_images[j]`` maps the schedule's (step, source, destination, operation, chunk)
    entries of ``chunks`` onto themselves.

    A claim, not a fact: the verifier checks it before it uses it
    (:mod:`topocoll.verification.semantics`), a wrong claim only costs that check, and
    it is not part of the schedule's :meth:`~Schedule.fingerprint`.

    Examples
    --------
    >>> import numpy as np
    >>> r = np.arange(4)
    >>> s = Symmetry(r, np.roll(r, -1), r, np.roll(r, -1))
    >>> s.rank_images.tolist()
    [1, 2, 3, 0]
    """

    ranks: np.ndarray
    rank_images: np.ndarray
    chunks: np.ndarray
    chunk_images: np.ndarray

    def __post_init__(self) -> None:
        for f in ("ranks", "rank_images", "chunks", "chunk_images"):
            object.__setattr__(self, f, _ro(getattr(self, f), np.int64))
        if len(self.ranks) != len(self.rank_images) or \
                len(self.chunks) != len(self.chunk_images):
            raise ScheduleError("malformed symmetry: a map's domain and images differ in "
                                "length", kind="malformed")


#: :attr:`Schedule.compact_chunk_ptr` of a schedule of one chunk per transfer.
_NO_PTR = np.zeros(0, dtype=np.int64)
_NO_PTR.flags.writeable = False


def _ro(a: np.ndarray, dtype) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=dtype)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class Schedule:
    """An ordered list of steps of transfers implementing ``collective``.

    Build one with :class:`ScheduleBuilder` or :meth:`from_steps`; arrays are described in
    the module docstring and are read-only.

    Examples
    --------
    >>> from topocoll.collective import allgather
    >>> s = Schedule.from_steps(allgather(2), [[Transfer(0, 1, (0,)), Transfer(1, 0, (1,))]])
    >>> s.num_steps, s.num_transfers, s.step(0)[1]
    (1, 2, Transfer(src=1, dst=0, chunks=(1,), op=<Op.COPY: 0>, path=None))
    """

    collective: Collective
    step_ptr: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    op: np.ndarray
    chunk_ptr: np.ndarray | None
    chunks: np.ndarray
    path_ptr: np.ndarray | None = None
    path_nodes: np.ndarray | None = None
    name: str = ""
    meta: Mapping[str, str] = field(default_factory=dict)
    #: Symmetries the synthesizer claims (:class:`Symmetry`); checked by the verifier,
    #: which then runs one chunk of each orbit; not part of the fingerprint.
    symmetries: tuple[Symmetry, ...] = ()

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "step_ptr", _ro(self.step_ptr, np.int64))
        set_(self, "src", _ro(self.src, np.int32))
        set_(self, "dst", _ro(self.dst, np.int32))
        set_(self, "op", _ro(self.op, np.int8))
        if self.chunk_ptr is None:        # one chunk per transfer: made when first read
            del self.__dict__["chunk_ptr"]
        else:
            set_(self, "chunk_ptr", _ro(self.chunk_ptr, np.int64))
        set_(self, "chunks", _ro(self.chunks, np.int32))
        if self.path_ptr is not None:
            set_(self, "path_ptr", _ro(self.path_ptr, np.int64))
            set_(self, "path_nodes", _ro(self.path_nodes, np.int32))
        set_(self, "meta", dict(self.meta))
        set_(self, "symmetries", tuple(self.symmetries))
        self._check_shape()

    def __getattr__(self, name: str):
        # only reached for an attribute not set: an implicit chunk_ptr, made once
        d = self.__dict__
        if name == "chunk_ptr" and "src" in d:
            cp = _ro(np.arange(len(d["src"]) + 1, dtype=np.int64), np.int64)
            object.__setattr__(self, "chunk_ptr", cp)
            return cp
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _check_shape(self) -> None:
        t = len(self.src)
        sp = self.step_ptr
        if len(sp) < 1 or sp[0] != 0 or sp[-1] != t or np.any(np.diff(sp) < 0):
            raise ScheduleError("malformed schedule: step_ptr must rise from 0 to the transfer "
                                "count", kind="malformed")
        if len(self.dst) != t or len(self.op) != t:
            raise ScheduleError("malformed schedule: column lengths differ", kind="malformed")
        if "chunk_ptr" not in self.__dict__:
            if len(self.chunks) != t:
                raise ScheduleError("malformed schedule: without chunk_ptr every transfer "
                                    "carries one chunk", kind="malformed")
        else:
            self._check_chunk_ptr()
        if t and (self.op.min() < 0 or self.op.max() > 1):
            raise ScheduleError("malformed schedule: op must be 0 (copy) or 1 (reduce)",
                                kind="malformed")
        if self.path_ptr is not None and (len(self.path_ptr) != t + 1 or
                                          self.path_ptr[-1] != len(self.path_nodes)):
            raise ScheduleError("malformed schedule: path_ptr does not match transfers",
                                kind="malformed")

    def _check_chunk_ptr(self) -> None:
        t, cp = len(self.src), self.chunk_ptr
        if len(cp) != t + 1:
            raise ScheduleError("malformed schedule: column lengths differ", kind="malformed")
        if cp[0] != 0 or cp[-1] != len(self.chunks):
            raise ScheduleError("malformed schedule: chunk_ptr must rise from 0 to the chunk count",
                                kind="malformed")
        if t and (cp[1:] <= cp[:-1]).any():
            i = int(np.argmin(np.diff(cp)))
            raise ScheduleError(f"transfer {i} ({self.src[i]}->{self.dst[i]}) carries no chunks",
                                kind="malformed", transfer=i, step=self.step_of(i))

    def fingerprint(self) -> str:
        """A stable content hash (64 hex digits) of the schedule: its collective (kind,
        ranks, split, root), every column (steps, endpoints, operations, chunks, explicit
        paths), name and ``meta``. Arrays are hashed by value in a fixed width and
        ``meta`` in key order (:func:`~topocoll.digest.content_digest`), so a schedule
        read back from JSON or ``.npz`` has the fingerprint it was written with.

        Examples
        --------
        >>> from topocoll.collective import allgather
        >>> a = Schedule.from_steps(allgather(2), [[Transfer(0, 1, (0,)), Transfer(1, 0, (1,))]])
        >>> b = Schedule.from_steps(allgather(2), [[Transfer(1, 0, (1,)), Transfer(0, 1, (0,))]])
        >>> a.fingerprint() == a.replace(meta={}).fingerprint(), a.fingerprint() == b.fingerprint()
        (True, False)
        """
        c = self.collective
        paths = (self.path_ptr, self.path_nodes) if self.has_paths else None
        # an implicit chunk_ptr is hashed as the array it stands for, never made
        cp = self.__dict__.get("chunk_ptr", range(self.num_transfers + 1))
        return content_digest("topocoll.Schedule/1", c.kind, list(c.ranks), c.split, c.root,
                              self.step_ptr, self.src, self.dst, self.op, cp,
                              self.chunks, paths, self.name, dict(self.meta))

    # ------------------------------------------------------------------ sizes
    @property
    def num_steps(self) -> int:
        """Number of steps."""
        return len(self.step_ptr) - 1

    @property
    def num_transfers(self) -> int:
        """Number of transfers over all steps."""
        return len(self.src)

    @property
    def has_paths(self) -> bool:
        """True if at least one transfer carries an explicit path."""
        return self.path_ptr is not None and len(self.path_nodes) > 0

    @property
    def unit_chunks(self) -> bool:
        """True when every transfer carries exactly one chunk (``chunk_ptr`` is then
        ``arange(T + 1)``: a strictly rising pointer from 0 to ``T`` over ``T + 1``
        entries can be nothing else)."""
        return len(self.chunks) == len(self.src)

    @property
    def compact_chunk_ptr(self) -> np.ndarray:
        """``chunk_ptr`` as compiled kernels take it: empty when :attr:`unit_chunks`
        (then transfer ``t``'s chunk is ``chunks[t]``; read spans with
        :func:`topocoll.schedule.spans.chunk_start`), so that such a schedule's pointer is
        neither made nor streamed."""
        return _NO_PTR if self.unit_chunks else self.chunk_ptr

    def chunk_counts(self) -> np.ndarray:
        """Number of chunks carried by each transfer."""
        if self.unit_chunks:
            return np.ones(self.num_transfers, dtype=np.int64)
        return np.diff(self.chunk_ptr)

    def transfer_steps(self) -> np.ndarray:
        """Step index of every transfer (int32)."""
        return np.repeat(np.arange(self.num_steps, dtype=np.int32), np.diff(self.step_ptr))

    def step_of(self, t: int) -> int:
        """Step index of transfer ``t``."""
        return int(np.searchsorted(self.step_ptr, t, side="right") - 1)

    def participants(self) -> np.ndarray:
        """Sorted distinct node ids that appear as a source or destination."""
        return np.union1d(self.src, self.dst)

    # -------------------------------------------------------- readable access
    def transfer(self, t: int) -> Transfer:
        """The readable :class:`Transfer` at global index ``t``."""
        path = None
        if self.path_ptr is not None and self.path_ptr[t + 1] > self.path_ptr[t]:
            path = tuple(int(x) for x in self.path_nodes[self.path_ptr[t]: self.path_ptr[t + 1]])
        if self.unit_chunks:
            ch = (int(self.chunks[t]),)
        else:
            ch = tuple(int(x) for x in self.chunks[self.chunk_ptr[t]: self.chunk_ptr[t + 1]])
        return Transfer(int(self.src[t]), int(self.dst[t]), ch, Op(int(self.op[t])), path)

    def step(self, s: int) -> tuple[Transfer, ...]:
        """The transfers of step ``s``."""
        return tuple(self.transfer(t) for t in range(self.step_ptr[s], self.step_ptr[s + 1]))

    @property
    def steps(self) -> tuple[tuple[Transfer, ...], ...]:
        """All steps as tuples of :class:`Transfer` (for small schedules and tests)."""
        return tuple(self.step(s) for s in range(self.num_steps))

    def __iter__(self) -> Iterator[tuple[Transfer, ...]]:
        return (self.step(s) for s in range(self.num_steps))

    def __repr__(self) -> str:
        return (f"Schedule({self.name!r}, {self.collective.describe()}, steps={self.num_steps}, "
                f"transfers={self.num_transfers})")

    def bytes_sent(self, message_bytes: float) -> np.ndarray:
        """Bytes each node sends over the whole schedule, indexed by node id."""
        n = int(self.participants().max()) + 1 if self.num_transfers else 0
        return np.bincount(self.src, weights=self.chunk_counts(), minlength=n) * \
            self.collective.chunk_bytes(message_bytes)

    # ----------------------------------------------------------- constructors
    @classmethod
    def from_steps(cls, collective: Collective, steps: Iterable[Iterable[Transfer]], *,
                   name: str = "", meta: Mapping[str, str] | None = None) -> Schedule:
        """Build a schedule from nested lists of :class:`Transfer` (the readable way)."""
        b = ScheduleBuilder(collective)
        for st in steps:
            b.new_step()
            for tr in st:
                b.add(tr.src, tr.dst, tr.chunks, tr.op, tr.path)
        return b.build(name=name, meta=meta)

    def replace(self, **changes) -> Schedule:
        """A copy with some fields replaced (``dataclasses.replace``)."""
        import dataclasses

        if "chunk_ptr" not in changes and "chunk_ptr" not in self.__dict__:
            changes["chunk_ptr"] = None         # still implicit
        return dataclasses.replace(self, **changes)


class ScheduleBuilder:
    """Accumulates steps of transfers and builds a :class:`Schedule`.

    Use :meth:`add` for single transfers and :meth:`add_many` for whole arrays of them
    (the fast path used by synthesizers that scale to thousands of ranks).

    Examples
    --------
    >>> import numpy as np
    >>> from topocoll.collective import allgather
    >>> b = ScheduleBuilder(allgather(4))
    >>> r = np.arange(4)
    >>> for s in range(3):
    ...     _ = b.new_step().add_many(r, (r + 1) % 4, (r - s) % 4)
    >>> b.build(name="ring").num_transfers
    12
    """

    def __init__(self, collective: Collective) -> None:
        self.collective = collective
        self._steps: list[list[tuple]] = []
        self._any_path = False

    def new_step(self) -> ScheduleBuilder:
        """Start a new (empty) step; later transfers go into it."""
        self._steps.append([])
        return self

    def _current(self) -> list:
        if not self._steps:
            self.new_step()
        return self._steps[-1]

    def add(self, src: int, dst: int, chunks: int | Sequence[int], op: Op | int = Op.COPY,
            path: Sequence[int] | None = None) -> ScheduleBuilder:
        """Add one transfer to the current step."""
        ch = np.atleast_1d(np.asarray(chunks, dtype=np.int64))
        p = None if path is None else np.asarray(path, dtype=np.int64)
        self._any_path |= p is not None
        self._current().append(("one", int(src), int(dst), ch, int(op), p))
        return self

    def add_many(self, src, dst, chunks, op: Op | int | np.ndarray = Op.COPY,
                 paths: Sequence[Sequence[int] | None] | None = None) -> ScheduleBuilder:
        """Add many transfers to the current step at once.

        Parameters
        ----------
        src, dst : array_like of int
            Endpoints, one per transfer (scalars broadcast).
        chunks : array_like
            A 1-D array (one chunk per transfer), a 2-D array (the same number of chunks
            per transfer, one row each), or a ``(chunk_ptr, chunk_ids)`` CSR pair.
        op : Op or array_like
            One op for all, or one per transfer.
        paths : sequence, optional
            One explicit node path (or None) per transfer.
        """
        if isinstance(chunks, tuple) and len(chunks) == 2:
            ptr = np.asarray(chunks[0], dtype=np.int64)
            ids = np.asarray(chunks[1], dtype=np.int64)
            n = len(ptr) - 1
        else:
            arr = np.asarray(chunks, dtype=np.int64)
            if arr.ndim == 1:
                n, ptr, ids = len(arr), None, arr
            elif arr.ndim == 2:
                n = arr.shape[0]
                ptr = np.arange(n + 1, dtype=np.int64) * arr.shape[1]
                ids = arr.reshape(-1)
            else:
                raise ScheduleError("chunks must be 1-D, 2-D or a (ptr, ids) pair",
                                    kind="malformed")
        src = np.broadcast_to(np.asarray(src, dtype=np.int32), (n,))
        dst = np.broadcast_to(np.asarray(dst, dtype=np.int32), (n,))
        ops = np.broadcast_to(np.asarray(op, dtype=np.int8), (n,))
        ids = ids.astype(np.int32, copy=False)
        if paths is not None:
            self._any_path = True
            # kept as given (tuples, lists or arrays): build() flattens them all at once
            # (one array per path here was 6.7 M numpy calls in a default GPT-3 train)
            paths = list(paths)
            if len(paths) != n:
                raise ScheduleError("paths must have one entry per transfer", kind="malformed")
        if n:
            self._current().append(("many", src, dst, ptr, ids, ops, paths))
        else:
            self._current()
        return self

    def add_steps(self, src, dst, chunks, op=Op.COPY) -> ScheduleBuilder:
        """Append ``S`` new steps of ``n`` single-chunk transfers each, in one call.

        ``src``, ``dst``, ``chunks`` and ``op`` broadcast to shape ``(S, n)``; row ``i``
        becomes a new step. This is the bulk path for regular algorithms (rings, recursive
        doubling) at thousands of ranks.
        """
        chunks = np.asarray(chunks)
        shape = np.broadcast_shapes(np.shape(src), np.shape(dst), chunks.shape, np.shape(op))
        if len(shape) != 2:
            raise ScheduleError("add_steps needs arrays of shape (steps, transfers)",
                                kind="malformed")
        S, n = shape

        def flat(a, dtype=np.int32):
            a = np.asarray(a, dtype=dtype)
            return a.reshape(-1) if a.shape == shape else np.broadcast_to(a, shape).reshape(-1)

        src, dst, ids, ops = flat(src), flat(dst), flat(chunks), flat(op, np.int8)
        self._steps.append([("bulk", src, dst, None, ids, ops, None, S, n)])
        return self

    def build(self, *, name: str = "", meta: Mapping[str, str] | None = None,
              symmetries: Sequence[Symmetry] = ()) -> Schedule:
        """Return the :class:`Schedule` built so far (``symmetries``: what the caller
        claims, see :class:`Symmetry`)."""
        srcs, dsts, ops, counts, ids, pcounts, pnodes = [], [], [], [], [], [], []
        step_sizes = []
        single = True
        for st in self._steps:
            size = 0
            if st and st[0][0] == "bulk":
                _, s, d, _, ch, op, _, S, n = st[0]
                srcs.append(s)
                dsts.append(d)
                ops.append(op)
                counts.append(None)  # one chunk per transfer
                ids.append(ch)
                if self._any_path:
                    pcounts.append(np.zeros(S * n, dtype=np.int64))
                step_sizes.extend([n] * S)
                continue
            for item in st:
                if item[0] == "one":
                    single &= len(item[3]) == 1
                    _, s, d, ch, op, p = item
                    srcs.append(np.array([s]))
                    dsts.append(np.array([d]))
                    ops.append(np.array([op], dtype=np.int8))
                    counts.append(np.array([len(ch)]))
                    ids.append(ch)
                    if self._any_path:
                        pcounts.append(np.array([0 if p is None else len(p)]))
                        if p is not None:
                            pnodes.append(p)
                    size += 1
                else:
                    _, s, d, ptr, ch, op, paths = item
                    n = len(s)
                    srcs.append(s)
                    dsts.append(d)
                    ops.append(op)
                    counts.append(np.ones(n, dtype=np.int32) if ptr is None else np.diff(ptr))
                    single &= ptr is None
                    ids.append(ch)
                    if self._any_path:
                        if paths is None:
                            pcounts.append(np.zeros(n, dtype=np.int64))
                        else:
                            pcounts.append(np.array([0 if p is None else len(p) for p in paths]))
                            pnodes.extend(p for p in paths if p is not None)
                    size += n
            step_sizes.append(size)
        def cat(xs, dt):
            if len(xs) == 1:
                return np.asarray(xs[0], dtype=dt)
            return np.concatenate(xs, dtype=dt) if xs else np.zeros(0, dtype=dt)

        step_ptr = np.zeros(len(step_sizes) + 1, dtype=np.int64)
        np.cumsum(step_sizes, out=step_ptr[1:])
        if single:  # one chunk per transfer: the pointer is implicit
            chunk_ptr = None
        else:
            cnt = cat([np.ones(len(x), np.int32) if c is None else c
                       for c, x in zip(counts, srcs, strict=True)], np.int32)
            chunk_ptr = None
            if not (cnt == 1).all():     # else one chunk per transfer after all: implicit
                chunk_ptr = np.zeros(len(cnt) + 1, dtype=np.int64)
                np.cumsum(cnt, out=chunk_ptr[1:])
            del cnt
        path_ptr = path_nodes = None
        if self._any_path:
            pc = cat(pcounts, np.int64)
            path_ptr = np.zeros(len(pc) + 1, dtype=np.int64)
            np.cumsum(pc, out=path_ptr[1:])
            from itertools import chain

            path_nodes = np.fromiter(chain.from_iterable(pnodes), dtype=np.int32,
                                     count=int(pc.sum()))
        return Schedule(self.collective, step_ptr, cat(srcs, np.int32), cat(dsts, np.int32),
                        cat(ops, np.int8), chunk_ptr, cat(ids, np.int32), path_ptr, path_nodes,
                        name=name, meta=dict(meta or {}), symmetries=tuple(symmetries))
