"""The Llama 3 405B validation driver (Meta's Table 4): the model is the one the paper
trained, the rows run at several pipeline interleaves, the row we cannot model says so,
and the file is written."""

from __future__ import annotations

import json

import pytest

from topocoll.studies.llama3 import LLAMA3_TABLE4, run_llama3, write_llama3
from topocoll.workload import parse_model


def test_the_model_is_llama3_405b_and_the_rows_are_16m_tokens():
    m = parse_model("llama3-405b")
    assert (m.layers, m.hidden, m.seq) == (126, 16384, 8192)
    assert m.parameters / 1e9 == pytest.approx(405, rel=0.01)
    for gpus, tp, cp, pp, dp, seq, per_dp, tflops, mfu in LLAMA3_TABLE4:
        assert tp * cp * pp * dp == gpus
        assert dp * per_dp * seq == 2048 * 8192      # 16 M tokens a batch
        assert tflops / 989 == pytest.approx(mfu, abs=0.006)   # model FLOP/s over the peak


def test_interleaving_shrinks_the_bubble_and_meta_s_ratio_between_the_rows(tmp_path):
    rows = run_llama3((1, 4, 8), rows=[0, 1, 2])
    by = {(r.gpus, r.interleave): r for r in rows if r.model_tflops is not None}
    assert set(by) == {(g, v) for g in (8192, 16384) for v in (1, 4, 8)}
    for g in (8192, 16384):
        plain, inter = by[g, 1], by[g, 4]
        assert inter.bubble_share < plain.bubble_share and inter.mfu > plain.mfu
        assert plain.fits                 # plain 1F1B fits in 80 GB in our memory model
        assert plain.error < -0.15        # and leaves a bubble Meta's runs did not have
        assert not inter.fits and by[g, 8].fits      # 4 chunks do not fit, 8 do
    # half the micro-batches per pipeline at 16,384 GPUs: a larger bubble, a lower figure
    assert by[16384, 1].bubble_share > by[8192, 1].bubble_share
    assert by[16384, 4].model_tflops < by[8192, 4].model_tflops
    cp = [r for r in rows if r.model_tflops is None]
    assert len(cp) == 1 and "context parallelism" in cp[0].note and cp[0].error is None
    d = json.loads(write_llama3(tmp_path, rows)[0].read_text())
    assert len(d["rows"]) == 7 and "2407.21783" in d["source"]
    assert d["rows"][0]["paper_tflops"] == 430 and d["rows"][0]["fits"] is True
