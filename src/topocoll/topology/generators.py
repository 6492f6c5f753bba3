"""Topology generators: each returns a new validated :class:`Topology`.

Conventions shared by every generator:

- ``bandwidth`` is bytes/s per link per direction and ``latency`` seconds per link;
  defaults are 50 GB/s (400 Gb/s) and 1 us.
- Undirected cables become two directed links; links are emitted dimension by
  dimension (dimension 0 first, ``+`` direction before ``-``) so that the deterministic
  shortest-path rule of :meth:`Topology.path` yields dimension-order routing.
- Ranks are numbered first, switches after them.
- Where a Hamiltonian cycle over the ranks is cheap to construct, ``meta["ring_order"]``
  holds it (every consecutive pair, including the wrap-around, is joined by links both
  ways); ring synthesizers use it as their default order.

Switched fabrics (:func:`fat_tree`, :func:`leaf_spine`, :func:`dgx`) live in
:mod:`topocoll.topology.fabrics` and explicit graphs (:func:`from_matrix`,
:func:`from_edges`) in :mod:`topocoll.topology.explicit`; both are re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import InputTypeError, TopologyError
from ._common import (
    DEFAULT_BANDWIDTH,
    DEFAULT_LATENCY,
    cable,
    check_count,
    check_rate,
    check_time,
    per_dim,
    switch_latencies,
    units_in,
)
from .core import Dim, Link, Topology, check_size
from .explicit import from_edges, from_matrix
from .fabrics import dgx, dgx_a100, dgx_h100, fat_tree, leaf_spine

__all__ = ["ring", "line", "fully_connected", "star", "torus", "mesh", "hypercube",
           "hammingmesh", "circulant", "random_regular", "fat_tree", "leaf_spine", "dgx",
           "dgx_a100",
           "dgx_h100", "from_matrix", "from_edges", "DEFAULT_BANDWIDTH", "DEFAULT_LATENCY"]

#: How many derived seeds :func:`random_regular` tries before giving up on connectivity.
RRG_MAX_TRIES = 32


@units_in
def ring(num_ranks: int, *, bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY,
         bidirectional: bool = True, name: str | None = None) -> Topology:
    """Return a ring of ``num_ranks`` ranks.

    Parameters
    ----------
    num_ranks : int
        At least 2. A bidirectional ring of 2 ranks has one link each way.
    bidirectional : bool
        If False, only the links ``i -> i+1`` exist (a unidirectional ring).

    Examples
    --------
    >>> t = ring(8)
    >>> len(t.links), t.describe()["rank_diameter_hops"]
    (16, 4)
    >>> len(ring(8, bidirectional=False).links)
    8
    """
    n = check_count(num_ranks)
    check_size(f"ring:{n}", n, 2 * n)
    links: list[Link] = []
    for i in range(n):
        j = (i + 1) % n
        links.append(Link(i, j, bandwidth, latency, 0))
    if bidirectional:
        for i in range(n):
            j = (i - 1) % n
            if n > 2:
                links.append(Link(i, j, bandwidth, latency, 0))
            elif i == 1:
                pass  # the single 1->0 link already exists for n == 2
    dims = (Dim("ring", n, bandwidth, latency),) if bidirectional else ()
    return Topology(name or f"ring:{n}" + ("" if bidirectional else ",unidirectional"), n, 0,
                    tuple(links), dims=dims)


@units_in
def line(num_ranks: int, *, bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY,
         name: str | None = None) -> Topology:
    """Return a line (1-D mesh) ``0 - 1 - ... - n-1`` with bidirectional links.

    Examples
    --------
    >>> line(4).describe()["rank_diameter_hops"]
    3
    """
    return mesh((num_ranks,), bandwidth=bandwidth, latency=latency,
                name=name or f"line:{num_ranks}")


@units_in
def fully_connected(num_ranks: int, *, bandwidth: float = DEFAULT_BANDWIDTH,
                    latency: float = DEFAULT_LATENCY, name: str | None = None) -> Topology:
    """Return a full mesh: a link each way between every pair of ranks.

    Examples
    --------
    >>> len(fully_connected(4).links)
    12
    """
    n = check_count(num_ranks)
    check_size(f"fully_connected:{n}", n, n * (n - 1))
    links = [Link(i, j, bandwidth, latency, 0) for i in range(n) for j in range(n) if i != j]
    return Topology(name or f"fully_connected:{n}", n, 0, tuple(links),
                    dims=(Dim("fully_connected", n, bandwidth, latency),))


@units_in
def star(num_ranks: int, *, bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY,
         switch_latency: float = 0.0, name: str | None = None) -> Topology:
    """Return ``num_ranks`` ranks on one non-blocking switch (node ``num_ranks``).

    Each rank has one link up and one down at ``bandwidth``; a rank-to-rank transfer
    crosses two links and pays ``switch_latency`` once.

    Examples
    --------
    >>> t = star(4)
    >>> t.num_switches, len(t.links), t.path(0, 3)
    (1, 8, (0, 4, 3))
    """
    n = check_count(num_ranks)
    links: list[Link] = []
    for i in range(n):
        cable(links, i, n, bandwidth, latency, 0)
    fwd = (0.0,) * n + (switch_latency,) if switch_latency else ()
    return Topology(name or f"star:{n}", n, 1, tuple(links), node_latency=fwd,
                    dims=(Dim("switch", n, bandwidth, latency),))


def _grid(shape: Sequence[int], wrap: bool, bandwidth, latency, name, kind) -> Topology:
    if isinstance(shape, str | bytes) or not isinstance(shape, Sequence):
        raise InputTypeError(f"shape must be a sequence of integers, got "
                             f"{type(shape).__name__} {shape!r}", item="shape")
    shape = tuple(shape)
    if not shape:
        raise TopologyError("shape must have at least one dimension", item="field 'shape'")
    for d in shape:
        check_count(d, "shape: dimension size")
    n = math.prod(shape)
    check_size(f"{kind}:{'x'.join(map(str, shape))}", n, 2 * len(shape) * n)
    bws = per_dim(bandwidth, len(shape), "bandwidth")
    lats = per_dim(latency, len(shape), "latency")
    links: list[Link] = []
    stride = 1
    for k, size in enumerate(shape):
        for r in range(n):
            x = (r // stride) % size
            if x + 1 < size or (wrap and size > 2):
                links.append(Link(r, r + ((x + 1) % size - x) * stride, bws[k], lats[k], k))
            elif wrap and size == 2 and x == 0:
                links.append(Link(r, r + stride, bws[k], lats[k], k))
            if x - 1 >= 0 or (wrap and size > 2):
                links.append(Link(r, r + ((x - 1) % size - x) * stride, bws[k], lats[k], k))
            elif wrap and size == 2 and x == 1:
                links.append(Link(r, r - stride, bws[k], lats[k], k))
        stride *= size
    dims = tuple(Dim(kind, s, bws[k], lats[k]) for k, s in enumerate(shape))
    order = _grid_ring_order(shape, wrap, links)
    return Topology(name, n, 0, tuple(links), dims=dims,
                    meta={"ring_order": order} if order else {})


def _gray(shape: Sequence[int]) -> list[int]:
    """Reflected mixed-radix Gray path over a grid (dimension 0 fastest): consecutive
    entries differ by one step in one coordinate, so it is a Hamiltonian path of the mesh."""
    seq = [0]
    stride = 1
    for size in shape:
        seq = [x + stride * t for t in range(size) for x in (seq if t % 2 == 0 else seq[::-1])]
        stride *= size
    return seq


def _snake(xs: list[int], ys: list[int], rank) -> list[int]:
    """Hamiltonian cycle of the product of two paths when ``len(ys)`` is even: sweep the
    columns ``xs[1:]`` back and forth along ``ys``, return along column ``xs[0]``."""
    order = [rank(xs[0], ys[0])]
    for j, y in enumerate(ys):
        order += [rank(x, y) for x in (xs[1:] if j % 2 == 0 else xs[:0:-1])]
    return order + [rank(xs[0], ys[j]) for j in range(len(ys) - 1, 0, -1)]


def _grid_ring_order(shape: tuple[int, ...], wrap: bool, links: list[Link]) -> list[int] | None:
    """A Hamiltonian cycle of a torus or mesh, verified against ``links``, or None.

    Candidates: the identity on a 1-D grid; a snake (:func:`_snake`) over dimension 0 and a
    Gray path of the other dimensions, whichever has an even length (exists whenever the
    rank count is even); on an odd x odd 2-D torus, the snake of the first ``b - 1`` rows
    with the last row spliced in between ranks 1 and 2 through the wrap-around links.
    """
    n = math.prod(shape)
    a = shape[0]
    rest = _gray(shape[1:])
    candidates = []
    if len(shape) == 1:
        candidates.append(list(range(n)))
    else:
        if len(rest) % 2 == 0:
            candidates.append(_snake(list(range(a)), rest, lambda x, y: x + a * y))
        if a % 2 == 0:
            candidates.append(_snake(rest, list(range(a)), lambda x, y: y + a * x))
        if wrap and len(shape) == 2 and a >= 3:
            b = shape[1]
            order = _snake(list(range(a)), list(range(b - 1)), lambda x, y: x + a * y)
            last = [1, 0] + list(range(a - 1, 1, -1))
            candidates.append(order[:2] + [x + a * (b - 1) for x in last] + order[2:])
    adjacent = {(lk.src, lk.dst) for lk in links}
    for order in candidates:
        if sorted(order) == list(range(n)) and all(
                (order[i], order[i - 1]) in adjacent and (order[i - 1], order[i]) in adjacent
                for i in range(n)):
            return order
    return None


@units_in
def torus(shape: Sequence[int], *, bandwidth: float | Sequence[float] = DEFAULT_BANDWIDTH,
          latency: float | Sequence[float] = DEFAULT_LATENCY, name: str | None = None) -> Topology:
    """Return an N-D torus of any shape (wrap-around in every dimension).

    Parameters
    ----------
    shape : sequence of int
        Size of each dimension (each >= 2); dimension 0 varies fastest in rank ids.
        A dimension of size 2 gets a single link each way (no doubled wrap-around).
    bandwidth, latency : float or sequence of float
        One value for all dimensions or one per dimension.

    Notes
    -----
    ``meta["ring_order"]`` is a Hamiltonian cycle (a snake) whenever one is constructed:
    for every 1-D and 2-D torus and every torus with an even rank count.

    Examples
    --------
    >>> t = torus((4, 4))
    >>> len(t.links), t.describe()["rank_diameter_hops"]
    (64, 4)
    >>> t.path(0, 5)   # dimension-order: x first, then y
    (0, 1, 5)
    """
    shape = tuple(shape)
    return _grid(shape, True, bandwidth, latency,
                 name or "torus:" + "x".join(map(str, shape)), "ring")


@units_in
def mesh(shape: Sequence[int], *, bandwidth: float | Sequence[float] = DEFAULT_BANDWIDTH,
         latency: float | Sequence[float] = DEFAULT_LATENCY, name: str | None = None) -> Topology:
    """Return an N-D mesh (a torus without wrap-around links).

    ``meta["ring_order"]`` is a Hamiltonian cycle (a snake) when the rank count is even;
    with an odd count none exists (the mesh is bipartite).

    Examples
    --------
    >>> len(mesh((3, 3)).links)
    24
    """
    shape = tuple(shape)
    return _grid(shape, False, bandwidth, latency,
                 name or "mesh:" + "x".join(map(str, shape)), "line")


@units_in
def hypercube(dimension: int, *, bandwidth: float = DEFAULT_BANDWIDTH,
              latency: float = DEFAULT_LATENCY, name: str | None = None) -> Topology:
    """Return a ``dimension``-dimensional hypercube of ``2**dimension`` ranks.

    Rank ``r`` links to ``r ^ (1 << k)`` for every ``k``; it is the torus ``2 x 2 x ... x 2``.
    ``meta["ring_order"]`` is a Hamiltonian cycle of the cube.

    Examples
    --------
    >>> t = hypercube(3)
    >>> t.num_ranks, len(t.links), t.describe()["rank_diameter_hops"]
    (8, 24, 3)
    """
    d = check_count(dimension, "dimension", minimum=1)
    check_size(f"hypercube:{d}", 2 ** min(d, 64), d * 2 ** min(d, 64))
    return _grid((2,) * d, True, bandwidth, latency, name or f"hypercube:{d}", "ring")


@units_in
def hammingmesh(shape: Sequence[int], board: int | Sequence[int] = 2, *,
                bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY,
                switch_latency: float = 0.0, name: str | None = None) -> Topology:
    """Return a HammingMesh (Hoefler et al., SC'22): boards of ``board`` ranks per
    dimension wired as a mesh, every line of ranks joined across boards by a switch.

    A rank has two ports per dimension. Inside a board they join its neighbours; a port
    on the board's edge (the ``-`` port of a board's first rank in that dimension, the
    ``+`` port of its last) goes to the switch of its line: the ranks that differ only
    in that coordinate. With ``board`` 2 and 4 this is the paper's Hx2Mesh and Hx4Mesh.
    Each line's fat-tree is one non-blocking switch here (a full-bisection tree; its
    forwarding is ``switch_latency``). Switches follow the ranks, dimension 0's lines
    first.

    ``dims`` describe the rank grid as torus-like rings (the last rank of a line reaches
    the first through the switch), so torus algorithms (Swing, bucket) see the shape, as
    the Swing paper runs them.

    Parameters
    ----------
    shape : sequence of int
        Ranks per dimension (each >= 2), dimension 0 fastest.
    board : int or sequence of int
        Board size per dimension (one value: every dimension); each divides its
        dimension's size.

    Examples
    --------
    >>> t = hammingmesh((4, 4), 2)
    >>> t.num_ranks, t.num_switches, len(t.links)
    (16, 8, 96)
    >>> t.path(1, 2)    # across a board edge: through row 0's switch
    (1, 16, 2)
    """
    if isinstance(shape, str | bytes) or not isinstance(shape, Sequence):
        raise InputTypeError(f"shape must be a sequence of integers, got "
                             f"{type(shape).__name__} {shape!r}", item="shape")
    shape = tuple(check_count(d, "shape: dimension size") for d in shape)
    if not shape:
        raise TopologyError("shape must have at least one dimension", item="field 'shape'")
    boards = (board,) if isinstance(board, int) else tuple(board)
    if len(boards) == 1:
        boards *= len(shape)
    if len(boards) != len(shape):
        raise TopologyError(f"board has {len(boards)} sizes for {len(shape)} dimensions",
                            item="field 'board'")
    for d, b in zip(shape, boards, strict=True):
        check_count(b, "board: size", minimum=1)
        if d % b:
            raise TopologyError(f"board size {b} does not divide dimension size {d}",
                                item="field 'board'")
    n = math.prod(shape)
    bw, lat = check_rate(bandwidth), check_time(latency, "latency")
    nsw = sum(n // d for d in shape)
    label = "x".join(map(str, shape))
    check_size(f"hammingmesh:{label}", n + nsw, 4 * len(shape) * n)
    links: list[Link] = []
    stride, first_switch = 1, n
    for k, (size, b) in enumerate(zip(shape, boards, strict=True)):
        for r in range(n):
            x = (r // stride) % size
            sw = first_switch + r % stride + stride * (r // (stride * size))
            u = x % b
            if u + 1 < b:
                links.append(Link(r, r + stride, bw, lat, k))
            else:
                cable(links, r, sw, bw, lat, k)
            if u > 0:
                links.append(Link(r, r - stride, bw, lat, k))
            else:
                cable(links, r, sw, bw, lat, k)
        first_switch += n // size
        stride *= size
    bname = "x".join(map(str, boards)) if len(set(boards)) > 1 else str(boards[0])
    return Topology(name or f"hammingmesh:{label},board={bname}", n, nsw, tuple(links),
                    node_latency=switch_latencies(n, nsw, switch_latency),
                    dims=tuple(Dim("ring", s, bw, lat) for s in shape))


@units_in
def circulant(num_ranks: int, jumps: Sequence[int], *, bandwidth: float = DEFAULT_BANDWIDTH,
              latency: float = DEFAULT_LATENCY, directed: bool = False,
              name: str | None = None) -> Topology:
    """Return a circulant graph: rank ``r`` links to ``r + j`` and ``r - j`` (mod n) per jump.

    Parameters
    ----------
    num_ranks : int
        At least 2.
    jumps : sequence of int
        Distinct offsets; each is taken mod ``num_ranks``. Undirected, ``j`` and ``n - j``
        are the same jump and ``j = n/2`` gives a single link each way (as in a ring of 2).
    directed : bool
        If True, only the links ``r -> r + j`` exist.

    Returns
    -------
    Topology
        Links are emitted jump by jump in the given order, ``+j`` before ``-j`` per rank;
        ``dims`` is empty. When some jump ``j`` is coprime to ``n``, ``meta["ring_order"]``
        is ``0, j, 2j, ...`` (mod n).

    Raises
    ------
    TopologyError
        ``item="jump j"`` for a jump that is a multiple of ``n`` (a self-loop) or repeats
        another; ``item="field 'jumps'"`` if there are none or they cannot connect all ranks
        (their gcd with ``n`` exceeds 1).

    Examples
    --------
    >>> t = circulant(8, [1, 3])
    >>> len(t.links), t.describe()["rank_diameter_hops"]
    (32, 2)
    >>> len(circulant(8, [1, 3], directed=True).links)
    16
    """
    n = check_count(num_ranks)
    bw, lat = check_rate(bandwidth), check_time(latency)
    jumps = tuple(jumps)
    if not jumps:
        raise TopologyError("circulant needs at least one jump", item="field 'jumps'")
    seen: dict[int, int] = {}
    for j in jumps:
        if isinstance(j, bool) or not isinstance(j, int):
            raise TopologyError(f"jump {j!r} must be an integer", item=f"jump {j!r}")
        if j % n == 0:
            raise TopologyError(f"jump {j} is a multiple of num_ranks={n}: every link would "
                                "be a self-loop", item=f"jump {j}")
        keys = {j % n} if directed else {j % n, -j % n}
        dup = next((seen[k] for k in keys if k in seen), None)
        if dup is not None:
            raise TopologyError(f"jump {j} duplicates jump {dup} mod {n}"
                                + ("" if directed else " (j and n-j are the same jump)"),
                                item=f"jump {j}")
        seen.update(dict.fromkeys(keys, j))
    if math.gcd(n, *jumps) != 1:
        raise TopologyError(f"jumps {list(jumps)} reach only ranks that are multiples of "
                            f"{math.gcd(n, *jumps)}: the graph is disconnected",
                            item="field 'jumps'")
    links: list[Link] = []
    for j in jumps:
        for r in range(n):
            links.append(Link(r, (r + j) % n, bw, lat))
            if not directed and (2 * j) % n:
                links.append(Link(r, (r - j) % n, bw, lat))
    step = next((j for j in jumps if math.gcd(j, n) == 1), None)
    meta = {"ring_order": [(i * step) % n for i in range(n)]} if step is not None else {}
    label = name or (f"circulant:{n},jumps=" + "/".join(map(str, jumps))
                     + (",directed=true" if directed else ""))
    return Topology(label, n, 0, tuple(links), meta=meta)


@units_in
def random_regular(num_ranks: int, degree: int, *, seed: int,
                   bandwidth: float = DEFAULT_BANDWIDTH, latency: float = DEFAULT_LATENCY,
                   name: str | None = None) -> Topology:
    """Return a connected random ``degree``-regular graph of bidirectional links.

    Parameters
    ----------
    num_ranks : int
        At least 2; ``num_ranks * degree`` must be even.
    degree : int
        Links per rank per direction, ``1 <= degree < num_ranks``.
    seed : int
        The graph is ``networkx.random_regular_graph(degree, num_ranks, seed=seed)``; if it
        is disconnected, seeds ``seed + k * 1_000_003`` (k = 1, 2, ...) are tried, at most
        :data:`RRG_MAX_TRIES` in all. Same seed, same topology.

    Returns
    -------
    Topology
        Cables in sorted ``(min, max)`` order, each as ``a -> b`` then ``b -> a``.

    Raises
    ------
    TopologyError
        On an impossible ``degree`` (``item="field 'degree'"``), a non-integer ``seed``, or if
        no connected graph was found (``item="field 'seed'"``).

    Examples
    --------
    >>> t = random_regular(16, 3, seed=1)
    >>> len(t.links), t.describe()["rank_out_degree_max"]
    (48, 3)
    """
    import networkx as nx

    n = check_count(num_ranks)
    d = check_count(degree, "degree", minimum=1)
    bw, lat = check_rate(bandwidth), check_time(latency)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TopologyError(f"seed must be an integer, got {seed!r}", item="field 'seed'")
    if d >= n or (n * d) % 2 or (d == 1 and n > 2):
        raise TopologyError(f"no connected {d}-regular graph on {n} ranks (need degree < "
                            "num_ranks, num_ranks * degree even, degree >= 2 unless "
                            "num_ranks == 2)", item="field 'degree'")
    for k in range(RRG_MAX_TRIES):
        g = nx.random_regular_graph(d, n, seed=seed + k * 1_000_003)
        if nx.is_connected(g):
            break
    else:
        raise TopologyError(f"no connected {d}-regular graph on {n} ranks after "
                            f"{RRG_MAX_TRIES} seeds derived from {seed}", item="field 'seed'")
    links: list[Link] = []
    for a, b in sorted(tuple(sorted(e)) for e in g.edges()):
        cable(links, a, b, bw, lat)
    return Topology(name or f"rrg:{n},d={d},seed={seed}", n, 0, tuple(links))
