"""``topocoll compare``: every applicable algorithm, verified and costed, per size."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ..errors import InputError
from .app import (
    AlphaOpt,
    BackendOpt,
    CollectiveOpt,
    JsonOpt,
    NoCacheOpt,
    RanksOpt,
    RootOpt,
    TopoOpt,
    app,
    busy,
    collective_opt,
    handle_errors,
    load_topo,
    model_opt,
    out,
    print_json,
    schedule_cache,
    size_opt,
)

__all__ = ["compare", "print_rows", "COMPARE_MAX_RANKS"]

#: Above this many ranks ``compare`` runs only the algorithms named with ``-a``: at
#: 16,384 ranks the ring allreduce alone has 537 million transfers.
COMPARE_MAX_RANKS = 8192


@app.command()
@handle_errors
def compare(topology: TopoOpt,
            collective: CollectiveOpt = "allreduce",
            size: Annotated[list[str] | None, typer.Option(
                "--size", "-s", help="Message size in bytes with units (64MiB, 1GB); "
                                     "repeatable.")] = None,
            algorithm: Annotated[list[str] | None, typer.Option(
                "--algorithm", "-a", help="Only this algorithm (repeatable); see "
                                          "`topocoll list algorithms`.")] = None,
            ranks: RanksOpt = None,
            root: RootOpt = None,
            backend: BackendOpt = "analytical",
            alpha: AlphaOpt = "0s",
            no_cache: NoCacheOpt = False,
            as_json: JsonOpt = False) -> None:
    """Every applicable algorithm, verified and costed, fastest first, per size."""
    from ..selection import compare_algorithms

    sizes = [size_opt(s) for s in (size or ["64MiB"])]
    model = model_opt(backend, alpha)
    t = load_topo(topology)
    coll = collective_opt(collective, t, ranks, root)
    if t.num_ranks > COMPARE_MAX_RANKS and not algorithm:
        raise InputError(f"compare runs every algorithm, and {t.name} has {t.num_ranks:,} ranks "
                         f"(the ring allreduce alone would have {2 * t.num_ranks ** 2:,} "
                         f"transfers); name the algorithms to run with -a (at most "
                         f"{COMPARE_MAX_RANKS:,} ranks without it)", item="--algorithm")
    skipped: list[tuple[str, str]] = []
    with busy(f"compare on {t.name}", as_json) as bar:
        rows = compare_algorithms(
            t, collective, sizes, algorithms=algorithm, ranks=coll.ranks if ranks else None,
            root=root, model=model, skipped=skipped, cache=schedule_cache(no_cache),
            progress=lambda name: bar.update(bar.task_ids[0],
                                             description=f"compare on {t.name}: {name}"))
    validated = _validated(t, rows, coll.ranks if ranks else None)
    if as_json:
        print_json([{**r.to_dict(), **({"validated": validated[i]} if i in validated else {})}
                    for i, r in enumerate(rows)])
        return
    print_rows(f"{collective} on {t.name}", rows)
    for name, why in skipped:
        out.print(f"not shown: {name} ({why})", style="dim", highlight=False)
    seen = set()
    for i, v in validated.items():
        if v["regime"] in seen:
            continue
        seen.add(v["regime"])
        span = (f"{100 * v['min_error']:+.1f}%" if v["cases"] == 1 else
                f"{100 * v['min_error']:+.1f}% to {100 * v['max_error']:+.1f}%")
        cases = "the published case" if v["cases"] == 1 else f"the {v['cases']} published cases"
        out.print(f"{rows[i].algorithm} ({v['regime']}): the NCCL model's error on {cases} of "
                  f"this regime is {span} (docs/studies/validation.md)", style="dim",
                  highlight=False)


def _validated(topology, rows, ranks) -> dict[int, dict]:
    """For the rows costed by the NCCL model: the validated error of their regime (the
    published nccl-tests cases predicted the same way), by row index."""
    if not any(r.model == "nccl" for r in rows):
        return {}
    from ..studies.nccl_tests import validated_error

    out = {}
    for i, r in enumerate(rows):
        if r.model == "nccl":
            v = validated_error(topology, r.params.get("algorithm", ""), ranks)
            if v is not None:
                out[i] = v
    return out


def print_rows(title: str, rows) -> None:
    from ..report import compare_table

    cells = compare_table(rows)
    table = Table(title=title)
    for h in cells[0]:
        table.add_column(h, justify="left" if h in ("algorithm", "params") else "right")
    last = None
    for r, c in zip(rows, cells[1:], strict=True):
        if last is not None and r.size_bytes != last:
            table.add_section()
        last = r.size_bytes
        table.add_row(*c, style=None if r.verified or r.model == "nccl" else "red")
    out.print(table)
