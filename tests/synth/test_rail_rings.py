"""rail_rings: NCCL's rings across boxes as a schedule (issue 31: `ring` on dgx-h100:2
left every box through one NIC, which is not what NCCL runs)."""

from __future__ import annotations

from collections import Counter

import pytest
from _refcheck import assert_correct

from topocoll.cost import AlphaBeta
from topocoll.errors import NotSupportedError
from topocoll.selection import find_algorithm
from topocoll.synth import rail_rings_allgather, rail_rings_allreduce, rail_rings_reduce_scatter
from topocoll.synth.rail_rings import (
    rail_ring_orders,
    rail_rings_entries,
    rail_rings_unsupported_reason,
)
from topocoll.synth.registry import SCHEDULE_BYTES_PER_ENTRY
from topocoll.topology import parse_spec, ring
from topocoll.topology.scenarios import mi250

FUNCS = {"allreduce": rail_rings_allreduce, "reduce_scatter": rail_rings_reduce_scatter,
         "allgather": rail_rings_allgather}
S = 64 * 2.0**30


@pytest.mark.parametrize("kind", sorted(FUNCS))
@pytest.mark.parametrize(("spec", "ranks"), [
    ("dgx-h100:2", None),
    ("dgx-a100:3", None),                       # 3 boxes: the closing hop changes rail
    ("dgx-h100:3", [1, 2, 5, 9, 10, 13, 17, 18, 21]),    # three per box
    ("mi250:2", None),
])
def test_correct(kind, spec, ranks):
    t = mi250(2) if spec == "mi250:2" else parse_spec(spec)
    s = FUNCS[kind](t, ranks=ranks)
    assert_correct(s, t)
    q = len(t.meta["groups"][0]) if ranks is None else 3
    assert s.meta["rings"] == str(q)


def test_orders_enter_and_leave_on_one_rail():
    """Ring c enters box b at local (c - b) mod q and leaves at (c - b - 1) mod q, the next
    box's entry: every hop between boxes but the closing one stays on a rail, and every
    local index is the exit of exactly one ring per box."""
    boxes = [list(range(8 * b, 8 * b + 8)) for b in range(3)]
    orders = rail_ring_orders(boxes)
    exits = Counter()
    for c, o in enumerate(orders):
        assert sorted(o.tolist()) == list(range(24))
        for b in range(3):
            seg = o[8 * b: 8 * b + 8].tolist()
            assert seg[0] % 8 == (c - b) % 8 and seg[-1] % 8 == (c - b - 1) % 8
            exits[seg[-1]] += 1
            if b < 2:
                assert o[8 * b + 7] % 8 == o[8 * b + 8] % 8        # same rail
    assert set(exits.values()) == {1} and len(exits) == 24


@pytest.mark.parametrize(("spec", "nvlink", "nic"), [
    ("dgx-h100:2", 450e9, 50e9),                 # min(450 x 8/7, 8 x 50): the NICs bind
    ("dgx-a100:2", 300e9, 25e9),
])
def test_bus_rate_is_the_rotated_exit(spec, nvlink, nic):
    """Costed on the fabric's links, the rings' bus rate is min(box links x q/(q-1),
    q x NIC): the rule cost/nccl charges NCCL's rings with, reached here by a schedule
    whose every transfer is routed and costed (an independent check of that rule)."""
    t = parse_spec(spec)
    s = rail_rings_allreduce(t)
    p, q = t.num_ranks, 8
    time = AlphaBeta(bound=False).evaluate(s, t, S).time
    bus = min(nvlink * q / (q - 1), q * nic)
    assert time == pytest.approx(2 * (p - 1) / p * S / bus, rel=2e-3)
    # the single rank-order ring leaves each box through one NIC: q times slower here
    one = AlphaBeta(bound=False).evaluate(find_algorithm("ring", "allreduce")(t), t, S).time
    assert one / time == pytest.approx(q, rel=2e-2)


def test_refused_with_a_reason():
    assert rail_rings_unsupported_reason(ring(8), range(8)) == "the topology names no groups"
    t = parse_spec("dgx-h100:2")
    assert "single group" in rail_rings_unsupported_reason(t, range(8))
    assert "unequal" in rail_rings_unsupported_reason(t, [0, 1, 2, 8])
    with pytest.raises(NotSupportedError, match="rail_rings allreduce"):
        rail_rings_allreduce(t, ranks=range(8))
    with pytest.raises(NotSupportedError, match="does not apply"):
        find_algorithm("rail_rings", "allreduce")(ring(8))


def test_size_guard_counts_every_ring(monkeypatch):
    t = parse_spec("dgx-h100:2")
    # 8 rings x 16 x 15 transfers x 2 passes = 3,840 entries; one ring would be 480
    assert rail_rings_entries(t, range(16), "allreduce") == 3840
    assert rail_rings_entries(t, range(16), "allgather") == 1920
    syn = find_algorithm("rail_rings", "allreduce")
    monkeypatch.setenv("TOPOCOLL_MAX_SCHEDULE_BYTES", str(3840 * SCHEDULE_BYTES_PER_ENTRY - 1))
    assert "3,840 chunk blocks" in syn.unsupported(t, tuple(range(16)))
    assert find_algorithm("rail_rings", "allgather").unsupported(t, tuple(range(16))) is None
    with pytest.raises(NotSupportedError, match="TOPOCOLL_MAX_SCHEDULE_BYTES"):
        syn(t)
