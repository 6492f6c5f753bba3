"""The Swing study driver: closed forms it relies on, physical limits, files, CLI."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from topocoll.cli import app
from topocoll.cost import AlphaBeta
from topocoll.errors import TopologyError
from topocoll.studies.swing import (
    StudySetup,
    StudyTopology,
    hamiltonian_rings_time,
    hyperx_with_nics,
    parse_study_topology,
    study_topology,
    write_study,
)
from topocoll.synth import hamiltonian_rings_allreduce, swing_allreduce, swing_latency_allreduce
from topocoll.verification import verify


@pytest.mark.parametrize("shape", [(8, 8), (16, 16), (4, 16)])
def test_hamiltonian_closed_form_matches_the_schedule(shape):
    setup = StudySetup()
    st = StudyTopology("torus", shape)
    topo = st.build(setup)
    model = AlphaBeta(alpha=st.alpha(setup), routing="spray", bound=False)
    s = hamiltonian_rings_allreduce(topo)
    got = [r.time for r in model.evaluate_sizes(s, topo, setup.sizes)]
    assert np.allclose(got, hamiltonian_rings_time(topo, setup.sizes, model.alpha), rtol=1e-12)


def test_torus_hop_latency_is_400ns_per_hop():
    setup = StudySetup()
    st = StudyTopology("torus", (8, 8))
    topo = st.build(setup)
    r = topo.routes(np.array([[0, 1], [0, 3], [0, 27]]))
    # alpha (300 ns) + h * 100 ns + (h - 1) * 300 ns forwarding = h * 400 ns
    assert np.allclose(st.alpha(setup) + r.latency, np.array([1, 3, 6]) * 400e-9)


def test_hyperx_limits_injection_to_2d_ports():
    setup = StudySetup()
    t = hyperx_with_nics((4, 4), setup)
    assert t.num_ranks == 16 and t.num_switches == 16
    assert np.allclose(t.egress_bandwidth()[:16], 4 * setup.bandwidth)
    s = swing_allreduce(t)
    assert verify(s, t).ok


@pytest.mark.parametrize("label", ["torus:4x4", "torus:8x4", "hyperx:4x4", "torus:4x4x2",
                                   "hx2mesh:8x8", "hx4mesh:8x4"])
def test_small_study_is_verified_and_physical(label):
    setup = StudySetup()
    st = parse_study_topology(label)
    res = study_topology(st, setup)
    assert set(res.verified.values()) == {"yes"}
    assert {"swing", "bucket", "ring", "recursive_doubling_latency"} <= set(res.times)
    p = np.prod(st.shape)
    D = len(st.shape)
    peak = D * setup.bandwidth * 8 * p / (p - 1)        # bits/s: (p-1)/p * n / (D B) bound
    for name in res.times:
        assert np.all(res.goodput(name) <= peak * (1 + 1e-9)), name
    names, other = res.best_other()
    assert len(names) == len(setup.sizes) and np.all(other > 0)
    # swing is reported as the best of its two variants, each picked somewhere
    assert set(res.variant["swing"]) <= {"swing", "swing_latency"}


def test_swing_beats_recursive_doubling_at_every_size_on_a_rectangular_torus():
    res = study_topology(StudyTopology("torus", (16, 4)),
                         algorithms=["swing", "mirrored_recursive_doubling",
                                     "recursive_doubling_latency"])
    for name in ("mirrored_recursive_doubling", "recursive_doubling_latency"):
        assert np.all(res.times["swing"] <= res.times[name] * (1 + 1e-12))


def test_write_study_files(tmp_path):
    setup = StudySetup()
    res = [study_topology(StudyTopology("torus", (4, 4)), setup, algorithms=["swing", "ring"])]
    paths = write_study(tmp_path, res, setup)
    names = sorted(p.name for p in paths)
    assert names == ["swing-results.json", "swing-results.md", "swing-torus-4x4.png"]
    assert (tmp_path / "swing-torus-4x4.png").read_bytes()[:4] == b"\x89PNG"
    md = (tmp_path / "swing-results.md").read_text()
    assert "## torus 4x4" in md and "| 32 B |" in md and "| 512 MiB |" in md
    data = json.loads((tmp_path / "swing-results.json").read_text())
    assert data[0]["topology"] == "torus 4x4" and len(data[0]["times_s"]["swing"]) == 25


def test_parse_study_topology_errors():
    with pytest.raises(TopologyError, match="torus:8x8"):
        parse_study_topology("mesh:4x4")
    with pytest.raises(TopologyError, match="hx3mesh:8x8"):
        parse_study_topology("hx3mesh:8x8")     # 3 does not divide 8
    with pytest.raises(TopologyError):
        parse_study_topology("torus:1x4")


def test_cli_study(tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["study", "swing", "-t", "torus:4x4", "-o", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["results"][0]["topology"] == "torus 4x4"
    r = runner.invoke(app, ["study", "swing", "-t", "torus:4", "-o", str(tmp_path),
                            "--routing", "shortest"])
    assert r.exit_code == 0 and "swing speedup" in r.stdout
    r = runner.invoke(app, ["study", "swing", "-t", "bogus", "-o", str(tmp_path)])
    assert r.exit_code == 2 and "bogus" in r.output
    r = runner.invoke(app, ["study", "nope"])
    assert r.exit_code == 2 and "unknown study" in r.output


def test_routing_policy_changes_recursive_doubling_but_not_swing():
    st = StudyTopology("torus", (8, 8))
    algs = ["swing", "mirrored_recursive_doubling"]
    spray = study_topology(st, StudySetup(routing="spray"), algorithms=algs)
    dor = study_topology(st, StudySetup(routing="shortest"), algorithms=algs)
    assert np.allclose(spray.times["swing"], dor.times["swing"], rtol=1e-12)
    ratio = dor.times["mirrored_recursive_doubling"] / spray.times["mirrored_recursive_doubling"]
    assert ratio.min() >= 1 - 1e-12 and ratio.max() > 1.1   # half-ring ties under DOR


def test_bandwidth_sweep_moves_the_crossover_to_larger_sizes():
    from topocoll.studies.swing import bandwidth_sweep, render_sweep

    sizes = tuple(float(2 ** k) for k in range(5, 27, 3))
    rows = bandwidth_sweep(StudySetup(sizes=sizes), shape=(8, 8), gbps=(100, 400, 3200))
    # at 32 B only hops count: the same speedup at every bandwidth
    assert len({round(r["speedup_at_smallest"], 2) for r in rows}) == 1
    # faster links keep the latency regime (where Swing's short hops win) to larger sizes
    ups = [r["swing_best_up_to"] for r in rows]
    assert ups == sorted(ups) and ups[-1] > ups[0]
    table = render_sweep(rows)
    assert table.count("Gb/s |") == 3 and "3200 Gb/s" in table
    assert "synth" not in json.dumps(rows)             # no wall-clock in the artifact


@pytest.mark.parametrize("shape, steps, name", [((6, 4), 10, "swing-even"),
                                               ((5, 3), 6, "swing-odd")])
def test_sizes_study_small(tmp_path, shape, steps, name):
    """Swing on a torus that is not a power of two (even: every coordinate paired; odd:
    the last one exchanges directly): verified, its unfolded schedule against the fold
    at every size, the table and files."""
    import json

    from topocoll.studies.swing import (
        EVEN_TABLE_SIZES,
        StudySetup,
        even_sizes_study,
        render_even,
        write_even,
    )

    rows = even_sizes_study(StudySetup(sizes=EVEN_TABLE_SIZES), shapes=(shape,))
    (r,) = rows
    assert r["shape"] == list(shape) and r["verified"]["swing"] == "yes"
    sw, fold = r["times_s"]["swing"], r["swing_fold_s"]
    assert sw[-1] < fold[-1]                    # large vectors: the fold's hand-offs cost
    assert all(o == min(v[i] for k, v in r["times_s"].items() if k != "swing")
               for i, o in enumerate(r["best_other_s"]))
    label = "x".join(map(str, shape))
    text = render_even(rows, name)
    assert text.startswith(f"<!-- written by `topocoll study {name}`")
    assert text.count(f"| {label} |") == len(EVEN_TABLE_SIZES) + 1   # + its counters' row
    assert f"| {label} | {steps} |" in text
    pj, pm = write_even(tmp_path, rows, name)
    assert pj.name == f"{name}.json" and pm.read_text() == text
    assert json.loads(pj.read_text())[0]["shape"] == list(shape)


def test_hammingmesh_hops_explain_swing_at_32_bytes():
    """On Hx2Mesh every rank has one switch port per dimension, so a cross-board peer is
    two hops and an on-board one one hop. Swing's mirrored ports make each step's slowest
    transfer two hops where recursive doubling's first step per dimension stays on the
    board: 6 x 2 against 2 x 1 + 4 x 2 hops at 400 ns on 8x8 (the study's explanation)."""
    setup = StudySetup(sizes=(32.0,))
    st = parse_study_topology("hx2mesh:8x8")
    topo = st.build(setup)
    hops = topo.routes(np.array([[0, 1], [1, 2], [0, 2], [0, 7], [0, 8], [0, 9]])).hops
    assert hops.tolist() == [1, 2, 2, 2, 1, 2]
    res = study_topology(st, setup, algorithms=["swing", "recursive_doubling_latency"])
    assert res.times["swing"][0] == pytest.approx(12 * 400e-9, rel=1e-3)
    assert res.times["recursive_doubling_latency"][0] == pytest.approx(10 * 400e-9, rel=1e-3)
    one_port = swing_latency_allreduce(topo, multiport=False)
    t = dataclasses.replace(setup.model(), alpha=st.alpha(setup)).evaluate_sizes(
        one_port, topo, [32.0])[0].time
    assert t == pytest.approx(10 * 400e-9, rel=1e-3)


def test_even_torus_pays_congestion_not_uneven_steps():
    # 6x6: the unfolded trees' steps carry 12, 8, 8, 4, 2, 1 blocks, yet the busiest rank
    # of each step sums to (p - 1) / p: the excess over n / (D B) is the links'
    from topocoll.studies.swing import congestion_profile

    setup = StudySetup()
    st = StudyTopology("torus", (6, 6))
    t = st.build(setup)
    pr = congestion_profile(swing_allreduce(t), t, 2.0**27, st.ports, 0.0)
    assert pr["injection_xi"] == pytest.approx(35 / 36)
    assert pr["xi"] / pr["injection_xi"] == pytest.approx(1.171, abs=1e-3)


def test_congestion_profile_separates_the_switch_lines_from_the_torus():
    """The counters the study writes: bucket's congestion deficiency is ``(p - 1) / p``;
    on a HammingMesh the line switches take away most of recursive doubling's congestion
    (and so most of Swing's lead over it) where the torus keeps it."""
    setup = StudySetup(sizes=(2.0**26,))
    algs = ["swing", "mirrored_recursive_doubling", "bucket"]
    xi = {}
    for label in ("torus:16x16", "hx2mesh:16x16"):
        res = study_topology(parse_study_topology(label), setup, algorithms=algs)
        assert set(res.profile) == set(algs)
        assert res.profile["bucket"]["xi"] == pytest.approx(255 / 256)
        assert res.profile["swing"]["steps"] == 16
        # every rank sends (p - 1) / p of the vector over its 4 ports, evenly per step
        assert res.profile["swing"]["injection_xi"] == pytest.approx(255 / 256)
        xi[label] = {a: res.profile[a]["xi"] for a in algs}
    torus, hm = xi["torus:16x16"], xi["hx2mesh:16x16"]
    assert hm["mirrored_recursive_doubling"] < torus["mirrored_recursive_doubling"] - 0.3
    assert (hm["mirrored_recursive_doubling"] / hm["swing"]
            < torus["mirrored_recursive_doubling"] / torus["swing"] - 0.2)
