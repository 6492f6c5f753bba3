"""DLCP with real gradients: what each message carries, packet magnitudes from it, the
engine's drops mapped back to gradient elements, and the exchange as run_dlcp runs it."""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.errors import InputError
from topocoll.studies.dlcp_scenario import (
    _iteration_base,
    exchange_gradients,
    packet_scores,
    run_dlcp,
)
from topocoll.topology.spec import parse_spec
from topocoll.workload import Layer, LayeredModel

TOPO = "leafspine:leaves=2,spines=2,hosts=2,bw=10Gbps"
#: two layers of 3,000 and 1,000 parameters: 16,000 bytes of fp32 gradient
MODEL = LayeredModel("toy", (Layer("a", 3000, 1.0, 1.0), Layer("b", 1000, 1.0, 1.0)))
#: 320 KB of gradient: enough to congest 20 KB buffers
BIG = LayeredModel("big", (Layer("a", 60000, 1.0, 1.0), Layer("b", 20000, 1.0, 1.0)))


def _base(grads, pattern="ps", workers=4, payload=1000, bucket=8000):
    return _iteration_base(MODEL, workers, payload=payload, bucket=bucket, scale=1.0,
                           rng=np.random.default_rng(0), pattern=pattern, gradients=grads)


def _carried(base, k, g):
    """What message ``k`` carries, element by element, computed from its definition."""
    members = base.mem[base.mem_off[k]:base.mem_off[k + 1]]
    nbytes = int(base.length[base.pkt_off[k]:base.pkt_off[k + 1]].sum())
    lo = int(base.first[k]) // 4
    return members, lo, g[members, lo:lo + nbytes // 4].astype(np.float64).sum(axis=0)


@pytest.mark.parametrize("pattern", ["ps", "ring", "tree"])
def test_messages_carry_the_members_gradients_and_scores_rank_packets(pattern):
    rng = np.random.default_rng(1)
    g = rng.normal(size=(4, MODEL.parameters)).astype(np.float32)
    base = _base(g, pattern)
    lossy = np.flatnonzero(base.lossy)
    assert len(lossy) and all(base.mem_off[k + 1] > base.mem_off[k] for k in lossy)
    assert all(base.mem_off[k + 1] == base.mem_off[k] for k in np.flatnonzero(~base.lossy))
    for k in lossy.tolist():
        members, lo, v = _carried(base, k, g)
        # scores: mean |sum of members| over each packet's 250 elements, by brute force
        got = packet_scores(g, base.first, base.mem_off, base.mem, base.pkt_off,
                            base.length, 1000)[base.pkt_off[k]:base.pkt_off[k + 1]]
        want = [np.abs(v[i:i + 250].astype(np.float64)).mean() for i in range(0, len(v), 250)]
        np.testing.assert_allclose(got, want, rtol=1e-12)
        # the larger half of each message's packets is magnitude bucket 0
        mb = base.mb[base.pkt_off[k]:base.pkt_off[k + 1]]
        if len(mb) > 1:
            assert np.asarray(want)[mb == 0].min() >= np.asarray(want)[mb == 1].max()
    if pattern == "ring":           # step k of worker i: chunk i - k, workers i-k..i
        ms = base.mem_off
        sets = [tuple(base.mem[ms[k]:ms[k + 1]]) for k in lossy[:12].tolist()]
        assert sets[:4] == [(0,), (1,), (2,), (3,)]
        assert sets[4:8] == [(0, 3), (1, 0), (2, 1), (3, 2)]
    if pattern == "tree":
        sizes = sorted(int(base.mem_off[k + 1] - base.mem_off[k]) for k in lossy[:3])
        assert sizes == [1, 1, 2]          # 4 workers: leaves 3 and 2, node 1 with child 3


def test_missing_elements_are_the_lost_packets_of_their_members():
    g = np.ones((4, MODEL.parameters), np.float32)
    base = _base(g, "ps")
    push = int(np.flatnonzero(base.lossy)[1])       # a push of worker 2 to server 0
    members, lo, _ = _carried(base, push, g)
    miss = base.missing([(push, (1,))], 4, MODEL.parameters)
    assert miss.sum() == 250 and miss[members[0], lo + 250:lo + 500].all()
    assert base.missing([], 4, MODEL.parameters).sum() == 0
    ring = _base(g, "ring")
    k = int(np.flatnonzero(ring.lossy)[5])          # step 1 of worker 1: workers 1 and 0
    m = ring.missing([(k, (0,))], 4, MODEL.parameters)
    assert sorted(np.flatnonzero(m.any(axis=1)).tolist()) == [0, 1]
    # a reliable message never takes anything out
    pull = int(np.flatnonzero(~base.lossy)[0])
    assert base.missing([(pull, (0,))], 4, MODEL.parameters).sum() == 0


def test_exchange_is_run_dlcps_iteration():
    """With log-normal classes the exchange is exactly run_dlcp's iteration (the same
    messages, background and seed); with real gradients only the classes change; the
    elements missing from the sum are exactly the bytes the receivers zero-filled."""
    t = parse_spec(TOPO)
    kw = dict(background_load=0.5, payload=1500, bucket=100_000, window=16, buffer=20_000)
    recs = run_dlcp(t, BIG, workers=4, iterations=2, seed=5, schemes=("baseline", "dlcp"),
                    eps=0.05, **kw)
    g = np.random.default_rng(0).normal(size=(4, BIG.parameters)).astype(np.float32)
    lost = 0
    for r in recs:
        for it in range(2):
            for mags in ("lognormal", "gradients"):
                ex = exchange_gradients(t, BIG, r["scheme"], g, step=it, seed=5, eps=0.05,
                                        magnitudes=mags, **kw)
                if mags == "lognormal" or r["scheme"] == "baseline":
                    assert ex.time == r["iterations_s"][it]
                assert ex.missing.shape == (4, BIG.parameters)
                # shards and packets start on whole elements here
                assert ex.missing.sum() * 4 == ex.zero_bytes
                lost += ex.zero_bytes
                if r["scheme"] == "baseline":
                    assert ex.zero_bytes == 0
                else:
                    assert ex.zero_bytes <= 0.05 * ex.pushed_bytes
    assert lost > 0                            # the dlcp scheme did lose within budget


def test_exchange_rejects_bad_gradients():
    t = parse_spec(TOPO)
    g = np.zeros((4, MODEL.parameters))
    with pytest.raises(InputError) as e:
        exchange_gradients(t, MODEL, "dlcp", g[:, :10])
    assert e.value.item == "gradients"
    with pytest.raises(InputError) as e:
        exchange_gradients(t, MODEL, "dlcp", np.zeros((9, MODEL.parameters)))
    assert e.value.item == "gradients"
    with pytest.raises(InputError) as e:
        exchange_gradients(t, MODEL, "magic", g)
    assert e.value.item == "scheme"
    with pytest.raises(InputError) as e:
        exchange_gradients(t, MODEL, "dlcp", g, magnitudes="random")
    assert e.value.item == "magnitudes"
