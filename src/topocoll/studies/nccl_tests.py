"""Validation of the NCCL model against published nccl-tests figures.

Every collective measurement of ``validation-data.md`` (the fixtures of
``topocoll study validation``): all-reduce bus bandwidth on 8x H100 and 8x A100 boxes by
algorithm and GPU count, and all-to-all throughput per NIC across H100 boxes. Each case
is predicted on the box preset as the source ran it: ``compare -a nccl`` (what NCCL would
run), ``-a nccl_<algorithm>`` where the source forced one with ``NCCL_ALGO``, or NCCL's
choice among the other algorithms where it turned NVLink SHARP off
(``NCCL_NVLS_ENABLE=0``). Nothing in the model is fitted to these figures. Beyond
``validation-data.md``, the cases of NVIDIA/nccl#2140 (NCCL 2.30, 2026) add a second
generation, eight B300 GPUs, and the maintainers' figures for rings across boxes
(NVIDIA/nccl-tests#319, #290, NVIDIA/nccl#812) test the NIC side of the model.
``docs/studies/validation.md`` is written from :func:`run_nccl_validation`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..cost.nccl import NCCL_KIND_ALGORITHMS, nccl_choose
from ..errors import NotSupportedError
from ..selection import nccl_evaluate
from ..topology import Topology, parse_spec
from ._common import headless_pyplot, save_figure, write_json

__all__ = ["NCCL_TESTS", "NcclCase", "NcclResult", "run_nccl_validation",
           "write_nccl_validation", "ASTRA_SIM_ERRORS", "regime", "errors_by_regime",
           "validated_error"]

#: ASTRA-sim 2.x analytical against HGX-H100 ring all-reduce, geometric-mean error by GPU
#: count (ASTRA-sim documentation, GPU validation page): the bar to beat.
ASTRA_SIM_ERRORS = {2: 0.2063, 4: 0.1201, 8: 0.0969}


@dataclass(frozen=True)
class NcclCase:
    """One published measurement.

    ``measured`` is the figure compared with (the middle of ``low``-``high`` where the
    source gives a range); ``metric`` is ``busbw`` (nccl-tests bus bandwidth) or
    ``nic`` (bytes through each GPU's NIC per second); ``forced`` is the NCCL algorithm
    the source forced with ``NCCL_ALGO`` (None: NCCL's default choice); ``nvls_off``
    says the source disabled NVLink SHARP (``NCCL_NVLS_ENABLE=0``): NCCL's choice among
    the other algorithms.
    """

    label: str
    topology: str
    kind: str
    gpus: int
    forced: str | None
    measured: float
    low: float
    high: float
    metric: str
    source: str
    size: float = 4 * 2**30
    nvls_off: bool = False


_H100 = "dgx-h100:1"
_SIZE_1455 = 2 * 2**30           # NCCL_ALGO=... all_reduce_perf -b 2G -e 4G
_NVLS_1455 = {2: 370, 3: 370, 4: 370, 5: 420, 6: 440, 7: 460, 8: 480}
# NVIDIA/nccl#2140 (NCCL 2.30.4, CUDA 13.1): busbw with NVLS off and on, 8 GPUs. The
# B300 is predicted on the dgx-b200 preset: what the prediction uses is the same on both
# (fifth-generation NVLink, 18 links, 1.8 TB/s per GPU through NVSwitch with NVLink SHARP,
# and NCCL's constants for compute capability 10.x), not the GPU's compute or memory.
_SRC_2140 = "NVIDIA/nccl#2140 (NCCL 2.30.4)"

#: The nccl-tests figures of ``validation-data.md``, one case each.
NCCL_TESTS: tuple[NcclCase, ...] = (
    NcclCase("8x H100, ring", _H100, "allreduce", 8, "ring", 370e9, 359e9, 381e9, "busbw",
             "NVIDIA/nccl-tests#212 (maintainer: ~370 GB/s, ~20% below line rate)"),
    NcclCase("8x H100, default (NVLS)", _H100, "allreduce", 8, None, 480e9, 466e9, 494e9,
             "busbw", "NVIDIA/nccl-tests#212 (maintainer: peak ~480 GB/s)"),
    *(NcclCase(f"{k}x H100, ring", _H100, "allreduce", k, "ring", 367.5e9, 365e9, 370e9,
               "busbw", "NVIDIA/nccl#1455", _SIZE_1455) for k in range(2, 9)),
    *(NcclCase(f"{k}x H100, NCCL_ALGO=NVLS", _H100, "allreduce", k, "nvls", v * 1e9,
               v * 0.97e9, v * 1.03e9, "busbw", "NVIDIA/nccl#1455", _SIZE_1455)
      for k, v in _NVLS_1455.items()),
    NcclCase("8x H100, NVLS off (2026)", _H100, "allreduce", 8, None, 370e9, 359e9, 381e9,
             "busbw", _SRC_2140, nvls_off=True),
    NcclCase("8x H100, NVLS on (2026)", _H100, "allreduce", 8, None, 480e9, 466e9, 494e9,
             "busbw", _SRC_2140),
    NcclCase("8x B300, NVLS off", "dgx-b200:1", "allreduce", 8, None, 695e9, 674e9, 716e9,
             "busbw", _SRC_2140, nvls_off=True),
    NcclCase("8x B300, NVLS on", "dgx-b200:1", "allreduce", 8, None, 845e9, 820e9, 870e9,
             "busbw", _SRC_2140),
    # across boxes, NCCL_ALGO=RING as the maintainers advise for two boxes
    NcclCase("2 boxes of 8x H100, NDR 400G, ring", "dgx-h100:2", "allreduce", 16, "ring",
             396e9, 384e9, 408e9, "busbw", "NVIDIA/nccl-tests#319 (maintainer: ~48 GB/s "
             "per 400G NIC, aggregated to ~396 GB/s with the ring)"),
    NcclCase("2 boxes of 8x H100, ring, 46-48 per NIC", "dgx-h100:2",
             "allreduce", 16, "ring", 376e9, 368e9, 384e9, "busbw",
             "NVIDIA/nccl-tests#290 (maintainer: 46-48 GB/s per NDR NIC, x 8 NICs)"),
    # a user's measurements (Dell XE9680: 8x H100, 8x CX-7 400G InfiniBand, NCCL 2.26.2),
    # after the maintainers' advice, NCCL's default choice: kept although the model misses
    NcclCase("2 boxes of 8x H100, default (user)", "dgx-h100:2", "allreduce", 16,
             None, 470e9, 456e9, 484e9, "busbw", "NVIDIA/nccl-tests#309 (user: 470 GB/s on "
             "2 hosts, NCCL 2.26.2)"),
    NcclCase("4 boxes of 8x H100, default (user)", "dgx-h100:4", "allreduce", 32,
             None, 365.84e9, 355e9, 376.8e9, "busbw", "NVIDIA/nccl-tests#309 (user: 365.84 "
             "GB/s max on 4 hosts, NCCL 2.26.2)"),
    NcclCase("DGX A100 boxes, HDR 200G, ring", "dgx-a100:2", "allreduce", 16, "ring",
             192e9, 186e9, 198e9, "busbw", "NVIDIA/nccl#812 (maintainer: 8x 200G IB "
             "cards, 192 GB/s all-reduce busbw measured; box count not stated)"),
    NcclCase("8x A100, default", "dgx-a100:1", "allreduce", 8, None, 232.5e9, 225.5e9,
             239.5e9, "busbw", "NVIDIA/nccl-tests#175"),
    NcclCase("6 boxes of 8x H100, RoCE 400G, alltoall", "dgx-h100:6,transport=roce",
             "alltoall", 48, None, 48.5e9, 48e9, 49e9, "nic",
             "NVIDIA/nccl-tests#267 (maintainer: NDR NICs reach 48-49 GB/s each)"),
)


@dataclass(frozen=True)
class NcclResult:
    """A case and our prediction of it.

    ``predicted`` is what the NCCL model predicts for the run as the source made it: the
    forced algorithm where it applies, otherwise NCCL's own choice (``nccl``), which is
    what NCCL falls back to; ``ran`` names the algorithm and protocol, ``note`` says why
    the forced algorithm did not apply.
    """

    case: NcclCase
    predicted: float
    ran: str
    note: str

    @property
    def error(self) -> float:
        """Relative error of the prediction."""
        return self.predicted / self.case.measured - 1


def _metric(case: NcclCase, est) -> float:
    if case.metric == "busbw":
        return est.busbw
    # bytes each GPU sends to other boxes, per second: one NIC per GPU
    ppn = len(parse_spec(case.topology).meta["groups"][0])
    return case.size * (case.gpus - ppn) / case.gpus / est.time


def run_nccl_validation(cases: Sequence[NcclCase] = NCCL_TESTS) -> list[NcclResult]:
    """Predict every case (see the module docstring).

    Examples
    --------
    >>> r = run_nccl_validation(NCCL_TESTS[1:2])[0]
    >>> r.case.label, r.ran, f"{r.predicted / 1e9:.0f} GB/s"
    ('8x H100, default (NVLS)', 'nvls/Simple', '489 GB/s')
    """
    out = []
    for c in cases:
        t = parse_spec(c.topology)
        ranks = list(range(c.gpus))
        note = ""
        name = "nccl" if c.forced is None else f"nccl_{c.forced}"
        if c.nvls_off:
            others = [a for a in NCCL_KIND_ALGORITHMS[c.kind] if not a.startswith("nvls")]
            est = nccl_choose(t, c.kind, c.size, ranks=ranks, algorithms=others)
            out.append(NcclResult(c, _metric(c, est), f"{est.algorithm}/{est.protocol}",
                                  "NVLS off"))
            continue
        try:
            (_, _, est, _), = nccl_evaluate(t, c.kind, [c.size], [name], ranks=ranks)
        except NotSupportedError as e:
            why = str(e).split("here: ", 1)[-1].removeprefix(f"{c.forced}: ")
            note = f"{c.forced} does not apply: {why}"
            (_, _, est, _), = nccl_evaluate(t, c.kind, [c.size], ["nccl"], ranks=ranks)
        out.append(NcclResult(c, _metric(c, est), f"{est.algorithm}/{est.protocol}", note))
    return out


def _mean_abs(values: Sequence[float]) -> float:
    return sum(abs(v) for v in values) / len(values) if values else 0.0


def _regime(topology: Topology, ranks: Sequence[int], algorithm: str) -> str | None:
    """``"<one box | across boxes>, <algorithm>"`` for ``ranks`` of ``topology``, or None
    where the topology names no boxes."""
    groups = (topology.meta or {}).get("groups")
    if not groups:
        return None
    box = {r: k for k, g in enumerate(groups) for r in g}
    where = "across boxes" if len({box.get(int(r)) for r in ranks}) > 1 else "one box"
    return f"{where}, {algorithm}"


def regime(result: NcclResult) -> str:
    """Where a case sits in the model: one box or across boxes, and the algorithm NCCL
    ran (``one box, nvls``)."""
    key = _regime(parse_spec(result.case.topology), range(result.case.gpus),
                  result.ran.split("/")[0])
    assert key is not None, result.case.topology      # every case is on a box preset
    return key


def errors_by_regime(results: Sequence[NcclResult]) -> dict[str, dict[str, float]]:
    """Per :func:`regime`: the number of cases, the mean absolute error and the smallest
    and largest signed error: the model's validated error where it has one, to read a
    prediction in the same regime by.

    Examples
    --------
    >>> rs = run_nccl_validation(NCCL_TESTS[:2])
    >>> sorted(errors_by_regime(rs))
    ['one box, nvls', 'one box, ring']
    """
    groups: dict[str, list[float]] = {}
    for r in results:
        groups.setdefault(regime(r), []).append(r.error)
    return {k: {"cases": len(v), "mean_abs_error": _mean_abs(v), "min_error": min(v),
                "max_error": max(v)} for k, v in sorted(groups.items())}


@functools.cache
def _regimes() -> dict[str, dict[str, float]]:
    return errors_by_regime(run_nccl_validation())


def validated_error(topology: Topology, algorithm: str,
                    ranks: Sequence[int] | None = None) -> dict | None:
    """The validated error of the NCCL model for a prediction of ``algorithm`` (what NCCL
    runs, e.g. ``ring``, ``nvls``) on ``ranks`` of ``topology``: the published cases of
    the same :func:`regime` (one box or across boxes, the same algorithm), as
    ``{"regime", "cases", "mean_abs_error", "min_error", "max_error"}``; None where no
    published case is in that regime, or the topology names no boxes.

    Examples
    --------
    >>> v = validated_error(parse_spec("dgx-h100:1"), "ring")
    >>> v["regime"], v["cases"], round(v["max_error"], 3)
    ('one box, ring', 12, 0.033)
    >>> validated_error(parse_spec("dgx-h100:2"), "tree") is None
    True
    """
    key = _regime(topology, range(topology.num_ranks) if ranks is None else ranks, algorithm)
    row = _regimes().get(key) if key else None
    return {"regime": key, **row} if row else None


def write_nccl_validation(directory: str | Path, results: Sequence[NcclResult]) -> list[Path]:
    """Write ``validation_nccl.json`` and ``validation_nccl.png`` into ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    recs = [{"label": r.case.label, "topology": r.case.topology, "kind": r.case.kind,
             "gpus": r.case.gpus, "metric": r.case.metric, "forced": r.case.forced,
             "measured_GBps": r.case.measured / 1e9, "range_GBps": [r.case.low / 1e9,
                                                                    r.case.high / 1e9],
             "source": r.case.source, "size_bytes": r.case.size,
             "predicted_GBps": r.predicted / 1e9, "ran": r.ran, "error": r.error,
             "note": r.note} for r in results]
    data = {"cases": recs, "mean_abs_error": _mean_abs([r.error for r in results]),
            "max_abs_error": max(abs(r.error) for r in results),
            "by_regime": errors_by_regime(results),
            "astra_sim_errors": {str(k): v for k, v in ASTRA_SIM_ERRORS.items()}}
    paths = [write_json(d / "validation_nccl.json", data)]
    plt = headless_pyplot()
    if plt is None:
        return paths
    fig, ax = plt.subplots(figsize=(7.2, max(3.8, 0.2 * len(results) + 1)))
    y = range(len(results))
    ax.errorbar([r.case.measured / 1e9 for r in results], list(y),
                xerr=[[(r.case.measured - r.case.low) / 1e9 for r in results],
                      [(r.case.high - r.case.measured) / 1e9 for r in results]],
                fmt="ko", label="measured (nccl-tests)")
    ax.plot([r.predicted / 1e9 for r in results], list(y), "s", mfc="none",
            label="topocoll -a nccl")
    ax.set_yticks(list(y), [r.case.label for r in results], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("GB/s (bus bandwidth; per NIC for alltoall)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    paths.append(save_figure(fig, d / "validation_nccl.png"))
    return paths
