"""An independent, deliberately naive oracle for schedule semantics (pure Python sets).

It shares no code with :mod:`topocoll.verification`, so a bug in one cannot hide a bug
in a synthesizer that the other would catch. Rules: ``state[rank][chunk]`` is the set of
contributing ranks; each ``r`` in ``pre(c)`` starts with ``{r}``; a transfer reads its
source's state as of the start of its step; COPY overwrites, REDUCE unions (overlap is a
double count); several REDUCEs into one (dst, chunk) in a step combine; two writes to one
(dst, chunk) in a step where one is a COPY conflict; sending a chunk not held is an
error; REDUCE is illegal in allgather, broadcast and alltoall; at the end every rank of
``post(c)`` holds exactly ``pre(c)``.
"""

from __future__ import annotations

COPY, REDUCE = 0, 1


class RefCheckError(AssertionError):
    """A violation found by :func:`refcheck`."""


def refcheck(schedule) -> None:
    """Raise :class:`RefCheckError` on the first violation of ``schedule``'s collective."""
    coll = schedule.collective
    nc = coll.num_chunks
    state: dict[tuple[int, int], frozenset[int]] = {}
    for c in range(nc):
        for r in coll.pre(c):
            state[(r, c)] = frozenset({r})
    for s, step in enumerate(schedule.steps):
        writes: dict[tuple[int, int], list[tuple[int, frozenset[int]]]] = {}
        for t in step:
            where = f"step {s}, {t.src}->{t.dst}"
            if t.src == t.dst:
                raise RefCheckError(f"{where}: transfer to itself")
            if t.op == REDUCE and not coll.is_reduction:
                raise RefCheckError(f"{where}: REDUCE in a {coll.kind}")
            for c in t.chunks:
                if not 0 <= c < nc:
                    raise RefCheckError(f"{where}: chunk {c} out of range")
                if (t.src, c) not in state:
                    raise RefCheckError(f"{where}: chunk {c} not held by {t.src}")
                writes.setdefault((t.dst, c), []).append((int(t.op), state[(t.src, c)]))
        new = {}
        for key, ws in writes.items():
            where = f"step {s}, rank {key[0]}, chunk {key[1]}"
            if len(ws) > 1 and any(op == COPY for op, _ in ws):
                raise RefCheckError(f"{where}: conflicting writes {ws}")
            if ws[0][0] == COPY:
                new[key] = ws[0][1]
                continue
            acc = set(state.get(key, ()))
            for _, contrib in ws:
                if acc & contrib:
                    raise RefCheckError(f"{where}: double count of {sorted(acc & contrib)}")
                acc |= contrib
            new[key] = frozenset(acc)
        state.update(new)
    for c in range(nc):
        want = coll.pre(c)
        for r in coll.post(c):
            got = state.get((r, c))
            if got != want:
                raise RefCheckError(f"final: rank {r}, chunk {c}: holds "
                                    f"{None if got is None else sorted(got)}, "
                                    f"expected {sorted(want)}")


def assert_correct(schedule, topology=None) -> None:
    """Check ``schedule`` with :func:`refcheck` and, where it exists, the real verifier."""
    refcheck(schedule)
    try:
        from topocoll.verification import verify
    except ImportError:  # the verifier is developed concurrently
        return
    verify(schedule, topology)


def sent(schedule, num_nodes: int):
    """Per-rank bytes sent as a fraction of ``message_bytes`` (index = rank id)."""
    import numpy as np

    out = np.zeros(num_nodes)
    b = schedule.bytes_sent(1.0)
    out[: len(b)] = b
    return out
