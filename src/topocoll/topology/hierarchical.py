"""Multi-dimensional (hierarchical) networks in the style of ASTRA-sim and LIBRA.

Ranks have mixed-radix coordinates, dimension 0 fastest:
``rank = x0 + size0 * (x1 + size1 * (x2 + ...))``. In dimension ``d`` the ranks that
differ only in coordinate ``d`` form a *group* of ``size_d`` ranks, connected according
to the dimension's kind with that dimension's bandwidth and latency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import TopologyError
from ..units import format_rate, format_time, parse_rate, parse_time
from ._common import cable
from .core import Dim, Link, Topology

__all__ = ["multi_dim"]


def multi_dim(dims: Sequence[Dim], *, name: str | None = None) -> Topology:
    """Return the hierarchical network described by ``dims``.

    Parameters
    ----------
    dims : sequence of Dim
        One per dimension, dimension 0 first (fastest-varying in rank ids). Kinds:

        ``'ring'``
            bidirectional ring over the group (a ring of 2 is one link each way);
        ``'line'``
            the same without the wrap-around link;
        ``'fully_connected'``
            a link each way between every pair of the group;
        ``'switch'``
            one new switch per group, with a link up and a link down per rank (a transfer
            crosses two links, as in ASTRA-sim).
    name : str, optional
        Default: the spec that :func:`~topocoll.topology.spec.parse_spec` parses back to
        the same topology, e.g. ``"hier:ring(4,100GB/s,200ns)xswitch(8,25GB/s,1.5us)"``.

    Returns
    -------
    Topology
        Links dimension by dimension (dimension 0 first, ``+`` before ``-`` per rank for
        rings and lines, exactly as :func:`~topocoll.topology.generators.torus` emits them),
        each with ``Link.dim`` set; ``dims`` set. Switches follow the ranks, those of
        dimension 0 first; within a dimension, groups are ordered by their lowest rank.

    Raises
    ------
    TopologyError
        ``item="field 'dims'"`` if ``dims`` is empty or holds something other than
        :class:`Dim` objects.

    See Also
    --------
    topocoll.topology.io.read_astra_network : build one from an ASTRA-sim ``network.yml``.

    Examples
    --------
    >>> from topocoll.topology import Dim
    >>> t = multi_dim([Dim("ring", 4, 100e9, 2e-7), Dim("switch", 8, 25e9, 1.5e-6)])
    >>> t.num_ranks, t.num_switches, len(t.links), t.describe()["rank_diameter_hops"]
    (32, 4, 128, 4)
    """
    dims = tuple(dims)
    if not dims or not all(isinstance(d, Dim) for d in dims):
        raise TopologyError("dims must be a non-empty sequence of Dim", item="field 'dims'")
    n = math.prod(d.size for d in dims)
    links: list[Link] = []
    num_switches = 0
    stride = 1
    for k, d in enumerate(dims):
        # group leaders: ranks whose coordinate k is 0, in increasing order
        leaders = [r for r in range(n) if (r // stride) % d.size == 0]
        if d.kind == "switch":
            for g, base in enumerate(leaders):
                sw = n + num_switches + g
                for x in range(d.size):
                    cable(links, base + x * stride, sw, d.bandwidth, d.latency, k)
            num_switches += len(leaders)
        else:
            for r in range(n):
                x = (r // stride) % d.size
                for y in _peers(d.kind, d.size, x):
                    links.append(Link(r, r + (y - x) * stride, d.bandwidth, d.latency, k))
        stride *= d.size
    label = name or "hier:" + "x".join(
        f"{d.kind}({d.size},{_quantity(d.bandwidth, format_rate, parse_rate)},"
        f"{_quantity(d.latency, format_time, parse_time)})" for d in dims)
    return Topology(label, n, num_switches, tuple(links), dims=dims)


def _peers(kind: str, size: int, x: int) -> list[int]:
    """Coordinates that ``x`` links to inside its group, in emission order."""
    if kind == "fully_connected":
        return [y for y in range(size) if y != x]
    wrap = kind == "ring" and size > 2  # a ring of 2 has one link each way, like a line
    out = []
    if x + 1 < size or wrap:
        out.append((x + 1) % size)
    if x - 1 >= 0 or wrap:
        out.append((x - 1) % size)
    return out


def _quantity(x: float, fmt, parse) -> str:
    """``x`` with a unit if that reads back exactly, else the plain SI number."""
    text = fmt(x, 15)
    return text if parse(text) == x else repr(x)
