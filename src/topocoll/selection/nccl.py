"""NCCL's algorithms as names a user can give with ``-a``: ``nccl`` and ``nccl_<algorithm>``.

``nccl`` is what NCCL would run (:func:`~topocoll.cost.nccl.nccl_choose`: algorithm and
protocol by least predicted time); ``nccl_ring``, ``nccl_tree``, ``nccl_nvls``,
``nccl_nvls_tree``, ``nccl_pat`` and ``nccl_p2p`` force one algorithm (its best protocol),
as ``NCCL_ALGO`` does. They are costed by the NCCL model of :mod:`topocoll.cost.nccl`, not
synthesized: NVLink SHARP reduces inside the switch, which no schedule can express, so
these rows carry no schedule (``steps = transfers = 0``) and are not verified.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..cost.nccl import NCCL_KIND_ALGORITHMS, NcclEstimate, nccl_choose
from ..errors import NotSupportedError
from ..topology import Topology

__all__ = ["NCCL_NAME", "nccl_names", "is_nccl_name", "nccl_evaluate", "in_network_bound"]

#: The name of NCCL's own choice.
NCCL_NAME = "nccl"


def nccl_names(kind: str) -> tuple[str, ...]:
    """The NCCL names that exist for collective ``kind``.

    >>> nccl_names("allgather")
    ('nccl', 'nccl_ring', 'nccl_nvls', 'nccl_pat')
    """
    algos = NCCL_KIND_ALGORITHMS.get(kind, ())
    return (NCCL_NAME,) + tuple(f"{NCCL_NAME}_{a}" for a in algos) if algos else ()


def is_nccl_name(name: str) -> bool:
    """Whether ``name`` is ``nccl`` or ``nccl_<something>`` (known or not)."""
    return name == NCCL_NAME or name.startswith(NCCL_NAME + "_")


def in_network_bound(topology: Topology, kind: str, group: Sequence[int],
                     message_bytes: float) -> float:
    """A lower bound on any allreduce, allgather or reduce-scatter when switches may
    reduce: each rank must still send out (or take in) the ``(n-1)/n`` of the data that
    is not its own, at most at its egress bandwidth.

    Raises
    ------
    NotSupportedError
        For another kind (the argument above is made for these three only).
    """
    if kind not in ("allreduce", "allgather", "reduce_scatter"):
        raise NotSupportedError(f"the in-switch bound is for allreduce, allgather and "
                                f"reduce_scatter, not {kind}")
    n = len(group)
    egress = topology.egress_bandwidth()[list(group)].min()
    return message_bytes * (n - 1) / n / float(egress)


def nccl_evaluate(topology: Topology, kind: str, sizes: Sequence[float],
                  names: Sequence[str], *, ranks: Sequence[int] | None = None
                  ) -> list[tuple[str, float, NcclEstimate, float | None]]:
    """``(name, size, estimate, in-network bound or None)`` per NCCL name and size; the
    bound is :func:`in_network_bound` where the algorithm reduces in the switch (the
    schedule lower bounds do not hold there) and None otherwise.

    Raises
    ------
    NotSupportedError
        For a name that is not an NCCL algorithm of ``kind``, a topology that is not a box
        preset, or an algorithm that does not apply (the reason says why).

    Examples
    --------
    >>> from topocoll.topology import dgx_a100
    >>> [(n, e.algorithm, e.protocol) for n, _, e, _ in
    ...  nccl_evaluate(dgx_a100(1), "allreduce", [2**30], ["nccl"])]
    [('nccl', 'ring', 'Simple')]
    """
    valid = nccl_names(kind)
    for name in names:
        if name not in valid:
            raise NotSupportedError(f"no algorithm {name!r} for {kind}; NCCL names: "
                                    f"{', '.join(valid) or 'none'}")
    group = list(ranks) if ranks is not None else list(range(topology.num_ranks))
    out = []
    for name in names:
        algos = None if name == NCCL_NAME else [name[len(NCCL_NAME) + 1:]]
        for size in sizes:
            e = nccl_choose(topology, kind, size, ranks=group, algorithms=algos)
            bound = in_network_bound(topology, kind, group, size) if e.in_network else None
            out.append((name, float(size), e, bound))
    return out
