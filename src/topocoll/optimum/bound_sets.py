"""The collective's pre- and postconditions as the lower bounds read them, and the
size-independent parts of the bounds memoized per topology (shared by
:mod:`~topocoll.optimum.latency`, :mod:`~topocoll.optimum.injection` and
:mod:`~topocoll.optimum.cuts`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import TopologyError

if TYPE_CHECKING:
    from ..collective import ChunkSets, Collective
    from ..topology import Topology

__all__ = ["MemberSets", "member_sets", "collective_sets", "in_set", "memo_part",
           "BOUND_CACHE_SIZE"]

#: Size-independent bound parts memoized per topology (three per collective).
BOUND_CACHE_SIZE = 24


@dataclass(frozen=True, eq=False)
class MemberSets:
    """Pre- or postconditions with "all members" chunks kept implicit.

    Collectives store ``all ranks`` as a full list per chunk (4096 x 4096 entries for a
    4096-rank ring allreduce); the bounds only need to know that such a set is everything.
    """

    size: np.ndarray         # |set| per chunk
    every: np.ndarray        # set == all members
    single: np.ndarray       # the rank if |set| == 1 else -1
    e_chunk: np.ndarray      # explicit entries of the chunks that are not `every`
    e_rank: np.ndarray


def member_sets(cs: ChunkSets, p: int) -> MemberSets:
    size = cs.sizes()
    every = size == p
    single = np.full(len(size), -1, dtype=np.int64)
    one = size == 1
    single[one] = cs.indices[cs.indptr[:-1][one]]
    if every.all():
        e_chunk = e_rank = np.zeros(0, dtype=np.int64)
    else:
        keep = np.repeat(~every, size)
        e_rank = cs.indices[keep].astype(np.int64)
        e_chunk = np.repeat(np.arange(len(size)), size)[keep]
    return MemberSets(size, every, single, e_chunk, e_rank)


def collective_sets(collective: Collective, topology: Topology):
    members = np.array(sorted(collective.ranks), dtype=np.int64)
    if members.max() >= topology.num_ranks:
        r = int(members[members >= topology.num_ranks][0])
        raise TopologyError(f"rank {r} of the collective is not a rank of topology "
                            f"{topology.name!r} (0..{topology.num_ranks - 1})", item=f"rank {r}")
    return members, _sets_of(collective, True, members), _sets_of(collective, False, members)


def _sets_of(collective: Collective, pre: bool, members: np.ndarray) -> MemberSets:
    """:func:`member_sets` of the collective's pre- or postconditions; sets of every member
    without making the collective's CSR of them (a member list per chunk: 268 MB for an
    allreduce of 16,384 chunks on 4,096 ranks, kept on the collective)."""
    p = len(members)
    if not collective.every_member(pre):
        return member_sets(collective.pre_sets() if pre else collective.post_sets(), p)
    nc = collective.num_chunks
    none = np.zeros(0, dtype=np.int64)
    return MemberSets(np.full(nc, p, dtype=np.int64), np.ones(nc, dtype=bool),
                      np.full(nc, int(members[0]) if p == 1 else -1, dtype=np.int64), none, none)


def in_set(c: np.ndarray, r: np.ndarray, s: MemberSets, R: int) -> np.ndarray:
    """Whether rank ``r[i]`` belongs to the set of chunk ``c[i]`` (members only)."""
    out = s.every[c].copy()
    rest = ~out
    if rest.any():
        out[rest] = np.isin(c[rest] * R + r[rest], s.e_chunk * R + s.e_rank)
    return out


def memo_part(topology: Topology, collective: Collective, what: str, compute):
    """Size-independent parts of the bounds, memoized per collective in the topology."""
    cache = topology.memo("bounds", OrderedDict)
    key = (what, collective.kind, collective.ranks, collective.split, collective.root)
    if key not in cache:
        cache[key] = compute()
        while len(cache) > BOUND_CACHE_SIZE:
            cache.popitem(last=False)
    return cache[key]


