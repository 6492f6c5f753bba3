"""Which fabric to build for a training job, at equal cost (``topocoll design``).

For each fabric family (:data:`FAMILIES`) and scale-up box, a design is a routed
topology of the job's GPUs with a bill of materials from the one price table
(:class:`~.prices.PriceTable`: dollars and watts per part, sources in ``prices.yaml``).
Every design is evaluated by the workload layer's iteration engine: the parallelism
search (:func:`~topocoll.workload.search_parallelism`) ranks every TP x PP x DP
factorization that fits in memory on that fabric, collectives chosen among
:data:`DESIGN_ALGORITHMS` (what collective libraries run) by the chosen cost model. So
each family is compared with its best parallelism, not a fixed one.

Four questions (``docs/design-fabric.md``):

- **at a budget** (``budget``): each family's per-port line rate is solved so that its
  bill equals the budget (cost is continuous and increasing in the rate, so bisection
  meets it to a part in 10^9), and the fastest design wins;
- **to a time target** (``time_target``): each family at the product line rates
  (:data:`PRODUCT_GBPS`) from the slowest up, the first that meets the target is that
  family's cheapest design; the cheapest family wins;
- **at a line rate** (``rate``): every family at the same per-port rate; the bills
  differ, the fastest wins (the rail-only paper's comparison: the same NICs, the spine
  removed);
- **none of these**: the budget is the bill of the reference design (the box as shipped:
  its NICs on a non-blocking rail-optimized Clos), the question "at equal cost to what is
  built today".

Families (:mod:`topocoll.topology.scaleout` builds the switched and direct ones):
``fat-tree`` (top-of-rack leaves, 2 or 3 tiers, any oversubscription), ``rail``
(rail-optimized), ``rail-only`` (no spine; cross-rail traffic through the box),
``torus`` (a 3-D torus of the GPUs, TPU-like: 4x4x4 cubes on copper, the faces through
optical circuit switches; no scale-up switch) and ``topoopt`` (TopoOpt's direct connect
of boxes by TotientPerms rings, host forwarding).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..errors import InputError
from ..topology import Topology
from ..topology.boxes import Box, find_box
from ..topology.scaleout import cluster, cluster_plans
from .prices import PriceTable

__all__ = ["FAMILIES", "Family", "register_family", "unregister_family", "family_names",
           "find_family", "DESIGN_ALGORITHMS", "PRODUCT_GBPS", "Bill", "DesignJob", "Design",
           "DesignResult", "family_topology", "family_bill", "torus_shape", "rate_for_budget",
           "libra_dims", "libra_topology", "design_curve", "CURVE_MULTIPLES",
           "PACKET_RECHECK_GPUS", "TOPOOPT_ROUNDS", "FLOW_RECHECK_WHOLE_GPUS",
           "budget_sensitivity", "scaled_prices", "LAYERED_BOUND_GPUS",
           "SENSITIVITY_FACTORS",
           "evaluate_design", "design_fabrics"]

_GBPS = 1e9 / 8

#: The built-in fabric families, each a generator of routed fabrics of any size (with the
#: registered ones: :func:`family_names`).
FAMILIES = ("fat-tree", "rail", "rail-only", "torus", "topoopt", "libra")

#: The collective algorithms a design is evaluated with: what NCCL-class libraries run
#: (ring, double binary tree, hierarchical), not the exact optima (``--algorithms`` widens
#: it; a design question compares fabrics under the schedules that will run on them).
DESIGN_ALGORITHMS = ("ring", "double_binary_tree", "hierarchical")

#: Line rates (Gb/s) for ``--time-target``: the speeds a NIC or switch port is sold at.
PRODUCT_GBPS = (100, 200, 400, 800, 1600)


@dataclass(frozen=True)
class Bill:
    """A bill of materials: ``(part, count, line rate in bytes/s, dollars each, watts
    each)`` per line."""

    lines: tuple[tuple[str, float, float, float, float], ...]

    @property
    def cost_usd(self) -> float:
        return math.fsum(c * usd for _, c, _, usd, _ in self.lines)

    @property
    def power_w(self) -> float:
        return math.fsum(c * w for _, c, _, _, w in self.lines)

    def to_dict(self) -> list[dict]:
        return [{"part": p, "count": c, "gbps": s / _GBPS, "usd_each": u, "watts_each": w}
                for p, c, s, u, w in self.lines]


@dataclass(frozen=True)
class DesignJob:
    """The training job a fabric is designed for."""

    model: object                    # workload.Transformer
    gpus: int
    device: object                   # workload.Device
    global_batch: int
    micro_batches: tuple[int, ...] = (1,)


@dataclass
class Design:
    """One family's design and how the job runs on it."""

    family: str
    box: str
    oversubscription: float
    rate_Bps: float
    topology: str
    bill: Bill
    feasible: bool
    reason: str = ""
    iteration_s: float | None = None
    mfu: float | None = None
    exposed_comm_s: float | None = None
    compute_s: float | None = None
    bubble_s: float | None = None
    parallel: str | None = None
    memory_gib: float | None = None
    configurations: int = 0
    bound: dict | None = None
    recheck: dict | None = None
    extra: dict = field(default_factory=dict)
    #: the routed fabric it was evaluated on (not part of the record)
    fabric: Topology | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"family": self.family, "box": self.box,
                "oversubscription": self.oversubscription,
                "rate_gbps": self.rate_Bps / _GBPS, "topology": self.topology,
                "cost_usd": self.bill.cost_usd, "power_w": self.bill.power_w,
                "feasible": self.feasible, "reason": self.reason,
                "iteration_s": self.iteration_s, "mfu": self.mfu,
                "exposed_comm_s": self.exposed_comm_s, "compute_s": self.compute_s,
                "bubble_s": self.bubble_s, "parallel": self.parallel,
                "memory_gib": self.memory_gib, "configurations": self.configurations,
                "bound": self.bound, "recheck": self.recheck, "bill": self.bill.to_dict(),
                **self.extra}


@dataclass(frozen=True)
class DesignResult:
    """Every design, the question asked and the winner."""

    mode: str                        # "budget", "time-target", "rate" or "equal-cost"
    budget_usd: float | None
    time_target_s: float | None
    reference: dict | None
    designs: tuple[Design, ...]

    #: Designs whose iteration is within this fraction of the winner's are reported as
    #: ties (a model's difference of a fraction of a percent is no reason to build one).
    TIE = 0.01

    @property
    def ties(self) -> tuple[Design, ...]:
        """Feasible designs within :attr:`TIE` of the winner (the winner included): of its
        iteration time, or of its cost for a time target."""
        w = self.winner
        if w is None:
            return ()
        if self.mode == "time-target":
            return tuple(d for d in self.designs if d.feasible and d.iteration_s is not None
                         and d.bill.cost_usd <= w.bill.cost_usd * (1 + self.TIE))
        return tuple(d for d in self.designs if d.feasible and d.iteration_s is not None
                     and d.iteration_s <= w.iteration_s * (1 + self.TIE))

    @property
    def winner(self) -> Design | None:
        ok = [d for d in self.designs if d.feasible and d.iteration_s is not None]
        if not ok:
            return None
        if self.mode == "time-target":
            return min(ok, key=lambda d: (d.bill.cost_usd, d.iteration_s, d.family))
        return min(ok, key=lambda d: (d.iteration_s, d.bill.cost_usd, d.family))

    def sensitivity(self) -> list[dict]:
        """Which price changes flip the ranking of a time target's answer: for every part
        and every other feasible design, the factor on that part's price at which the
        other design becomes cheaper than the winner (each design as chosen: its line rate
        and iteration time stay, its bill is linear in each price). Factors between 0.1
        and 10 are kept, nearest to 1 first. Empty for the other questions, where every
        design costs the budget and a price change moves the line rates instead."""
        w = self.winner
        if self.mode != "time-target" or w is None:
            return []
        out = []
        spend_w = _spend(w.bill)
        for d in self.designs:
            if d is w or not d.feasible:
                continue
            spend_d = _spend(d.bill)
            gap = d.bill.cost_usd - w.bill.cost_usd          # >= 0: the winner is cheapest
            for part in sorted(set(spend_w) | set(spend_d)):
                diff = spend_w.get(part, 0.0) - spend_d.get(part, 0.0)
                if diff == 0:
                    continue
                m = 1 + gap / diff
                if 0.1 <= m <= 10:
                    out.append({"part": part, "factor": m, "flips_to": d.family,
                                "box": d.box, "oversubscription": d.oversubscription})
        out.sort(key=lambda x: (abs(math.log(x["factor"])) if x["factor"] > 0 else math.inf,
                                x["part"], x["flips_to"], x["box"], x["oversubscription"]))
        return out

    def to_dict(self) -> dict:
        w = self.winner
        return {"mode": self.mode, "sensitivity": self.sensitivity(),
                "budget_usd": self.budget_usd,
                "time_target_s": self.time_target_s, "reference": self.reference,
                "winner": None if w is None else {"family": w.family, "box": w.box,
                                                  "oversubscription": w.oversubscription},
                "ties": [{"family": d.family, "box": d.box,
                          "oversubscription": d.oversubscription} for d in self.ties
                         if d is not w],
                "designs": [d.to_dict() for d in self.designs]}


def _spend(bill: Bill) -> dict[str, float]:
    out: dict[str, float] = {}
    for part, count, _, usd, _ in bill.lines:
        out[part] = out.get(part, 0.0) + count * usd
    return out


def torus_shape(n: int) -> tuple[int, ...]:
    """The 3-D torus for ``n`` chips: dimensions multiples of 4 where possible (whole
    4x4x4 cubes), as equal as possible, smallest first; fewer dimensions when ``n`` has
    no such factorization.

    >>> torus_shape(1024), torus_shape(8192), torus_shape(64), torus_shape(24)
    ((8, 8, 16), (16, 16, 32), (4, 4, 4), (2, 3, 4))
    """
    best = None
    for a in range(2, n + 1):
        if n % a:
            continue
        for b in range(a, n // a + 1):
            if (n // a) % b:
                continue
            c = n // (a * b)
            if c < b:
                continue
            key = (sum(x % 4 != 0 for x in (a, b, c)), c / a, (a, b, c))
            if best is None or key < best[0]:
                best = (key, (a, b, c))
    if best is None:
        return (n,)
    return best[1]


def _torus_cables(shape: Sequence[int]) -> tuple[int, int]:
    """(electrical, optical) cables of a torus of ``shape`` built from 4x4x4 cubes: a link
    inside a cube is copper; a link that leaves a cube, and every wrap-around link, goes
    through the optical circuit switches (TPU v4's construction)."""
    n = math.prod(shape)
    elec = opt = 0
    for a in shape:
        rings = n // a
        if a == 2:
            elec += rings
            continue
        inner = sum(1 for x in range(a - 1) if x // 4 == (x + 1) // 4)
        elec += rings * inner
        opt += rings * (a - inner)
    return elec, opt


#: A bill line before pricing: (part, count, line rate in bytes/s or 0).
PartCount = tuple[str, float, float]


@dataclass(frozen=True)
class Family:
    """A fabric family, or a design method, that :func:`design_fabrics` builds and costs.

    A family is a routed fabric for any number of GPUs at one per-port line rate and the
    parts it takes; :func:`design_fabrics` solves the line rate for a budget, walks the
    product rates for a time target, prices the parts from the one price table and
    evaluates the job on the fabric with the workload engine (:func:`evaluate_design`),
    so every family returns the same :class:`Design` record. A design method that
    chooses more than the fabric (TopoOpt: the fabric with the parallelism) gives
    ``evaluate``; one that spends the budget itself (LIBRA: a line rate per dimension)
    gives ``spend`` and no ``topology`` or ``parts``.

    Parameters
    ----------
    name : str
    description : str
        One line for ``topocoll design --help`` and the docs.
    topology : callable
        ``topology(box, gpus, rate, *, oversubscription, radix, block)`` -> the routed
        :class:`~topocoll.topology.Topology` (``rate``: bytes/s per port).
    parts : callable
        ``parts(box, gpus, rate, *, oversubscription, radix)`` -> ``[(part, count,
        speed)]`` of :class:`~.prices.PriceTable` parts (the scale-up switch ports are
        added when ``scaleup``).
    oversubscribed : bool
        Designed at every ``--oversubscription`` (Clos leaves); else at 1.
    every_box : bool
        One design per ``--box``; else only with the first box's GPU (a torus of chips).
    whole_fabric : bool
        Collectives keep the whole fabric (no sub-fabrics), so the flow-level re-check runs
        only up to :data:`FLOW_RECHECK_WHOLE_GPUS`.
    scaleup : bool
        The fabric is built of the boxes (the GPUs must be whole boxes) and keeps their
        scale-up switch (paid per GPU link).
    evaluate : callable, optional
        ``evaluate(design, job, box, *, algorithms, cost_model, cache, bounds)`` ->
        ``(Design, Topology)`` instead of :func:`evaluate_design` on ``topology``.
    spend : callable, optional
        For a method that spends a budget itself instead of one line rate (LIBRA: a rate
        per dimension): ``spend(box, job, budget, prices, radix)`` -> ``(Design,
        Topology)``, or ``(Design, None)`` when it cannot (the design says why). The
        engine evaluates the topology; at a line rate the budget is the rail Clos's at
        that rate, for a time target the rail Clos's at each product rate in turn.
    """

    name: str
    description: str
    topology: Callable[..., Topology] | None
    parts: Callable[..., list[PartCount]] | None
    oversubscribed: bool = False
    every_box: bool = True
    whole_fabric: bool = False
    scaleup: bool = True
    evaluate: Callable[..., tuple[Design, Topology]] | None = None
    spend: Callable[..., tuple[Design, Topology | None]] | None = None


_FAMILY_TABLE: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Add ``family`` to what :func:`design_fabrics` and ``topocoll design`` accept.

    Raises
    ------
    InputError
        If a family of that name is registered already.
    """
    if family.name in _FAMILY_TABLE:
        raise InputError(f"fabric family {family.name!r} is registered already",
                         item=family.name)
    _FAMILY_TABLE[family.name] = family
    return family


def unregister_family(name: str) -> None:
    """Remove a family added by :func:`register_family` (built-ins stay)."""
    if name in FAMILIES:
        raise InputError(f"{name!r} is a built-in family", item=name)
    _FAMILY_TABLE.pop(name, None)


def family_names() -> tuple[str, ...]:
    """Every family :func:`design_fabrics` accepts: the built-ins, then the registered."""
    return tuple(_FAMILY_TABLE)


def find_family(name: str) -> Family:
    """The registered family called ``name``.

    Raises
    ------
    InputError
        If there is none (the message lists the known ones).
    """
    fam = _FAMILY_TABLE.get(name)
    if fam is None:
        raise InputError(f"unknown fabric family {name!r}; known: "
                         f"{', '.join(family_names())}", item=name)
    return fam


def family_topology(family: str, box: Box, gpus: int, rate: float, *,
                    oversubscription: float = 1.0, radix: int = 64,
                    block: int | None = None) -> Topology:
    """The routed fabric of ``family`` for ``gpus`` GPUs of ``box`` at ``rate`` bytes/s
    per port (``block``: ``topoopt``'s boxes per data-parallel group)."""
    fam = find_family(family)
    if fam.topology is None:
        raise InputError(f"a {family} design's fabric comes from its own method, not one "
                         f"line rate", item=family)
    return fam.topology(box, gpus, rate, oversubscription=oversubscription, radix=radix,
                        block=block)


def _boxes(box: Box, gpus: int) -> int:
    if gpus % box.gpus:
        raise InputError(f"gpus {gpus} is not a whole number of {box.name} boxes "
                         f"({box.gpus} GPUs each)", item="gpus")
    return gpus // box.gpus


def family_bill(family: str, box: Box, gpus: int, rate: float, prices: PriceTable, *,
                oversubscription: float = 1.0, radix: int = 64) -> Bill:
    """What ``family``'s design costs and draws: its parts (:attr:`Family.parts`) priced
    by ``prices`` (see the module docstring of :mod:`topocoll.fabric.prices`), with the
    box's scale-up switch ports where the family keeps them."""
    fam = find_family(family)
    if fam.parts is None:
        raise InputError(f"a {family} design's bill comes from its own method, not one "
                         f"line rate", item=family)
    counts = list(fam.parts(box, gpus, rate, oversubscription=oversubscription,
                            radix=radix))
    if fam.scaleup:
        counts.append(("scaleup_port", gpus * box.nvlink_links, 0.0))
    return Bill(tuple((part, float(count), speed, prices.price(part, speed),
                       prices.power(part, speed)) for part, count, speed in counts if count))


# -- the built-in families ------------------------------------------------------------------

def _clos(kind: str) -> Family:
    """A folded Clos of boxes (:func:`~topocoll.topology.scaleout.cluster`): a NIC per
    GPU; every cable (NIC to leaf, leaf to spine, aggregation to core) a transceiver at
    each end, a fiber and a switch port at each switch end."""

    def topology(box, gpus, rate, *, oversubscription=1.0, radix=64, block=None):
        return cluster(box.name, _boxes(box, gpus), kind, nic_bandwidth=rate,
                       oversubscription=oversubscription, radix=radix)

    def parts(box, gpus, rate, *, oversubscription=1.0, radix=64):
        plans = cluster_plans(box.gpus, _boxes(box, gpus), kind, radix=radix,
                              oversubscription=oversubscription)
        cables = sum(sum(pl.cables) for pl in plans)
        return [("nic", gpus, rate), ("transceiver", 2 * cables, rate), ("fiber", cables, 0.0),
                ("switch_port", sum(pl.ports for pl in plans), rate)]

    desc = {"fat-tree": "top-of-rack leaves, 2 or 3 tiers, any oversubscription",
            "rail": "rail-optimized Clos (one leaf per GPU index)",
            "rail-only": "rails without a spine; cross-rail traffic through the box"}[kind]
    return Family(kind, desc, topology, parts, oversubscribed=True)


def _torus_topology(box, gpus, rate, *, oversubscription=1.0, radix=64, block=None):
    from ..topology.generators import torus

    shape = torus_shape(gpus)
    return torus(shape, bandwidth=rate,
                 name=f"torus:{'x'.join(map(str, shape))},bw={rate / _GBPS:g}Gbps")


def _torus_parts(box, gpus, rate, *, oversubscription=1.0, radix=64):
    """Six NIC-class ports per chip; copper cables inside 4x4x4 cubes; every other cable
    two transceivers, two OCS ports and a fiber."""
    elec, opt = _torus_cables(torus_shape(gpus))
    return [("nic", 2 * (elec + opt), rate), ("dac", elec, rate),
            ("transceiver", 2 * opt, rate), ("ocs_port", 2 * opt, 0.0), ("fiber", opt, 0.0)]


def _topoopt_topology(box, gpus, rate, *, oversubscription=1.0, radix=64, block=None):
    return cluster(box.name, _boxes(box, gpus), "direct", nic_bandwidth=rate, block=block)


def _topoopt_parts(box, gpus, rate, *, oversubscription=1.0, radix=64):
    """Per box, one port per GPU: NIC, transceiver, patch-panel port and half a fiber
    (TopoOpt's direct-connect count)."""
    return [("nic", gpus, rate), ("transceiver", gpus, rate), ("patch_panel_port", gpus, 0.0),
            ("fiber", gpus / 2, 0.0)]


def libra_dims(box: Box, gpus: int, radix: int = 64) -> tuple[int, ...]:
    """The hierarchy of the ``libra`` family: the box's scale-up switch, then pods of the
    most boxes up to ``radix / 2`` that divide the box count, then the pods (a dimension
    of size 1 dropped).

    >>> libra_dims(find_box("dgx-h100"), 1024), libra_dims(find_box("dgx-h100"), 128)
    ((8, 32, 4), (8, 16))
    """
    boxes = _boxes(box, gpus)
    pod = max(d for d in range(1, min(boxes, radix // 2) + 1) if boxes % d == 0)
    return tuple(x for x in (box.gpus, pod, boxes // pod) if x > 1)


def libra_topology(box: Box, gpus: int, scaleout_Bps: Sequence[float], *,
                   radix: int = 64) -> Topology:
    """The ``hier:`` fabric of a ``libra`` design: switch dimensions (:func:`libra_dims`),
    the box's scale-up rate in the first, ``scaleout_Bps`` per GPU in the others."""
    from ..topology.spec import parse_spec

    dims = libra_dims(box, gpus, radix)
    rates = (box.nvlink_Bps, *scaleout_Bps)
    if len(rates) != len(dims):
        raise InputError(f"{len(dims) - 1} scale-out bandwidths needed, got "
                         f"{len(scaleout_Bps)}", item="libra")
    return parse_spec("hier:" + "x ".join(f"switch({n},{b:.9g}B/s)"
                                          for n, b in zip(dims, rates, strict=True)))


_KAPPA0 = 1e-6     # $ per GB/s of the fixed scale-up dimension in LIBRA's cost (tiny, > 0)


def _libra_bill(box: Box, gpus: int, rates: Sequence[float], prices: PriceTable,
                radix: int) -> Bill:
    """Per scale-out dimension of size ``s`` at ``b``: a NIC per GPU, a cable with two
    transceivers and a fiber per GPU, and its switch port (an ``s``-port group of a
    ``radix``-port switch)."""
    dims = libra_dims(box, gpus, radix)
    lines: list[tuple[str, float, float, float, float]] = []

    def add(part, count, speed=0.0):
        if count:
            lines.append((part, float(count), speed, prices.price(part, speed),
                          prices.power(part, speed)))

    for size, b in zip(dims[1:], rates, strict=True):
        if size > radix:
            raise InputError(f"a libra dimension of {size} exceeds the switch radix {radix}",
                             item="radix")
        add("nic", gpus, b)
        add("transceiver", 2 * gpus, b)
        add("fiber", gpus)
        add("switch_port", gpus, b)
    add("scaleup_port", gpus * box.nvlink_links)
    return Bill(tuple(lines))


def _libra_design(box: Box, job: DesignJob, budget: float, prices: PriceTable, radix: int
                  ) -> tuple[Design, Topology | None]:
    """LIBRA's allocation of the scale-out bandwidth between the hierarchy's dimensions
    for this job (its ``perf`` objective, the time of LIBRA's model, the cost linearized
    from the price table at the box's NIC rate), then scaled so that the bill meets the
    budget (the allocation's ratios kept)."""
    from ..workload import memory_per_gpu, parse_parallel
    from .libra.io import workload_from_model
    from .libra.model import LibraDim, LibraNetwork

    dims = libra_dims(box, job.gpus, radix)
    k = len(dims) - 1
    ref = box.nic_Bps
    # $ per GB/s of per-GPU bandwidth, per dimension, from the bill at the reference rate
    kappa = [_KAPPA0]                  # the scale-up dimension is fixed by a constraint
    for i in range(k):
        rates = [ref if j == i else 0.0 for j in range(k)]
        b = _libra_bill(box, job.gpus, rates, prices, radix)
        kappa.append((b.cost_usd - _libra_bill(box, job.gpus, [0.0] * k, prices,
                                               radix).cost_usd) / job.gpus / (ref / 1e9))
    classes = ("InterPackage", "InterNode", "InterPod")[:len(dims)]
    costs = {c: {"Link": kp, "Switch": 0.0, "Nic": 0.0} for c, kp in zip(classes, kappa,
                                                                         strict=True)}
    net = LibraNetwork(tuple(LibraDim("Switch", n, c) for n, c in zip(dims, classes,
                                                                      strict=True)),
                       prices=costs)
    from ..workload import LayeredModel

    fixed = _libra_bill(box, job.gpus, [0.0] * k, prices, radix)
    empty = Design("libra", box.name, 1.0, 0.0, "", fixed, False)
    if isinstance(job.model, LayeredModel):
        from .libra.io import workload_from_layered

        if not fixed.cost_usd < budget:
            return replace(empty, reason=f"the budget is below the parts that do not scale "
                                         f"with the line rate ({fixed.cost_usd:,.0f} USD)"), \
                None
        w = workload_from_layered(net, job.model, job.device,
                                  batch_per_npu=_batch_per_rank(job))
        return _libra_allocated(box, job, budget, prices, radix, net, w, fixed,
                                f"dp={job.gpus}")
    par = None
    for rc in ("none", "selective", "full"):
        cand = parse_parallel(f"tp={box.gpus},pp=1", world=job.gpus, zero=1, recompute=rc,
                              micro_batch=job.micro_batches[0])
        if job.global_batch % (cand.dp * cand.micro_batch) == 0:
            cand = cand.with_(global_batch=job.global_batch)
            if memory_per_gpu(job.model, cand).peak <= job.device.memory:
                par = cand
                break
    if par is None:
        return replace(empty, reason="LIBRA models tensor and data parallelism only: no "
                                     f"tp={box.gpus},pp=1 configuration fits in "
                                     f"{job.device.name}'s memory"), None
    if not fixed.cost_usd < budget:
        return replace(empty, reason=f"the budget is below the parts that do not scale "
                                     f"with the line rate ({fixed.cost_usd:,.0f} USD)"), None
    w = workload_from_model(net, job.model, par, job.device)
    return _libra_allocated(box, job, budget, prices, radix, net, w, fixed, par.label())


def _libra_allocated(box, job, budget, prices, radix, net, w, fixed, label
                     ) -> tuple[Design, Topology]:
    """LIBRA's ``perf`` allocation of ``w`` on ``net``, scaled to the budget."""
    from .libra.solver import solve

    nv = box.nvlink_Bps / 1e9
    res = solve(net, w, objective="perf", constraints=[f"B0 == {nv:.9g}"],
                budget=budget - fixed.cost_usd + _KAPPA0 * nv * job.gpus)
    share = [b / sum(res.bandwidth_GBps[1:]) for b in res.bandwidth_GBps[1:]]
    scale = rate_for_budget(lambda r: _libra_bill(box, job.gpus, [r * x for x in share],
                                                  prices, radix).cost_usd, budget)
    rates = [scale * x for x in share]
    topo = libra_topology(box, job.gpus, rates, radix=radix)
    d = Design("libra", box.name, 1.0, sum(rates), topo.name,
               _libra_bill(box, job.gpus, rates, prices, radix), True,
               extra={"libra": {"dims": [d.size for d in net.dims],
                                "scaleout_gbps": [r / _GBPS for r in rates],
                                "allocation_parallel": label,
                                "libra_model_s": res.time_s}})
    return d, topo


def rate_for_budget(cost: Callable[[float], float], budget: float) -> float | None:
    """The line rate (bytes/s) at which ``cost(rate)`` equals ``budget`` (bisection on a
    continuous increasing cost; a fixed number of halvings, so the answer is the same on
    every machine), or None when even a vanishing rate costs more."""
    if not cost(0.0) < budget:
        return None
    lo, hi = 0.0, 100 * _GBPS
    while cost(hi) < budget:
        hi *= 2
        if hi > 1e18:
            raise InputError(f"budget {budget:g} USD buys an unbounded line rate",
                             item="budget")
    for _ in range(200):
        mid = (lo + hi) / 2
        if cost(mid) < budget:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return (lo + hi) / 2


def _worst_bound(collectives: dict) -> dict | None:
    """The collective furthest from its proved bound (the record's ``bound``), or None."""
    fr = [(c["bound_fraction"], k) for k, c in sorted(collectives.items())
          if c.get("bound_fraction") is not None]
    if not fr:
        return None
    f, k = min(fr)
    return {"worst_collective": k, "fraction_of_bound": f, "collectives": len(fr)}


def evaluate_design(design: Design, topology: Topology, job: DesignJob, *,
                    algorithms: Sequence[str] | None = DESIGN_ALGORITHMS, cost_model=None,
                    cache=None, bounds: bool = True) -> Design:
    """``design`` with the job's best parallelism on ``topology`` filled in (search over
    every factorization that fits; the winner re-simulated with bounds proved, so the
    record says how close its collectives are to what the fabric allows)."""
    design = replace(design, fabric=topology)
    from ..workload import LayeredModel, search_parallelism, simulate_iteration

    if isinstance(job.model, LayeredModel):
        return _evaluate_layered(design, topology, job, algorithms=algorithms,
                                 cost_model=cost_model, cache=cache, bounds=bounds)
    res = search_parallelism(job.model, job.gpus, topology, job.device,
                             global_batch=job.global_batch, micro_batches=job.micro_batches,
                             cost_model=cost_model, algorithms=algorithms, cache=cache)
    if not res.ranked:
        return replace(design, feasible=False, configurations=res.enumerated,
                       reason=f"no parallelism of {job.gpus} GPUs fits in "
                              f"{job.device.name}'s memory")
    best = res.best
    r = best.result
    bound = None
    if bounds:
        rb = simulate_iteration(job.model, best.parallel, topology, job.device,
                                cost_model=cost_model, algorithms=algorithms, cache=cache,
                                check_memory=False)
        bound = _worst_bound(rb.collectives)
    return replace(design, iteration_s=r.iteration_s, mfu=r.mfu,
                   exposed_comm_s=r.exposed_comm_s, compute_s=r.compute_s,
                   bubble_s=r.bubble_s, parallel=best.parallel.label(),
                   memory_gib=r.memory_gib, configurations=res.enumerated, bound=bound)


def _batch_per_rank(job: DesignJob) -> int:
    if job.global_batch % job.gpus:
        raise InputError(f"a data-parallel model needs a global batch that is a multiple of "
                         f"the GPUs ({job.gpus}), got {job.global_batch}",
                         item="global_batch")
    return job.global_batch // job.gpus


#: The largest data-parallel job whose collectives' bounds are proved for the record: an
#: all-to-all over every GPU needs the exact cut of the whole fabric (a max-flow per
#: candidate cut), which took minutes at 1,024 GPUs.
LAYERED_BOUND_GPUS = 256


def _evaluate_layered(design: Design, topology: Topology, job: DesignJob, *, algorithms,
                      cost_model, cache, bounds: bool) -> Design:
    """A layered model (ResNet, VGG, DLRM) is data parallel on every GPU (DLRM's tables
    model-parallel with an all-to-all each way): one configuration, no search."""
    from ..workload import CollectiveCoster, simulate_dp_iteration

    def run(with_bounds: bool):
        cc = CollectiveCoster(topology, model=cost_model, algorithms=algorithms, cache=cache,
                              bounds=with_bounds)
        return simulate_dp_iteration(job.model, topology, job.device,
                                     batch_per_rank=_batch_per_rank(job), ranks=job.gpus,
                                     coster=cc)

    try:
        r = run(False)
    except InputError as e:
        if "memory" not in str(e):
            raise
        return replace(design, feasible=False, configurations=1, reason=str(e))
    bound = None
    if bounds and job.gpus <= LAYERED_BOUND_GPUS:
        bound = _worst_bound(run(True).collectives)
    return replace(design, iteration_s=r.iteration_s, mfu=r.mfu,
                   exposed_comm_s=r.exposed_comm_s, compute_s=r.compute_s,
                   bubble_s=r.bubble_s, parallel=r.parallel, memory_gib=r.memory_gib,
                   configurations=1, bound=bound)


#: Rounds of TopoOpt's alternation (strategy for the topology, topology for the strategy).
TOPOOPT_ROUNDS = 3


def _stage_block(job: DesignJob, box: Box, parallel: str) -> int:
    """The boxes of one pipeline stage's data-parallel group under ``parallel`` (ranks in
    tp-dp-pp order: a stage is ``boxes / pp`` consecutive boxes)."""
    from ..workload import LayeredModel, parse_parallel

    boxes = _boxes(box, job.gpus)
    if isinstance(job.model, LayeredModel):
        return boxes
    pp = parse_parallel(parallel, world=job.gpus).pp
    return boxes // pp if pp > 1 and boxes % pp == 0 and boxes // pp >= 1 else boxes


def _evaluate_topoopt(d: Design, job: DesignJob, box: Box, *, algorithms, cost_model, cache,
                      bounds: bool) -> tuple[Design, Topology]:
    """TopoOpt's alternation: the best parallelism for the direct connect (rings over all
    boxes), then the direct connect for that parallelism (rings inside each stage's
    data-parallel group, the stages joined box to box), again until the groups repeat
    (at most :data:`TOPOOPT_ROUNDS`); the best pair is kept, as TopoOpt keeps it."""
    boxes = _boxes(box, job.gpus)
    block = boxes
    rounds: list[dict] = []
    best: tuple[Design, Topology] | None = None
    for _ in range(TOPOOPT_ROUNDS):
        topo = family_topology("topoopt", box, job.gpus, d.rate_Bps, block=block)
        e = evaluate_design(replace(d, topology=topo.name), topo, job, algorithms=algorithms,
                            cost_model=cost_model, cache=cache, bounds=False)
        if not e.feasible:
            return e, topo
        rounds.append({"block": block, "iteration_s": e.iteration_s, "parallel": e.parallel})
        if best is None or e.iteration_s < best[0].iteration_s:
            best = (e, topo)
        nxt = _stage_block(job, box, e.parallel)
        if any(r["block"] == nxt for r in rounds):
            break
        block = nxt
    e, topo = best
    if bounds:
        e = evaluate_design(e, topo, job, algorithms=algorithms, cost_model=cost_model,
                            cache=cache, bounds=True)
    e.extra = {**e.extra, "topoopt": {"rounds": rounds,
                                      "block": topo.meta["scaleout"]["block"]}}
    return e, topo


def _candidates(families: Sequence[str], boxes: Sequence[Box],
                oversubscriptions: Sequence[float]) -> list[tuple[str, Box, float]]:
    out = []
    for name in families:
        fam = find_family(name)
        for box in (boxes if fam.every_box else boxes[:1]):
            for o in (oversubscriptions if fam.oversubscribed else (1.0,)):
                out.append((name, box, float(o)))
    return out


def design_fabrics(job: DesignJob, *, boxes: Sequence[str] = ("dgx-h100",),
                   families: Sequence[str] | None = None,
                   oversubscriptions: Sequence[float] = (1.0,),
                   budget: float | None = None, time_target: float | None = None,
                   prices: PriceTable | None = None, radix: int = 64,
                   algorithms: Sequence[str] | None = DESIGN_ALGORITHMS, cost_model=None,
                   cache=None, bounds: bool = True, recheck: bool = True,
                   libra_equal_split: bool = False, packet_recheck: bool = False,
                   rate: float | None = None,
                   progress: Callable[[str], None] | None = None) -> DesignResult:
    """Every family's design for ``job`` (see the module docstring for the three
    questions); with ``recheck`` the winner is simulated again at flow level; with
    ``libra_equal_split`` every ``libra`` design is compared with the same budget split
    equally between its scale-out dimensions (LIBRA's baseline), both by the engine.
    ``families`` defaults to every registered one (:func:`family_names`).

    Raises
    ------
    InputError
        An unknown family or box, a bad budget or target, GPUs that are not whole boxes.
    """
    if budget is not None and time_target is not None:
        raise InputError("give budget or time_target, not both", item="budget, time_target")
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise InputError(f"budget must be a positive number of dollars, got {budget}",
                         item="budget")
    if time_target is not None and not (math.isfinite(time_target) and time_target > 0):
        raise InputError(f"time_target must be positive seconds, got {time_target}",
                         item="time_target")
    if families is None:
        families = family_names()
    if not families:
        raise InputError("no fabric family given", item="families")
    for o in oversubscriptions:
        if not (math.isfinite(o) and o >= 1):
            raise InputError(f"oversubscription must be >= 1, got {o}",
                             item="oversubscription")
    p = prices or PriceTable()
    bxs = [find_box(b) if isinstance(b, str) else b for b in boxes]
    cands = _candidates(families, bxs, oversubscriptions)
    for fam, box, _ in cands:
        if find_family(fam).scaleup:
            _boxes(box, job.gpus)
    reference = None
    if rate is not None and (budget is not None or time_target is not None):
        raise InputError("give one of rate, budget and time_target",
                         item="rate, budget, time_target")
    if rate is not None and not (math.isfinite(rate) and rate > 0):
        raise InputError(f"rate must be a positive line rate, got {rate}", item="rate")
    mode = "budget" if budget is not None else (
        "time-target" if time_target is not None else (
            "rate" if rate is not None else "equal-cost"))
    if mode == "equal-cost":
        ref_box = bxs[0]
        budget = family_bill("rail", ref_box, job.gpus, ref_box.nic_Bps, p,
                             radix=radix).cost_usd
        reference = {"family": "rail", "box": ref_box.name,
                     "rate_gbps": ref_box.nic_Bps / _GBPS, "cost_usd": budget}
    designs: list[Design] = []
    for fam, box, o in cands:
        if progress is not None:
            progress(f"{fam} ({box.name}" + ("" if o == 1 else f", oversub {o:g}") + ")")

        def bill(rate, fam=fam, box=box, o=o):
            return family_bill(fam, box, job.gpus, rate, p, oversubscription=o, radix=radix)

        spend = find_family(fam).spend
        if spend is not None:
            if mode == "time-target":
                designs.append(_spend_to_target(spend, box, job, time_target, p, radix,
                                                algorithms, cost_model, cache, bounds))
                continue
            # at a line rate: the budget of the rail-optimized Clos at that rate
            lb = budget if mode != "rate" else family_bill("rail", box, job.gpus, rate, p,
                                                           radix=radix).cost_usd
            d, topo = spend(box, job, lb, p, radix)
            if topo is not None:
                d = evaluate_design(d, topo, job, algorithms=algorithms,
                                    cost_model=cost_model, cache=cache, bounds=bounds)
                if libra_equal_split and fam == "libra":
                    d.extra["libra"]["equal_split"] = _libra_equal_split(
                        d, box, job, lb, p, radix, algorithms, cost_model, cache)
            designs.append(d)
            continue
        if mode == "time-target":
            designs.append(_to_target(fam, box, o, bill, job, time_target, radix,
                                      algorithms, cost_model, cache, bounds))
            continue
        r_fam = rate if mode == "rate" else rate_for_budget(
            lambda r, bill=bill: bill(r).cost_usd, budget)
        if r_fam is None:
            b0 = bill(0.0)
            designs.append(Design(fam, box.name, o, 0.0, "", b0, False,
                                  f"the budget is below the parts that do not scale with "
                                  f"the line rate ({b0.cost_usd:,.0f} USD)"))
            continue
        designs.append(_build(fam, box, o, r_fam, bill(r_fam), job, radix, algorithms,
                              cost_model, cache, bounds)[0])
    res = DesignResult(mode, budget, time_target, reference, tuple(designs))
    if recheck and res.winner is not None:
        _recheck(res.winner, job, boxes=bxs, radix=radix, algorithms=algorithms, cache=cache,
                 packet=packet_recheck)
    return res


#: Factors on one part's price that ``budget_sensitivity`` tries.
SENSITIVITY_FACTORS = (0.5, 2.0)


def scaled_prices(prices: PriceTable, part: str, factor: float) -> PriceTable:
    """``prices`` with ``part``'s dollars multiplied by ``factor``."""
    from .prices import PARTS

    if part not in PARTS:
        raise InputError(f"unknown part {part!r}; known: {', '.join(PARTS)}", item=part)
    v = getattr(prices, part)
    new = {s: x * factor for s, x in v.items()} if hasattr(v, "items") else v * factor
    return replace(prices, **{part: new})


def budget_sensitivity(result: DesignResult, job: DesignJob, *,
                       prices: PriceTable | None = None,
                       factors: Sequence[float] = SENSITIVITY_FACTORS, radix: int = 64,
                       algorithms: Sequence[str] | None = DESIGN_ALGORITHMS, cost_model=None,
                       cache=None) -> list[dict]:
    """Which price changes flip the answer at a budget: for every part that the winner or
    the runner-up (the fastest design of another family) buys, its price times each of
    ``factors``, both designs solved again at the same budget (their line rates move) and
    evaluated again; a flip is the runner-up faster by more than the tie margin. Each
    point is two design evaluations (bounds and re-checks off)."""
    if result.mode == "time-target":
        raise InputError("a time target's sensitivity is exact without re-evaluation "
                         "(DesignResult.sensitivity)", item="sensitivity")
    w = result.winner
    if w is None:
        return []
    others = sorted((d for d in result.designs if d.feasible and d.iteration_s is not None
                     and d.family != w.family), key=lambda d: (d.iteration_s, d.family))
    if not others:
        return []
    r = others[0]
    p = prices or PriceTable()
    boxes = [find_box(w.box)] + ([find_box(r.box)] if r.box != w.box else [])
    out = []
    for part in sorted(set(_spend(w.bill)) | set(_spend(r.bill))):
        for f in factors:
            res = design_fabrics(job, boxes=boxes, families=(w.family, r.family),
                                 oversubscriptions=sorted({w.oversubscription,
                                                           r.oversubscription}),
                                 budget=result.budget_usd, prices=scaled_prices(p, part, f),
                                 radix=radix, algorithms=algorithms, cost_model=cost_model,
                                 cache=cache, bounds=False, recheck=False)

            def pick(d0, res=res):
                return next((d for d in res.designs if (d.family, d.box, d.oversubscription)
                             == (d0.family, d0.box, d0.oversubscription)), None)
            a, b = pick(w), pick(r)
            ta = a.iteration_s if a is not None and a.feasible else None
            tb = b.iteration_s if b is not None and b.feasible else None
            flips = tb is not None and (ta is None or tb < ta * (1 - result.TIE))
            out.append({"part": part, "factor": f, "winner": w.family, "runner_up": r.family,
                        "winner_s": ta, "runner_up_s": tb, "flips": flips})
    return out


#: Families whose collectives are costed on the whole fabric (hierarchies and tori have no
#: route sub-fabrics), and the largest job whose winner of those is re-checked at flow
#: level: a data-parallel all-reduce over 8,192 GPUs of a hierarchy took more than ten
#: minutes at flow level.
FLOW_RECHECK_WHOLE_GPUS = 2048

#: The largest job whose winner is re-checked at packet level on request (``packet``):
#: 32 GPUs of a small transformer take about two minutes on one core.
PACKET_RECHECK_GPUS = 64

#: Budgets of ``design_curve`` as multiples of the answer's budget.
CURVE_MULTIPLES = (0.25, 0.5, 1.0, 2.0, 4.0)


def design_curve(job: DesignJob, budget: float, *, multiples: Sequence[float] =
                 CURVE_MULTIPLES, **kw) -> list[DesignResult]:
    """Every family at ``budget`` times each of ``multiples`` (bounds and the flow re-check
    off): iteration time against cost per family, for the report's Pareto front."""
    kw = {**kw, "bounds": False, "recheck": False}
    kw.pop("time_target", None)
    return [design_fabrics(job, budget=budget * m, **kw) for m in multiples]


def _recheck(d: Design, job: DesignJob, *, boxes, radix, algorithms, cache,
             packet: bool = False) -> None:
    """The winner's parallelism re-simulated at flow level (max-min fair flows, steps
    relaxed: :class:`~topocoll.sim.FlowSim`) on the same fabric, and with ``packet`` at
    packet level (:class:`~topocoll.sim.PacketSim`) for jobs of at most
    :data:`PACKET_RECHECK_GPUS` GPUs;
    ``d.recheck`` says by how much the iteration moves."""
    from ..sim.backends import cost_model
    from ..workload import parse_parallel, simulate_iteration

    if find_family(d.family).whole_fabric and job.gpus > FLOW_RECHECK_WHOLE_GPUS:
        d.recheck = {"backend": "flow", "skipped":
                     f"a {d.family} fabric has no sub-fabrics (every collective is simulated "
                     f"on all {job.gpus:,} GPUs' links); the flow-level re-check is run up "
                     f"to {FLOW_RECHECK_WHOLE_GPUS:,} GPUs"}
        return
    topo = d.fabric                # every evaluated design carries its fabric
    assert topo is not None, d.family
    from ..workload import LayeredModel, simulate_dp_iteration

    def run(backend: str):
        if isinstance(job.model, LayeredModel):
            return simulate_dp_iteration(job.model, topo, job.device,
                                         batch_per_rank=_batch_per_rank(job), ranks=job.gpus,
                                         cost_model=cost_model(backend),
                                         algorithms=algorithms, cache=cache)
        par = parse_parallel(d.parallel, world=job.gpus)
        return simulate_iteration(job.model, par, topo, job.device,
                                  cost_model=cost_model(backend), algorithms=algorithms,
                                  cache=cache, check_memory=False)

    r = run("flow")
    d.recheck = {"backend": "flow", "iteration_s": r.iteration_s,
                 "exposed_comm_s": r.exposed_comm_s,
                 "difference": r.iteration_s / d.iteration_s - 1}
    if packet and job.gpus <= PACKET_RECHECK_GPUS:
        p = run("packet")
        d.recheck["packet"] = {"iteration_s": p.iteration_s,
                               "exposed_comm_s": p.exposed_comm_s,
                               "difference": p.iteration_s / d.iteration_s - 1}


def _libra_equal_split(d: Design, box: Box, job: DesignJob, budget: float,
                       prices: PriceTable, radix: int, algorithms, cost_model, cache) -> dict:
    """The same budget with the scale-out bandwidth split equally between the dimensions,
    evaluated by the engine like the allocation."""
    k = len(d.extra["libra"]["scaleout_gbps"])
    r = rate_for_budget(lambda x: _libra_bill(box, job.gpus, [x] * k, prices,
                                              radix).cost_usd, budget)
    topo = libra_topology(box, job.gpus, [r] * k, radix=radix)
    e = evaluate_design(replace(d, extra={}), topo, job, algorithms=algorithms,
                        cost_model=cost_model, cache=cache, bounds=False)
    return {"scaleout_gbps": [r / _GBPS] * k, "iteration_s": e.iteration_s,
            "parallel": e.parallel}


def _spend_to_target(spend, box, job, target, prices, radix, algorithms, cost_model, cache,
                     bounds) -> Design:
    """A budget-spending method (LIBRA's allocation) at the budgets of the product line
    rates' reference bills (the cost of a rail-optimized Clos at each rate), the first
    that meets ``target``."""
    last = None
    for gbps in PRODUCT_GBPS:
        budget = family_bill("rail", box, job.gpus, gbps * _GBPS, prices,
                             radix=radix).cost_usd
        d, topo = spend(box, job, budget, prices, radix)
        if topo is None:
            return d
        d = evaluate_design(d, topo, job, algorithms=algorithms, cost_model=cost_model,
                            cache=cache, bounds=False)
        if d.iteration_s <= target:
            return evaluate_design(d, topo, job, algorithms=algorithms,
                                   cost_model=cost_model, cache=cache, bounds=True) \
                if bounds else d
        last = d
    return replace(last, feasible=False,
                   reason=f"misses {target:g} s even at the budget of {PRODUCT_GBPS[-1]} "
                          f"Gb/s rails ({last.iteration_s:.3g} s)")


def _to_target(fam, box, o, bill, job, target, radix, algorithms, cost_model, cache,
               bounds) -> Design:
    """The slowest product line rate at which ``fam`` meets ``target`` (the cheapest:
    cost rises with the rate); infeasible with the fastest result when none does."""
    last = None
    for gbps in PRODUCT_GBPS:
        rate = gbps * _GBPS
        d, topo = _build(fam, box, o, rate, bill(rate), job, radix, algorithms, cost_model,
                         cache, False)
        if not d.feasible:
            return d
        if d.iteration_s <= target:
            if bounds:
                extra = d.extra
                d = evaluate_design(d, topo, job, algorithms=algorithms,
                                    cost_model=cost_model, cache=cache, bounds=True)
                d.extra = extra
            return d
        last = d
    return replace(last, feasible=False,
                   reason=f"misses {target:g} s even at {PRODUCT_GBPS[-1]} Gb/s per port "
                          f"({last.iteration_s:.3g} s)")


def _build(name: str, box: Box, o: float, rate: float, bill: Bill, job: DesignJob,
           radix: int, algorithms, cost_model, cache, bounds: bool
           ) -> tuple[Design, Topology]:
    """``name``'s design at one line rate, evaluated by the workload engine (or by the
    family's own ``evaluate``)."""
    fam = find_family(name)
    if fam.evaluate is not None:
        return fam.evaluate(Design(name, box.name, o, rate, "", bill, True), job, box,
                            algorithms=algorithms, cost_model=cost_model, cache=cache,
                            bounds=bounds)
    topo = family_topology(name, box, job.gpus, rate, oversubscription=o, radix=radix)
    d = Design(name, box.name, o, rate, topo.name, bill, True)
    return evaluate_design(d, topo, job, algorithms=algorithms, cost_model=cost_model,
                           cache=cache, bounds=bounds), topo


for _kind in ("fat-tree", "rail", "rail-only"):
    register_family(_clos(_kind))
register_family(Family("torus", "a 3-D torus of the GPUs, TPU-like: 4x4x4 cubes on copper, "
                       "the faces through optical circuit switches; no scale-up switch",
                       _torus_topology, _torus_parts, every_box=False, whole_fabric=True,
                       scaleup=False))
register_family(Family("topoopt", "TopoOpt's direct connect of boxes by TotientPerms rings, "
                       "host forwarding, co-optimized with the parallelism",
                       _topoopt_topology, _topoopt_parts, evaluate=_evaluate_topoopt))
register_family(Family("libra", "LIBRA's bandwidth per dimension of a multi-dimensional "
                       "fabric of boxes under the budget", None, None, whole_fabric=True,
                       spend=_libra_design))
