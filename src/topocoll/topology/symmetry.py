"""Rank symmetry of a fabric: automorphisms, member orbits and a transversal.

An *automorphism* of a topology is a permutation of its nodes that maps ranks to ranks,
members of a group to members, switches to switches, and every directed link bundle to a
bundle of the same bandwidth and latency (nodes keep their forwarding latency). The
automorphisms split the members into *orbits*; for every member ``r`` of an orbit with
representative ``rep`` we keep one automorphism ``g_r`` with ``g_r(rep) = r`` (a
*transversal*, from a breadth-first search over the group's generators: a Schreier tree).

Column-generation LPs over per-root trees (:mod:`~topocoll.optimum.timedlp`) use it:
their optimum is attained by a solution invariant under the group, i.e. one in which
root ``r``'s trees are the images under ``g_r`` of ``rep``'s. So only one root per orbit
needs columns and pricing, with every column standing for all its images.

The group's generators come from BLISS (through python-igraph) on a vertex-coloured
directed graph: one vertex per node, coloured by (kind, forwarding latency), and one per
link bundle ``a -> b``, coloured by (bandwidth, latency), between ``a`` and ``b``.

References
----------
.. [1] Junttila and Kaski, "Engineering an efficient canonical labeling tool for large and
   sparse graphs", ALENEX 2007 (BLISS).
.. [2] Margot, "Symmetry in integer linear programming", in *50 Years of Integer
   Programming*, Springer 2010 (orbit reduction of symmetric programs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .core import Topology

__all__ = ["RankSymmetry", "rank_symmetry", "shift_dims", "shift_permutation", "pair_hops"]


@dataclass(frozen=True)
class RankSymmetry:
    """Member orbits of a topology and one automorphism per member.

    Attributes
    ----------
    members : tuple of int
        The ranks considered (the group).
    reps : tuple of int
        One member per orbit (the smallest).
    rep_of : dict
        Member -> its orbit's representative.
    maps : dict
        Member ``r`` -> node permutation ``g`` (int64 array over every node of the
        topology) with ``g[rep_of[r]] == r``; ``maps[rep]`` is the identity.
    generators : tuple of numpy.ndarray
        Node permutations generating the group.

    Examples
    --------
    >>> from topocoll.topology import ring
    >>> sym = rank_symmetry(ring(6))
    >>> sym.reps, sym.orbit(0)
    ((0,), (0, 1, 2, 3, 4, 5))
    >>> int(sym.maps[4][0]), int(sym.maps[4][1])
    (4, 5)
    """

    members: tuple[int, ...]
    reps: tuple[int, ...]
    rep_of: dict
    maps: dict
    generators: tuple = ()

    def orbit(self, rep: int) -> tuple[int, ...]:
        """The members of ``rep``'s orbit, ``rep`` first."""
        return tuple(r for r in self.members if self.rep_of[r] == rep)

    def stabilizer_elements(self, rep: int, count: int, seed: int = 0) -> list[np.ndarray]:
        """Up to ``count`` distinct automorphisms fixing member ``rep``, the identity
        first, the rest close to uniformly random: group elements ``g`` from the product
        replacement algorithm [3]_ mapped back by the transversal (``k = g_r^-1 g`` with
        ``r = g(q)`` fixes ``rep``'s representative ``q``, uniformly when ``g`` is
        uniform on the group; ``h = u k u^-1`` with ``u = maps[rep]`` fixes ``rep``).

        References
        ----------
        .. [3] Celler, Leedham-Green, Murray, Niemeyer and O'Brien, "Generating random
           elements of a finite group", Comm. Algebra 23(13), 1995.

        >>> from topocoll.topology import hypercube
        >>> sym = rank_symmetry(hypercube(3))
        >>> hs = sym.stabilizer_elements(0, 48)
        >>> len(hs), all(int(h[0]) == 0 for h in hs)   # |Aut(Q3)| / 8 = 6
        (6, True)
        """
        n = len(self.maps[rep])
        ident = np.arange(n, dtype=np.int64)
        out, seen = [ident], {ident.tobytes()}
        if not self.generators:
            return out
        rng = np.random.default_rng(seed)
        q, u = self.rep_of[rep], self.maps[rep]   # u(q) = rep
        gens = list(self.generators)
        state = [gens[k % len(gens)] for k in range(max(10, len(gens)))]
        inverse = {}

        def inv(p: np.ndarray) -> np.ndarray:
            key = p.tobytes()
            if key not in inverse:
                q = np.empty_like(p)
                q[p] = np.arange(len(p))
                inverse[key] = q
            return inverse[key]

        def step() -> np.ndarray:
            i, j = rng.choice(len(state), size=2, replace=False)
            g = state[j] if rng.random() < 0.5 else inv(state[j])
            state[i] = state[i][g] if rng.random() < 0.5 else g[state[i]]
            return state[i]

        for _ in range(60):                      # mixing
            step()
        for _ in range(20 * count):
            if len(out) >= count:
                break
            g = step()
            k = inv(self.maps[int(g[q])])[g]     # back to q: k(q) = q
            h = u[k[inv(u)]]                     # conjugated: h(rep) = rep
            if h.tobytes() not in seen:
                seen.add(h.tobytes())
                out.append(h)
        return out


def _key(x: float) -> float:
    return float(f"{x:.12g}")


def rank_symmetry(topology: Topology, ranks: Sequence[int] | None = None,
                  enabled: bool = True) -> RankSymmetry:
    """The member orbits of ``topology`` under its automorphisms (see the module).

    Parameters
    ----------
    topology : Topology
        Any topology.
    ranks : sequence of int, optional
        The members (default every rank); automorphisms must map members to members.
    enabled : bool
        ``False`` gives the trivial symmetry (every member its own orbit).

    Returns
    -------
    RankSymmetry

    Examples
    --------
    A 3x3 mesh has three orbits (corners, edge centres, the centre):

    >>> from topocoll.topology import mesh
    >>> rank_symmetry(mesh((3, 3))).reps
    (0, 1, 4)
    """
    members = tuple(range(topology.num_ranks)) if ranks is None else \
        tuple(sorted(int(r) for r in ranks))
    key = ("rank_symmetry", members, bool(enabled))
    return topology.memo(key, lambda: _symmetry(topology, members, enabled))


def _symmetry(topology: Topology, members: tuple[int, ...], enabled: bool) -> RankSymmetry:
    n = topology.num_nodes
    ident = np.arange(n, dtype=np.int64)
    if not enabled or len(members) < 2:
        return RankSymmetry(members, members, {r: r for r in members},
                            {r: ident for r in members})
    gens = _generators(topology, members)
    rep_of: dict[int, int] = {}
    maps: dict[int, np.ndarray] = {}
    mset = set(members)
    for m in members:
        if m in rep_of:
            continue
        rep_of[m], maps[m] = m, ident
        frontier = [m]
        while frontier:                        # Schreier tree of m's orbit
            nxt = []
            for r in frontier:
                for g in gens:
                    img = int(g[r])
                    if img not in rep_of:
                        assert img in mset
                        rep_of[img] = m
                        maps[img] = g[maps[r]]
                        nxt.append(img)
            frontier = nxt
    reps = tuple(sorted(set(rep_of.values())))
    for g in (*maps.values(), *gens):
        g.flags.writeable = False
    return RankSymmetry(members, reps, rep_of, maps, tuple(gens))


def _generators(topology: Topology, members: tuple[int, ...]) -> list[np.ndarray]:
    """Generators of the automorphism group, as permutations of the topology's nodes."""
    ig = _igraph()

    n = topology.num_nodes
    bundles: dict[tuple[int, int], list[float]] = {}
    for lk in topology.links:
        b = bundles.setdefault((lk.src, lk.dst), [0.0, np.inf])
        b[0] += lk.bandwidth
        b[1] = min(b[1], lk.latency)
    fwd = topology.forwarding_latency
    mset = set(members)
    labels: dict[tuple, int] = {}

    def colour(key: tuple) -> int:
        return labels.setdefault(key, len(labels))

    colours = [colour(("member" if v in mset else "rank" if v < topology.num_ranks
                       else "switch", _key(fwd[v]))) for v in range(n)]
    edges = []
    for k, ((a, b), (bw, lat)) in enumerate(sorted(bundles.items())):
        colours.append(colour(("link", _key(bw), _key(lat))))
        edges += [(a, n + k), (n + k, b)]
    g = ig.Graph(n=len(colours), edges=edges, directed=True)
    out = []
    for p in g.automorphism_group(sh="fl", color=colours):
        perm = np.asarray(p[:n], dtype=np.int64)
        if not np.array_equal(perm, np.arange(n)):
            out.append(perm)
    return out


def _igraph():
    """python-igraph, imported without its matplotlib plotting.

    igraph 1.0 imports ``matplotlib.pyplot`` when it is imported, for its own plotting:
    0.5-0.7 s of a command that takes 3 s and needs only BLISS. While matplotlib is not
    imported yet, igraph is imported with matplotlib hidden (igraph then puts its
    placeholder in place of plotting, which this package never uses) and matplotlib is
    importable again right after; where matplotlib is already imported nothing is hidden.
    """
    import sys

    if "igraph" not in sys.modules and "matplotlib" not in sys.modules:
        sys.modules["matplotlib"] = None          # type: ignore[assignment]
        try:
            import igraph
        finally:
            if sys.modules.get("matplotlib", 0) is None:
                del sys.modules["matplotlib"]
    import igraph

    return igraph


def shift_permutation(topology: Topology, dim: int) -> np.ndarray:
    """The ranks' images under a unit cyclic shift along ``topology.dims[dim]``.

    Rank ``x0 + size0 * (x1 + ...)`` goes to the rank whose coordinate ``dim`` is
    ``(x_dim + 1) mod size_dim``, the others unchanged (int64 array over the ranks).

    >>> from topocoll.topology import torus
    >>> shift_permutation(torus((3, 2)), 1).tolist()
    [3, 4, 5, 0, 1, 2]
    """
    sizes = tuple(d.size for d in topology.dims)
    c = list(np.unravel_index(np.arange(topology.num_ranks), sizes, order="F"))
    c[dim] = (c[dim] + 1) % sizes[dim]
    return np.ravel_multi_index(c, sizes, order="F").astype(np.int64)


def shift_dims(topology: Topology) -> tuple[int, ...]:
    """The dimensions along which a unit cyclic shift is an automorphism of the links.

    A shift qualifies when the topology has no switches and every directed link ``a -> b``
    of bandwidth ``w`` has its image ``shift(a) -> shift(b)`` of bandwidth ``w`` (as
    multisets of links; latencies are not compared: the callers use capacities only).
    Checked on the link arrays (a sort per dimension), remembered in the topology. The
    shifts of a ring or torus dimension of equal links qualify; a line's does not (its
    last rank has no link to its first).

    >>> from topocoll.topology import mesh, ring, torus
    >>> shift_dims(ring(8)), shift_dims(torus((4, 3))), shift_dims(mesh((4, 4)))
    ((0,), (0, 1), ())
    """
    return topology.memo("shift dims", lambda: _shift_dims(topology))


def _shift_dims(topology: Topology) -> tuple[int, ...]:
    if topology.num_switches or not topology.dims:
        return ()
    src, dst, bw = topology.link_src, topology.link_dst, topology.link_bandwidth
    here = np.lexsort((bw, dst, src))
    out = []
    for k in range(len(topology.dims)):
        p = shift_permutation(topology, k)
        s2, d2 = p[src], p[dst]
        there = np.lexsort((bw, d2, s2))
        if (np.array_equal(src[here], s2[there]) and np.array_equal(dst[here], d2[there])
                and np.array_equal(bw[here], bw[there])):
            out.append(k)
    return tuple(out)


def pair_hops(topology: Topology, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Hop distances of the node pairs ``(src[i], dst[i])`` (float, ``inf`` where
    unreachable).

    When the shifts of every dimension are automorphisms (:func:`shift_dims`: a torus,
    ring or product of them with equal links, no switches), translating a pair by ``-src``
    keeps its distance, so one breadth-first search from rank 0 answers every pair:
    ``d(u, v) = d(0, v - u)``, coordinates subtracted modulo each dimension's size.
    Otherwise the all-pairs table (:meth:`~topocoll.topology.Topology.hop_distances`).

    >>> import numpy as np
    >>> from topocoll.topology import mesh, torus
    >>> u, v = np.array([0, 5, 11]), np.array([11, 6, 0])
    >>> pair_hops(torus((4, 3)), u, v).tolist(), pair_hops(mesh((4, 3)), u, v).tolist()
    ([2.0, 1.0, 2.0], [5.0, 1.0, 5.0])
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    dims = topology.dims
    if not dims or shift_dims(topology) != tuple(range(len(dims))):
        return topology.hop_distances()[src, dst]
    d0 = topology.memo("hops from 0", lambda: _hops_from(topology, 0))
    from ._shift import translated_lookup

    sizes = np.array([d.size for d in dims], dtype=np.int64)   # dimension 0 fastest
    return translated_lookup(src, dst, sizes, d0)


def _hops_from(topology: Topology, source: int) -> np.ndarray:
    from scipy.sparse.csgraph import shortest_path

    d = shortest_path(topology.adjacency(), unweighted=True, directed=True, indices=source)
    d.flags.writeable = False
    return d
