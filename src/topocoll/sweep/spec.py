"""Sweep specifications: a command and the grid of its options.

A sweep spec (YAML or JSON)::

    command: compare                 # any topocoll command with --json
    grid:                            # every combination is a point
      topology: [ring:8, torus:4x4]
      size: [1MiB, 64MiB]
    fixed: {collective: allreduce}   # the same for every point
    sample:                          # optional seeded random draws
      count: 4
      seed: 1
      options: {alpha: {low: 1e-7, high: 1e-5, log: true}}
    repeat: 1

A point is the command and one full set of options; its id is a hash of the command, the
options in canonical JSON and the package version, so the same point is never run twice.

Examples
--------
>>> s = parse_sweep({"command": "compare", "grid": {"topology": ["ring:4", "ring:8"],
...                  "size": ["1KiB"]}, "fixed": {"collective": "allgather"}})
>>> [p.options["topology"] for p in s.points()], len(s.points()[0].point_id)
(['ring:4', 'ring:8'], 16)
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..errors import InputError

__all__ = ["SweepSpec", "Point", "parse_sweep", "load_sweep", "point_id", "to_argv"]

_KEYS = {"command", "grid", "fixed", "sample", "repeat", "name"}


def point_id(command: str, options: dict, version: str = __version__) -> str:
    """16 hex digits identifying (command, options, version)."""
    blob = json.dumps([command, options, version], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Point:
    """One run: the command, its options and the repetition index."""

    command: str
    options: dict
    repeat: int = 0

    @property
    def point_id(self) -> str:
        opts = dict(self.options, **({"__repeat": self.repeat} if self.repeat else {}))
        return point_id(self.command, opts)

    def argv(self) -> list[str]:
        return to_argv(self.command, self.options)


def to_argv(command: str, options: dict) -> list[str]:
    """``topocoll`` arguments for ``command`` with ``options`` and ``--json``: an option
    ``name`` becomes ``--name`` (underscores as dashes), ``true`` a bare flag, ``false``
    nothing, a list a repeated option; ``_`` holds positional arguments."""
    argv = command.split()
    pos = options.get("_", [])
    argv += [str(x) for x in (pos if isinstance(pos, list) else [pos])]
    for k, v in options.items():
        if k == "_":
            continue
        flag = "--" + k.replace("_", "-")
        if v is True:
            argv.append(flag)
        elif v is False or v is None:
            continue
        elif isinstance(v, list):
            for x in v:
                argv += [flag, str(x)]
        else:
            argv += [flag, str(v)]
    return argv + ["--json"]


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep (see the module docstring)."""

    command: str
    grid: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)
    sample: dict = field(default_factory=dict)
    repeat: int = 1
    name: str = ""

    def points(self) -> list[Point]:
        """Every point, in a deterministic order (grid in the spec's key order, then the
        samples, then repetitions)."""
        keys = list(self.grid)
        combos = [dict(zip(keys, vals, strict=True))
                  for vals in itertools.product(*(self.grid[k] for k in keys))] or [{}]
        draws = self._draws()
        out = []
        for combo in combos:
            for d in draws:
                for r in range(self.repeat):
                    out.append(Point(self.command, {**self.fixed, **combo, **d}, r))
        return out

    def _draws(self) -> list[dict]:
        if not self.sample:
            return [{}]
        rng = random.Random(self.sample.get("seed", 0))
        out = []
        for _ in range(self.sample.get("count", 1)):
            d = {}
            for k, r in self.sample.get("options", {}).items():
                if "choices" in r:
                    d[k] = rng.choice(r["choices"])
                elif r.get("log"):
                    x = math.exp(rng.uniform(math.log(r["low"]), math.log(r["high"])))
                    d[k] = float(f"{x:.6g}")
                elif r.get("integer"):
                    d[k] = rng.randint(int(r["low"]), int(r["high"]))
                else:
                    d[k] = float(f"{rng.uniform(r['low'], r['high']):.6g}")
            out.append(d)
        return out


def _real(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _check_sample(sample: dict, source: str) -> None:
    """Every field of ``sample:`` checked (a draw that cannot be made is refused here,
    not after the grid has run)."""
    unknown = sorted(set(sample) - {"count", "seed", "options"})
    if unknown:
        raise InputError(f"{source}: unknown sample field {unknown[0]!r} (valid: count, "
                         "options, seed)", item=f"field 'sample.{unknown[0]}'")
    count = sample.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InputError(f"{source}: 'sample.count' must be a positive integer, got "
                         f"{count!r}", item="field 'sample.count'")
    seed = sample.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"{source}: 'sample.seed' must be an integer, got {seed!r}",
                         item="field 'sample.seed'")
    opts = sample.get("options") or {}
    if not isinstance(opts, dict) or not opts:
        raise InputError(f"{source}: 'sample.options' maps option names to ranges",
                         item="field 'sample.options'")
    for k, r in opts.items():
        item = f"field 'sample.{k}'"
        if not isinstance(r, dict) or not ("choices" in r or ("low" in r and "high" in r)):
            raise InputError(f"{source}: sample option {k!r} needs choices or low and high",
                             item=item)
        if "choices" in r:
            if not isinstance(r["choices"], list) or not r["choices"]:
                raise InputError(f"{source}: sample option {k!r}: choices must be a "
                                 "non-empty list", item=item)
            continue
        lo, hi = r["low"], r["high"]
        if not (_real(lo) and _real(hi)) or lo > hi:
            raise InputError(f"{source}: sample option {k!r}: low and high must be numbers "
                             f"with low <= high, got {lo!r} and {hi!r}", item=item)
        if r.get("log") and lo <= 0:
            raise InputError(f"{source}: sample option {k!r}: a log range needs low > 0, "
                             f"got {lo!r}", item=item)
        if r.get("integer") and (int(lo) != lo or int(hi) != hi):
            raise InputError(f"{source}: sample option {k!r}: integer ranges take whole "
                             f"numbers, got {lo!r} and {hi!r}", item=item)


def parse_sweep(doc: dict, source: str = "sweep",
                known_commands: set[str] | None = None,
                options_of=None) -> SweepSpec:
    """A :class:`SweepSpec` from a mapping, every field checked (``known_commands``, when
    given, the command names that exist; ``options_of(command)``, when given, the set of
    option names that command takes).

    Raises
    ------
    InputError
        Naming the field.
    """
    if not isinstance(doc, dict):
        raise InputError(f"{source}: a sweep spec is a mapping", item=source)
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise InputError(f"{source}: unknown field {unknown[0]!r} (valid: "
                         f"{', '.join(sorted(_KEYS))})", item=f"field '{unknown[0]}'")
    cmd = doc.get("command")
    if not isinstance(cmd, str) or not cmd.strip():
        raise InputError(f"{source}: 'command' must name a topocoll command",
                         item="field 'command'")
    if known_commands is not None and cmd.split()[0] not in known_commands:
        raise InputError(f"{source}: unknown command {cmd.split()[0]!r}",
                         item="field 'command'")
    grid = doc.get("grid") or {}
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise InputError(f"{source}: 'grid' maps option names to non-empty lists",
                         item="field 'grid'")
    fixed = doc.get("fixed") or {}
    if not isinstance(fixed, dict):
        raise InputError(f"{source}: 'fixed' maps option names to values",
                         item="field 'fixed'")
    sample = doc.get("sample") or {}
    if not isinstance(sample, dict):
        raise InputError(f"{source}: 'sample' is a mapping", item="field 'sample'")
    if sample:
        _check_sample(sample, source)
    rep = doc.get("repeat", 1)
    if isinstance(rep, bool) or not isinstance(rep, int) or rep < 1:
        raise InputError(f"{source}: 'repeat' must be a positive integer", item="field 'repeat'")
    clash = sorted(set(grid) & set(fixed))
    if clash:
        raise InputError(f"{source}: option {clash[0]!r} is both in grid and fixed",
                         item=f"field '{clash[0]}'")
    drawn = set(sample.get("options") or {})
    for where, names in (("grid", grid), ("fixed", fixed)):
        both = sorted(drawn & set(names))
        if both:
            raise InputError(f"{source}: option {both[0]!r} is both sampled and in {where} "
                             "(the draw would silently replace it)",
                             item=f"field 'sample.{both[0]}'")
    if options_of is not None:
        valid = options_of(cmd.strip())
        for where, names in (("grid", grid), ("fixed", fixed), ("sample", drawn)):
            for k in names:
                if k != "_" and k not in valid:
                    raise InputError(
                        f"{source}: {cmd.strip()!r} has no option {k!r} (in {where}; "
                        f"valid: {', '.join(sorted(valid))})", item=f"field '{where}.{k}'")
    return SweepSpec(cmd.strip(), dict(grid), dict(fixed), dict(sample), rep,
                     str(doc.get("name", "")))


def load_sweep(path: str | Path, known_commands: set[str] | None = None,
               options_of=None) -> SweepSpec:
    """A sweep spec from a YAML or JSON file."""
    from ..topology.io import read_mapping

    p = Path(path)
    return parse_sweep(read_mapping(p), str(p), known_commands, options_of)
