"""Parallelism: how a model is split over ranks, and which ranks form each group.

Ranks are numbered by ``order`` (default ``"tp-dp-pp"``, Megatron-LM's: tensor-parallel
peers are consecutive ranks, so with 8 GPUs per box a TP group of 8 is one box; data
parallel next, pipeline stages outermost). Expert parallelism groups ranks inside the data
parallel dimension (``ep`` divides ``dp``), as Megatron-Core does.

Examples
--------
>>> p = parse_parallel("tp=2,pp=2,dp=2")
>>> p.world, groups(p, "tp")[:2], groups(p, "dp")[:2], groups(p, "pp")[:2]
(8, [(0, 1), (2, 3)], [(0, 2), (1, 3)], [(0, 4), (1, 5)])
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import InputError, InputTypeError
from ..kv import kv_pairs

__all__ = ["Parallelism", "parse_parallel", "groups", "RECOMPUTE", "ORDERS", "PARALLEL_KEYS"]

RECOMPUTE = ("none", "selective", "full")
ORDERS = ("tp-dp-pp", "tp-pp-dp")


@dataclass(frozen=True)
class Parallelism:
    """A parallel configuration.

    Parameters
    ----------
    tp, pp, dp, ep : int
        Tensor, pipeline, data and expert parallel degrees (``ep`` divides ``dp``).
    micro_batch : int
        Sequences per micro-batch.
    global_batch : int, optional
        Sequences per iteration (default ``micro_batch * dp``: one micro-batch per
        replica); must be a multiple of ``micro_batch * dp``.
    zero : {0, 1, 2, 3}
        ZeRO stage over the data-parallel group (3 = FSDP).
    sequence_parallel : bool
        Megatron sequence parallelism (needs ``tp > 1`` to matter).
    recompute : {"none", "selective", "full"}
    interleave : int
        Model chunks per pipeline stage (interleaved 1F1B); 1 = plain 1F1B.
    order : {"tp-dp-pp", "tp-pp-dp"}
        Which dimension varies fastest after TP when numbering ranks.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    micro_batch: int = 1
    global_batch: int | None = None
    zero: int = 0
    sequence_parallel: bool = False
    recompute: str = "none"
    interleave: int = 1
    order: str = "tp-dp-pp"

    def __post_init__(self) -> None:
        for f in ("tp", "pp", "dp", "ep", "micro_batch", "interleave"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int):
                raise InputTypeError(f"{f} must be an integer, got {v!r}", item=f)
            if v < 1:
                raise InputError(f"{f} must be at least 1, got {v}", item=f)
        if self.global_batch is None:
            object.__setattr__(self, "global_batch", self.micro_batch * self.dp)
        gb = self.global_batch
        if isinstance(gb, bool) or not isinstance(gb, int) or gb < 1:
            raise InputError(f"global_batch must be a positive integer, got {gb!r}",
                             item="global_batch")
        if gb % (self.micro_batch * self.dp):
            raise InputError(f"global_batch={gb} is not a multiple of micro_batch x dp = "
                             f"{self.micro_batch * self.dp}", item="global_batch")
        if gb // (self.micro_batch * self.dp) > MAX_MICRO_BATCHES:
            raise InputError(f"global_batch={gb} is {gb // (self.micro_batch * self.dp):,} "
                             f"micro-batches per replica; at most {MAX_MICRO_BATCHES:,} "
                             "(the pipeline is simulated micro-batch by micro-batch)",
                             item="global_batch")
        if self.dp % self.ep:
            raise InputError(f"ep={self.ep} must divide dp={self.dp}", item="ep")
        if self.zero not in (0, 1, 2, 3) or isinstance(self.zero, bool):
            raise InputError(f"zero must be 0, 1, 2 or 3, got {self.zero!r}", item="zero")
        if self.recompute not in RECOMPUTE:
            raise InputError(f"recompute must be one of {', '.join(RECOMPUTE)}, got "
                             f"{self.recompute!r}", item="recompute")
        if self.order not in ORDERS:
            raise InputError(f"order must be one of {', '.join(ORDERS)}, got {self.order!r}",
                             item="order")
        if self.interleave > 1 and self.pp == 1:
            raise InputError("interleave needs pp > 1", item="interleave")

    @property
    def world(self) -> int:
        """Ranks the configuration uses."""
        return self.tp * self.pp * self.dp

    @property
    def micro_batches(self) -> int:
        """Micro-batches per replica per iteration (gradient accumulation steps)."""
        return self.global_batch // (self.micro_batch * self.dp)

    def label(self) -> str:
        """A compact, parseable description."""
        s = f"tp={self.tp},pp={self.pp},dp={self.dp}"
        if self.ep > 1:
            s += f",ep={self.ep}"
        s += f",mb={self.micro_batch},gb={self.global_batch}"
        if self.zero:
            s += f",zero={self.zero}"
        if self.sequence_parallel:
            s += ",sp=1"
        if self.recompute != "none":
            s += f",recompute={self.recompute}"
        if self.interleave > 1:
            s += f",interleave={self.interleave}"
        return s

    def with_(self, **changes) -> Parallelism:
        """A copy with some fields changed."""
        return replace(self, **changes)


#: Most micro-batches per replica and iteration (the pipeline is simulated one by one).
MAX_MICRO_BATCHES = 65_536

_KEYS = {"tp": "tp", "pp": "pp", "dp": "dp", "ep": "ep", "mb": "micro_batch",
         "micro_batch": "micro_batch", "gb": "global_batch", "global_batch": "global_batch",
         "zero": "zero", "sp": "sequence_parallel", "sequence_parallel": "sequence_parallel",
         "recompute": "recompute", "interleave": "interleave", "vpp": "interleave",
         "order": "order"}
#: The keys :func:`parse_parallel` reads (a model spec's fields are other names, so the
#: two may share one ``k=v`` list, as ``topocoll libra --job`` does).
PARALLEL_KEYS = tuple(sorted(_KEYS))


def parse_parallel(text: str, *, world: int | None = None, **defaults) -> Parallelism:
    """A :class:`Parallelism` from ``"tp=8,pp=8,dp=16[,ep=..,mb=..,gb=..,zero=..,sp=1,
    recompute=..,interleave=..]"``; ``defaults`` fill what the text leaves out, and
    ``world`` (GPUs), when given, sets ``dp = world / (tp x pp)`` if the text has no dp.

    >>> parse_parallel("tp=2,ep=8", world=64).label()
    'tp=2,pp=1,dp=32,ep=8,mb=1,gb=32'

    Raises
    ------
    InputError
        Naming the bad key or value.
    """
    if not isinstance(text, str):
        raise InputTypeError(f"parallelism must be a string like 'tp=8,pp=8,dp=16', got "
                             f"{text!r}", item="parallel")
    fields = dict(defaults)
    seen: set[str] = set()
    pairs = kv_pairs(text, what="parallelism key", keys=_KEYS,
                     item=lambda k: f"parallel '{k}'")
    for k, v in pairs.items():
        f = _KEYS[k]
        if f in seen:                  # an alias of a key already given (mb, micro_batch)
            raise InputError(f"parallelism key {k!r} given twice", item=f"parallel '{k}'")
        seen.add(f)
        if f in ("recompute", "order"):
            fields[f] = v.lower()
        elif f == "sequence_parallel":
            if v.lower() not in ("0", "1", "true", "false", "yes", "no"):
                raise InputError(f"sp must be 0 or 1, got {v!r}", item="parallel 'sp'")
            fields[f] = v.lower() in ("1", "true", "yes")
        else:
            try:
                fields[f] = int(v)
            except ValueError:
                raise InputError(f"parallelism {k} must be an integer, got {v!r}",
                                 item=f"parallel '{k}'") from None
    if world is not None and "dp" not in seen:
        tp_pp = fields.get("tp", 1) * fields.get("pp", 1)
        if world % tp_pp:
            raise InputError(f"parallel: gpus {world} is not a multiple of tp x pp = "
                             f"{tp_pp}", item="parallel, gpus")
        fields["dp"] = world // tp_pp
    return Parallelism(**fields)


def _coords(p: Parallelism, rank: int) -> tuple[int, int, int]:
    t = rank % p.tp
    rest = rank // p.tp
    if p.order == "tp-dp-pp":
        return t, rest % p.dp, rest // p.dp           # tp, dp, pp
    return t, rest // p.pp, rest % p.pp


def _rank(p: Parallelism, t: int, d: int, s: int) -> int:
    if p.order == "tp-dp-pp":
        return (s * p.dp + d) * p.tp + t
    return (d * p.pp + s) * p.tp + t


def groups(p: Parallelism, kind: str) -> list[tuple[int, ...]]:
    """Every group of ``kind`` (``"tp"``, ``"dp"``, ``"pp"`` or ``"ep"``) as sorted rank
    tuples, in rank order of their first member."""
    out = []
    for t in range(p.tp if kind != "tp" else 1):
        for d in range(p.dp if kind not in ("dp", "ep") else 1):
            for s in range(p.pp if kind != "pp" else 1):
                if kind == "tp":
                    out += [tuple(_rank(p, x, d, s) for x in range(p.tp))]
                elif kind == "pp":
                    out += [tuple(_rank(p, t, d, x) for x in range(p.pp))]
                elif kind == "dp":
                    out += [tuple(_rank(p, t, x, s) for x in range(p.dp))]
                elif kind == "ep":
                    out += [tuple(_rank(p, t, x, s) for x in range(g, g + p.ep))
                            for g in range(0, p.dp, p.ep)]
                else:
                    raise InputError(f"group kind must be tp, dp, pp or ep, got {kind!r}",
                                     item="kind")
    return sorted(out)
