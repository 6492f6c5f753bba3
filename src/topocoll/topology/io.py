"""Topology files: topocoll's versioned YAML/JSON format and ASTRA-sim's ``network.yml``.

topocoll format, version 1 (a mapping; keys marked ``?`` are optional)::

    type: topocoll.topology          # the type tag
    version: 1
    name: torus:4x4                  # ? default: the file name stem
    num_ranks: 16
    num_switches: 0                  # ? or `switches: [16, 17, ...]`; default 0
    routing: shortest                # ? shortest | ecmp | spray
    links:                           # directed links (or use `cables`, or both)
      - {src: 0, dst: 1, bandwidth: 50000000000.0, latency: 1.0e-06, dim: 0}
    cables: [[0, 1, 400Gbps, 1us]]   # ? bidirectional shorthand: two links each
    node_latency: [0.0, ...]         # ? forwarding latency (s) of every node
    dims: [{kind: ring, size: 4, bandwidth: 5.0e+10, latency: 1.0e-06}]    # ?
    meta: {ring_order: [0, 1, ...]}  # ? free-form, JSON-serializable

Bandwidths are bytes/s and latencies seconds, as numbers or as strings with units
(``"400Gbps"``, ``"100ns"``). A link's latency defaults to 0. The writer emits SI numbers,
which read back bit for bit (floats are written with ``repr``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import NotSupportedError, TopologyError
from ._common import rate_field, time_field
from .core import Dim, Topology, check_size
from .explicit import parse_links
from .hierarchical import multi_dim

__all__ = ["TYPE_TAG", "FORMAT_VERSION", "topology_to_dict", "topology_from_dict", "save_topology",
           "load_topology_file", "read_astra_network", "write_astra_network", "read_mapping",
           "yaml_text", "json_text", "check_dims_cabled"]

TYPE_TAG = "topocoll.topology"
FORMAT_VERSION = 1
_KEYS = ("type", "version", "name", "num_ranks", "num_switches", "switches", "routing", "links",
         "cables", "node_latency", "dims", "meta")
_DIM_KEYS = ("kind", "size", "bandwidth", "latency")
_ASTRA_KINDS = {"Ring": "ring", "FullyConnected": "fully_connected", "Switch": "switch"}
_ASTRA_KEYS = ("topology", "npus_count", "bandwidth", "latency")
_GIB = 2.0**30


def topology_to_dict(topology: Topology) -> dict[str, Any]:
    """Return ``topology`` as a JSON-serializable dict in the version-1 format.

    Raises
    ------
    TopologyError
        ``item="field 'meta'"`` if ``meta`` holds something JSON cannot represent.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> d = topology_to_dict(ring(3))
    >>> d["type"], d["version"], d["num_ranks"], len(d["links"])
    ('topocoll.topology', 1, 3, 6)
    >>> d["links"][0]
    {'src': 0, 'dst': 1, 'bandwidth': 50000000000.0, 'latency': 1e-06, 'dim': 0}
    """
    links = []
    for lk in topology.links:
        e = {"src": lk.src, "dst": lk.dst, "bandwidth": float(lk.bandwidth),
             "latency": float(lk.latency)}
        if lk.dim is not None:
            e["dim"] = lk.dim
        links.append(e)
    d: dict[str, Any] = {"type": TYPE_TAG, "version": FORMAT_VERSION, "name": topology.name,
                         "num_ranks": topology.num_ranks, "num_switches": topology.num_switches,
                         "routing": topology.routing, "links": links}
    if topology.node_latency:
        d["node_latency"] = list(topology.node_latency)
    if topology.dims:
        d["dims"] = [{"kind": x.kind, "size": x.size, "bandwidth": float(x.bandwidth),
                      "latency": float(x.latency)} for x in topology.dims]
    if topology.meta:
        d["meta"] = _plain(topology.meta, "meta")
    return d


def topology_from_dict(data: Mapping[str, Any] | str, *, name: str = "topology") -> Topology:
    """Build a topology from a version-1 mapping (see the module docstring).

    Parameters
    ----------
    data : mapping or str
        As written by :func:`topology_to_dict`, or by hand; or the YAML / JSON text of
        such a file.
    name : str
        Used when ``data`` has no ``name``.

    Raises
    ------
    TopologyError
        Naming the offender: ``"field 'type'"``, ``"field 'version'"``, ``"field 'links'"``
        (missing or unknown fields), ``"switch N"`` (a bad or duplicate switch id),
        ``"link i->j"`` (bad bandwidth or latency, dangling endpoint), ``"rank r"``
        (disconnected), ...

    Examples
    --------
    >>> t = topology_from_dict({"type": "topocoll.topology", "version": 1, "num_ranks": 2,
    ...                         "cables": [[0, 1, "400Gbps", "1us"]]})
    >>> len(t.links), t.links[1].bandwidth
    (2, 50000000000.0)
    """
    if isinstance(data, str):          # the text of a YAML or JSON file
        data = json_text(data, "text") if data.lstrip().startswith("{") else \
            yaml_text(data, "text")
    if not isinstance(data, Mapping):
        raise TopologyError(f"a topology must be a mapping (or its YAML / JSON text), got "
                            f"{type(data).__name__}", item="field 'type'")
    if data.get("type") != TYPE_TAG:
        found = "it is missing" if "type" not in data else f"got {data['type']!r}"
        raise TopologyError(f"not a topocoll topology: field 'type' must be {TYPE_TAG!r} "
                            f"({found}; an ASTRA-sim network.yml has a 'topology' list "
                            "instead)", item="field 'type'")
    version = data.get("version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise TopologyError(f"unsupported topology format version {version!r}; this topocoll "
                            f"reads version {FORMAT_VERSION}", item="field 'version'")
    unknown = [k for k in data if k not in _KEYS]
    if unknown:
        raise TopologyError(f"unknown field {unknown[0]!r} (valid: {', '.join(_KEYS)})",
                            item=f"field '{unknown[0]}'")
    num_ranks = data.get("num_ranks")
    if isinstance(num_ranks, bool) or not isinstance(num_ranks, int) or num_ranks < 1:
        raise TopologyError(f"num_ranks must be a positive integer, got {num_ranks!r}",
                            item="field 'num_ranks'")
    check_size(f"a topology of num_ranks {num_ranks:,}", num_ranks, 0)
    num_switches = _num_switches(data, num_ranks)
    check_size(f"a topology of num_ranks {num_ranks:,} and num_switches {num_switches:,}",
               num_ranks + num_switches, 0)
    if "links" not in data and "cables" not in data:
        raise TopologyError("missing field 'links' (or 'cables')", item="field 'links'")
    links = parse_links(data.get("links", ()), None, 0.0, field="links",
                        item="field 'links[{k}]'")
    links += parse_links(data.get("cables", ()), None, 0.0, bidirectional=True,
                         field="cables", item="field 'cables[{k}]'")
    fwd = data.get("node_latency", ())
    if not isinstance(fwd, (list, tuple)):
        raise TopologyError("node_latency must be a list", item="field 'node_latency'")
    meta = data.get("meta", {})
    if not isinstance(meta, Mapping):
        raise TopologyError("meta must be a mapping", item="field 'meta'")
    label = data.get("name", name)
    if not isinstance(label, str):
        raise TopologyError(f"name must be a string, got {label!r}", item="field 'name'")
    topo = Topology(label, num_ranks, num_switches, tuple(links),
                    node_latency=tuple(time_field(x, f"node {i}") for i, x in enumerate(fwd)),
                    dims=_dims(data.get("dims", ())), routing=data.get("routing", "shortest"),
                    meta=dict(meta))
    check_dims_cabled(topo)
    return topo


def check_dims_cabled(topology: Topology) -> None:
    """Refuse ``dims`` that the links do not form: a ``ring`` or ``line`` dimension needs a
    link each way between neighbours along it, ``fully_connected`` between every pair
    (``switch`` dimensions are not checked); a pair joined both ways through one switch
    counts as joined (a HammingMesh's board edges meet at their line's switch). Declared
    dims drive dimension-order routing, the hierarchical algorithms and the ASTRA-sim
    export (which checks the links exactly), so a wrong one is silent nonsense.

    >>> from topocoll.topology import line, torus
    >>> check_dims_cabled(torus((4,)))
    >>> import dataclasses
    >>> try:
    ...     check_dims_cabled(dataclasses.replace(line(4), dims=torus((4,)).dims))
    ... except TopologyError as e:
    ...     print(str(e)[:58])
    dims: dimension 0 is a ring of 4, but no link joins rank 3
    """
    if not topology.dims:
        return
    pairs = {(lk.src, lk.dst) for lk in topology.links}
    R = topology.num_ranks
    up: dict[int, set[int]] = {}
    down: dict[int, set[int]] = {}
    for a, b in pairs:
        if a < R <= b:
            up.setdefault(a, set()).add(b)
        elif b < R <= a:
            down.setdefault(b, set()).add(a)

    def joined(a: int, b: int) -> bool:
        return (a, b) in pairs or bool(up.get(a, set()) & down.get(b, set()))

    stride = 1
    for i, d in enumerate(topology.dims):
        for r in range(topology.num_ranks):
            x = (r // stride) % d.size
            base = r - x * stride
            if d.kind == "ring":
                others = [(x + 1) % d.size]
            elif d.kind == "line":
                others = [x + 1] if x + 1 < d.size else []
            elif d.kind == "fully_connected":
                others = [y for y in range(x + 1, d.size)]
            else:
                others = []
            for y in others:
                q = base + y * stride
                if not joined(r, q) or not joined(q, r):
                    kind = d.kind.replace("_", " ")
                    raise TopologyError(f"dims: dimension {i} is a {kind} of {d.size}, but no "
                                        f"link joins rank {r} to rank {q} (neighbours along "
                                        "it)", item="field 'dims'")
        stride *= d.size


def save_topology(topology: Topology, path: str | os.PathLike) -> Path:
    """Write ``topology`` to ``path``: JSON for ``.json``, YAML for ``.yaml`` / ``.yml``.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    TopologyError
        ``item="file '<path>'"`` for another suffix.
    """
    p = Path(path)
    d = topology_to_dict(topology)
    fmt = _format(p)
    if fmt == "json":
        text = json.dumps(d, indent=1) + "\n"
    else:
        import yaml

        text = yaml.dump(d, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
                         sort_keys=False, default_flow_style=None, width=100)
    p.write_text(text)
    return p


def load_topology_file(path: str | os.PathLike) -> Topology:
    """Read a topology written by :func:`save_topology` (or by hand) from ``path``.

    Raises
    ------
    TopologyError
        ``item="file '<path>'"`` for a missing file, an unknown suffix or unparsable
        content; otherwise as :func:`topology_from_dict`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from topocoll.topology import torus
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.yaml"
    >>> t = load_topology_file(save_topology(torus((2, 3)), p))
    >>> t.name, t.dims == torus((2, 3)).dims
    ('torus:2x3', True)
    """
    p = Path(path)
    return topology_from_dict(read_mapping(p), name=p.stem)


def read_mapping(path: Path) -> Any:
    """Parse a ``.json`` / ``.yaml`` / ``.yml`` file; errors name ``"file '<path>'"``."""
    fmt = _format(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TopologyError(f"cannot read {str(path)!r}: {e.strerror}",
                            item=f"file '{path}'") from None
    except UnicodeDecodeError:
        raise TopologyError(f"{path}: not a text file (not UTF-8)",
                            item=f"file '{path}'") from None
    if fmt == "yaml":
        return yaml_text(text, f"file '{path}'")
    return json_text(text, f"file '{path}'")


# ---------------------------------------------------------------------------- ASTRA-sim
def read_astra_network(source: str | os.PathLike | Mapping[str, Any], *,
                       name: str | None = None) -> Topology:
    """Read an ASTRA-sim analytical ``network.yml`` (a path, YAML text or parsed mapping).

    Four lists of equal length, one entry per dimension, dimension 0 first:
    ``topology`` (``Ring``, ``FullyConnected`` or ``Switch``), ``npus_count`` (> 1 each),
    ``bandwidth`` (**GB/s with GB = 2^30 bytes**, per link per direction) and ``latency``
    (**ns** per link). They are converted to bytes/s and seconds and built with
    :func:`~topocoll.topology.hierarchical.multi_dim`. Other keys are ignored.

    Raises
    ------
    TopologyError
        ``item="key 'npus_count'"`` (etc.) for a missing key, a list whose length differs
        from ``topology``'s, or a bad entry; ``item="file '<path>'"`` for unreadable YAML.

    Examples
    --------
    >>> t = read_astra_network("topology: [Ring, Switch]\\nnpus_count: [4, 8]\\n"
    ...                        "bandwidth: [100.0, 25.0]\\nlatency: [200.0, 1500.0]\\n")
    >>> t.num_ranks, t.num_switches, t.dims[0].bandwidth == 100 * 2**30, t.dims[1].latency
    (32, 4, True, 1.5e-06)
    """
    data = _astra_mapping(source)
    lists = {}
    for key in _ASTRA_KEYS:
        v = data.get(key)
        if not isinstance(v, list) or not v:
            raise TopologyError(f"network.yml needs {key!r} as a non-empty list, got {v!r}",
                                item=f"key '{key}'")
        if len(v) != len(lists.get("topology", v)):
            raise TopologyError(f"{key!r} has {len(v)} entries but 'topology' has "
                                f"{len(lists['topology'])}", item=f"key '{key}'")
        lists[key] = v
    dims = []
    for kind, size, bw, lat in zip(*(lists[k] for k in _ASTRA_KEYS), strict=True):
        bw, lat = _yaml_number(bw), _yaml_number(lat)
        if kind not in _ASTRA_KINDS:
            raise TopologyError(f"unknown topology {kind!r} (valid: {', '.join(_ASTRA_KINDS)})",
                                item="key 'topology'")
        if isinstance(size, bool) or not isinstance(size, int) or size < 2:
            raise TopologyError(f"npus_count entries must be integers > 1, got {size!r}",
                                item="key 'npus_count'")
        if not _is_num(bw) or not bw > 0:
            raise TopologyError(f"bandwidth entries must be GB/s > 0, got {bw!r}",
                                item="key 'bandwidth'")
        if not _is_num(lat) or not lat >= 0:
            raise TopologyError(f"latency entries must be ns >= 0, got {lat!r}",
                                item="key 'latency'")
        dims.append(Dim(_ASTRA_KINDS[kind], size, float(bw) * _GIB, float(lat) / 1e9))
    return multi_dim(dims, name=name)


def write_astra_network(topology: Topology, path: str | os.PathLike | None = None) -> str:
    """Return (and write to ``path`` if given) ``topology`` as an ASTRA-sim ``network.yml``.

    Only topologies that ASTRA-sim's analytical network can represent exactly are written:
    ``dims`` all ``ring``, ``fully_connected`` or ``switch``, no forwarding latency, and
    links (and switches) exactly those :func:`~topocoll.topology.hierarchical.multi_dim`
    builds from ``dims`` (in any order). Bandwidths are written in GB/s with
    GB = 2^30 bytes, which reads back bit for bit. Latencies are written in ns as the
    shortest decimal that reads back (``ns / 1e9``) to the same float; such a decimal exists
    for every latency read from a ``network.yml`` and for most others, but not for every
    float (then the nearest is written: an error below 1e-16 relative).

    Raises
    ------
    NotSupportedError
        Saying why the topology cannot be written.

    Examples
    --------
    >>> from topocoll.topology import torus
    >>> print(write_astra_network(torus((4, 2), bandwidth=2**30, latency=1e-6)), end="")
    topology: [ Ring, Ring ]
    npus_count: [ 4, 2 ]
    bandwidth: [ 1.0, 1.0 ]  # GB/s per link per direction, GB = 2^30 bytes
    latency: [ 1000.0, 1000.0 ]  # ns per link
    """
    reason = _astra_unsupported_reason(topology)
    if reason:
        raise NotSupportedError(f"cannot write topology {topology.name!r} as an ASTRA-sim "
                                f"network: {reason}")
    kinds = {v: k for k, v in _ASTRA_KINDS.items()}
    dims = topology.dims
    text = (f"topology: [ {', '.join(kinds[d.kind] for d in dims)} ]\n"
            f"npus_count: [ {', '.join(str(d.size) for d in dims)} ]\n"
            f"bandwidth: [ {', '.join(repr(d.bandwidth / _GIB) for d in dims)} ]"
            "  # GB/s per link per direction, GB = 2^30 bytes\n"
            f"latency: [ {', '.join(_ns(d.latency) for d in dims)} ]  # ns per link\n")
    if path is not None:
        Path(path).write_text(text)
    return text


def _astra_unsupported_reason(t: Topology) -> str | None:
    if not t.dims:
        return "it has no dims (ASTRA-sim describes networks dimension by dimension)"
    bad = [d.kind for d in t.dims if d.kind not in _ASTRA_KINDS.values()]
    if bad:
        return f"ASTRA-sim has no {bad[0]!r} dimension (only Ring, FullyConnected, Switch)"
    if any(t.node_latency):
        return "it has switch forwarding latencies, which network.yml cannot express"
    ref = multi_dim(t.dims)

    def key(lk):
        return (lk.src, lk.dst, lk.bandwidth, lk.latency, -1 if lk.dim is None else lk.dim)

    if (t.num_switches != ref.num_switches
            or sorted(map(key, t.links)) != sorted(map(key, ref.links))):
        return "its links are not exactly those multi_dim(dims) builds from its dims"
    return None


def _ns(seconds: float) -> str:
    """``seconds`` in ns: the shortest decimal that reads back (``/ 1e9``) exactly, if any."""
    x = seconds * 1e9
    for digits in range(16):
        c = round(x, digits)
        if c / 1e9 == seconds:
            return repr(c)
    lo = hi = x
    for _ in range(2):  # x may be an ulp or two off the float that divides back exactly
        lo, hi = math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)
        for c in (lo, hi):
            if c / 1e9 == seconds:
                return repr(c)
    return repr(x)


def _astra_mapping(source: Any) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                           and Path(source).is_file()):
        p = Path(source)
        try:
            text = p.read_text()
        except OSError as e:
            raise TopologyError(f"cannot read {str(p)!r}: {e.strerror}",
                                item=f"file '{p}'") from None
        data = yaml_text(text, f"file '{p}'")
    else:
        data = yaml_text(source, "key 'topology'")
    if not isinstance(data, Mapping):
        raise TopologyError("a network.yml must be a mapping of lists", item="key 'topology'")
    return data


#: YAML 1.2's floats: PyYAML follows YAML 1.1, where ``1e-7`` (no dot) is a string.
_FLOAT_12 = r"""^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?
|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
|[-+]?\.(?:inf|Inf|INF)
|\.(?:nan|NaN|NAN))$"""
_LOADER = None


def _strict_loader():
    global _LOADER
    if _LOADER is None:
        import re

        import yaml

        class _Strict(yaml.SafeLoader):
            def construct_mapping(self, node, deep=False):
                keys = set()
                for k, _ in node.value:
                    key = self.construct_object(k, deep=True)
                    if isinstance(key, str | int | float | bool) and key in keys:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key {key!r}", k.start_mark)
                    keys.add(key)
                return super().construct_mapping(node, deep)

        # numbers the way a user means them: 1e-7 is a float (integers stay integers:
        # the 1.1 int resolver comes first for plain digits)
        _Strict.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(_FLOAT_12, re.X),
                                      list("-+0123456789."))
        _LOADER = _Strict
    return _LOADER


def yaml_text(text: str, item: str) -> Any:
    """Safe YAML (no Python objects) that refuses a key given twice in one mapping and
    reads numbers as YAML 1.2 does (``1e-7`` is a float).

    >>> yaml_text("a: 1e-7\\nb: 3\\nc: 1.5\\nd: 1e9x", "x")
    {'a': 1e-07, 'b': 3, 'c': 1.5, 'd': '1e9x'}
    """
    import yaml

    try:
        return yaml.load(text, Loader=_strict_loader())
    except yaml.YAMLError as e:
        raise TopologyError(f"{item}: invalid YAML: {' '.join(str(e).split())}",
                            item=item) from None


def json_text(text: str, item: str) -> Any:
    """JSON that refuses a key given twice in one object."""
    def pairs(items):
        out = {}
        for k, v in items:
            if k in out:
                raise TopologyError(f"{item}: invalid JSON: duplicate key {k!r}", item=item)
            out[k] = v
        return out

    try:
        return json.loads(text, object_pairs_hook=pairs)
    except ValueError as e:  # json.JSONDecodeError
        if isinstance(e, TopologyError):
            raise
        raise TopologyError(f"{item}: invalid JSON: {e}", item=item) from None


# ----------------------------------------------------------------------------- helpers
def _num_switches(data: Mapping[str, Any], num_ranks: int) -> int:
    declared = data.get("num_switches")
    if declared is not None and (isinstance(declared, bool) or not isinstance(declared, int)
                                 or declared < 0):
        raise TopologyError(f"num_switches must be a non-negative integer, got {declared!r}",
                            item="field 'num_switches'")
    if "switches" not in data:
        return declared or 0
    ids = data["switches"]
    if not isinstance(ids, list):
        raise TopologyError("switches must be a list of node ids", item="field 'switches'")
    seen = set()
    for s in ids:
        if isinstance(s, bool) or not isinstance(s, int) or not (
                num_ranks <= s < num_ranks + len(ids)):
            raise TopologyError(f"switch {s!r}: switch ids must be exactly {num_ranks}.."
                                f"{num_ranks + len(ids) - 1} (ranks come first)",
                                item=f"switch {s!r}")
        if s in seen:
            raise TopologyError(f"switch {s}: duplicate id {s} in 'switches'", item=f"switch {s}")
        seen.add(s)
    if declared is not None and declared != len(ids):
        raise TopologyError(f"num_switches is {declared} but 'switches' lists {len(ids)}",
                            item="field 'num_switches'")
    return len(ids)


def _dims(raw: Any) -> tuple[Dim, ...]:
    if not isinstance(raw, (list, tuple)):
        raise TopologyError("dims must be a list", item="field 'dims'")
    out = []
    for i, d in enumerate(raw):
        if not isinstance(d, Mapping) or set(d) != set(_DIM_KEYS):
            raise TopologyError(f"dims[{i}] must be a mapping with exactly the keys "
                                f"{', '.join(_DIM_KEYS)}, got {d!r}", item="field 'dims'")
        out.append(Dim(d["kind"], d["size"], rate_field(d["bandwidth"], "field 'dims'"),
                       time_field(d["latency"], "field 'dims'")))
    return tuple(out)


def _plain(obj: Any, where: str) -> Any:
    """A JSON-ready deep copy of ``obj`` (tuples become lists, numpy scalars Python ones)."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v, where) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v, where) for v in obj]
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if hasattr(obj, "item") and hasattr(obj, "dtype"):  # numpy scalar
        return obj.item()
    if hasattr(obj, "tolist"):
        return _plain(obj.tolist(), where)
    raise TopologyError(f"{where} holds {obj!r}, which is not JSON-serializable",
                        item=f"field '{where}'")


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise TopologyError(f"{str(path)!r}: unknown file type {suffix!r} "
                        "(use .json, .yaml or .yml)", item=f"file '{path}'")


def _is_num(x: Any) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x)


def _yaml_number(x: Any) -> Any:
    """YAML 1.1 reads ``1e3`` (no dot) as a string; turn such strings into floats."""
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            return x
    return x
