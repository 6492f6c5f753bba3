"""Text workloads of ASTRA-sim 1.0, LIBRA and AICB/SimAI: read and write.

One family of whitespace-separated files (``../shared/reference/formats.md`` section 3):
one line per layer of twelve fields (name, reserved/dependency, then forward, input-
gradient and weight-gradient as compute ns, collective type, bytes, then an update time in
ns). The dialects differ in the header:

``astra``
    line 1 the parallelism type (``DATA``, ``MODEL``, ``HYBRID_DATA_MODEL``, ...), line 2
    the number of layers;
``libra``
    no header;
``aicb``
    line 1 ``HYBRID_TRANSFORMER_FWD_IN_BCKWD`` with ``key: value`` pairs
    (``model_parallel_NPU_group``, ``ep``, ``pp``, ``vpp``, ``ga``, ``all_gpus``, ...), line 2
    the number of entries.

Sizes are bytes, compute times ns (cycles at 1 GHz), as the tools read them. An all-gather's
size is the per-NPU shard in the ``libra`` and ``astra`` dialects (LIBRA's model).

:func:`model_layers` writes any zoo model with a parallelism: per block, the forward and
input-gradient tensor-parallel all-reduces of the block's activations (two each, summed
into one entry as the format has one collective per phase), and the weight-gradient
data-parallel all-reduce of the block's gradients.

Examples
--------
>>> from topocoll.workload import parse_model, parse_parallel, find_device
>>> layers = model_layers(parse_model("gpt3-175b:layers=2"),
...                       parse_parallel("tp=8,dp=4"), find_device("a100-80g"))
>>> text = format_text_workload(layers, "astra", parallelism="HYBRID_DATA_MODEL")
>>> text.splitlines()[:2]
['HYBRID_DATA_MODEL', '2']
>>> parse_text_workload(text).layers == layers
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import InputError
from .compute import block_compute_time
from .devices import Device
from .models import Transformer
from .parallel import Parallelism

__all__ = ["TextLayer", "TextWorkload", "DIALECTS", "COLLECTIVE_TYPES", "model_layers",
           "format_text_workload", "parse_text_workload"]

DIALECTS = ("astra", "libra", "aicb")
#: The collective names the formats use (AICB adds the *_EP and *_DP_EP variants).
COLLECTIVE_TYPES = ("NONE", "ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL",
                    "ALLTOALL_EP", "ALLGATHER_DP_EP", "REDUCESCATTER_DP_EP")
_ASTRA_TYPES = ("DATA", "MODEL", "MICRO", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA",
                "HYBRID_DLRM", "HYBRID_DLRM_ENHANCED", "HYBRID_TRANSFORMER",
                "HYBRID_TRANSFORMER_FWD_IN_BCKWD")


@dataclass(frozen=True)
class TextLayer:
    """One layer line. Compute times in ns, sizes in bytes."""

    name: str
    reserved: str
    fwd_compute: int
    fwd_type: str
    fwd_bytes: int
    ig_compute: int
    ig_type: str
    ig_bytes: int
    wg_compute: int
    wg_type: str
    wg_bytes: int
    update: int

    def line(self) -> str:
        return "\t".join(str(x) for x in (
            self.name, self.reserved, self.fwd_compute, self.fwd_type, self.fwd_bytes,
            self.ig_compute, self.ig_type, self.ig_bytes, self.wg_compute, self.wg_type,
            self.wg_bytes, self.update))


@dataclass(frozen=True)
class TextWorkload:
    """A parsed file: its dialect, header (parallelism type or AICB keys) and layers."""

    dialect: str
    layers: tuple[TextLayer, ...]
    parallelism: str = ""
    header: dict = field(default_factory=dict)


def model_layers(model: Transformer, par: Parallelism, device: Device) -> tuple[TextLayer,
                                                                                   ...]:
    """The layer lines of ``model`` under ``par`` (one micro-batch; see the module
    docstring). Compute times round to whole ns."""
    block = block_compute_time(model, par, device)
    act = 2 * par.micro_batch * model.seq * model.hidden
    grads = 2 * model.layer_parameters // par.tp
    tp = "ALLREDUCE" if par.tp > 1 else "NONE"
    dp = "ALLREDUCE" if par.dp > 1 else "NONE"
    f_ns = round(block * 1e9)
    out = []
    for i in range(model.layers):
        out.append(TextLayer(f"layer_{i}", "-1", f_ns, tp, 2 * act if par.tp > 1 else 0,
                             f_ns, tp, 2 * act if par.tp > 1 else 0, f_ns, dp,
                             grads if par.dp > 1 else 0, 1))
    return tuple(out)


def format_text_workload(layers: Sequence[TextLayer], dialect: str, *,
                         parallelism: str = "HYBRID_DATA_MODEL",
                         header: dict | None = None) -> str:
    """The file text of ``layers`` in ``dialect`` (``astra``, ``libra`` or ``aicb``)."""
    if dialect not in DIALECTS:
        raise InputError(f"dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}",
                         item="dialect")
    body = [ly.line() for ly in layers]
    if dialect == "libra":
        return "\n".join(body) + "\n"
    if dialect == "astra":
        if parallelism.split()[0] not in _ASTRA_TYPES:
            raise InputError(f"parallelism type must be one of {', '.join(_ASTRA_TYPES)}, got "
                             f"{parallelism!r}", item="parallelism")
        return "\n".join([parallelism, str(len(body)), *body]) + "\n"
    h = {"model_parallel_NPU_group": 1, "ep": 1, "pp": 1, "vpp": len(body), "ga": 1,
         "all_gpus": 1, "checkpoints": 0, "checkpoint_initiates": 0, "pp_comm": 0}
    h.update(header or {})
    first = "HYBRID_TRANSFORMER_FWD_IN_BCKWD " + " ".join(f"{k}: {v}" for k, v in h.items())
    return "\n".join([first, str(len(body)), *body]) + "\n"


def _layer(f: list[str], no: int) -> TextLayer:
    if len(f) != 12:
        raise InputError(f"line {no}: a layer line has 12 fields, got {len(f)}",
                         item=f"line {no}")
    try:
        nums = [int(float(f[i])) for i in (2, 4, 5, 7, 8, 10, 11)]
    except ValueError:
        raise InputError(f"line {no}: compute times and sizes must be numbers",
                         item=f"line {no}") from None
    if min(nums) < 0:
        raise InputError(f"line {no}: negative compute time or size", item=f"line {no}")
    types = [f[i].upper() for i in (3, 6, 9)]
    for t in types:
        if t not in COLLECTIVE_TYPES:
            raise InputError(f"line {no}: unknown collective {t!r} (valid: "
                             f"{', '.join(COLLECTIVE_TYPES)})", item=f"line {no}")
    return TextLayer(f[0], f[1], nums[0], types[0], nums[1], nums[2], types[1], nums[3],
                     nums[4], types[2], nums[5], nums[6])


def parse_text_workload(text: str, dialect: str | None = None) -> TextWorkload:
    """Layers and header of a text workload; the dialect is recognized when not given
    (a 12-field first line: ``libra``; a ``key: value`` header: ``aicb``; else ``astra``).

    Raises
    ------
    InputError
        Naming the line.
    """
    lines = [(i + 1, ln.split()) for i, ln in enumerate(text.splitlines()) if ln.strip()]
    if not lines:
        raise InputError("empty workload", item="line 1")
    if dialect is None:
        first = lines[0][1]
        dialect = "libra" if len(first) == 12 else (
            "aicb" if any(x.endswith(":") for x in first) else "astra")
    if dialect not in DIALECTS:
        raise InputError(f"dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}",
                         item="dialect")
    if dialect == "libra":
        return TextWorkload("libra", tuple(_layer(f, no) for no, f in lines))
    if len(lines) < 2:
        raise InputError(f"line 2: the {dialect} dialect needs a layer count", item="line 2")
    head, (cno, count) = lines[0][1], lines[1]
    if len(count) != 1 or not count[0].isdigit():
        raise InputError(f"line {cno}: expected the number of layers", item=f"line {cno}")
    body = lines[2:]
    if int(count[0]) != len(body):
        raise InputError(f"line {cno}: says {count[0]} layers, the file has {len(body)}",
                         item=f"line {cno}")
    header: dict = {}
    if dialect == "aicb":
        toks = head[1:]
        i = 0
        while i < len(toks):
            k = toks[i].rstrip(":")
            if i + 1 >= len(toks):
                raise InputError(f"line 1: key {k!r} has no value", item="line 1")
            v = toks[i + 1]
            header[k] = int(v) if v.lstrip("-").isdigit() else v
            i += 2
    return TextWorkload(dialect, tuple(_layer(f, no) for no, f in body),
                        " ".join(head) if dialect == "astra" else head[0], header)
