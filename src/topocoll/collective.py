"""Layer 2: what must happen. A collective is defined by chunk pre- and postconditions.

The data of a collective is cut into ``num_chunks`` equal chunks. For every chunk ``c``,
``pre(c)`` is the set of ranks that contribute it at the start and ``post(c)`` the set
of ranks that must hold it at the end. A correct schedule leaves every rank of
``post(c)`` holding exactly the combination of the contributions of ``pre(c)``: one
contribution for copies (allgather, broadcast, alltoall), the reduction of all of them
for reductions (allreduce, reduce_scatter, reduce). This is MSCCLang's symbolic-chunk
idea without a global context.

Size convention (one place only): ``message_bytes`` is the larger of one rank's input and
output buffers, which is also the ``size`` column of nccl-tests: the per-rank buffer of
allreduce, broadcast and reduce, the total gathered output of allgather, the total input
of reduce_scatter and the per-rank send buffer of alltoall. ``chunk_bytes`` converts.

Chunk numbering, with ``p`` ranks (``ranks[i]`` is the i-th member) and a split factor ``k``:

================  ===========  =============================  ===================================
kind              num_chunks   pre(c)                         post(c)
================  ===========  =============================  ===================================
allgather         p*k          {ranks[c // k]}                all
reduce_scatter    p*k          all                            {ranks[c // k]}
allreduce         k            all                            all
broadcast         k            {root}                         all
reduce            k            all                            {root}
alltoall          p*p*k        {ranks[c // (p*k)]}            {ranks[(c // k) % p]}
================  ===========  =============================  ===================================
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from .errors import InputTypeError, TopocollError

__all__ = ["Collective", "COLLECTIVE_KINDS", "REDUCING_KINDS", "ChunkSets",
           "allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "alltoall",
           "make_collective", "busbw_factor", "CollectiveError"]

COLLECTIVE_KINDS = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "alltoall")
REDUCING_KINDS = frozenset({"reduce_scatter", "allreduce", "reduce"})


class CollectiveError(TopocollError, ValueError):
    """A malformed collective (bad kind, ranks, root or split factor)."""


@dataclass(frozen=True, slots=True)
class ChunkSets:
    """A set of ranks per chunk in CSR form: chunk ``c`` maps to
    ``indices[indptr[c]:indptr[c+1]]`` (sorted, distinct)."""

    indptr: np.ndarray
    indices: np.ndarray

    def __len__(self) -> int:
        return len(self.indptr) - 1

    def __getitem__(self, c: int) -> frozenset[int]:
        return frozenset(int(x) for x in self.indices[self.indptr[c]: self.indptr[c + 1]])

    def sizes(self) -> np.ndarray:
        """Number of ranks in each chunk's set."""
        return np.diff(self.indptr)

    def containing(self, rank: int) -> np.ndarray:
        """The chunks whose set holds ``rank``, ascending.

        Examples
        --------
        >>> s = ChunkSets(np.array([0, 2, 3, 5]), np.array([0, 1, 1, 0, 2]))
        >>> s.containing(1).tolist(), s.containing(2).tolist(), s.containing(7).tolist()
        ([0, 1], [2], [])
        """
        owners = np.repeat(np.arange(len(self)), self.sizes())
        return owners[self.indices == rank]


@dataclass(frozen=True)
class Collective:
    """What a collective must achieve, independent of any algorithm or message size.

    Parameters
    ----------
    kind : str
        One of :data:`COLLECTIVE_KINDS`.
    ranks : tuple of int
        The participating ranks (distinct, non-negative), in the order that defines
        chunk ownership (see the module table).
    split : int
        Chunks per block (``k`` in the module table); algorithms that pipeline or cut
        blocks in halves use ``split > 1``.
    root : int or None
        The root rank of broadcast and reduce (a member of ``ranks``).

    Examples
    --------
    >>> c = allgather(4)
    >>> c.num_chunks, c.pre(2), sorted(c.post(2))
    (4, frozenset({2}), [0, 1, 2, 3])
    >>> c.chunk_bytes(1024)
    256.0
    """

    kind: str
    ranks: tuple[int, ...]
    split: int = 1
    root: int | None = None
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if isinstance(self.ranks, str | bytes) or not isinstance(self.ranks, Iterable):
            raise InputTypeError(f"ranks must be a sequence of integers, got "
                                 f"{type(self.ranks).__name__} {self.ranks!r}", item="ranks")
        ranks = tuple(self.ranks)
        for r in ranks:
            if isinstance(r, bool) or not isinstance(r, int | np.integer):
                raise InputTypeError(f"ranks must be integers, got {type(r).__name__} {r!r}",
                                     item="ranks")
        object.__setattr__(self, "ranks", tuple(int(r) for r in ranks))
        if self.kind not in COLLECTIVE_KINDS:
            raise CollectiveError(f"unknown collective kind {self.kind!r}; expected one of "
                                  f"{', '.join(COLLECTIVE_KINDS)}")
        if len(self.ranks) < 1:
            raise CollectiveError("a collective needs at least one rank in ranks")
        seen: set[int] = set()
        for r in self.ranks:
            if r < 0:
                raise CollectiveError(f"rank {r} in ranks is negative")
            if r in seen:
                raise CollectiveError(f"rank {r} appears twice in ranks")
            seen.add(r)
        if isinstance(self.split, bool) or not isinstance(self.split, int) or self.split < 1:
            raise CollectiveError(f"split must be a positive integer, got {self.split!r}")
        if self.kind in ("broadcast", "reduce"):
            if self.root is None:
                object.__setattr__(self, "root", self.ranks[0])
            if self.root not in self.ranks:
                raise CollectiveError(f"root {self.root} is not one of the ranks "
                                      f"{list(self.ranks)}")
        elif self.root is not None:
            raise CollectiveError(f"{self.kind} takes no root (got root {self.root})")

    # ------------------------------------------------------------------ sizes
    @property
    def num_ranks(self) -> int:
        """Number of participating ranks ``p``."""
        return len(self.ranks)

    @property
    def is_reduction(self) -> bool:
        """True for allreduce, reduce_scatter and reduce."""
        return self.kind in REDUCING_KINDS

    @property
    def num_chunks(self) -> int:
        """Total number of distinct chunks."""
        p, k = self.num_ranks, self.split
        per_kind = {"allgather": p * k, "reduce_scatter": p * k, "alltoall": p * p * k}
        return per_kind.get(self.kind, k)

    @property
    def chunks_per_buffer(self) -> int:
        """Chunks in the buffer that ``message_bytes`` measures (see module docstring)."""
        p, k = self.num_ranks, self.split
        return {"allgather": p * k, "reduce_scatter": p * k, "alltoall": p * k}.get(self.kind, k)

    def chunk_bytes(self, message_bytes: float) -> float:
        """Bytes in one chunk: ``message_bytes / chunks_per_buffer``; the only conversion."""
        return float(message_bytes) / self.chunks_per_buffer

    def with_split(self, split: int) -> Collective:
        """The same collective cut into ``split`` chunks per block."""
        return Collective(self.kind, self.ranks, split, self.root)

    # ----------------------------------------------------------- pre and post
    def pre(self, c: int) -> frozenset[int]:
        """Ranks contributing chunk ``c`` at the start."""
        return self.pre_sets()[c]

    def post(self, c: int) -> frozenset[int]:
        """Ranks that must hold chunk ``c`` at the end."""
        return self.post_sets()[c]

    def pre_sets(self) -> ChunkSets:
        """All preconditions in compact CSR form (cached)."""
        if "pre" not in self._cache:
            self._cache["pre"] = self._sets(pre=True)
        return self._cache["pre"]

    def post_sets(self) -> ChunkSets:
        """All postconditions in compact CSR form (cached)."""
        if "post" not in self._cache:
            self._cache["post"] = self._sets(pre=False)
        return self._cache["post"]

    def every_member(self, pre: bool) -> bool:
        """Whether every chunk's precondition (``pre``) or postcondition set is all the
        members: then :meth:`pre_sets` / :meth:`post_sets` repeat the members once per
        chunk, which a consumer at scale can avoid materializing.

        >>> from topocoll.collective import allgather
        >>> allgather(4).every_member(pre=False), allgather(4).every_member(pre=True)
        (True, False)
        """
        return {"allgather": not pre, "reduce_scatter": pre, "allreduce": True,
                "broadcast": not pre, "reduce": pre, "alltoall": False}[self.kind]

    def _sets(self, pre: bool) -> ChunkSets:
        p, k, nc = self.num_ranks, self.split, self.num_chunks
        members = np.array(sorted(self.ranks), dtype=np.int32)
        ranks = np.array(self.ranks, dtype=np.int32)
        c = np.arange(nc)
        if self.every_member(pre):
            return ChunkSets(np.arange(nc + 1, dtype=np.int64) * p, np.tile(members, nc))
        if self.kind in ("broadcast", "reduce"):
            single = np.full(nc, self.root, dtype=np.int32)
        elif self.kind == "alltoall":
            single = ranks[c // (p * k)] if pre else ranks[(c // k) % p]
        else:
            single = ranks[c // k]
        return ChunkSets(np.arange(nc + 1, dtype=np.int64), single.astype(np.int32))

    def owner(self, c: int) -> int | None:
        """The single rank in ``pre(c)`` for copies, else None."""
        s = self.pre(c)
        return next(iter(s)) if len(s) == 1 and not self.is_reduction else None

    def describe(self) -> str:
        """A short label, e.g. ``'allreduce(p=8, k=2)'``."""
        extra = f", root={self.root}" if self.root is not None else ""
        return f"{self.kind}(p={self.num_ranks}, k={self.split}{extra})"


def _ranks(ranks) -> tuple[int, ...]:
    if isinstance(ranks, int):
        if ranks < 1:
            raise CollectiveError(f"number of ranks must be >= 1, got {ranks}")
        return tuple(range(ranks))
    return tuple(ranks)


def allgather(ranks, split: int = 1) -> Collective:
    """Allgather over ``ranks`` (an int ``p`` means ``0..p-1``)."""
    return Collective("allgather", _ranks(ranks), split)


def reduce_scatter(ranks, split: int = 1) -> Collective:
    """Reduce-scatter over ``ranks``."""
    return Collective("reduce_scatter", _ranks(ranks), split)


def allreduce(ranks, split: int = 1) -> Collective:
    """Allreduce over ``ranks``; ``split`` is the number of chunks of the vector."""
    return Collective("allreduce", _ranks(ranks), split)


def broadcast(ranks, root: int | None = None, split: int = 1) -> Collective:
    """Broadcast from ``root`` (default: the first rank)."""
    return Collective("broadcast", _ranks(ranks), split, root)


def reduce(ranks, root: int | None = None, split: int = 1) -> Collective:
    """Reduce to ``root`` (default: the first rank)."""
    return Collective("reduce", _ranks(ranks), split, root)


def alltoall(ranks, split: int = 1) -> Collective:
    """All-to-all: chunk ``(i*p + j)*k + m`` goes from ``ranks[i]`` to ``ranks[j]``."""
    return Collective("alltoall", _ranks(ranks), split)


def make_collective(kind: str, ranks, split: int = 1, root: int | None = None) -> Collective:
    """Build a collective by kind name (used by the CLI and file readers)."""
    return Collective(kind, _ranks(ranks), split, root)


def busbw_factor(kind: str, num_ranks: int) -> float:
    """The nccl-tests factor that turns algbw into busbw.

    Examples
    --------
    >>> busbw_factor("allreduce", 8)
    1.75
    """
    n = num_ranks
    if kind == "allreduce":
        return 2 * (n - 1) / n
    if kind in ("allgather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0
