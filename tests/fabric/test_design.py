"""``design_fabrics``: bills of materials from the price table, designs at a budget, to a
time target and at equal cost to the reference, every one evaluated by the iteration
engine with its best parallelism."""

from __future__ import annotations

import math

import pytest

from topocoll.errors import InputError
from topocoll.fabric import PriceTable
from topocoll.fabric.design import (
    FAMILIES,
    PRODUCT_GBPS,
    DesignJob,
    design_fabrics,
    evaluate_design,
    family_bill,
    family_topology,
    rate_for_budget,
    torus_shape,
)
from topocoll.fabric.design import Design as _Design
from topocoll.topology import find_box
from topocoll.workload import find_device, parse_model

G = 1e9 / 8
H100 = find_box("dgx-h100")
SMALL = parse_model("transformer:hidden=2048,ffn=8192,heads=16,layers=8,seq=2048,vocab=32000")


@pytest.fixture(scope="module")
def job():
    return DesignJob(SMALL, 32, find_device("h100"), 64)


def test_clos_bill_counts_every_part():
    p = PriceTable()
    b = family_bill("fat-tree", H100, 1024, 400 * G, p)
    lines = {part: count for part, count, *_ in b.lines}
    # 1,024 NICs; 32 leaves of 32 + 16 spines; a transceiver at both ends of every cable
    assert lines["nic"] == 1024 and lines["switch_port"] == 48 * 64
    assert lines["transceiver"] == 2 * (1024 + 1024) and lines["fiber"] == 2048
    assert lines["scaleup_port"] == 1024 * 18
    assert b.cost_usd == pytest.approx(1024 * 1000 + 48 * 64 * 700 + 4096 * 599 + 2048 * 10
                                       + 1024 * 18 * 150)
    assert b.power_w == pytest.approx(1024 * 20 + 48 * 64 * 12 + 4096 * 8 + 1024 * 18 * 3)


def test_torus_bill_puts_cube_faces_on_optics():
    assert torus_shape(1024) == (8, 8, 16)
    b = family_bill("torus", H100, 1024, 100 * G, PriceTable())
    lines = {part: count for part, count, *_ in b.lines}
    # 3 cables per chip; in every ring of a dimension that is a multiple of 4, one cable in
    # four leaves its cube (TPU v4: 4x4x4 cubes, faces through the OCS)
    assert lines["dac"] + lines["fiber"] == 3 * 1024
    assert lines["fiber"] == 3 * 1024 / 4 and lines["ocs_port"] == 2 * lines["fiber"]
    assert lines["nic"] == 6 * 1024 and "scaleup_port" not in lines


def test_oversubscribed_leaves_buy_a_faster_port_at_the_same_cost():
    p = PriceTable()
    rates = [rate_for_budget(lambda r, o=o: family_bill("fat-tree", H100, 1024, r, p,
                                                         oversubscription=o).cost_usd, 8e6)
             for o in (1.0, 2.0, 3.0)]
    assert rates[0] < rates[1] < rates[2]


def test_rate_for_budget_meets_the_budget_and_refuses_below_the_fixed_parts():
    p = PriceTable()
    for fam in ("fat-tree", "rail", "rail-only", "topoopt", "torus"):
        def cost(r, fam=fam):
            return family_bill(fam, H100, 256, r, p).cost_usd
        r = rate_for_budget(cost, 2.5e6)
        assert cost(r) == pytest.approx(2.5e6, rel=1e-9)
        assert rate_for_budget(cost, cost(0.0) * 0.99) is None


def test_equal_cost_designs_cost_the_reference_and_rank_by_time(job):
    res = design_fabrics(job, oversubscriptions=(1.0, 3.0))
    assert res.mode == "equal-cost"
    ref = family_bill("rail", H100, 32, H100.nic_Bps, PriceTable()).cost_usd
    assert res.budget_usd == pytest.approx(ref)
    fams = {d.family for d in res.designs}
    assert fams == set(FAMILIES)
    for d in res.designs:
        assert d.feasible and abs(d.bill.cost_usd - ref) <= 0.02 * ref
        assert d.iteration_s >= d.compute_s > 0 and 0 < d.mfu < 1
    w = res.winner
    assert w.iteration_s == min(d.iteration_s for d in res.designs)
    # 32 NICs fit one switch: no uplinks to oversubscribe, the same design
    ft = {d.oversubscription: d for d in res.designs if d.family == "fat-tree"}
    assert ft[3.0].rate_Bps == ft[1.0].rate_Bps
    rec = res.to_dict()
    for key in ("family", "cost_usd", "power_w", "iteration_s", "mfu", "parallel",
                "feasible"):
        assert all(key in d for d in rec["designs"])


def test_more_budget_is_never_slower(job):
    lo = design_fabrics(job, families=("fat-tree", "topoopt"), budget=2e5, bounds=False)
    hi = design_fabrics(job, families=("fat-tree", "topoopt"), budget=8e5, bounds=False)
    for a, b in zip(lo.designs, hi.designs, strict=True):
        assert b.rate_Bps > a.rate_Bps and b.iteration_s <= a.iteration_s * (1 + 1e-9)


def test_time_target_picks_the_slowest_product_rate_that_meets_it(job):
    base = design_fabrics(job, families=("rail",), time_target=1e9, bounds=False)
    (d,) = base.designs
    assert d.rate_Bps == PRODUCT_GBPS[0] * G          # anything meets an endless target
    # a target between the 100 and 800 Gb/s times
    t100 = d.iteration_s
    topo = family_topology("rail", H100, 32, 800 * G)
    t800 = evaluate_design(_Design("rail", "dgx-h100", 1.0, 800 * G, topo.name,
                                   family_bill("rail", H100, 32, 800 * G, PriceTable()), True),
                           topo, job, bounds=False).iteration_s
    assert t800 < t100
    target = (t100 + t800) / 2
    (d,) = design_fabrics(job, families=("rail",), time_target=target, bounds=False).designs
    assert d.feasible and d.iteration_s <= target
    i = PRODUCT_GBPS.index(round(d.rate_Bps / G))
    assert i > 0
    slower = family_topology("rail", H100, 32, PRODUCT_GBPS[i - 1] * G)
    below = evaluate_design(d, slower, job, bounds=False)
    assert below.iteration_s > target
    (miss,) = design_fabrics(job, families=("rail",), time_target=t800 * 0.5,
                             bounds=False).designs
    assert not miss.feasible and "misses" in miss.reason


def test_a_budget_below_the_fixed_parts_is_an_infeasible_design(job):
    res = design_fabrics(job, families=("rail", "torus"), budget=1e3, bounds=False)
    assert not any(d.feasible for d in res.designs) and res.winner is None
    assert all("budget is below" in d.reason for d in res.designs)


@pytest.mark.parametrize("kw, item", [
    ({"families": ("fat-tree", "dragonfly")}, "dragonfly"),
    ({"budget": -5.0}, "budget"),
    ({"budget": 1e6, "time_target": 3.0}, "budget"),
    ({"time_target": math.inf}, "time_target"),
    ({"oversubscriptions": (0.5,)}, "oversubscription"),
    ({"boxes": ("dgx-h900",)}, "dgx-h900"),
])
def test_bad_inputs_name_the_item(job, kw, item):
    with pytest.raises(Exception) as e:
        design_fabrics(job, **kw)
    assert item.lstrip("-") in str(e.value)


def test_gpus_must_fill_whole_boxes():
    odd = DesignJob(SMALL, 36, find_device("h100"), 36)
    with pytest.raises(InputError, match="whole number"):
        design_fabrics(odd, families=("rail",))


def test_sensitivity_finds_the_factor_that_flips_a_time_target(job):
    res = design_fabrics(job, families=("rail", "topoopt", "fat-tree"), time_target=1e9,
                         bounds=False, recheck=False)
    w = res.winner
    flips = res.sensitivity()
    assert flips and all(0.1 <= f["factor"] <= 10 for f in flips)
    f = flips[0]
    other = next(d for d in res.designs if d.family == f["flips_to"])

    def cost(d, factor):
        return sum(c * u * (factor if p == f["part"] else 1.0)
                   for p, c, _, u, _ in d.bill.lines)
    # at the factor the two cost the same; a little past it the other is cheaper
    assert cost(w, f["factor"]) == pytest.approx(cost(other, f["factor"]), rel=1e-9)
    past = f["factor"] * (1.01 if f["factor"] > 1 else 0.99)
    assert cost(other, past) < cost(w, past)
    assert design_fabrics(job, families=("rail",), budget=4e5, bounds=False,
                          recheck=False).sensitivity() == []


def test_libra_allocates_the_scale_out_between_dimensions_at_the_budget():
    from topocoll.fabric.design import libra_dims

    assert libra_dims(H100, 256) == (8, 32)
    assert libra_dims(H100, 1024) == (8, 32, 4)
    res = design_fabrics(DesignJob(SMALL, 128, find_device("h100"), 128),
                         families=("libra",), budget=6e5, bounds=False, recheck=False)
    (d,) = res.designs
    assert d.feasible and d.bill.cost_usd == pytest.approx(6e5, rel=1e-9)
    lib = d.extra["libra"]
    assert lib["dims"] == [8, 16] and len(lib["scaleout_gbps"]) == 1
    assert d.topology.startswith("hier:switch(8,450GB/s")
    assert lib["allocation_parallel"].startswith("tp=8,pp=1")
    # three dimensions: the allocation splits the scale-out between pods and pods-of-pods
    assert libra_dims(H100, 512) == (8, 32, 2)
    res = design_fabrics(DesignJob(SMALL, 512, find_device("h100"), 512),
                         families=("libra",), budget=2e6, bounds=False, recheck=False)
    (d,) = res.designs
    g = d.extra["libra"]["scaleout_gbps"]
    assert len(g) == 2 and all(x > 0 for x in g)
    assert d.bill.cost_usd == pytest.approx(2e6, rel=1e-9) and d.iteration_s > 0


def test_libra_refuses_a_job_that_needs_pipelining():
    huge = DesignJob(parse_model("gpt3-175b"), 64, find_device("h100"), 64)
    (d,) = design_fabrics(huge, families=("libra",), budget=1e6, bounds=False,
                          recheck=False).designs
    assert not d.feasible and "tensor and data parallelism only" in d.reason


def test_libra_is_compared_with_the_equal_split_of_the_same_budget():
    job = DesignJob(SMALL, 512, find_device("h100"), 512)
    (d,) = design_fabrics(job, families=("libra",), budget=2e6, bounds=False, recheck=False,
                          libra_equal_split=True).designs
    eq = d.extra["libra"]["equal_split"]
    a, b = eq["scaleout_gbps"]
    assert a == b > 0 and eq["iteration_s"] > 0
    # the equal split costs the same budget
    from topocoll.fabric.design import _libra_bill
    assert _libra_bill(H100, 512, [a * G, b * G], PriceTable(), 64).cost_usd == \
        pytest.approx(2e6, rel=1e-9)


def test_packet_recheck_of_a_small_winner():
    tiny = parse_model("transformer:hidden=512,ffn=2048,heads=8,layers=2,seq=512,vocab=8000")
    job = DesignJob(tiny, 16, find_device("h100"), 16)
    res = design_fabrics(job, families=("rail",), bounds=False, packet_recheck=True)
    rc = res.winner.recheck
    assert rc["backend"] == "flow" and "packet" in rc
    assert rc["packet"]["iteration_s"] > 0
    # the same parallelism at packet level is within a few percent of the model here
    assert abs(rc["packet"]["difference"]) < 0.05


def test_topoopt_alternates_strategy_and_topology():
    job = DesignJob(parse_model("llama3-70b"), 128, find_device("h100"), 128)
    (d,) = design_fabrics(job, families=("topoopt",), budget=6e5, bounds=False,
                          recheck=False).designs
    rounds = d.extra["topoopt"]["rounds"]
    assert rounds[0]["block"] == 16                       # first: rings over every box
    from topocoll.workload import parse_parallel
    pp = parse_parallel(rounds[0]["parallel"], world=128).pp
    assert pp > 1 and rounds[1]["block"] == 16 // pp      # then: rings per stage
    assert d.iteration_s == min(r["iteration_s"] for r in rounds)
    assert f"block={d.extra['topoopt']['block']}" in d.topology


def test_budget_sensitivity_re_solves_both_designs(job):
    from topocoll.fabric.design import budget_sensitivity, scaled_prices

    p = PriceTable()
    assert scaled_prices(p, "switch_port", 2.0).price("switch_port", 400 * G) == 1400
    assert scaled_prices(p, "fiber", 0.5).fiber == 5.0
    res = design_fabrics(job, families=("rail", "topoopt"), budget=4e5, bounds=False,
                         recheck=False)
    sens = budget_sensitivity(res, job, factors=(2.0,))
    w = res.winner
    used = {part for part, *_ in w.bill.lines}
    assert {x["part"] for x in sens} >= used
    for x in sens:
        assert x["winner"] == w.family and x["runner_up"] != w.family
        if x["winner_s"] is not None and x["runner_up_s"] is not None:
            assert x["flips"] == (x["runner_up_s"] < x["winner_s"] * (1 - res.TIE))
    # a dearer part that only the switched design buys cannot make it faster at the budget
    rail = next(d for d in res.designs if d.family == "rail")
    sw = next(x for x in sens if x["part"] == "switch_port")
    rail_s = sw["winner_s"] if w.family == "rail" else sw["runner_up_s"]
    assert rail_s is None or rail_s >= rail.iteration_s * (1 - 1e-9)
    with pytest.raises(InputError):
        budget_sensitivity(design_fabrics(job, families=("rail",), time_target=1e9,
                                          bounds=False, recheck=False), job)


def test_at_a_line_rate_the_bills_differ_and_rail_only_drops_the_spine(job):
    res = design_fabrics(job, families=("rail", "rail-only"), rate=100 * G, bounds=False,
                         recheck=False)
    assert res.mode == "rate"
    rail, only = res.designs
    assert rail.rate_Bps == only.rate_Bps == 100 * G
    parts = {p: c for p, c, *_ in rail.bill.lines}
    parts_only = {p: c for p, c, *_ in only.bill.lines}
    # 4 boxes: one leaf per rail either way; rail-optimized adds the spine between rails
    assert parts_only["switch_port"] == 32 and parts["switch_port"] > 32
    assert only.bill.cost_usd < rail.bill.cost_usd
    with pytest.raises(InputError, match="one of"):
        design_fabrics(job, rate=100 * G, budget=1e6)


def test_whole_fabric_winners_past_the_limit_are_not_rechecked_at_flow_level():
    from topocoll.fabric.design import FLOW_RECHECK_WHOLE_GPUS, Bill, _recheck

    big = DesignJob(SMALL, 2 * FLOW_RECHECK_WHOLE_GPUS, find_device("h100"), 4096)
    d = _Design("libra", "dgx-h100", 1.0, 100 * G, "hier:...", Bill(()), True,
                iteration_s=1.0, parallel="tp=8,pp=1")
    _recheck(d, big, boxes=[H100], radix=64, algorithms=None, cache=None)
    assert d.recheck["backend"] == "flow" and "skipped" in d.recheck
    assert f"{FLOW_RECHECK_WHOLE_GPUS:,}" in d.recheck["skipped"]


def test_a_data_parallel_model_is_designed_without_a_search():
    from topocoll.workload import LAYERED

    job = DesignJob(LAYERED["dlrm"], 64, find_device("a100-80g"), 64 * 32)
    res = design_fabrics(job, boxes=("dgx-a100",), families=("rail", "topoopt"),
                         recheck=False)
    for d in res.designs:
        assert d.feasible and d.configurations == 1 and d.parallel.startswith("dp=64")
        assert d.bound is not None and 0 < d.bound["fraction_of_bound"] <= 1 + 1e-9
    with pytest.raises(InputError, match="multiple"):
        design_fabrics(DesignJob(LAYERED["dlrm"], 64, find_device("a100-80g"), 100),
                       boxes=("dgx-a100",), families=("rail",))
