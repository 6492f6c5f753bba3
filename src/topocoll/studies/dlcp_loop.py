"""DLCP with the packet engine in the training loop: real gradients set the packets'
magnitude classes, the engine's exact drops leave the sum, time to accuracy is simulated
time (``docs/studies/dlcp.md``, "Real gradients in the loop").

Every optimizer step: each of ``workers`` data-parallel workers computes the gradient of
its share of the batch (torch; scikit-learn's digits, the seeded 80/20 split of
:mod:`topocoll.studies.dlcp_convergence`; an MLP ``64-H-...-H-10``); the step's exchange
runs through the packet engine
(:func:`~topocoll.studies.dlcp_scenario.exchange_gradients`): the messages
:func:`~topocoll.studies.dlcp_scenario.run_dlcp` would send for this model, the packets of
each push ranked by the mean ``|g|`` they carry, background seeded by the step. What the engine
dropped within the bounded-loss budget is missing from the parameter server's sum (the
receiver's zero fill, divided by all workers as the server does); the reliable pull gives
every worker the same update. A step costs the engine's iteration time plus ``compute_s``.

Each scheme trains its own replica from the same initial weights, on the same batches,
beside the same background at every step, so the schemes differ only by what the network
did. Time to accuracy is the simulated time at the end of the first step after which the
test accuracy reaches ``target`` (the test set is evaluated after every step).

Examples
--------
>>> model, layered = mlp((8,))
>>> layered.parameters == sum(p.numel() for p in model.parameters())
True
>>> [ly.params for ly in layered.layers]
[520, 90]
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..errors import InputError, NotSupportedError
from ..sim.dlcp.engine import shortest_paths
from ..topology.spec import parse_spec
from ..workload import Layer, LayeredModel
from ._common import write_tables
from .dlcp_convergence import digits_split
from .dlcp_scenario import exchange_gradients

__all__ = ["LOOP_TOPOLOGY", "LOOP_CASES", "mlp", "train_in_loop", "run_loop", "render_loop",
           "write_loop"]

#: the DLCP study's fabric (16 hosts at 10 Gb/s, non-blocking leaf-spine)
LOOP_TOPOLOGY = "leafspine:leaves=4,spines=2,hosts=4,bw=10Gbps"
#: (label, scheme, magnitudes, eps): the baseline, the best flow-level step and DLCP at
#: the study's 2% budget and at 10%, its packet classes from the real gradients or, as in
#: :func:`~topocoll.studies.dlcp_scenario.run_dlcp`, from log-normal draws
LOOP_CASES = (("baseline", "baseline", "gradients", 0.02),
              ("layer_priority", "layer_priority", "gradients", 0.02),
              ("dlcp", "dlcp", "gradients", 0.02),
              ("dlcp, log-normal classes", "dlcp", "lognormal", 0.02),
              ("dlcp, eps 10%", "dlcp", "gradients", 0.10),
              ("dlcp, eps 10%, log-normal classes", "dlcp", "lognormal", 0.10))


def _torch():
    try:
        import torch
    except ImportError:
        raise NotSupportedError("training in the loop needs torch (topocoll[torch])") \
            from None
    return torch


def mlp(hidden: Sequence[int] = (512, 512, 512)):
    """The torch MLP ``64-hidden-10`` (ReLU) and the same model as a
    :class:`~topocoll.workload.LayeredModel` (one layer per linear layer: weights then
    bias, the order of ``parameters()``); initialized from torch's current seed."""
    torch = _torch()
    if not hidden or any(isinstance(h, bool) or not isinstance(h, int) or h < 1
                         for h in hidden):
        raise InputError(f"hidden widths must be positive integers, got {hidden!r}",
                         item="hidden")
    sizes = [64, *hidden, 10]
    mods, layers = [], []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:], strict=False)):
        mods.append(torch.nn.Linear(a, b))
        if i < len(sizes) - 2:
            mods.append(torch.nn.ReLU())
        layers.append(Layer(f"fc{i + 1}", a * b + b, 2.0 * a * b, 2.0 * b))
    name = "mlp-" + "-".join(map(str, sizes))
    return torch.nn.Sequential(*mods), LayeredModel(name, tuple(layers))


def train_in_loop(scheme: str = "dlcp", *, magnitudes: str = "gradients",
                  topology: str = LOOP_TOPOLOGY, workers: int = 16,
                  hidden: Sequence[int] = (512, 512, 512), epochs: int = 20,
                  batch_per_worker: int = 16, lr: float = 0.05, seed: int = 0,
                  target: float = 0.95, compute_s: float = 0.0,
                  background_load: float = 0.5, eps: float = 0.02,
                  bucket: float = 256 * 1024, payload: int = 1500, window: int = 87,
                  progress: Callable[[str], None] | None = None, **engine) -> dict:
    """One training run of ``scheme`` with the engine in the loop (see the module
    docstring). Returns ``scheme``, ``magnitudes``, ``seed``, per step ``iteration_s``
    (the engine's), ``accuracy`` (test, after the step), ``zero_fraction`` (share of
    the pushed gradient elements missing from the sum) and ``energy_lost`` (their share
    of the workers' squared gradient), and ``steps_to_target`` /
    ``time_to_target_s`` (None if never reached), ``final_accuracy``. ``engine``: further
    options of :func:`~topocoll.studies.dlcp_scenario.exchange_gradients`."""
    torch = _torch()
    topo = parse_spec(topology)
    xtr, ytr, xte, yte = digits_split(0)
    torch.manual_seed(seed)
    model, layered = mlp(hidden)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=lr, momentum=0.9)
    xt, yt = torch.from_numpy(xtr), torch.from_numpy(ytr)
    xe, ye = torch.from_numpy(xte), torch.from_numpy(yte)
    rng = np.random.default_rng([seed, 7])      # the batches: the same for every scheme
    paths = shortest_paths(topo)
    gb = workers * batch_per_worker
    per_epoch = len(xt) // gb
    if per_epoch < 1:
        raise InputError(f"{workers} workers x {batch_per_worker} images exceed the "
                         f"{len(xt)} training images", item="batch_per_worker")
    its, accs, zero, energy = [], [], [], []
    grads = np.empty((workers, layered.parameters), np.float32)
    step = 0
    for epoch in range(epochs):
        perm = rng.permutation(len(xt))
        for s in range(per_epoch):
            for w in range(workers):
                sl = perm[s * gb + w * batch_per_worker: s * gb + (w + 1) * batch_per_worker]
                model.zero_grad()
                torch.nn.functional.cross_entropy(model(xt[sl]), yt[sl]).backward()
                grads[w] = torch.cat([p.grad.reshape(-1) for p in params]).numpy()
            ex = exchange_gradients(topo, layered, scheme, grads, step=step, seed=seed,
                                    magnitudes=magnitudes, background_load=background_load,
                                    eps=eps, bucket=bucket, payload=payload, window=window,
                                    paths=paths, **engine)
            kept = np.where(ex.missing, 0.0, grads)
            total = kept.sum(axis=0) / workers
            g2 = float(np.square(grads, dtype=np.float64).sum())
            energy.append(float(np.square(grads[ex.missing], dtype=np.float64).sum()) / g2
                          if g2 > 0 else 0.0)
            off = 0
            for p in params:
                k = p.numel()
                p.grad = torch.from_numpy(total[off:off + k].astype(np.float32)).view_as(p)
                off += k
            opt.step()
            with torch.no_grad():
                accs.append(float((model(xe).argmax(1) == ye).float().mean()))
            its.append(ex.time)
            zero.append(float(ex.missing.mean()))
            step += 1
        if progress is not None:
            progress(f"{scheme} ({magnitudes}) seed {seed}: epoch {epoch + 1}/{epochs}")
    clock = np.cumsum(np.asarray(its) + compute_s)
    hit = next((i for i, a in enumerate(accs) if a >= target), None)
    return {"scheme": scheme, "magnitudes": magnitudes, "seed": seed,
            "iteration_s": its, "accuracy": accs, "zero_fraction": zero,
            "energy_lost": energy,
            "steps_to_target": None if hit is None else hit + 1,
            "time_to_target_s": None if hit is None else float(clock[hit]),
            "final_accuracy": accs[-1]}


def run_loop(cases: Sequence[tuple[str, str, str, float]] = LOOP_CASES,
             seeds: Sequence[int] = (0, 1, 2), *,
             progress: Callable[[str], None] | None = None, **kw) -> dict:
    """Every case (label, scheme, magnitudes, eps) x seed of :func:`train_in_loop`, the
    setup, and per case the summary: median iteration time (all steps of all seeds), mean
    zero fraction and energy lost, mean steps and simulated time to the target (over the
    seeds that reached it; how many did), mean final accuracy."""
    runs, summary = [], []
    for label, scheme, mags, eps in cases:
        mine = [train_in_loop(scheme, magnitudes=mags, eps=eps, seed=s, progress=progress,
                              **kw) for s in seeds]
        for r in mine:
            r["case"] = label
        runs += mine
        reached = [r for r in mine if r["steps_to_target"] is not None]
        summary.append({
            "case": label, "scheme": scheme, "magnitudes": mags, "eps": eps,
            "p50_iteration_s": float(np.median([t for r in mine for t in r["iteration_s"]])),
            "zero_fraction": float(np.mean([z for r in mine for z in r["zero_fraction"]])),
            "energy_lost": float(np.mean([z for r in mine for z in r["energy_lost"]])),
            "reached": len(reached), "seeds": len(mine),
            "steps_to_target": float(np.mean([r["steps_to_target"] for r in reached]))
            if reached else None,
            "time_to_target_s": float(np.mean([r["time_to_target_s"] for r in reached]))
            if reached else None,
            "final_accuracy": float(np.mean([r["final_accuracy"] for r in mine]))})
    setup = {k: v.default for k, v in inspect.signature(train_in_loop).parameters.items()
             if v.default is not inspect.Parameter.empty and k not in ("scheme", "magnitudes",
                                                                       "eps", "seed",
                                                                       "progress")}
    setup.update({k: v for k, v in kw.items()})
    setup["hidden"] = list(setup["hidden"])
    setup["seeds"] = list(seeds)
    return {"setup": setup, "runs": runs, "summary": summary}


def render_loop(res: dict) -> str:
    """The summary as Markdown (``dlcp-loop.md``)."""
    st = res["setup"]
    out = ["<!-- written by `topocoll study dlcp-loop`; do not edit -->", "",
           f"MLP 64-{'-'.join(map(str, st['hidden']))}-10 on digits, {st['workers']} "
           f"workers, {st['topology']}, background load {st['background_load']:g}, "
           f"{st['payload']}-byte packets; seeds {', '.join(map(str, st['seeds']))}; time "
           f"to {st['target']:.0%} test accuracy in simulated communication time.", "",
           "| case | eps | p50 iteration (ms) | gradient elements lost | gradient energy lost | "
           "seeds at target | steps to target | time to target (s) | final accuracy |",
           "|---|---|---|---|---|---|---|---|---|"]
    for c in res["summary"]:
        steps = "-" if c["steps_to_target"] is None else f"{c['steps_to_target']:.1f}"
        tta = "-" if c["time_to_target_s"] is None else f"{c['time_to_target_s']:.3f}"
        eps = f"{c['eps']:.0%}" if c["scheme"] == "dlcp" else "-"
        out.append(f"| {c['case']} | {eps} | {c['p50_iteration_s'] * 1e3:.2f} | "
                   f"{c['zero_fraction']:.4%} | {c['energy_lost']:.4%} | "
                   f"{c['reached']}/{c['seeds']} | {steps} | {tta} | "
                   f"{c['final_accuracy']:.3f} |")
    return "\n".join(out) + "\n"


def write_loop(directory: str | Path, res: dict) -> list[Path]:
    """``dlcp-loop.json`` (every run, step by step) and ``dlcp-loop.md`` in
    ``directory``."""
    return write_tables(directory, "dlcp-loop", res, render_loop(res))
