"""The model zoo against published parameter counts and the closed forms it follows."""

from __future__ import annotations

import pytest

from topocoll.errors import InputError
from topocoll.workload import MODELS, load_model, parse_model

#: Published parameter counts (model cards and papers).
PUBLISHED = {"gpt3-175b": 175e9, "megatron-22b": 22e9, "mt-nlg-530b": 529.6e9,
             "megatron-1t": 1008.0e9, "llama2-7b": 6_738_415_616, "llama2-13b": 13_015_864_320,
             "llama2-70b": 68_976_648_192, "llama3-8b": 8_030_261_248,
             "llama3-70b": 70_553_706_496, "llama3-405b": 405.85e9,
             "mixtral-8x7b": 46_702_792_704, "bert-large": 336e6}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_parameter_counts_match_the_published_ones(name):
    assert MODELS[name].parameters == pytest.approx(PUBLISHED[name], rel=0.01)


def test_exact_counts_where_the_model_card_gives_every_digit():
    for name in ("llama2-7b", "llama2-70b", "llama3-8b", "llama3-70b", "mixtral-8x7b"):
        assert MODELS[name].parameters == PUBLISHED[name]
    assert round(MODELS["llama3-405b"].parameters / 1e9, 2) == 405.85
    assert MODELS["mixtral-8x7b"].active_parameters == pytest.approx(12.9e9, rel=0.01)


def test_gpt_flops_and_activations_are_the_megatron_closed_forms():
    # Narayanan et al. SC'21 eq. 3 (per sequence, with full recomputation):
    # 96 l h^2 s (1 + s/(6h) + V/(16 l h))
    m = MODELS["gpt3-175b"]
    l, h, s, v = m.layers, m.hidden, m.seq, m.vocab
    want = 96 * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))
    assert m.training_flops("full") == pytest.approx(want, rel=1e-12)
    # Korthikanti et al. eq. 1: s b h (34 + 5 a s / h) per block (b = 1)
    assert m.layer_activation_bytes() == pytest.approx(s * h * (34 + 5 * m.heads * s / h))


def test_specs_and_files_round_trip(tmp_path):
    m = MODELS["llama3-70b"]
    again = parse_model(m.spec())
    assert again.parameters == m.parameters and again.name == m.spec()
    assert parse_model("gpt3-175b:seq=4096").seq == 4096
    f = tmp_path / "tiny.yaml"
    f.write_text("name: tiny\nhidden: 64\nffn: 256\nheads: 4\nlayers: 2\nseq: 32\nvocab: 100\n")
    assert load_model(f).name == "tiny" and load_model(f).layers == 2


@pytest.mark.parametrize("text, item", [
    ("gpt5", "model 'gpt5'"),
    ("transformer:hidden=64,ffn=256,heads=4,layers=2,seq=32", "field 'vocab'"),
    ("transformer:hidden=64,ffn=256,heads=5,layers=2,seq=32,vocab=9", "field 'heads'"),
    ("transformer:hidden=64,ffn=256,heads=4,layers=0,seq=32,vocab=9", "field 'layers'"),
    ("gpt3-175b:seq=long", "field 'seq'"),
    ("gpt3-175b:depth=3", "field 'depth'"),
    ("llama2-7b:kv_heads=5", "field 'kv_heads'"),
    ("mixtral-8x7b:top_k=9", "field 'top_k'"),
])
def test_bad_models_name_the_field(text, item):
    with pytest.raises(InputError) as e:
        parse_model(text)
    assert e.value.item == item
