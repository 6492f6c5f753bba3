"""A schedule cache on disk, safe for concurrent processes and bounded in size.

Synthesis is deterministic (budgets count work, seeds are fixed), so a schedule is a
function of its inputs and can be kept: :class:`ScheduleCache` stores each one under a
key made of the algorithm, its options, the collective, the topology's
:meth:`~topocoll.topology.Topology.fingerprint` and the package (its version and a digest
of its source files, so an edited checkout never reads a schedule an older synthesizer
made). Files are written to a temporary name and renamed into place (atomic on POSIX),
so a reader sees a whole file or none, and a file that fails to load is treated as a
miss and removed. When the directory grows past its limit the least recently used
files go first. Pruning lists the whole directory, so a process prunes only after it has
written :data:`PRUNE_FRACTION` of the limit since it last did (each process may leave
the directory that much over its limit between prunes).

Verification outcomes are kept too (:meth:`ScheduleCache.verified`), keyed by the
schedule's and the topology's fingerprints: symbolic execution of a large pipelined
schedule costs far more than reading it back.

Location: ``$TOPOCOLL_CACHE`` if set, else ``$XDG_CACHE_HOME/topocoll``, else
``~/.cache/topocoll``. The CLI uses it unless given ``--no-cache``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..digest import content_digest
from ..schedule import Schedule, load_schedule, save_schedule

__all__ = ["ScheduleCache", "default_cache_dir", "package_digest", "MAX_BYTES",
           "MAX_TRANSFERS", "MAX_ENTRIES", "PRUNE_FRACTION"]

#: Default bound on the cache directory's size (bytes); least recently used files go
#: first when it is passed.
MAX_BYTES = 1 << 30
#: A process prunes a cache directory after writing this fraction of its limit there
#: (listing every file per write made filling a cache quadratic: 826 schedules took
#: 20 s of listing in the runtime tests' battery).
PRUNE_FRACTION = 0.02
#: bytes written per cache directory since this process last pruned it
_unpruned: dict[str, int] = {}
#: Schedules with more transfers than this are not stored (they are cheap to
#: re-synthesize relative to their size on disk).
MAX_TRANSFERS = 5_000_000
#: Nor schedules with more (transfer, chunk) entries than this: the 4,096-rank Swing
#: allreduce has 393 k transfers but 134 M entries, and deflating the bandwidth-optimal
#: butterflies of a 64x64 torus took 40 of a cold ``compare``'s 243 s (profiled) for
#: files that synthesis rebuilds in about a second.
MAX_ENTRIES = 16_000_000
_SUFFIX = ".npz"


def default_cache_dir() -> Path:
    """``$TOPOCOLL_CACHE``, else ``$XDG_CACHE_HOME/topocoll``, else ``~/.cache/topocoll``."""
    if os.environ.get("TOPOCOLL_CACHE"):
        return Path(os.environ["TOPOCOLL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "topocoll"


@cache
def package_digest() -> str:
    """The package version and a digest of every source file of the package."""
    from .. import __version__

    root = Path(__file__).resolve().parent.parent
    files = sorted(root.rglob("*.py"))
    return content_digest(__version__, [(str(p.relative_to(root)), p.read_bytes())
                                        for p in files])


class ScheduleCache:
    """Schedules on disk, keyed by what made them.

    Parameters
    ----------
    directory : path, optional
        Where to keep them (default :func:`default_cache_dir`); created when first
        written.
    max_bytes : int
        Bound on the directory's total size (:data:`MAX_BYTES`).

    Examples
    --------
    >>> import tempfile
    >>> from topocoll.topology import ring
    >>> from topocoll.synth import ring_allgather
    >>> c = ScheduleCache(tempfile.mkdtemp())
    >>> k = c.key("ring", "allgather", {}, ring(4))
    >>> c.get(k) is None
    True
    >>> c.put(k, ring_allgather(ring(4)))
    >>> c.get(k).num_steps
    3
    """

    def __init__(self, directory: str | os.PathLike | None = None, *,
                 max_bytes: int = MAX_BYTES) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.max_bytes = int(max_bytes)
        self.hits = 0
        self.misses = 0

    def key(self, algorithm: str, kind: str, options: Mapping[str, Any], topology) -> str:
        """The key of ``algorithm``'s ``kind`` schedule with ``options`` (ranks, root and
        size included when given) on ``topology``."""
        opts = {k: list(v) if isinstance(v, tuple) else v for k, v in options.items()}
        return content_digest("topocoll.ScheduleCache/1", package_digest(), algorithm, kind,
                              opts, topology.fingerprint())

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / (key + _SUFFIX)

    def get(self, key: str) -> Schedule | None:
        """The schedule stored under ``key``, or None (a file that does not load is
        removed and counts as a miss)."""
        path = self._path(key)
        try:
            s = load_schedule(path)
        except FileNotFoundError:
            self.misses += 1
            return None
        except Exception:             # truncated or foreign file: never trust it
            with contextlib.suppress(OSError):
                path.unlink()
            self.misses += 1
            return None
        with contextlib.suppress(OSError):
            os.utime(path)            # least recently used goes first
        self.hits += 1
        return s

    def put(self, key: str, schedule: Schedule) -> None:
        """Store ``schedule`` under ``key`` (atomically; a full disk or a read-only
        directory only means it is not kept)."""
        if schedule.num_transfers > MAX_TRANSFERS or len(schedule.chunks) > MAX_ENTRIES:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=_SUFFIX, dir=path.parent)
            os.close(fd)
            try:
                save_schedule(schedule, tmp, level=1)     # speed over size for a cache
                os.replace(tmp, path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            size = path.stat().st_size
        except OSError:
            return
        where = str(self.directory)
        _unpruned[where] = _unpruned.get(where, 0) + size
        if _unpruned[where] >= PRUNE_FRACTION * self.max_bytes:
            self.prune()

    def prune(self) -> int:
        """Remove least recently used files until the directory fits ``max_bytes``;
        returns how many were removed."""
        _unpruned[str(self.directory)] = 0
        entries = []
        total = 0
        for p in [*self.directory.glob(f"*/*{_SUFFIX}"), *self.directory.glob("*/*.ok")]:
            if p.name.startswith(".tmp-"):          # another process is writing it
                continue
            with contextlib.suppress(OSError):
                st = p.stat()
                entries.append((st.st_mtime, p.name, p, st.st_size))
                total += st.st_size
        removed = 0
        for _, _, p, size in sorted(entries):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                p.unlink()
                removed += 1
            total -= size
        return removed

    def verified(self, schedule: Schedule, topology, check, *,
                 made_by: str | None = None) -> bool:
        """Whether ``schedule`` verifies on ``topology``: the stored outcome, or
        ``check(schedule, topology)`` (stored for next time).

        ``made_by``: the :meth:`key` the schedule was synthesized under. Synthesis is
        deterministic, so that key names the schedule as well as its content does, and
        the outcome is stored under it without hashing the schedule (2 s for each of the
        134-million-entry schedules of a 64x64 torus; the schedule cache itself already
        trusts the key for what it stores)."""
        if made_by is not None:
            key = content_digest("topocoll.Verified/2", made_by)
        else:
            key = content_digest("topocoll.Verified/1", package_digest(),
                                 schedule.fingerprint(), topology.fingerprint())
        path = self.directory / key[:2] / (key + ".ok")
        with contextlib.suppress(OSError, ValueError):
            text = path.read_text()
            if text in ("1", "0"):
                self.hits += 1
                return text == "1"
        ok = bool(check(schedule, topology))
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".ok", dir=path.parent)
            with os.fdopen(fd, "w") as fh:
                fh.write("1" if ok else "0")
            os.replace(tmp, path)
        return ok

    def clear(self) -> None:
        """Remove every stored schedule."""
        for pattern in (f"*/*{_SUFFIX}", "*/*.ok"):
            for p in self.directory.glob(pattern):
                with contextlib.suppress(OSError):
                    p.unlink()
