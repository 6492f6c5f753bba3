"""Swing's packet-level rows: the engine against the alpha-beta model where both must
agree, the margin rule, the merged JSON."""

from __future__ import annotations

import json

import pytest

from topocoll.studies.swing import StudyTopology, parse_study_topology
from topocoll.studies.swing_packet import (
    PACKET_MARGIN,
    PacketRow,
    packet_study,
    render_packet_table,
    write_packet_rows,
)


@pytest.fixture(scope="module")
def rows() -> list[PacketRow]:
    return packet_study(StudyTopology("torus", (4, 4)), sizes=[32.0, 4096.0, 2.0 ** 20])


def test_latency_regime_agrees_with_the_alpha_beta_model(rows):
    small = rows[0]
    # 32 B: one packet per transfer, no queueing: the packet engine's time is the hop
    # latencies the model charges (plus header serialization), Swing 1.5x the baseline
    for r in small.runs:
        assert r["ratio"] == pytest.approx(1.0, abs=0.01)
        assert r["queue_peak_bytes"] < 1024
    assert small.swing["variant"] == "swing_latency"
    assert small.speedup_packet == pytest.approx(small.speedup_ab, rel=0.01)
    assert small.speedup_ab == pytest.approx(1.5, rel=0.01)


def test_only_variants_within_the_margin_are_simulated(rows):
    for row in rows:
        assert {r["family"] for r in row.runs} >= {"swing"}
        assert any(r["family"] != "swing" for r in row.runs)
        for side in (True, False):
            runs = [r for r in row.runs if (r["family"] == "swing") == side]
            best = min(r["ab_s"] for r in runs)
            assert all(r["ab_s"] <= PACKET_MARGIN * best for r in runs)
        for r in row.runs:         # the engine's counters are sane
            assert 0 < r["utilization"] <= 1 and r["events"] > 0 and r["retransmits"] == 0
            assert 0.8 < r["ratio"] < 1.5
    # the bandwidth-bound size uses the links more than the latency-bound one
    assert rows[-1].swing["utilization"] > 10 * rows[0].swing["utilization"]


def test_rows_merge_into_one_file_per_torus(rows, tmp_path):
    p = tmp_path / "swing-packet.json"
    write_packet_rows(p, "torus 4x4", rows[:1])
    write_packet_rows(p, "torus 2x8", rows[1:])
    write_packet_rows(p, "torus 4x4", rows)
    doc = json.loads(p.read_text())
    assert sorted(doc) == ["torus 2x8", "torus 4x4"] and len(doc["torus 4x4"]) == 3
    back = [PacketRow(r["size"], r["runs"]) for r in doc["torus 4x4"]]
    assert [b.speedup_packet for b in back] == pytest.approx([r.speedup_packet for r in rows])
    table = render_packet_table("torus 4x4", back)
    assert table.count("\n| ") == 4 and "| 1MiB |" in table


def test_cli_rows_up_to_a_size(tmp_path):
    from typer.testing import CliRunner

    from topocoll.cli import app

    r = CliRunner().invoke(app, ["study", "swing-packet", "-t", "torus:2x4", "--max-size",
                                 "4KiB", "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "swing-packet.json").read_text())
    assert [row["size"] for row in doc["torus 2x4"]] == [2.0 ** k for k in range(5, 13)]
    assert "### torus 2x4" in (tmp_path / "swing-packet.md").read_text()


def test_hammingmesh_rows_at_packet_level_match_the_model_and_drop_nothing():
    # the line switches' shared buffers hold every burst at these sizes, and at 32 B
    # the packet engine charges the model's hops (Swing 0.83x of recursive doubling)
    rows = packet_study(parse_study_topology("hx2mesh:8x8"), sizes=[32.0, 2.0 ** 20])
    assert all(run["retransmits"] == 0 for r in rows for run in r.runs)
    assert rows[0].speedup_packet == pytest.approx(rows[0].speedup_ab, rel=0.01)
    assert rows[0].speedup_packet == pytest.approx(10 / 12, rel=0.01)
    assert rows[1].speedup_packet > 1.0
