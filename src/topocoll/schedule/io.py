"""Versioned JSON round trip of schedules.

The file is an object with a type tag and a version::

    {"type": "topocoll.schedule", "version": 1, "name": "ring",
     "collective": {"kind": "allreduce", "ranks": [0, 1, 2, 3], "split": 4, "root": null},
     "meta": {...},
     "steps": [[{"src": 0, "dst": 1, "op": "reduce", "chunks": [3]}, ...], ...]}

A transfer may carry ``"path": [0, 8, 1]``. Readers accept exactly this version and
raise :class:`~topocoll.errors.ScheduleError` naming the offending field otherwise.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ..collective import Collective, make_collective
from ..errors import InputError, InputTypeError, ScheduleError, TopocollError
from .ir import Op, Schedule, ScheduleBuilder

__all__ = ["schedule_to_dict", "schedule_from_dict", "save_schedule", "load_schedule",
           "FORMAT_VERSION"]

FORMAT_VERSION = 1
_TYPE = "topocoll.schedule"
_OPS = {"copy": Op.COPY, "reduce": Op.REDUCE}


def schedule_to_dict(schedule: Schedule) -> dict[str, Any]:
    """A JSON-ready dict of ``schedule``."""
    c = schedule.collective
    s = schedule
    src, dst, op = s.src.tolist(), s.dst.tolist(), s.op.tolist()
    cp, ch = s.chunk_ptr.tolist(), s.chunks.tolist()
    pp = s.path_ptr.tolist() if s.path_ptr is not None else None
    pn = s.path_nodes.tolist() if s.path_nodes is not None else None
    steps = []
    for k in range(s.num_steps):
        rows = []
        for t in range(int(s.step_ptr[k]), int(s.step_ptr[k + 1])):
            row = {"src": src[t], "dst": dst[t], "op": "reduce" if op[t] else "copy",
                   "chunks": ch[cp[t]: cp[t + 1]]}
            if pp is not None and pp[t + 1] > pp[t]:
                row["path"] = pn[pp[t]: pp[t + 1]]
            rows.append(row)
        steps.append(rows)
    return {"type": _TYPE, "version": FORMAT_VERSION, "name": s.name,
            "collective": {"kind": c.kind, "ranks": list(c.ranks), "split": c.split,
                           "root": c.root},
            "meta": dict(s.meta), "steps": steps}


def _field(obj: dict, key: str, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise ScheduleError(f"{where}: missing field '{key}'", kind="format")
    return obj[key]


def schedule_from_dict(data: dict[str, Any]) -> Schedule:
    """Inverse of :func:`schedule_to_dict`.

    Raises
    ------
    ScheduleError
        On a wrong type tag or version, or a missing or malformed field (named).
    """
    if not isinstance(data, dict) or data.get("type") != _TYPE:
        raise ScheduleError(f"not a topocoll schedule (field 'type' must be {_TYPE!r})",
                            kind="format")
    if data.get("version") != FORMAT_VERSION:
        raise ScheduleError(f"unsupported schedule version {data.get('version')!r} "
                            f"(this reader understands {FORMAT_VERSION})", kind="format")
    cd = _field(data, "collective", "schedule")
    try:
        split = cd.get("split", 1)
        if isinstance(split, bool) or not isinstance(split, int):
            raise ScheduleError(f"split must be an integer, got {split!r}", kind="format")
        coll: Collective = make_collective(_field(cd, "kind", "collective"),
                                           _field(cd, "ranks", "collective"), split,
                                           cd.get("root"))
    except TopocollError as e:
        raise ScheduleError(f"field 'collective': {e}", kind="format") from e
    steps = _field(data, "steps", "schedule")
    name, meta = str(data.get("name", "")), dict(data.get("meta", {}))
    cols = _columns(steps)
    if cols is not None:
        return Schedule(coll, *cols, name=name, meta=meta)
    return _from_rows(coll, steps, name, meta)


def _ints(values: list) -> np.ndarray | None:
    """``values`` as an int64 array if every entry is a plain int, else None."""
    if not set(map(type, values)) <= {int}:
        return None
    return np.array(values, dtype=np.int64)


def _columns(steps: Any) -> tuple | None:
    """The IR columns of well-formed ``steps``, or None if anything is off.

    This is the fast path (list comprehensions, no per-transfer objects); on None the
    caller re-reads row by row, which names the offending step and transfer.
    """
    if type(steps) is not list or not all(type(st) is list for st in steps):
        return None
    rows = [r for st in steps for r in st]
    if not all(type(r) is dict for r in rows):
        return None
    try:
        src, dst = _ints([r["src"] for r in rows]), _ints([r["dst"] for r in rows])
        op = np.array([_OPS[r["op"]] for r in rows], dtype=np.int8)
        lists = [r["chunks"] for r in rows]
        paths = [r.get("path") for r in rows]
    except (KeyError, TypeError):
        return None
    if not all(type(c) is list for c in lists):
        return None
    chunks = _ints([x for c in lists for x in c])
    if src is None or dst is None or chunks is None:
        return None
    step_ptr = np.zeros(len(steps) + 1, dtype=np.int64)
    np.cumsum([len(st) for st in steps], out=step_ptr[1:])
    chunk_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in lists], out=chunk_ptr[1:])
    path_ptr = path_nodes = None
    if any(p is not None for p in paths):
        if not all(p is None or type(p) is list for p in paths):
            return None
        path_nodes = _ints([x for p in paths if p for x in p])
        if path_nodes is None:
            return None
        path_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(p) if p else 0 for p in paths], out=path_ptr[1:])
    return step_ptr, src, dst, op, chunk_ptr, chunks, path_ptr, path_nodes


def _from_rows(coll: Collective, steps: Any, name: str, meta: dict) -> Schedule:
    """Read ``steps`` transfer by transfer, raising on the first malformed one."""
    if not isinstance(steps, list):
        raise ScheduleError("field 'steps': expected a list of steps", kind="format")
    b = ScheduleBuilder(coll)
    for k, step in enumerate(steps):
        b.new_step()
        if not isinstance(step, list):
            raise ScheduleError(f"step {k}: expected a list of transfers", kind="format", step=k)
        for i, row in enumerate(step):
            where = f"step {k}, transfer {i}"
            try:
                op = _OPS[_field(row, "op", where)]
                chunks = [_int(x, where, "chunks") for x in _field(row, "chunks", where)]
                path = row.get("path")
                if path is not None:
                    path = [_int(x, where, "path") for x in path]
                b.add(_int(_field(row, "src", where), where, "src"),
                      _int(_field(row, "dst", where), where, "dst"), chunks, op, path)
            except (KeyError, TypeError, ValueError) as e:
                if isinstance(e, ScheduleError):
                    raise
                raise ScheduleError(f"{where}: malformed transfer {row!r}", kind="format",
                                    step=k) from e
    return b.build(name=name, meta=meta)


def _int(x: Any, where: str, key: str) -> int:
    if type(x) is not int:
        raise ScheduleError(f"{where}: field '{key}' must hold integers, got {x!r}",
                            kind="format")
    return x


def save_schedule(schedule: Schedule, path: str | Path, *, level: int = 6) -> None:
    """Write ``schedule`` as JSON (``.json``) or as a compressed columnar ``.npz``.

    ``level`` is the deflate level of the ``.npz`` (1 fastest .. 9 smallest; numpy's
    ``savez_compressed`` uses 6). The schedule cache writes at 1: about 4x faster for a
    slightly larger file (zlib was 10% of a cold default ``train``).

    Raises
    ------
    InputError
        If ``path`` ends in neither ``.json`` nor ``.npz``.
    """
    path = Path(path)
    if path.suffix not in (".json", ".npz"):
        raise InputError(f"{path}: a schedule file ends in .json or .npz", item=str(path))
    if path.suffix == ".npz":
        s, c = schedule, schedule.collective
        extra = {} if s.path_ptr is None else {"path_ptr": s.path_ptr, "path_nodes": s.path_nodes}
        header = json.dumps({"type": _TYPE, "version": FORMAT_VERSION, "name": s.name,
                             "meta": dict(s.meta),
                             "collective": {"kind": c.kind, "ranks": list(c.ranks),
                                            "split": c.split, "root": c.root}})
        # an implicit pointer is written (the format has one) but not kept on ``s``
        cp = np.arange(s.num_transfers + 1, dtype=np.int64) if s.unit_chunks else s.chunk_ptr
        arrays = {"header": np.array(header), "step_ptr": s.step_ptr, "src": s.src,
                  "dst": s.dst, "op": s.op, "chunk_ptr": cp, "chunks": s.chunks,
                  **extra}
        _write_npz(path, arrays, level)
        return
    path.write_text(json.dumps(schedule_to_dict(schedule), separators=(",", ":")))


def _write_npz(path: Path, arrays: dict, level: int) -> None:
    """``np.savez_compressed`` with a chosen deflate level and no clock in the file (the
    same layout: one ``<name>.npy`` member per array, read by ``np.load``; every member
    dated 1980-01-01, so the same schedule gives the same bytes)."""
    import io
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED,
                         compresslevel=level) as zf:
        for name, a in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(a), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            zf.writestr(info, buf.getvalue(), compress_type=zipfile.ZIP_DEFLATED,
                        compresslevel=level)


def load_schedule(path: str | os.PathLike) -> Schedule:
    """Read a schedule written by :func:`save_schedule`: a ``.json`` or ``.npz`` path, or
    the JSON text itself.

    Raises
    ------
    ScheduleError
        If the file is not a valid schedule (the message names the file and the field).
    FileNotFoundError
        If there is no such file.
    TypeError
        (:class:`~topocoll.errors.InputTypeError`) if ``path`` is neither a path nor text.
    """
    if isinstance(path, str) and path.lstrip().startswith("{"):
        try:
            return schedule_from_dict(json.loads(path))
        except json.JSONDecodeError as e:
            raise ScheduleError(f"schedule text is not valid JSON ({e})", kind="format") from e
    if not isinstance(path, str | os.PathLike):
        raise InputTypeError(f"path must be a file path or JSON text, got "
                             f"{type(path).__name__} {path!r}", item="path")
    path = Path(path)
    if path.is_dir():
        raise ScheduleError(f"{path}: is a directory, not a schedule file", kind="format")
    if not path.exists():
        raise ScheduleError(f"{path}: no such schedule file", kind="format")
    if path.suffix == ".npz":
        return _load_npz(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ScheduleError(f"{path}: not a schedule file (not UTF-8 text)",
                            kind="format") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ScheduleError(f"{path}: not valid JSON ({e})", kind="format") from e
    try:
        return schedule_from_dict(data)
    except ScheduleError as e:
        raise ScheduleError(f"{path}: {e}", kind=e.kind, step=e.step,
                            transfer=e.transfer) from None


def _load_npz(path: Path) -> Schedule:
    """A columnar ``.npz`` schedule; any damage is a :class:`ScheduleError` naming the file."""
    if not path.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    try:
        z = np.load(path, allow_pickle=False)
        h = json.loads(str(z["header"]))
        cd = h["collective"]
        coll = make_collective(cd["kind"], cd["ranks"], cd["split"], cd["root"])
        return Schedule(coll, z["step_ptr"], z["src"], z["dst"], z["op"], z["chunk_ptr"],
                        z["chunks"], z["path_ptr"] if "path_ptr" in z else None,
                        z["path_nodes"] if "path_nodes" in z else None,
                        name=h.get("name", ""), meta=h.get("meta", {}))
    except ScheduleError as e:
        raise ScheduleError(f"{path}: {e}", kind=e.kind) from None
    except (OSError, EOFError, KeyError, ValueError, TypeError, zipfile.BadZipFile,
            TopocollError) as e:
        raise ScheduleError(f"{path}: not a readable .npz schedule ({type(e).__name__}: "
                            f"{e})", kind="format") from None
