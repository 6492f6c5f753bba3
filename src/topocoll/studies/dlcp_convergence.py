"""What a bounded gradient loss costs in accuracy: data-parallel training with torch on a
real dataset, pushes losing blocks of gradient by DLCP's rule, by chance, or not at all.

``../shared/reference/algorithms.md`` sections 4.2-4.3. Setup: scikit-learn's digits
(1,797 8x8 images shipped inside the package; a seeded 80/20 split), a multilayer
perceptron 64-128-64-10, ``workers`` data-parallel workers with a co-located parameter
server: each step every worker computes the gradient of its share of the batch and pushes
it; the server averages what arrived (a lost block counts as zero, the bounded-loss
receiver's zero fill) and the reliable pull gives every worker the same update, so the
replicas never diverge. A push of one layer's gradient is one message, cut into blocks of
``block`` elements (a packet's worth). Patterns at a budget ``eps`` per message:

- ``none``: no loss;
- ``random``: each block lost independently with probability ``eps`` (drops that do not
  look at the content);
- ``dlcp``: the ``eps`` share of each message with the lowest priority lost, that is the
  blocks of smallest mean ``|g|`` (the order in which selective dropping discards a
  message's packets under congestion, up to the receiver's budget); layers nearer the
  output lose first when a tie has to be broken;
- ``engine``: what the packet engine dropped (``profile``, from
  :func:`~topocoll.studies.dlcp_scenario.loss_profile`): every message draws one of the engine's
  lossy messages (seeded), with its share of messages that lost nothing, and loses the
  blocks at the same places of its importance order (smallest mean ``|g|`` first).

Each case trains with plain SGD with momentum, several seeds, and records the test
accuracy after every epoch.

Examples
--------
>>> import numpy as np
>>> g = np.array([0.1, -5.0, 0.2, 3.0, 0.05, 0.3])
>>> drop_mask(g, block=2, eps=0.34, pattern="dlcp", rng=None).tolist()  # smallest block
[False, False, False, False, True, True]
>>> rng = np.random.default_rng(0)      # the engine lost the least important third
>>> drop_mask(g, block=2, eps=0, pattern="engine", rng=rng, profile=[[0.0]]).tolist()
[False, False, False, False, True, True]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError, NotSupportedError

__all__ = ["PATTERNS", "drop_mask", "train_with_loss", "run_convergence", "digits_split"]

PATTERNS = ("none", "random", "dlcp", "engine")


def drop_mask(grad: np.ndarray, *, block: int, eps: float, pattern: str,
              rng: np.random.Generator | None,
              profile: Sequence[Sequence[float]] | None = None) -> np.ndarray:
    """Which elements of the flat gradient ``grad`` of one message are lost."""
    g = np.asarray(grad, float).ravel()
    n = len(g)
    nb = -(-n // block)
    mask = np.zeros(n, bool)
    if pattern == "engine":
        if not profile:
            raise InputError("pattern 'engine' needs the engine's loss profile",
                             item="profile")
        qs = profile[int(rng.integers(len(profile)))]
        if not qs or n == 0:
            return mask
        pad = np.zeros(nb * block)
        pad[:n] = np.abs(g)
        score = pad.reshape(nb, block).mean(axis=1)
        order = np.lexsort((-np.arange(nb), score))          # least important first
        lost = np.zeros(nb, bool)
        lost[order[np.minimum((np.asarray(qs) * nb).astype(int), nb - 1)]] = True
        return np.repeat(lost, block)[:n]
    if pattern == "none" or eps <= 0 or n == 0:
        return mask
    if pattern == "random":
        lost = rng.random(nb) < eps
    elif pattern == "dlcp":
        pad = np.zeros(nb * block)
        pad[:n] = np.abs(g)
        score = pad.reshape(nb, block).mean(axis=1)
        k = int(np.floor(eps * nb + 1e-9))
        lost = np.zeros(nb, bool)
        if k:
            order = np.lexsort((-np.arange(nb), score))      # smallest first, later first
            lost[order[:k]] = True
    else:
        raise InputError(f"pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}",
                         item="pattern")
    return np.repeat(lost, block)[:n]


def digits_split(seed: int):
    """scikit-learn's digits as float32 images in [0, 1] and labels, a seeded 80/20
    split: ``(x_train, y_train, x_test, y_test)``."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise NotSupportedError("the convergence study needs scikit-learn (make test "
                                "installs it): pip install scikit-learn") from None
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    idx = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    return x[idx[:cut]], y[idx[:cut]], x[idx[cut:]], y[idx[cut:]]


def train_with_loss(pattern: str, eps: float, *, seed: int = 0, workers: int = 8,
                    batch_per_worker: int = 16, epochs: int = 20, lr: float = 0.05,
                    block: int = 64, profile: Sequence[Sequence[float]] | None = None
                    ) -> list[float]:
    """Test accuracy after each epoch of one training run (see the module docstring);
    ``profile`` is the engine's loss profile for pattern ``engine``."""
    try:
        import torch
    except ImportError:
        raise NotSupportedError("the convergence study needs torch (topocoll[torch])") \
            from None
    xtr, ytr, xte, yte = digits_split(0)
    torch.manual_seed(seed)
    rng = np.random.default_rng([seed, 7])
    # drops draw from their own stream: every pattern sees the same batches in the same
    # order, so differences in accuracy are the loss's, not the data order's
    drop_rng = np.random.default_rng([seed, 11])
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 10))
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=lr, momentum=0.9)
    xt, yt = torch.from_numpy(xtr), torch.from_numpy(ytr)
    xe, ye = torch.from_numpy(xte), torch.from_numpy(yte)
    gb = workers * batch_per_worker
    acc = []
    for _ in range(epochs):
        perm = rng.permutation(len(xt))
        for s in range(0, len(perm) - gb + 1, gb):
            total = [torch.zeros_like(p) for p in params]
            for w in range(workers):
                sl = perm[s + w * batch_per_worker: s + (w + 1) * batch_per_worker]
                model.zero_grad()
                torch.nn.functional.cross_entropy(model(xt[sl]), yt[sl]).backward()
                for t, p in zip(total, params, strict=True):
                    g = p.grad.detach().numpy().ravel()
                    m = drop_mask(g, block=block, eps=eps, pattern=pattern, rng=drop_rng,
                                  profile=profile)
                    t += torch.from_numpy(np.where(m, 0.0, g).astype(np.float32)
                                          ).view_as(p)
            for t, p in zip(total, params, strict=True):
                p.grad = t / workers
            opt.step()
        with torch.no_grad():
            acc.append(float((model(xe).argmax(1) == ye).float().mean()))
    return acc


def run_convergence(eps_values: Sequence[float] = (0.005, 0.01, 0.02, 0.05, 0.1),
                    seeds: Sequence[int] = (0, 1, 2), **kw) -> list[dict]:
    """Every pattern x budget x seed: ``{"pattern", "eps", "seed", "accuracy": [...]}``
    (``none`` once per seed)."""
    out = []
    for seed in seeds:
        out.append({"pattern": "none", "eps": 0.0, "seed": seed,
                    "accuracy": train_with_loss("none", 0.0, seed=seed, **kw)})
        for pattern in ("random", "dlcp"):
            for eps in eps_values:
                out.append({"pattern": pattern, "eps": eps, "seed": seed,
                            "accuracy": train_with_loss(pattern, eps, seed=seed, **kw)})
    return out
