"""The table of synthesizers: stable names, collective kinds, applicability, tunables."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError, InputTypeError, NotSupportedError
from ..schedule import Schedule
from ..topology import Topology
from ..units import UnitError, parse_size, parse_time
from . import (
    adaptive,
    direct,
    forest,
    hierarchical,
    rail_rings,
    recursive,
    ring,
    ring_cover,
    ring_order,
    swing,
    torus,
    trees,
    two_level,
)

__all__ = ["Synthesizer", "SYNTHESIZERS", "synthesizers_for", "find_synthesizer",
           "register_synthesizer", "unregister_synthesizer", "on_register",
           "max_schedule_bytes", "MAX_SCHEDULE_BYTES", "SCHEDULE_BYTES_PER_ENTRY"]


_RING_VARIANTS = {"variant": ring.VARIANTS}


def _always(topology: Topology, group: tuple[int, ...]) -> str | None:
    return None


def _hierarchical_unsupported(topology: Topology, group: tuple[int, ...]) -> str | None:
    return hierarchical.hierarchical_unsupported_reason(topology, group)


def _two_level_unsupported(topology: Topology, group: tuple[int, ...]) -> str | None:
    return two_level.two_level_unsupported_reason(topology, group)


def _ring_cover_unsupported(topology: Topology, group: tuple[int, ...]) -> str | None:
    return ring_cover.ring_cover_unsupported_reason(topology, group)


def _rail_rings_unsupported(kind: str) -> Callable[[Topology, tuple[int, ...]], str | None]:
    # the size guard of Synthesizer.__call__ counts one ring (it knows only the rank
    # count); the q rings of the boxes are weighed here, against the same limit
    def reason(topology: Topology, group: tuple[int, ...]) -> str | None:
        why = rail_rings.rail_rings_unsupported_reason(topology, group)
        if why:
            return why
        entries = rail_rings.rail_rings_entries(topology, group, kind)
        need = SCHEDULE_BYTES_PER_ENTRY * entries
        if need > max_schedule_bytes():
            return (f"its rings move {entries:,} chunk blocks: about {need / 2**30:.1f} GiB "
                    f"as a schedule, over the {max_schedule_bytes() / 2**30:.0f} GiB limit "
                    "(TOPOCOLL_MAX_SCHEDULE_BYTES raises it)")
        return None
    return reason


#: Largest group for which the registry offers the per-root tree schedules (``optimal``,
#: ``topology_adaptive``): they hold a tree per root, about ``N**2`` transfers per batch, and
#: building them at 512 ranks takes about 30 s per schedule. The functions themselves take
#: any size; the exact optimum at any size is ``topocoll bound``.
MAX_TREE_RANKS = 256


def _tree_size_reason(group: tuple[int, ...]) -> str | None:
    if len(group) > MAX_TREE_RANKS:
        return (f"per-root tree schedules for {len(group)} ranks need about "
                f"{len(group) * (len(group) - 1):,} transfers per batch; the registry offers "
                f"them up to {MAX_TREE_RANKS} ranks (`topocoll bound` gives the optimum at any "
                "size)")
    return None


def _optimal_unsupported(topology: Topology, group: tuple[int, ...]) -> str | None:
    return _tree_size_reason(group) or forest.optimal_unsupported_reason(topology, group)


def _adaptive_unsupported(topology: Topology, group: tuple[int, ...]) -> str | None:
    return _tree_size_reason(group)


def _best_ring_unsupported(topology: Topology, group: tuple[int, ...]) -> str | None:
    # the ring-order search runs 2-opt passes of O(N^2) Python steps (177 s at 4096 ranks)
    if len(group) > MAX_TREE_RANKS:
        return (f"the ring-order heuristic is offered up to {MAX_TREE_RANKS} ranks "
                f"(got {len(group)}); call best_ring_order() directly for larger groups")
    return None


#: Allreduces that reduce-scatter and all-gather per-rank blocks (``2 N (N - 1)`` entries).
_SPLIT_ALLREDUCE = frozenset({"ring", "bidirectional_ring", "direct", "bucket",
                              "rail_rings"})
#: Bandwidth-optimal butterflies: per-rank blocks on the power-of-two core of ``q``
#: ranks they fold onto where they fold (``2 q (q - 1)`` entries at least).
_BUTTERFLY_ALLREDUCE = frozenset({"swing", "mirrored_recursive_doubling"})
#: Bytes per (transfer, chunk) entry of a one-chunk transfer, as first measured with a
#: stored chunk pointer (source, destination, op, pointer and id: ~21 B, plus the cost
#: model's per-transfer arrays). With the pointer implicit the 16,384-rank ring allreduce
#: peaks at 13.4 B per entry, so this overestimates such schedules about twice; it is kept
#: until the schedules it would then admit (Swing, mirrored recursive doubling and bucket
#: on a 128x128 torus) have measured peaks (docs/performance.md).
SCHEDULE_BYTES_PER_ENTRY = 25
#: Default limit on a schedule's estimated size (``TOPOCOLL_MAX_SCHEDULE_BYTES``).
MAX_SCHEDULE_BYTES = 8 * 2**30


def max_schedule_bytes() -> float:
    """The limit on a schedule's estimated bytes: ``$TOPOCOLL_MAX_SCHEDULE_BYTES`` (bytes,
    or a size such as ``16GiB``) or :data:`MAX_SCHEDULE_BYTES`.

    Raises
    ------
    InputError
        If the variable is set to something that is not a size (it used to fall back to
        the default without a word, so ``16GiB`` was refused under 8).
    """
    import os

    raw = os.environ.get("TOPOCOLL_MAX_SCHEDULE_BYTES", "").strip()
    if not raw:
        return float(MAX_SCHEDULE_BYTES)
    try:
        return parse_size(raw)
    except UnitError as e:
        raise InputError(f"TOPOCOLL_MAX_SCHEDULE_BYTES={raw!r} is not a size (bytes, or e.g. "
                         f"'16GiB'): {e}", item="TOPOCOLL_MAX_SCHEDULE_BYTES") from None


#: Pipeline depths `topocoll compare` tries for the tree-packing schedules.
_BATCHES = {"batches": (1, 4, 16, 64, 256)}


def _hamiltonian_unsupported(topology: Topology, group: tuple[int, ...]) -> str | None:
    return torus.hamiltonian_unsupported_reason(topology, group)


@dataclass(frozen=True)
class Synthesizer:
    """One entry of :data:`SYNTHESIZERS`.

    Parameters
    ----------
    name : str
        Stable short identifier shown by the CLI (``ring``, ``recursive_doubling``...).
    kind : str
        The collective kind it produces.
    func : callable
        ``func(topology, *, ranks=None, **options) -> Schedule``; broadcast and reduce
        synthesizers also take ``root``.
    unsupported : callable
        ``unsupported(topology, group) -> None`` if the algorithm applies, else the
        reason it does not.
    tunables : mapping
        Option name -> candidate values that ``topocoll compare`` tries, keeping the best.
    sized : bool
        The schedule is planned for a message size (option ``message_bytes``); ``topocoll
        compare`` plans it for the largest size it compares.
    extra : tuple of mappings
        Option sets tried besides the grid of ``tunables``, each planned for the largest
        size compared (option ``message_bytes``).
    all_pairs : bool
        Its schedule sends between every ordered pair of group members (``topocoll
        compare`` sizes the routes of those pairs before building it).
    """

    name: str
    kind: str
    func: Callable[..., Schedule]
    unsupported: Callable[[Topology, tuple[int, ...]], str | None] = _always
    tunables: Mapping[str, tuple] = field(default_factory=dict)
    sized: bool = False
    extra: tuple[Mapping[str, Any], ...] = ()
    all_pairs: bool = False

    def __call__(self, topology: Topology, **options) -> Schedule:
        options = self.coerce(options)
        group = tuple(options.get("ranks") or range(topology.num_ranks))
        reason = self.unsupported(topology, group)
        if reason:
            raise NotSupportedError(f"{self.name} {self.kind} does not apply to "
                                    f"{topology.name}: {reason}")
        need = self.memory_estimate(len(group), options)
        if need > max_schedule_bytes():
            raise NotSupportedError(
                f"{self.name} {self.kind} on {len(group):,} ranks moves at least "
                f"{self.min_entries(len(group), options):,} chunk blocks: about "
                f"{need / 2**30:.1f} GiB "
                f"as a schedule, over the {max_schedule_bytes() / 2**30:.0f} GiB limit "
                "(TOPOCOLL_MAX_SCHEDULE_BYTES raises it)")
        return self.func(topology, **options)

    def min_entries(self, n: int, options: Mapping[str, Any] | None = None) -> int:
        """Fewest (transfer, chunk) entries any schedule of this algorithm on ``n`` ranks
        holds: every rank's block passes to every other rank once for the gathers,
        scatters and all-to-alls (twice, reduce-scatter then all-gather, for the
        allreduces that split the buffer per rank; four times that on the four
        Hamiltonian rings, whose quarter blocks each take every hop; on the ``q``-rank
        power-of-two core for the bandwidth-optimal butterflies, which may fold the
        rest onto it); 0 where no such floor is known (``options``: the call's, e.g. a
        latency variant moves whole vectors).

        Examples
        --------
        >>> find_synthesizer("swing", "allreduce").min_entries(16384)   # 128x128: refused
        536838144
        >>> find_synthesizer("swing", "allreduce").min_entries(24)      # the 16-rank core
        480
        """
        if self.name == "hamiltonian_rings":       # four rings, one block per transfer
            return (8 if self.kind == "allreduce" else 4) * n * (n - 1)
        if self.kind in ("allgather", "reduce_scatter", "alltoall"):
            return n * (n - 1)
        if self.kind == "allreduce" and self.name in _SPLIT_ALLREDUCE:
            return 2 * n * (n - 1)
        if (self.kind == "allreduce" and self.name in _BUTTERFLY_ALLREDUCE
                and (options or {}).get("variant", "bandwidth") != "latency"):
            q = 1 << (n.bit_length() - 1)
            return 2 * q * (q - 1)
        return 0

    def memory_estimate(self, n: int, options: Mapping[str, Any] | None = None) -> float:
        """Bytes of the schedule's column arrays at :meth:`min_entries` (a floor)."""
        return SCHEDULE_BYTES_PER_ENTRY * self.min_entries(n, options)

    def options(self) -> dict[str, Any]:
        """The options ``func`` takes besides the topology, with their defaults."""
        sig = inspect.signature(self.func)
        return {n: p.default for n, p in list(sig.parameters.items())[1:]
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}

    def coerce(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` checked against :meth:`options` and with text values parsed:
        ``message_bytes`` as a size (``1GiB``), ``alpha`` as a time (``2us``), options whose
        default is an integer (or whose name is a count such as ``batches``) as integers,
        booleans as true/false. An unknown option is an :class:`InputTypeError`, a value that does
        not parse an :class:`InputError`; both name the option.

        Examples
        --------
        >>> syn = SYNTHESIZERS[0]                      # ring allgather
        >>> syn.coerce({"ranks": (0, 1)})
        {'ranks': (0, 1)}
        >>> find_synthesizer("optimal", "allgather").coerce({"message_bytes": "1KiB",
        ...                                                    "batches": "4"})
        {'message_bytes': 1024.0, 'batches': 4}
        """
        known = self.options()
        out: dict[str, Any] = {}
        for key, value in options.items():
            if key not in known:
                raise InputTypeError(
                    f"{self.name} {self.kind} has no option {key!r} (options: "
                    f"{', '.join(known) or 'none'})", item=f"option '{key}'")
            out[key] = _coerce(key, value, known[key])
        return out


SYNTHESIZERS: list[Synthesizer] = [
    Synthesizer("ring", "allgather", ring.ring_allgather),
    Synthesizer("ring", "reduce_scatter", ring.ring_reduce_scatter),
    Synthesizer("ring", "allreduce", ring.ring_allreduce),
    Synthesizer("bidirectional_ring", "allgather", ring.bidirectional_ring_allgather,
                tunables=_RING_VARIANTS),
    Synthesizer("bidirectional_ring", "reduce_scatter", ring.bidirectional_ring_reduce_scatter,
                tunables=_RING_VARIANTS),
    Synthesizer("bidirectional_ring", "allreduce", ring.bidirectional_ring_allreduce,
                tunables=_RING_VARIANTS),
    Synthesizer("recursive_doubling", "allgather", recursive.recursive_doubling_allgather),
    Synthesizer("recursive_doubling", "allreduce", recursive.recursive_doubling_allreduce),
    Synthesizer("recursive_halving", "reduce_scatter",
                recursive.recursive_halving_reduce_scatter),
    Synthesizer("rabenseifner", "allreduce", recursive.rabenseifner_allreduce),
    Synthesizer("bruck", "allgather", recursive.bruck_allgather),
    Synthesizer("binomial_tree", "broadcast", trees.binomial_tree_broadcast),
    Synthesizer("binomial_tree", "reduce", trees.binomial_tree_reduce),
    Synthesizer("binomial_tree", "allreduce", trees.binomial_tree_allreduce),
    Synthesizer("double_binary_tree", "allreduce", trees.double_binary_tree_allreduce,
                tunables={"pipeline": (1, 2, 4, 8, 16, 32)}),
    Synthesizer("direct", "allgather", direct.direct_allgather, all_pairs=True),
    Synthesizer("direct", "reduce_scatter", direct.direct_reduce_scatter, all_pairs=True),
    Synthesizer("direct", "allreduce", direct.direct_allreduce, all_pairs=True),
    Synthesizer("direct", "alltoall", direct.direct_alltoall, all_pairs=True),
    Synthesizer("pairwise", "alltoall", direct.pairwise_alltoall, all_pairs=True),
    Synthesizer("parameter_server", "allreduce", direct.parameter_server_allreduce),
    Synthesizer("two_level", "allgather", two_level.two_level_allgather, _two_level_unsupported,
                sized=True),
    Synthesizer("two_level", "reduce_scatter", two_level.two_level_reduce_scatter,
                _two_level_unsupported, sized=True),
    Synthesizer("two_level", "allreduce", two_level.two_level_allreduce, _two_level_unsupported,
                sized=True),
    Synthesizer("ring_cover", "allgather", ring_cover.ring_cover_allgather,
                _ring_cover_unsupported),
    Synthesizer("ring_cover", "reduce_scatter", ring_cover.ring_cover_reduce_scatter,
                _ring_cover_unsupported),
    Synthesizer("ring_cover", "allreduce", ring_cover.ring_cover_allreduce,
                _ring_cover_unsupported),
    Synthesizer("hierarchical", "allgather", hierarchical.hierarchical_allgather,
                _hierarchical_unsupported),
    Synthesizer("hierarchical", "reduce_scatter", hierarchical.hierarchical_reduce_scatter,
                _hierarchical_unsupported),
    Synthesizer("hierarchical", "allreduce", hierarchical.hierarchical_allreduce,
                _hierarchical_unsupported),
    Synthesizer("optimal", "allgather", forest.optimal_allgather, _optimal_unsupported, _BATCHES),
    Synthesizer("optimal", "reduce_scatter", forest.optimal_reduce_scatter, _optimal_unsupported,
                _BATCHES),
    Synthesizer("optimal", "allreduce", forest.optimal_allreduce, _optimal_unsupported, _BATCHES),
    Synthesizer("optimal", "broadcast", forest.optimal_broadcast, _optimal_unsupported, _BATCHES),
    Synthesizer("optimal", "reduce", forest.optimal_reduce, _optimal_unsupported, _BATCHES),
    Synthesizer("topology_adaptive", "allreduce", adaptive.topology_adaptive_allreduce,
                _adaptive_unsupported, {**_BATCHES, "partition": ("auto", "fixed")}),
    Synthesizer("best_ring", "allreduce", ring_order.best_ring_allreduce, _best_ring_unsupported),
    Synthesizer("swing", "allreduce", swing.swing_allreduce),
    Synthesizer("swing_latency", "allreduce", swing.swing_latency_allreduce),
    Synthesizer("swing", "reduce_scatter", swing.swing_reduce_scatter),
    Synthesizer("swing", "allgather", swing.swing_allgather),
    Synthesizer("swing", "broadcast", swing.swing_broadcast),
    Synthesizer("swing", "reduce", swing.swing_reduce),
    Synthesizer("mirrored_recursive_doubling", "allreduce",
                torus.mirrored_recursive_doubling_allreduce,
                tunables={"variant": ("bandwidth", "latency")}),
    Synthesizer("mirrored_recursive_doubling", "reduce_scatter",
                torus.mirrored_recursive_doubling_reduce_scatter),
    Synthesizer("mirrored_recursive_doubling", "allgather",
                torus.mirrored_recursive_doubling_allgather),
    Synthesizer("bucket", "allreduce", torus.bucket_allreduce, _hierarchical_unsupported),
    Synthesizer("bucket", "reduce_scatter", torus.bucket_reduce_scatter, _hierarchical_unsupported),
    Synthesizer("bucket", "allgather", torus.bucket_allgather, _hierarchical_unsupported),
    Synthesizer("hamiltonian_rings", "allreduce", torus.hamiltonian_rings_allreduce,
                _hamiltonian_unsupported),
    Synthesizer("hamiltonian_rings", "reduce_scatter", torus.hamiltonian_rings_reduce_scatter,
                _hamiltonian_unsupported),
    Synthesizer("hamiltonian_rings", "allgather", torus.hamiltonian_rings_allgather,
                _hamiltonian_unsupported),
    Synthesizer("rail_rings", "allreduce", rail_rings.rail_rings_allreduce,
                _rail_rings_unsupported("allreduce")),
    Synthesizer("rail_rings", "reduce_scatter", rail_rings.rail_rings_reduce_scatter,
                _rail_rings_unsupported("reduce_scatter")),
    Synthesizer("rail_rings", "allgather", rail_rings.rail_rings_allgather,
                _rail_rings_unsupported("allgather")),
]


#: Options whose values are counts, whatever their default (often None: "choose").
_COUNTS = ("batches", "steps", "budget", "pipeline", "resolution", "seed", "rounds", "split",
           "root", "units")


def _coerce(key: str, value: Any, default: Any) -> Any:
    """One option value: text parsed by the option's kind (see :meth:`Synthesizer.coerce`)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        if key == "message_bytes":
            return parse_size(text)
        if key == "alpha":
            return parse_time(text)
        if isinstance(default, bool):
            if text.lower() in ("true", "yes", "on", "1", "false", "no", "off", "0"):
                return text.lower() in ("true", "yes", "on", "1")
            raise ValueError(f"expected true or false, got {value!r}")
        if isinstance(default, int) or key in _COUNTS:
            if not text.lstrip("+-").isdigit():
                if key == "pipeline" and isinstance(default, str):
                    return text
                raise ValueError(f"expected an integer, got {value!r}")
            return int(text)
        if isinstance(default, float):
            return float(text)
    except (UnitError, ValueError) as e:
        raise InputError(f"option {key!r}: {e}", item=f"option '{key}'") from None
    return text


#: Called with every synthesizer registered after import (the selection catalog keeps its
#: table of algorithms in step this way, without synth importing it).
_LISTENERS: list[Callable[[Synthesizer, bool], None]] = []


def on_register(listener: Callable[[Synthesizer, bool], None]) -> None:
    """Call ``listener(synthesizer, added)`` whenever a synthesizer is registered
    (``added=True``) or unregistered after import (how the selection catalog follows)."""
    _LISTENERS.append(listener)


def register_synthesizer(synthesizer: Synthesizer) -> Synthesizer:
    """Add a new algorithm: the one call a new synthesizer needs besides its module.

    ``topocoll synth``, ``compare``, ``choose``, ``train``, ``sweep`` and ``list
    algorithms`` see it from then on (``tests/synth/test_register.py`` registers one and
    runs it through them).

    Raises
    ------
    InputTypeError
        If ``synthesizer`` is not a :class:`Synthesizer`.
    InputError
        For an unknown collective kind, or a (name, kind) registered already.
    """
    from ..collective import COLLECTIVE_KINDS

    if not isinstance(synthesizer, Synthesizer):
        raise InputTypeError(f"expected a Synthesizer, got {type(synthesizer).__name__}",
                             item="synthesizer")
    if synthesizer.kind not in COLLECTIVE_KINDS:
        raise InputError(f"unknown collective kind {synthesizer.kind!r}; one of "
                         f"{', '.join(COLLECTIVE_KINDS)}", item="kind")
    if any(s.name == synthesizer.name and s.kind == synthesizer.kind for s in SYNTHESIZERS):
        raise InputError(f"algorithm {synthesizer.name!r} for {synthesizer.kind} is "
                         "registered already", item="name")
    SYNTHESIZERS.append(synthesizer)
    for listen in _LISTENERS:
        listen(synthesizer, True)
    return synthesizer


def unregister_synthesizer(name: str, kind: str) -> None:
    """Remove a synthesizer added with :func:`register_synthesizer` (tests, plugins)."""
    syn = find_synthesizer(name, kind)
    SYNTHESIZERS.remove(syn)
    for listen in _LISTENERS:
        listen(syn, False)


def synthesizers_for(kind: str) -> tuple[Synthesizer, ...]:
    """All synthesizers that produce collective ``kind``."""
    return tuple(s for s in SYNTHESIZERS if s.kind == kind)


def find_synthesizer(name: str, kind: str) -> Synthesizer:
    """The synthesizer called ``name`` for ``kind``.

    Raises
    ------
    NotSupportedError
        If there is none; the message lists the available names.
    """
    for s in SYNTHESIZERS:
        if s.name == name and s.kind == kind:
            return s
    names = sorted({s.name for s in SYNTHESIZERS if s.kind == kind})
    raise NotSupportedError(f"no algorithm {name!r} for {kind}; available: {', '.join(names)}")
