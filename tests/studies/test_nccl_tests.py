"""The nccl-tests half of `study validation` (issue 31): every published case predicted,
errors as the study reports them."""

import json

import pytest

from topocoll.studies.nccl_tests import NCCL_TESTS, run_nccl_validation, write_nccl_validation


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
              "2 boxes of 8x H100, NDR 400G, default (user)": ("nvls_tree/Simple", 0.114),
              "4 boxes of 8x H100, NDR 400G, default (user)": ("ring/Simple", 0.066)}
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
