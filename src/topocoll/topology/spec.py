"""Generator spec strings (``"torus:8x8,bw=400Gbps"``) and loading topologies by spec or file.

Grammar: ``name[:arg,arg,...]``. An argument is a positional value, ``key=value`` or a
bare flag (``key`` alone means ``key=true``). Commas inside parentheses do not split.
Names are case-insensitive; quantities take units (:mod:`topocoll.units`): rates such as
``400Gbps`` or ``50GB/s`` (a bare number is bytes/s) and times such as ``100ns`` (a bare
number is seconds).

Names (aliases in parentheses) and their options:

``ring:8``
    :func:`~.generators.ring`; ``bidirectional=false`` or the flag ``unidirectional``.
``uniring:8``
    a unidirectional ring.
``line:8``, ``fc:8`` (``fully_connected``), ``star:8``
    :func:`~.generators.line`, :func:`~.generators.fully_connected`,
    :func:`~.generators.star` (``switch_lat``).
``torus:8x8``, ``mesh:4x4``, ``hypercube:6``
    any number of dimensions; the hypercube takes its dimension ``d``.
``fattree:k=4`` (``fattree:4``, ``fat_tree``)
    :func:`~.fabrics.fat_tree`; ``oversub``, ``switch_lat``.
``leafspine:leaves=4,spines=2,hosts=8`` (``leafspine:4,2,8``)
    :func:`~.fabrics.leaf_spine`; ``uplink_bw``, ``oversub``, ``switch_lat``.
``dgx:4``
    :func:`~.fabrics.dgx` (``boxes``); ``gpus=8``, ``fabric=rail|switch``, ``spines``,
    ``nvlink_bw``, ``nic_bw`` (default ``bw``), ``nvlink_lat``, ``nic_lat`` (default
    ``lat``), ``switch_lat``.
``dgx-a100:4``, ``dgx-h100:4``, ``hgx-h200:4``, ``dgx-b200:4``, ``gb200-nvl72:2``, ``mi300x:4``
    the real boxes of :data:`~.boxes.BOXES` (:func:`~.fabrics.box_cluster`); as ``dgx``
    without ``gpus`` and the bandwidth options, plus ``transport=ib|roce`` (the NIC
    protocol; default the box's).
``tpu-v4:4x4x4``, ``tpu-v5p:4x4x8``
    a TPU v4 or v5p slice: :func:`~.generators.torus` at the chip's ICI rate
    (:data:`~.boxes.TPU_SLICES`); ``lat``.
``circulant:16,jumps=1/3/5``
    :func:`~.generators.circulant`; jumps separated by ``/``; ``directed=true``.
``rrg:32,d=4,seed=1``
    :func:`~.generators.random_regular`; ``seed`` defaults to 0.
``hier:ring(4,100GB/s,200ns)x switch(8,25GB/s,1.5us)``
    :func:`~.hierarchical.multi_dim`: dimensions ``kind(size[,bw][,lat])`` joined by ``x``
    (spaces allowed); kinds ``ring``, ``line``, ``fc`` / ``fully_connected``, ``switch``;
    a missing bw or lat comes from the ``bw`` / ``lat`` options.

Common options (every generator): ``bw`` (link bandwidth; the NIC bandwidth for ``dgx``,
not accepted by the DGX presets), ``lat`` (link latency),
``routing=shortest|ecmp|spray`` and ``fwd`` (forwarding latency of every node, ranks and
switches, charged where a transfer passes through it; overrides ``switch_lat``; not for
the DGX presets), e.g. ``torus:8x8,fwd=300ns`` for a torus router's per-hop time.

Every generator's ``name`` is a spec that parses back to the same structure (``bw`` and
``lat`` are not part of names, except inside ``hier`` dimensions).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputTypeError, TopologyError
from ..units import exact_rate, exact_time, parse_rate, parse_time
from ._common import DEFAULT_BANDWIDTH, DEFAULT_LATENCY
from .boxes import BOXES, NIC_TRANSPORTS, TPU_SLICES
from .core import ROUTINGS, Dim, Topology, check_size
from .fabrics import FABRICS, box_cluster, dgx, fat_tree, leaf_spine
from .generators import (
    circulant,
    fully_connected,
    hammingmesh,
    hypercube,
    line,
    mesh,
    random_regular,
    ring,
    star,
    torus,
)
from .hierarchical import multi_dim
from .io import read_astra_network, read_mapping, topology_from_dict
from .scaleout import SCALEOUTS, cluster
from .totient import totient

__all__ = ["parse_spec", "load_topology", "canonical_name", "GENERATOR_NAMES",
           "GENERATOR_USAGE", "parse_dims"]

_FILE_SUFFIXES = (".json", ".yaml", ".yml")


# ------------------------------------------------------------------------ value parsers
def _int(v: Any) -> int:
    if v is True or not re.fullmatch(r"\s*[+-]?\d+\s*", str(v)):
        raise ValueError(f"expected an integer, got {v!r}")
    return int(v)


def _float(v: Any) -> float:
    x = float(v) if v is not True else float("nan")
    if not x == x or x in (float("inf"), float("-inf")):
        raise ValueError(f"expected a finite number, got {v!r}")
    return x


def _bool(v: Any) -> bool:
    if v is True:
        return True
    s = str(v).strip().lower()
    if s in ("true", "yes", "on", "1"):
        return True
    if s in ("false", "no", "off", "0"):
        return False
    raise ValueError(f"expected true or false, got {v!r}")


def _text(v: Any) -> str:
    if v is True:
        raise ValueError("needs a value")
    return str(v).strip()


def _rate(v: Any) -> float:
    """A rate with units, or a bare number of bytes/s (the same rule as topology files)."""
    text = _text(v)
    if re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", text):
        return parse_rate(float(text))
    return parse_rate(text)


def _time(v: Any) -> float:
    return parse_time(_text(v))


def _shape(v: Any) -> tuple[int, ...]:
    return tuple(_int(x) for x in _text(v).lower().split("x"))


def _jumps(v: Any) -> tuple[int, ...]:
    return tuple(_int(x) for x in _text(v).split("/"))


def _choice(*options: str) -> Callable[[Any], str]:
    def parse(v: Any) -> str:
        s = _text(v).lower()
        if s not in options:
            raise ValueError(f"expected one of {', '.join(options)}, got {v!r}")
        return s
    return parse


_DIM_KINDS = {"ring": "ring", "line": "line", "fc": "fully_connected",
              "fully_connected": "fully_connected", "fullyconnected": "fully_connected",
              "switch": "switch"}
_DIM_RE = re.compile(r"\s*([A-Za-z_]+)\s*\(([^()]*)\)\s*")


def _dims(v: Any) -> list[tuple]:
    """``ring(4,100GB/s,200ns)x switch(8)`` -> [(kind, size, bw or None, lat or None), ...]."""
    text, pos, out = _text(v), 0, []
    while True:
        m = _DIM_RE.match(text, pos)
        if not m:
            raise ValueError(f"expected kind(size[,bw][,lat]) at {text[pos:]!r}")
        kind = _DIM_KINDS.get(m.group(1).lower())
        if kind is None:
            raise ValueError(f"unknown dimension kind {m.group(1)!r} "
                             f"(valid: {', '.join(_DIM_KINDS)})")
        args = [a.strip() for a in m.group(2).split(",")]
        if not 1 <= len(args) <= 3:
            raise ValueError(f"{m.group(0).strip()!r}: expected kind(size[,bw][,lat])")
        args += [""] * (3 - len(args))
        out.append((kind, _int(args[0]), parse_rate(args[1]) if args[1] else None,
                    parse_time(args[2]) if args[2] else None))
        pos = m.end()
        if pos == len(text):
            return out
        if text[pos] != "x":
            raise ValueError(f"expected 'x' between dimensions at {text[pos:]!r}")
        pos += 1


def parse_dims(spec: str) -> list[tuple[str, int]]:
    """The dimensions of a ``hier:`` spec as ``(kind, size)`` pairs, innermost first,
    without building the topology (kinds: ``ring``, ``line``, ``fully_connected``,
    ``switch``).

    Examples
    --------
    >>> parse_dims("hier:ring(4)x fc(8,100GB/s)x switch(32)")
    [('ring', 4), ('fully_connected', 8), ('switch', 32)]
    """
    head, _, rest = str(spec).strip().partition(":")
    if head.strip().lower() != "hier" or not rest.strip():
        raise TopologyError(f"expected a hier: spec, got {spec!r}", item="spec")
    try:
        dims = _dims(rest)
    except ValueError as e:
        raise TopologyError(f"bad hier spec {spec!r}: {e}", item="option 'dims'") from None
    for kind, size, _, _ in dims:
        if size < 2:
            raise TopologyError(f"dimension {kind}({size}): size must be at least 2",
                                item=f"dim size {size!r}")
    return [(kind, size) for kind, size, _, _ in dims]


# --------------------------------------------------------------------- the generators
@dataclass(frozen=True)
class _Gen:
    build: Callable[[dict[str, Any]], Topology]
    usage: str
    positional: tuple[str, ...] = ()
    options: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    common: tuple[str, ...] = ("bw", "lat", "routing", "fwd")


def _bw(o):
    return o.get("bw", DEFAULT_BANDWIDTH)


def _lat(o):
    return o.get("lat", DEFAULT_LATENCY)


def _need(o: dict, key: str) -> Any:
    if key not in o:
        raise TopologyError(f"missing option {key!r}", item=f"option '{key}'")
    return o[key]


def _ring(o, bidirectional=True):
    bidir = o.get("bidirectional", bidirectional) and not o.get("unidirectional", False)
    return ring(_need(o, "n"), bandwidth=_bw(o), latency=_lat(o), bidirectional=bidir)


def _dgx_common(o) -> dict[str, Any]:
    kw = {k: o[s] for s, k in (("fabric", "fabric"), ("spines", "spines"),
                               ("switch_lat", "switch_latency")) if s in o}
    kw["nvlink_latency"] = o.get("nvlink_lat", _lat(o))
    kw["nic_latency"] = o.get("nic_lat", _lat(o))
    return kw


def _hier(o):
    dims = [Dim(kind, size, _bw(o) if bw is None else bw, _lat(o) if lat is None else lat)
            for kind, size, bw, lat in _need(o, "dims")]
    return multi_dim(dims)


def _tpu_name(chip: str, o) -> str:
    shape = _need(o, "shape")
    if len(shape) != 3:
        raise TopologyError(f"a {chip} slice is a 3-D torus, got {len(shape)} dimensions",
                            item="field 'shape'")
    return f"{chip}:{'x'.join(map(str, shape))}"


def _box_gen(box: str) -> _Gen:
    return _Gen(lambda o: _box(box, o),
                f"{box}:BOXES[,fabric=rail|switch][,spines=S][,transport=ib|roce] or "
                f"{box}:BOXES,scaleout=fat-tree|rail|rail-only|direct[,nic_bw=B][,oversub=R]"
                f"[,radix=K][,block=B]", ("boxes",),
                {**_DGX_OPTS, "transport": _choice(*NIC_TRANSPORTS),
                 "scaleout": _choice(*SCALEOUTS), "nic_bw": _rate, "oversub": _float,
                 "radix": _int, "block": _int}, ("lat", "routing"))


def _box(box: str, o) -> Topology:
    """A box cluster: the preset's rail fabric, or a :func:`~.scaleout.cluster` when
    ``scaleout`` is given (the names ``topocoll design`` gives its designs)."""
    if "scaleout" not in o:
        for key in ("nic_bw", "oversub", "radix", "block"):
            if key in o:
                raise TopologyError(f"{key} goes with scaleout=...", item=f"field '{key}'")
        return box_cluster(box, _need(o, "boxes"), transport=o.get("transport"),
                           **_dgx_common(o))
    for key in ("fabric", "spines", "transport"):
        if key in o:
            raise TopologyError(f"{key} does not go with scaleout=...", item=f"field '{key}'")
    return cluster(box, _need(o, "boxes"), o["scaleout"], nic_bandwidth=o.get("nic_bw"),
                   oversubscription=o.get("oversub", 1.0), radix=o.get("radix", 64),
                   block=o.get("block"),
                   nvlink_latency=o.get("nvlink_lat", _lat(o)),
                   nic_latency=o.get("nic_lat", _lat(o)),
                   switch_latency=o.get("switch_lat", 0.0))


_SWITCH_LAT = {"switch_lat": _time}
_DGX_OPTS = {"fabric": _choice(*FABRICS), "spines": _int, "nvlink_lat": _time, "nic_lat": _time,
             **_SWITCH_LAT}
_GENERATORS: dict[str, _Gen] = {
    "ring": _Gen(_ring, "ring:N[,bidirectional=false]", ("n",),
                 {"bidirectional": _bool, "unidirectional": _bool}),
    "uniring": _Gen(lambda o: _ring(o, False), "uniring:N", ("n",)),
    "line": _Gen(lambda o: line(_need(o, "n"), bandwidth=_bw(o), latency=_lat(o)), "line:N",
                 ("n",)),
    "fc": _Gen(lambda o: fully_connected(_need(o, "n"), bandwidth=_bw(o), latency=_lat(o)),
               "fc:N", ("n",)),
    "star": _Gen(lambda o: star(_need(o, "n"), bandwidth=_bw(o), latency=_lat(o),
                                switch_latency=o.get("switch_lat", 0.0)),
                 "star:N[,switch_lat=T]", ("n",), _SWITCH_LAT),
    "torus": _Gen(lambda o: torus(_need(o, "shape"), bandwidth=_bw(o), latency=_lat(o)),
                  "torus:AxBx...", ("shape",)),
    **{chip: _Gen(lambda o, chip=chip: torus(_need(o, "shape"),
                                             bandwidth=TPU_SLICES[chip][0], latency=_lat(o),
                                             name=_tpu_name(chip, o)),
                  f"{chip}:AxBxC (a 3-D torus slice at the chip's ICI rate)", ("shape",),
                  {}, ("lat", "routing")) for chip in TPU_SLICES},
    "mesh": _Gen(lambda o: mesh(_need(o, "shape"), bandwidth=_bw(o), latency=_lat(o)),
                 "mesh:AxBx...", ("shape",)),
    "hypercube": _Gen(lambda o: hypercube(_need(o, "d"), bandwidth=_bw(o), latency=_lat(o)),
                      "hypercube:D", ("d",)),
    "hammingmesh": _Gen(lambda o: hammingmesh(
        _need(o, "shape"), o.get("board", 2), bandwidth=_bw(o), latency=_lat(o),
        switch_latency=o.get("switch_lat", 0.0)),
        "hammingmesh:AxB[,board=2|AxB][,switch_lat=T]", ("shape",),
        {"board": _shape, **_SWITCH_LAT}),
    "fattree": _Gen(lambda o: fat_tree(_need(o, "k"), bandwidth=_bw(o), latency=_lat(o),
                                       oversubscription=o.get("oversub", 1.0),
                                       switch_latency=o.get("switch_lat", 0.0)),
                    "fattree:k=K[,oversub=R][,switch_lat=T]", ("k",),
                    {"oversub": _float, **_SWITCH_LAT}),
    "leafspine": _Gen(lambda o: leaf_spine(
        _need(o, "leaves"), _need(o, "spines"), _need(o, "hosts"), bandwidth=_bw(o),
        uplink_bandwidth=o.get("uplink_bw"), oversubscription=o.get("oversub", 1.0),
        latency=_lat(o), switch_latency=o.get("switch_lat", 0.0)),
        "leafspine:leaves=L,spines=S,hosts=H[,uplink_bw=B][,oversub=R][,switch_lat=T]",
        ("leaves", "spines", "hosts"), {"uplink_bw": _rate, "oversub": _float, **_SWITCH_LAT}),
    "dgx": _Gen(lambda o: dgx(_need(o, "boxes"), gpus_per_box=o.get("gpus", 8),
                              nvlink_bandwidth=o.get("nvlink_bw", 450e9),
                              nic_bandwidth=o.get("nic_bw", o.get("bw", 50e9)),
                              **_dgx_common(o)),
                "dgx:BOXES[,gpus=8][,fabric=rail|switch][,spines=S][,nvlink_bw=B][,nic_bw=B]",
                ("boxes",), {"gpus": _int, "nvlink_bw": _rate, "nic_bw": _rate, **_DGX_OPTS}),
    **{box: _box_gen(box) for box in BOXES},
    "circulant": _Gen(lambda o: circulant(_need(o, "n"), _need(o, "jumps"), bandwidth=_bw(o),
                                          latency=_lat(o), directed=o.get("directed", False)),
                      "circulant:N,jumps=J1/J2/...[,directed=true]", ("n",),
                      {"jumps": _jumps, "directed": _bool}),
    "rrg": _Gen(lambda o: random_regular(_need(o, "n"), _need(o, "d"), seed=o.get("seed", 0),
                                         bandwidth=_bw(o), latency=_lat(o)),
                "rrg:N,d=D[,seed=S]", ("n",), {"d": _int, "seed": _int}),
    "hier": _Gen(_hier, "hier:kind(size[,bw][,lat])x kind(...)...", ("dims",)),
    "totient": _Gen(lambda o: totient(_need(o, "n"), _need(o, "d"), group=o.get("group"),
                                      bandwidth=_bw(o), latency=_lat(o)),
                    "totient:N,d=D[,group=G]", ("n",), {"d": _int, "group": _int}),
}
# heterogeneous scenarios (topology/scenarios.py); `contention=F,keep=K` adds background
# traffic to any of them
def _contended(o, t: Topology) -> Topology:
    from .scenarios import contention
    if "contention" not in o:
        return t
    return contention(t, fraction=o["contention"], keep=o.get("keep", 0.5),
                      seed=o.get("seed", 0))


def _scenario_generators() -> dict[str, _Gen]:
    from .scenarios import bimodal, mi250, random_bandwidth, two_tier
    bg = {"contention": _float, "keep": _float, "seed": _int}
    return {
        "random": _Gen(lambda o: _contended(o, random_bandwidth(
            _need(o, "n"), spread=o.get("spread", 10.0), high=o.get("bw", 100 * 1.25e8),
            density=o.get("density", 1.0), seed=o.get("seed", 0), latency=_lat(o))),
            "random:N[,spread=S][,density=D][,seed=K][,contention=F,keep=K]", ("n",),
            {"spread": _float, "density": _float, **bg}),
        "bimodal": _Gen(lambda o: _contended(o, bimodal(
            _need(o, "n"), fast=o.get("bw", 100 * 1.25e8), slow=o.get("slow", 10 * 1.25e8),
            slow_fraction=o.get("frac", 0.2), density=o.get("density", 1.0),
            seed=o.get("seed", 0), latency=_lat(o))),
            "bimodal:N[,slow=RATE][,frac=F][,density=D][,seed=K]", ("n",),
            {"slow": _rate, "frac": _float, "density": _float, **bg}),
        "twotier": _Gen(lambda o: _contended(o, two_tier(
            _need(o, "racks"), _need(o, "hosts"), host_bandwidth=o.get("bw", 100 * 1.25e8),
            oversubscription=o.get("oversub", 4.0), spines=o.get("spines", 2),
            latency=_lat(o))),
            "twotier:racks=R,hosts=H[,oversub=O][,spines=S]", (),
            {"racks": _int, "hosts": _int, "oversub": _float, "spines": _int, **bg}),
        "mi250": _Gen(lambda o: _contended(o, mi250(_need(o, "boxes"), latency=_lat(o))),
                      "mi250:BOXES", ("boxes",), bg),
    }


_GENERATORS.update(_scenario_generators())

_POSITIONAL_PARSERS = {"n": _int, "shape": _shape, "d": _int, "k": _int, "leaves": _int,
                       "spines": _int, "hosts": _int, "boxes": _int, "dims": _dims}
_COMMON = {"bw": _rate, "lat": _time, "routing": _choice(*ROUTINGS), "fwd": _time}
_ALIASES = {"fully_connected": "fc", "fully-connected": "fc", "fat_tree": "fattree",
            "fat-tree": "fattree", "hxmesh": "hammingmesh", "leaf_spine": "leafspine",
            "leaf-spine": "leafspine",
            "dgx_a100": "dgx-a100", "dgx_h100": "dgx-h100", "random_regular": "rrg",
            "multi_dim": "hier"}

#: Generator names accepted by :func:`parse_spec` (further aliases: ``fat_tree``,
#: ``leaf_spine``, ``random_regular``, ``multi_dim``, ...).
GENERATOR_NAMES = ("ring", "uniring", "line", "fc", "fully_connected", "star", "torus", "mesh",
                   "hypercube", "hammingmesh", "fattree", "leafspine", "dgx", "dgx-a100",
                   "dgx-h100",
                   "hgx-h200", "dgx-b200", "gb200-nvl72", "mi300x", "tpu-v4", "tpu-v5p",
                   "circulant",
                   "rrg", "hier", "totient")
GENERATOR_NAMES += ("random", "bimodal", "twotier", "mi250")
#: One usage line per canonical generator name, for help text.
GENERATOR_USAGE = {name: g.usage for name, g in _GENERATORS.items()}


# ------------------------------------------------------------------- size estimates
def _estimate(key: str, o: dict[str, Any]) -> tuple[int, int]:
    """Nodes and links the generator would build (exact or a close upper bound), from the
    parsed options alone: checked before anything is allocated."""
    def g(k, default=0):
        v = o.get(k, default)
        return v if isinstance(v, int) and v > 0 else 1

    if key in ("ring", "uniring", "line"):
        n = g("n")
        return n, 2 * n
    if key == "fc":
        n = g("n")
        return n, n * n
    if key == "star":
        n = g("n")
        return n + 1, 2 * n
    if key in ("torus", "mesh"):
        shape = [max(1, x) for x in o.get("shape", (1,))]
        n = math.prod(shape)
        return n, 2 * len(shape) * n
    if key == "hammingmesh":
        shape = [max(1, x) for x in o.get("shape", (1,))]
        n = math.prod(shape)
        return n + sum(n // x for x in shape), 4 * len(shape) * n
    if key == "hypercube":
        d = min(g("d"), 64)
        return 2 ** d, d * 2 ** d
    if key == "fattree":
        k = g("k")
        return k ** 3 // 4 + 5 * k * k // 4, 3 * k ** 3 // 2
    if key == "leafspine":
        hosts = g("leaves") * g("hosts")
        return hosts + g("leaves") + g("spines"), 2 * (hosts + g("leaves") * g("spines"))
    if key in ("dgx", "dgx-a100", "dgx-h100"):
        n = g("boxes") * g("gpus", 8)
        return 2 * n + 64, n * 24 + 64
    if key == "circulant":
        n = g("n")
        return n, 2 * n * max(1, len(o.get("jumps", ())))
    if key in ("rrg", "totient"):
        return g("n"), g("n") * g("d")
    if key == "hier":
        sizes = [max(1, d[1]) for d in o.get("dims", [])] or [1]
        n = math.prod(sizes)
        return n + n, n * sum(s if s < 64 else 4 for s in sizes)
    if key in ("random", "bimodal"):
        n = g("n")
        return n, n * n
    if key == "twotier":
        n = g("racks") * g("hosts")
        return n + g("racks") + g("spines", 2), 4 * n + 4 * g("racks") * g("spines", 2)
    if key == "mi250":
        n = 16 * g("boxes")
        return 2 * n, 12 * n
    return 1, 1


# --------------------------------------------------------------------------- parsing
def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    out, depth, cur = [], 0, []
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [t.strip() for t in out if t.strip()]


def parse_spec(text: str) -> Topology:
    """Return the topology described by a generator spec string.

    Parameters
    ----------
    text : str
        ``name[:positional,...,key=value,...]``; see the module docstring for every name
        and option.

    Raises
    ------
    TopologyError
        ``item="generator 'foo'"`` for an unknown name or too many positional values,
        ``item="option 'bar'"`` for an unknown, repeated, missing or malformed option, or
        whatever the generator raises for a valid-looking but impossible value (e.g.
        ``item="field 'k'"`` for an odd fat-tree radix).

    Examples
    --------
    >>> parse_spec("torus:4x4,bw=400Gbps").describe()["bandwidth_max_Bps"]
    50000000000.0
    >>> parse_spec("fattree:k=4,routing=ecmp").routing
    'ecmp'
    >>> parse_spec("hier:ring(4,100GB/s,200ns)x switch(8,25GB/s,1.5us)").num_switches
    4
    """
    if not isinstance(text, str):
        raise TopologyError(f"a spec must be a string, got {text!r}", item="spec")
    head, _, rest = text.strip().partition(":")
    name = head.strip().lower()
    key = _ALIASES.get(name, name)
    gen = _GENERATORS.get(key)
    if gen is None:
        import os

        if not rest and os.path.isfile(text.strip()):
            raise TopologyError(f"{text.strip()}: a topology file is .yaml, .yml or .json (or an "
                                "ASTRA-sim network.yml); a spec such as ring:8 is given "
                                "directly, not in a file", item=f"file '{text.strip()}'")
        raise TopologyError(f"unknown generator {name!r} (valid: {', '.join(GENERATOR_NAMES)})",
                            item=f"generator '{name}'")
    o = _parse_args(name, gen, rest)
    nodes, links = _estimate(key, o)
    check_size(text.strip(), nodes, links)
    t = gen.build(o)
    if "routing" in o and o["routing"] != t.routing:
        t = dataclasses.replace(t, routing=o["routing"])
    if "fwd" in o:  # forwarding latency of every node (e.g. a torus router's per-hop time)
        t = dataclasses.replace(t, node_latency=(o["fwd"],) * t.num_nodes)
    name = canonical_name(t.name, o)
    return t if name == t.name else dataclasses.replace(t, name=name)


#: Common options in the order :func:`canonical_name` appends them.
_CANON_ORDER = ("bw", "lat", "fwd", "routing")


def canonical_name(base: str, options: Mapping[str, Any]) -> str:
    """The generator's name plus the common options that were given (``bw``, ``lat``,
    ``fwd``, ``routing``), each written so that it parses back to exactly the same value:
    the full spec every title, report and ``--json`` record carries.

    Examples
    --------
    >>> canonical_name("torus:8x8", {"bw": 50e9, "lat": 1e-7})
    'torus:8x8,bw=50GB/s,lat=100ns'
    >>> parse_spec("torus:8x8,lat=100ns,bw=400Gbps").name
    'torus:8x8,bw=50GB/s,lat=100ns'
    """
    have = {part.split("=")[0].strip() for part in _split_top(base.partition(":")[2])}
    extra = []
    for key in _CANON_ORDER:
        if key in options and key not in have:
            v = options[key]
            text = exact_rate(v) if key == "bw" else exact_time(v) if key in ("lat", "fwd") \
                else str(v)
            extra.append(f"{key}={text}")
    return ",".join([base, *extra]) if extra else base


def _parse_args(name: str, gen: _Gen, rest: str) -> dict[str, Any]:
    parsers = {p: _POSITIONAL_PARSERS[p] for p in gen.positional}
    parsers.update(gen.options)
    parsers.update({c: _COMMON[c] for c in gen.common})
    raw: dict[str, Any] = {}
    npos = 0
    for tok in _split_top(rest):
        k, eq, v = tok.partition("=")
        if eq and "(" not in k:
            k = k.strip().lower()
        elif re.fullmatch(r"[A-Za-z_][\w-]*", tok) and (
                tok.lower() in parsers or npos >= len(gen.positional)):
            k, v = tok.lower(), True
        else:
            if npos >= len(gen.positional):
                raise TopologyError(f"{name} takes at most {len(gen.positional)} positional "
                                    f"value(s), got {tok!r} (usage: {gen.usage})",
                                    item=f"generator '{name}'")
            k, v = gen.positional[npos], tok
            npos += 1
        if k not in parsers:
            raise TopologyError(f"unknown option {k!r} for {name} (valid: "
                                f"{', '.join(parsers)}; usage: {gen.usage})",
                                item=f"option '{k}'")
        if k in raw:
            raise TopologyError(f"option {k!r} given twice", item=f"option '{k}'")
        raw[k] = v
    out = {}
    for k, v in raw.items():
        try:
            out[k] = parsers[k](v)
        except (ValueError, TypeError) as e:  # UnitError is a ValueError
            raise TopologyError(f"option {k!r} of {name}: {e}", item=f"option '{k}'") from None
    return out


# --------------------------------------------------------------------------- loading
def load_topology(spec_or_path: str | os.PathLike) -> Topology:
    """Return the topology named by a generator spec or stored in a file.

    A path object, or a string ending in ``.json``, ``.yaml`` or ``.yml``, is read as a
    file: an ASTRA-sim ``network.yml`` (a mapping whose ``topology`` is a list) with
    :func:`~topocoll.topology.io.read_astra_network`, anything else with
    :func:`~topocoll.topology.io.topology_from_dict`. Every other string is a spec for
    :func:`parse_spec`.

    Raises
    ------
    TopologyError
        ``item="file '<path>'"`` for a missing or unreadable file; otherwise as the
        reader or :func:`parse_spec`.

    Examples
    --------
    >>> load_topology("ring:4").num_ranks
    4
    """
    if isinstance(spec_or_path, os.PathLike) or (
            isinstance(spec_or_path, str)
            and spec_or_path.strip().lower().endswith(_FILE_SUFFIXES)):
        p = Path(spec_or_path)
        if p.is_dir():
            raise TopologyError(f"{str(p)!r} is a directory, not a topology file",
                                item=f"file '{p}'")
        if not p.is_file():
            raise TopologyError(f"no such topology file {str(p)!r}", item=f"file '{p}'")
        data = read_mapping(p)
        try:
            if isinstance(data, Mapping) and isinstance(data.get("topology"), list):
                return read_astra_network(data)
            return topology_from_dict(data, name=p.stem)
        except TopologyError as e:          # say which file, keep the item
            raise TopologyError(f"{p}: {e}", item=e.item) from None
    if not isinstance(spec_or_path, str):
        raise InputTypeError(f"spec must be a generator spec string or a path, got "
                             f"{type(spec_or_path).__name__} {spec_or_path!r}", item="spec")
    text = spec_or_path.strip()
    if "\n" in text or text.startswith("{"):       # the contents of a file, given as text
        from .io import json_text, yaml_text

        data = json_text(text, "text") if text.startswith("{") else yaml_text(text, "text")
        if isinstance(data, Mapping) and isinstance(data.get("topology"), list):
            return read_astra_network(data)
        return topology_from_dict(data)
    return parse_spec(spec_or_path)
