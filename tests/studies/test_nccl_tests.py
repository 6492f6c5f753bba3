"""The nccl-tests half of `study validation` (issue 31): every published case predicted,
errors as the study reports them."""

import json

import pytest

from topocoll.studies.nccl_tests import (
    NCCL_TESTS,
    errors_by_regime,
    run_nccl_validation,
    write_nccl_validation,
)


@pytest.fixture(scope="module")
def results():
    return run_nccl_validation()


def test_every_case_of_validation_data_is_predicted(results):
    assert len(results) == len(NCCL_TESTS) == 27
    for r in results:
        assert r.case.low <= r.case.measured <= r.case.high and r.case.source
        assert r.predicted > 0


def test_errors_as_reported(results):
    """All cases within 5% except NVLS forced on 3 GPUs (the model's NVLS rate, NCCL's
    0.85 x NVLink, is 15% under what was measured there) and a user's two- and four-box
    runs of NCCL's default (the NVLS tree across two boxes 11% over, the ring across four
    7% over), which docs/studies/validation.md reports; a model change that moves any of
    them must update the study."""
    by = {r.case.label: r for r in results}
    misses = {"3x H100, NCCL_ALGO=NVLS": ("nvls/Simple", -0.150),
              "2 boxes of 8x H100, default (user)": ("nvls_tree/Simple", 0.114),
              "4 boxes of 8x H100, default (user)": ("ring/Simple", 0.066)}
    for label, (ran, err) in misses.items():
        assert by[label].ran == ran and by[label].error == pytest.approx(err, abs=0.005)
    others = [r for r in results if r.case.label not in misses]
    assert max(abs(r.error) for r in others) < 0.05
    assert by["2x H100, NCCL_ALGO=NVLS"].ran == "ring/Simple"      # NVLS off at 2 GPUs
    assert "does not apply" in by["2x H100, NCCL_ALGO=NVLS"].note
    assert by["8x A100, default"].ran == "ring/Simple"
    # NVLS off: NCCL's choice without NVLink SHARP, on both generations
    for label in ("8x H100, NVLS off (2026)", "8x B300, NVLS off"):
        assert by[label].ran == "ring/Simple" and by[label].note == "NVLS off"
    for label in ("8x H100, NVLS on (2026)", "8x B300, NVLS on"):
        assert by[label].ran == "nvls/Simple"


def test_written_files(results, tmp_path):
    paths = write_nccl_validation(tmp_path, results)
    data = json.loads(paths[0].read_text())
    assert len(data["cases"]) == 27 and data["mean_abs_error"] < 0.03
    assert {p.name for p in paths} >= {"validation_nccl.json"}


def test_errors_by_regime(results):
    """The model's validated error per regime (one box or across, the algorithm NCCL ran):
    every case in exactly one, and the spreads the study reports."""
    by = errors_by_regime(results)
    assert sum(v["cases"] for v in by.values()) == len(results)
    assert set(by) == {"one box, ring", "one box, nvls", "across boxes, ring",
                       "across boxes, nvls_tree", "across boxes, p2p"}
    ring = by["one box, ring"]
    assert ring["cases"] == 12 and -0.001 < ring["min_error"] and ring["max_error"] < 0.034
    nvls = by["one box, nvls"]
    assert nvls["min_error"] == pytest.approx(-0.150, abs=0.005)   # the 3-GPU case
    for v in by.values():
        assert v["min_error"] <= v["max_error"] and v["mean_abs_error"] >= 0
