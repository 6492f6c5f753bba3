"""compare_algorithms: ranking, skipped algorithms and the routing-work guard."""

from __future__ import annotations

import math

import pytest

from topocoll.errors import NotSupportedError
from topocoll.selection.compare import compare_algorithms, route_entries
from topocoll.synth import direct_allreduce, ring_allreduce
from topocoll.topology import fat_tree, torus


def test_route_entries_sums_hops_over_distinct_pairs():
    t = torus((4, 4))
    hops = t.hop_distances()
    # ring allreduce follows a Hamiltonian cycle of the torus: 16 distinct one-hop pairs
    s = ring_allreduce(t)
    pairs = set(zip(s.src.tolist(), s.dst.tolist(), strict=True))
    assert len(pairs) == 16 and {hops[a, b] for a, b in pairs} == {1.0}
    assert route_entries(s, t) == 16
    # direct allreduce touches all 240 ordered pairs: the all-pairs hop sum of the 4x4 torus
    assert route_entries(direct_allreduce(t), t) == int(hops[:16, :16].sum()) == 16 * 32


def test_heavy_algorithms_are_skipped_with_a_reason_unless_named():
    t = torus((4, 4))
    skipped: list[tuple[str, str]] = []
    rows = compare_algorithms(t, "allreduce", [2**20], max_route_entries=100, skipped=skipped)
    shown = {r.algorithm for r in rows}
    why = dict(skipped)
    assert "direct" not in shown and "512 link traversals (limit 100)" in why["direct"]
    assert "-a direct" in why["direct"]
    assert "ring" in shown and "ring" not in why          # 16 traversals: under the limit
    # naming it costs it regardless of the limit
    named = compare_algorithms(t, "allreduce", [2**20], algorithms=["direct"],
                               max_route_entries=100)
    assert [r.algorithm for r in named] == ["direct"] and named[0].verified


@pytest.mark.parametrize("fabric", ["torus4x4", "mesh3x5", "fat_tree4", "ring9-subgroup",
                                    "small-blocks"])
def test_all_pairs_algorithms_are_sized_before_they_are_built(fabric, monkeypatch):
    """The up-front sum of hop distances over every ordered pair equals route_entries of
    the schedule of every synthesizer that declares ``all_pairs`` (the registry's claim
    checked), and the guard refuses them with it before synthesis."""
    from topocoll.selection import compare as cmp
    from topocoll.synth.registry import SYNTHESIZERS
    from topocoll.topology import mesh, ring

    t, group = {"torus4x4": (torus((4, 4)), None), "mesh3x5": (mesh((3, 5)), None),
                "fat_tree4": (fat_tree(4), None),
                "ring9-subgroup": (ring(9), [7, 2, 4, 8]),
                "small-blocks": (torus((4, 4)), None)}[fabric]
    if fabric == "small-blocks":                 # one row per block, and a partial block
        monkeypatch.setattr(cmp, "PAIRS_PER_BLOCK", 48)
    members = group or list(range(t.num_ranks))
    up_front = cmp.all_pairs_route_entries(t, members)
    syns = [s for s in SYNTHESIZERS if s.all_pairs]
    assert {s.name for s in syns} == {"direct", "pairwise"} and len(syns) == 5
    for syn in syns:
        sched = syn(t, ranks=group) if group else syn(t)
        assert route_entries(sched, t) == up_front, syn
    built, real = [], cmp.synthesize

    def spy(syn, *args, **kwargs):
        built.append(syn.name)
        return real(syn, *args, **kwargs)

    monkeypatch.setattr(cmp, "synthesize", spy)
    monkeypatch.setattr(cmp, "ALGORITHMS", [a for a in cmp.ALGORITHMS if a.kind == "allreduce"
                                            and a.name in ("direct", "ring")])
    skipped: list[tuple[str, str]] = []
    rows = list(cmp.evaluate_candidates(t, direct_allreduce(t, ranks=group).collective,
                                        [1.0], max_route_entries=up_front - 1,
                                        skipped=skipped))
    assert built == ["ring"] and [r.algorithm for r in rows] == ["ring"]
    assert "direct" not in {r.algorithm for r in rows}
    assert f"{up_front:,} link traversals (limit {up_front - 1:,})" in dict(skipped)["direct"]


def test_skipped_lists_inapplicable_algorithms():
    skipped: list[tuple[str, str]] = []
    compare_algorithms(fat_tree(4), "allreduce", [2**20], skipped=skipped,
                       max_route_entries=math.inf)
    names = {n for n, _ in skipped}
    assert {"hierarchical", "hamiltonian_rings"} <= names
    assert all(reason for _, reason in skipped)


def test_no_applicable_algorithm_names_the_reasons():
    with pytest.raises(NotSupportedError) as e:
        compare_algorithms(fat_tree(4), "allreduce", [2**20], algorithms=["hamiltonian_rings"])
    assert "hamiltonian_rings" in str(e.value)


def test_tree_schedules_are_offered_up_to_the_size_limit():
    from topocoll.selection import find_algorithm
    from topocoll.synth.registry import MAX_TREE_RANKS
    from topocoll.topology import ring

    for name in ("optimal", "topology_adaptive", "best_ring"):
        syn = find_algorithm(name, "allreduce")
        assert syn.unsupported(ring(MAX_TREE_RANKS), tuple(range(MAX_TREE_RANKS))) is None
        big = MAX_TREE_RANKS + 1
        reason = syn.unsupported(ring(big), tuple(range(big)))
        assert reason and str(big) in reason


def test_tuning_stops_growing_batches_past_the_transfer_cap(monkeypatch):
    import topocoll.selection.compare as cmp

    t = torus((4, 4))
    rows = compare_algorithms(t, "allreduce", [2**20], algorithms=["optimal"])
    assert rows[0].params.get("batches") in (1, 4, 16, 64, 256) or \
        rows[0].params.get("pipeline") == "auto"
    seen = []
    real = cmp.verify

    def spy(s, topo, **kw):
        seen.append(s.meta.get("batches", s.meta.get("pipeline")))
        return real(s, topo, **kw)

    monkeypatch.setattr(cmp, "verify", spy)
    monkeypatch.setattr(cmp, "MAX_TUNE_TRANSFERS", 1)    # every schedule is over the cap
    rows = compare_algorithms(t, "allreduce", [2**20], algorithms=["optimal"])
    # batches=1 only (the cap stops the grid), then the default (auto) candidate, which
    # keeps the batches it chose itself: they are at the bound on a torus
    assert len(seen) == 2 and seen[0] == "1" and seen[1] not in ("1", None)
    assert rows[0].params in ({"batches": 1}, {"pipeline": "auto", "message_bytes": 2**20})


def test_two_level_is_planned_for_the_largest_size():
    from topocoll.topology.scenarios import two_tier

    t = two_tier(4, 4, oversubscription=4)
    rows = compare_algorithms(t, "allgather", [2**20, 2**30], algorithms=["two_level", "direct"])
    mine = [r for r in rows if r.algorithm == "two_level"]
    assert {r.size_bytes for r in mine} == {2**20, 2**30}
    assert all(r.params == {"message_bytes": 2**30} and r.verified for r in mine)
    big = {r.algorithm: r.time_s for r in rows if r.size_bytes == 2**30}
    assert big["two_level"] < big["direct"] / 2          # uplinks: direct pays 3.2x


def test_an_option_set_over_its_work_budget_leaves_the_others(monkeypatch):
    """With the exact packing over its budget, the fixed-batches option sets of `optimal`
    are skipped and its own choice (pipeline auto: the one-pass constructions) is still
    compared; an algorithm with nothing left says why."""
    from topocoll.selection import compare_algorithms
    from topocoll.topology import parse_spec

    monkeypatch.setenv("TOPOCOLL_PACKING_WORK", "10")
    skipped: list = []
    rows = compare_algorithms(parse_spec("dgx:2"), "allreduce", [2**20],
                              algorithms=["optimal"], skipped=skipped)
    assert [r.params.get("pipeline") for r in rows] == ["auto"] and rows[0].verified
    assert not skipped
    with pytest.raises(NotSupportedError, match="topology_adaptive: the exact tree packing "
                                                "of 24 ranks.*multiplicative-weights.*over"):
        compare_algorithms(parse_spec("dgx:3"), "allreduce", [2**20],
                           algorithms=["topology_adaptive"])
