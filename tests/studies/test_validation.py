"""The SC'21 validation driver: rows run, the fitted constant reproduces its own row, and
the files are written."""

from __future__ import annotations

import json

import pytest

from topocoll.studies.validation import (
    SC21_TABLE1,
    calibrate_gemm,
    mean_abs_error,
    run_validation,
    write_validation,
)
from topocoll.workload import find_device, parse_model


def test_table_rows_are_the_models_they_name():
    for p_b, heads, hidden, layers, *_ in SC21_TABLE1:
        m = parse_model(f"transformer:hidden={hidden},ffn={4 * hidden},heads={heads},"
                        f"layers={layers},seq=2048,vocab=51200")
        # the paper prints one decimal: 1.65 B is its "1.7"
        assert m.parameters / 1e9 == pytest.approx(p_b, abs=0.05)


def test_first_row_runs_and_calibration_reproduces_it(tmp_path):
    dev = find_device("a100-80g")
    plain = run_validation([0], device=dev)
    assert plain[0].gpus == 32 and plain[0].tflops > 0
    cdev = calibrate_gemm(0, device=dev)
    assert cdev.gemm_max != dev.gemm_max
    cal = run_validation([0], device=cdev)
    assert abs(cal[0].error) < 0.005
    assert mean_abs_error(cal) == pytest.approx(abs(cal[0].error))
    paths = write_validation(tmp_path, plain, cal, dev, cdev)
    d = json.loads(paths[0].read_text())
    assert d["plain"][0]["paper_tflops"] == 137 and d["calibrated_gemm_max"] == cdev.gemm_max
