"""LIBRA's inputs: its text workload and communicator files, and workloads from our models.

The LIBRA text dialect (``../shared/reference/formats.md`` section 3): no header, one line
per layer of twelve whitespace-separated fields: name, reserved, then forward, input-
gradient and weight-gradient each as (compute ns, collective type, bytes), then an update
time. The communicator YAML gives, per phase (``Forward``, ``InputGrad``, ``WeightGrad``),
the NPUs used in every dimension (``-1``: not used). LIBRA's shipped training loop
(``no_overlap``) adds every compute time and every collective time; so do we.

From our own models: tensor parallelism takes the innermost dimensions (the rank order of
:mod:`topocoll.workload.parallel`), data parallelism the rest, so the communicators follow
from ``tp`` and the network (e.g. ``tp=16`` on ``[4, 8, 4, 32]`` gives Forward
``[4, 4, -1, -1]`` and WeightGrad ``[-1, 2, 4, 32]``, LIBRA's own GPT-3 file).

Examples
--------
>>> from topocoll.fabric import parse_network
>>> communicators(parse_network("hier:ring(4)x fc(8)x ring(4)x switch(32)"), 16)
((4, 4, -1, -1), (-1, 2, 4, 32))
"""

from __future__ import annotations

from pathlib import Path

from ...errors import InputError
from ...workload import (
    Device,
    LayeredModel,
    Parallelism,
    Transformer,
    block_compute_time,
    layered_forward_time,
    stage_parameters,
)
from .model import LibraCollective, LibraLayer, LibraNetwork, LibraWorkload

__all__ = ["read_libra_workload", "read_communicator", "read_cost_model", "communicators",
           "workload_from_model", "workload_from_layered", "LIBRA_TYPES",
           "write_libra_workload", "write_libra_inputs"]

#: LIBRA collective names and ours.
LIBRA_TYPES = {"ALLREDUCE": "allreduce", "ALLGATHER": "allgather",
               "REDUCESCATTER": "reduce_scatter", "ALLTOALL": "alltoall", "NONE": None}
_PHASES = ("Forward", "InputGrad", "WeightGrad")


def read_communicator(path: str | Path, dims: int) -> dict[str, tuple[int, ...]]:
    """The three phases' NPU counts per dimension from a LIBRA communicator YAML."""
    from ...topology.io import read_mapping

    p = Path(path)
    doc = read_mapping(p)
    if not isinstance(doc, dict):
        raise InputError(f"{p}: a communicator file is a mapping of phases", item=str(p))
    out = {}
    for ph in _PHASES:
        v = doc.get(ph)
        if not isinstance(v, list) or len(v) != dims or not all(
                isinstance(x, int) and not isinstance(x, bool) and (x == -1 or x >= 1)
                for x in v):
            raise InputError(f"{p}: {ph} must list {dims} NPU counts (-1: unused), got {v!r}",
                             item=f"field '{ph}'")
        out[ph] = tuple(v)
    return out


def read_cost_model(path: str | Path, net: LibraNetwork | None = None
                    ) -> dict[str, dict[str, float]]:
    """Unit prices ($ per GB/s) per cost class from a LIBRA cost-model YAML: a mapping of
    cost classes to ``Link``, ``Switch`` and ``Nic`` (missing ones cost 0). With ``net``,
    every cost class the network uses must be priced.

    Raises
    ------
    InputError
        Naming the file and the class or field that is wrong.
    """
    from ...topology.io import read_mapping

    p = Path(path)
    doc = read_mapping(p)
    if not isinstance(doc, dict) or not doc:
        raise InputError(f"{p}: a cost model is a mapping of cost classes", item=str(p))
    out = {}
    for cls, prices in doc.items():
        if not isinstance(prices, dict):
            raise InputError(f"{p}: {cls} must map Link, Switch and Nic to prices",
                             item=f"cost class '{cls}'")
        row = {"Link": 0.0, "Switch": 0.0, "Nic": 0.0}
        for k, v in prices.items():
            if k not in row:
                raise InputError(f"{p}: {cls}: unknown field {k!r} (Link, Switch, Nic)",
                                 item=f"field '{k}'")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                raise InputError(f"{p}: {cls}.{k} must be a non-negative price, got {v!r}",
                                 item=f"field '{k}'")
            row[k] = float(v)
        out[str(cls)] = row
    for d in net.dims if net is not None else ():
        if d.cost_class not in out:
            raise InputError(f"{p}: no prices for cost class {d.cost_class!r}, which the "
                             f"network uses", item=f"cost class '{d.cost_class}'")
    return out


def read_libra_workload(path: str | Path, communicator: dict[str, tuple[int, ...]],
                        name: str | None = None) -> LibraWorkload:
    """A :class:`~topocoll.fabric.libra.LibraWorkload` from a LIBRA text workload."""
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read workload {p}: {getattr(e, 'strerror', None) or e}",
                         item=str(p)) from None
    layers = []
    for no, line in enumerate(lines, 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 12:
            raise InputError(f"{p}:{no}: a LIBRA layer line has 12 fields, got {len(f)}",
                             item=f"line {no}")
        comp_s, colls = [], []
        for k, ph in enumerate(_PHASES):
            comp, typ, size = f[2 + 3 * k], f[3 + 3 * k].upper(), f[4 + 3 * k]
            try:
                c, s = float(comp), float(size)
            except ValueError:
                raise InputError(f"{p}:{no}: {ph} compute and size must be numbers",
                                 item=f"line {no}") from None
            if not (c >= 0 and s >= 0):
                raise InputError(f"{p}:{no}: negative {ph} compute or size", item=f"line {no}")
            if typ not in LIBRA_TYPES:
                raise InputError(f"{p}:{no}: unknown collective {typ!r} (valid: "
                                 f"{', '.join(LIBRA_TYPES)})", item=f"line {no}")
            comp_s.append(c * 1e-9)
            colls.append((LibraCollective(LIBRA_TYPES[typ], s, communicator[ph]),)
                         if LIBRA_TYPES[typ] and s > 0 else ())
        layers.append(LibraLayer(f[0], *comp_s, *colls))
    if not layers or not any(ly.fwd_s or ly.ig_s or ly.wg_s or ly.fwd or ly.ig or ly.wg
                             for ly in layers):
        raise InputError(f"{p}: no layers", item=str(p))
    return LibraWorkload.from_layers(layers, name or p.stem)


def communicators(net: LibraNetwork, tp: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(tensor-parallel, data-parallel) NPU counts per dimension when ``tp`` takes the
    innermost dimensions and data parallelism the rest of the network."""
    rem = tp
    t_c, d_c = [], []
    for i, d in enumerate(net.dims):
        if rem >= d.size:
            if rem % d.size:
                raise InputError(f"tp={tp} does not fill dimension {i} of size {d.size} "
                                 f"evenly", item="tp")
            t_c.append(d.size)
            d_c.append(-1)
            rem //= d.size
        elif rem > 1:
            if d.size % rem:
                raise InputError(f"tp={tp} splits dimension {i} of size {d.size} unevenly",
                                 item="tp")
            t_c.append(rem)
            d_c.append(d.size // rem)
            rem = 1
        else:
            t_c.append(-1)
            d_c.append(d.size)
    t_c = [x if x != 1 else -1 for x in t_c]
    d_c = [x if x != 1 else -1 for x in d_c]
    return tuple(t_c), tuple(d_c)


def workload_from_model(net: LibraNetwork, model: Transformer, par: Parallelism,
                        device: Device) -> LibraWorkload:
    """LIBRA's view of one iteration of ``model`` under ``par`` (TP and DP only; pipeline
    and expert parallelism are outside LIBRA's model) on the network's ``npus``.

    Per layer (the embedding, then every block): per block and micro-batch, two
    tensor-parallel all-reduces of the block's activations in the forward and two in the
    input gradient (and two more for a fully recomputed forward); per iteration, the
    data-parallel all-reduce of the layer's gradients in its weight-gradient phase.
    Compute: :func:`~topocoll.workload.block_compute_time` per block and micro-batch for
    the forward, the input gradient and the weight gradient each (the backward is twice
    the forward), the input gradient once more with full recomputation.
    """
    if par.pp > 1 or par.ep > 1:
        raise InputError("LIBRA models tensor and data parallelism only; use pp=1 and ep=1",
                         item="parallel")
    if par.world != net.npus:
        raise InputError(f"parallel uses {par.world} NPUs, the network has {net.npus}",
                         item="parallel")
    tp_c, dp_c = communicators(net, par.tp)
    m = par.micro_batches
    act = 2.0 * par.micro_batch * model.seq * model.hidden
    passes = 3 if par.recompute == "full" else 2
    block = m * block_compute_time(model, par, device)
    grads = 2.0 * stage_parameters(model, par, 0)
    emb = 2.0 * model.embedding_parameters / par.tp
    dp = par.dp > 1

    def allreduce(size, comm, count=1.0):
        return (LibraCollective("allreduce", size, comm, count),) if size > 0 else ()

    layers = [LibraLayer("embedding", wg=allreduce(emb, dp_c) if dp else ())]
    tp = par.tp > 1
    for i in range(model.layers):
        layers.append(LibraLayer(
            f"block{i}", block, block * (passes - 1), block,
            fwd=allreduce(act, tp_c, 2 * m) if tp else (),
            ig=allreduce(act, tp_c, 2 * m * (passes - 1)) if tp else (),
            wg=allreduce((grads - emb) / model.layers, dp_c) if dp else ()))
    return LibraWorkload.from_layers(layers, f"{model.name} {par.label()}")


def workload_from_layered(net: LibraNetwork, model: LayeredModel, device: Device, *,
                          batch_per_npu: int = 32) -> LibraWorkload:
    """LIBRA's view of one data-parallel iteration of a layered model (ResNet-50, VGG-16,
    DLRM, ...) on every NPU of the network, ``batch_per_npu`` samples each.

    Per dense layer: forward compute as in
    :func:`~topocoll.workload.simulate_dp_iteration` (the multiply at the device's
    efficiency plus the output written and read once), input and weight gradients as much
    again each, and the all-reduce of its 16-bit gradients over every NPU. Embedding tables
    (DLRM) are model-parallel: their lookups are memory-bound and the pooled vectors go
    through an all-to-all in the forward pass and back in the input gradient. The
    optimizer update (16 bytes of state per dense parameter, read and written) ends the
    iteration.

    Examples
    --------
    >>> from topocoll.fabric import parse_network
    >>> from topocoll.workload import LAYERED, find_device
    >>> w = workload_from_layered(parse_network("hier:ring(4)x switch(8)"),
    ...                           LAYERED["resnet50"], find_device("a100-80g"))
    >>> len(w.layers), [c.kind for c in w.collectives][:1], w.collectives[0].comm
    (54, ['allreduce'], (4, 8))
    """
    if isinstance(batch_per_npu, bool) or not isinstance(batch_per_npu, int) or \
            batch_per_npu < 1:
        raise InputError(f"batch per NPU must be a positive integer, got {batch_per_npu!r}",
                         item="batch_per_npu")
    b = batch_per_npu
    comm = tuple(d.size for d in net.dims)
    layers = []
    rows = 0.0
    for ly in model.layers:
        if ly.kind == "embedding":
            rows += ly.activation_bytes
            continue
        t = layered_forward_time(ly.flops, ly.activation_bytes, device, b)
        wg = (LibraCollective("allreduce", 2.0 * ly.params, comm),) if ly.params else ()
        layers.append(LibraLayer(ly.name, t, t, t, wg=wg))
    if rows:
        look = device.memory_time(rows * b)
        a2a = (LibraCollective("alltoall", rows * b, comm),)
        layers.insert(0, LibraLayer("embeddings", look, look, 0.0, fwd=a2a, ig=a2a))
    tail = device.memory_time(2 * 16 * model.dense_parameters)
    return LibraWorkload.from_layers(layers, f"{model.name} dp={net.npus},mb={b}", tail)


def write_libra_workload(w: LibraWorkload, path: str | Path, dims: int
                         ) -> dict[str, tuple[int, ...]]:
    """Write ``w`` as a LIBRA text workload (12 fields per layer, times in ns, sizes in
    bytes, both rounded to integers as LIBRA's files have them) and return its
    communicator (NPUs in each of the ``dims`` dimensions for each phase, all ``-1`` for a
    phase without collectives), which :func:`read_communicator` reads back from the YAML that
    :func:`write_libra_inputs` writes.

    LIBRA's format has one collective per layer and phase and one communicator per phase:
    a collective that runs ``count`` times is written as one of ``count`` times the bytes
    (the same time under LIBRA's bandwidth-only model), and compute after the backward
    pass (``tail_s``, the optimizer update) is added to the first layer's weight gradient,
    the last compute of the backward pass (LIBRA's loop has no update term).

    Raises
    ------
    InputError
        For a layer with two collectives in one phase, two communicators in one phase, or
        a workload without layers.
    """
    if not w.layers:
        raise InputError(f"workload {w.name!r} has no layers to write", item="workload")
    inv = {v: k for k, v in LIBRA_TYPES.items() if v}
    comm: dict[str, tuple[int, ...] | None] = dict.fromkeys(_PHASES)
    lines = []
    for i, ly in enumerate(w.layers):
        f = [ly.name.replace(" ", "_") or f"layer_{i}", "-1"]
        for ph, secs, colls in (("Forward", ly.fwd_s, ly.fwd), ("InputGrad", ly.ig_s, ly.ig),
                                ("WeightGrad", ly.wg_s + (w.tail_s if i == 0 else 0.0),
                                 ly.wg)):
            if len(colls) > 1:
                raise InputError(f"layer {ly.name}: LIBRA's format has one collective per "
                                 f"phase, {ph} has {len(colls)}", item=f"layer '{ly.name}'")
            f.append(str(round(secs * 1e9)))
            if colls:
                c = colls[0]
                if comm[ph] is not None and comm[ph] != tuple(c.comm):
                    raise InputError(f"LIBRA's format has one communicator per phase; {ph} "
                                     f"uses {list(comm[ph])} and {list(c.comm)}",
                                     item=f"layer '{ly.name}'")
                comm[ph] = tuple(c.comm)
                f += [inv[c.kind], str(round(c.size * c.count))]
            else:
                f += ["NONE", "0"]
        f.append("0")
        lines.append("\t".join(f))
    Path(path).write_text("\n".join(lines) + "\n")
    return {ph: v if v is not None else (-1,) * dims for ph, v in comm.items()}


def write_libra_inputs(directory: str | Path, stem: str, net: LibraNetwork,
                       w: LibraWorkload) -> tuple[Path, Path, Path]:
    """LIBRA's three input files for ``w`` on ``net`` in ``directory``: the network
    (``<stem>_network.yml``), the workload (``<stem>.txt``) and its communicator
    (``<stem>_comm.yml``), readable by ``topocoll libra --network ... --workload ...
    --communicator ...`` and by LIBRA itself.

    Examples
    --------
    >>> import tempfile
    >>> from topocoll.fabric import parse_network
    >>> from topocoll.workload import LAYERED, find_device
    >>> net = parse_network("hier:ring(4)x switch(8)")
    >>> w = workload_from_layered(net, LAYERED["resnet50"], find_device("a100-80g"))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     n, t, c = write_libra_inputs(d, "resnet50", net, w)
    ...     back = read_libra_workload(t, read_communicator(c, 2))
    ...     print(n.name, len(back.layers), abs(back.compute_s - w.compute_s) < 1e-6)
    resnet50_network.yml 54 True
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    blocks = {"Ring": "Ring", "FullyConnected": "FullyConnected", "Switch": "Switch"}
    net_p = d / f"{stem}_network.yml"
    net_p.write_text(
        f"# LIBRA network (written by topocoll): {net.spec()}\n"
        f"Topology: [{', '.join(blocks[x.block] for x in net.dims)}]\n"
        f"NpusCount: [{', '.join(str(x.size) for x in net.dims)}]\n"
        f"CostDimension: [{', '.join(x.cost_class for x in net.dims)}]\n")
    txt = d / f"{stem}.txt"
    comm = write_libra_workload(w, txt, len(net.dims))
    comm_p = d / f"{stem}_comm.yml"
    comm_p.write_text(f"# LIBRA communicator (written by topocoll) for {w.name}\n" + "".join(
        f"{ph}: [{', '.join(str(x) for x in comm[ph])}]\n" for ph in _PHASES))
    return net_p, txt, comm_p
