"""The common test: every synthesizer on every applicable topology, for rank counts 2..64.

Each schedule must verify, cost at least the lower bound under the analytical model, and
survive a round trip through the JSON format unchanged (as text up to
JSON_TEXT_ENTRIES entries). Adding a synthesizer to ALGORITHMS enrols it here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from topocoll.cost import AlphaBeta
from topocoll.schedule import schedule_from_dict, schedule_to_dict
from topocoll.selection import ALGORITHMS
from topocoll.topology.spec import parse_spec
from topocoll.verification import verify

SIZES = (64.0, 2.0**20, 2.0**30)
#: Schedules of up to this many (transfer, chunk) entries go through JSON text; larger ones
#: through the dict converters only: whether the dict is JSON text does not depend on its
#: size, and the text of the larger ones was half of this module's time (12 of
#: ring_cover's 25 s).
JSON_TEXT_ENTRIES = 2_000

# every p in 2..64 on the cheap 1-switch and ring fabrics ...
SWEEP = [f"ring:{p}" for p in range(2, 65)] + [f"star:{p}" for p in range(2, 65)]
# ... and a fixed set of structured fabrics of many kinds
SHAPED = [
    "fc:7", "uniring:6", "line:5", "mesh:3x4", "torus:4x4", "torus:3x5", "torus:2x3x4", "torus:8x8",
    "hypercube:1", "hypercube:5", "fattree:k=4", "fattree:k=4,routing=ecmp",
    "leafspine:leaves=4,spines=2,hosts=4", "dgx:2,gpus=4", "circulant:12,jumps=1/5",
    "rrg:16,d=3,seed=2", "hier:ring(4,100GB/s,200ns)x switch(3,25GB/s,1us)",
    "hier:fc(2)x ring(3)x switch(2)",
]


def _same(a, b) -> bool:
    cols = ("step_ptr", "src", "dst", "op", "chunk_ptr", "chunks")
    return a.collective == b.collective and all(np.array_equal(getattr(a, c), getattr(b, c))
                                                for c in cols)


def _check(syn, spec: str, model: AlphaBeta) -> None:
    topo = parse_spec(spec)
    if syn.unsupported(topo, tuple(range(topo.num_ranks))):
        return
    s = syn(topo)
    assert s.collective.kind == syn.kind
    rep = verify(s, topo, collect=True)
    assert rep.ok, f"{syn.name} {syn.kind} on {spec}: {rep.violations[:3]}"
    for n in SIZES:
        r = model.evaluate(s, topo, n)
        assert r.bound is not None and r.time >= r.bound * (1 - 1e-9), \
            f"{syn.name} {syn.kind} on {spec} at {n} B: time {r.time} < bound {r.bound}"
        assert 0 < r.bound_fraction <= 1 + 1e-9
    d = schedule_to_dict(s)
    if len(s.chunks) <= JSON_TEXT_ENTRIES:
        d = json.loads(json.dumps(d))
    assert _same(schedule_from_dict(d), s)


@pytest.mark.parametrize("syn", ALGORITHMS, ids=lambda s: f"{s.name}-{s.kind}")
def test_every_synthesizer_sweep(syn):
    model = AlphaBeta()
    for spec in SWEEP:
        _check(syn, spec, model)


@pytest.mark.parametrize("syn", ALGORITHMS, ids=lambda s: f"{s.name}-{s.kind}")
@pytest.mark.parametrize("spec", SHAPED)
def test_every_synthesizer_shaped(syn, spec):
    _check(syn, spec, AlphaBeta())


def test_registry_names_are_stable_identifiers():
    names = {(s.name, s.kind) for s in ALGORITHMS}
    assert len(names) == len(ALGORITHMS), "duplicate (name, kind) in ALGORITHMS"
    for s in ALGORITHMS:
        assert s.name.replace("_", "").isalnum() and s.name == s.name.lower()
    kinds = {s.kind for s in ALGORITHMS}
    assert kinds >= {"allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "alltoall"}
