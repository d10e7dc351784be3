"""The softmax evaluated on a GPT-2's own attention rows (numerics/attention_rows.py): logits
that reproduce the model's attention, rows cut at the causal mask, and each row's error and
bound equal to the synthetic experiment's functions applied to that row alone; N11's medians
per decade of tail mass."""

import math

import pandas as pd
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from transformer_stability.numerics import softmax
from transformer_stability.numerics.attention_rows import attention_logits, row_evaluation
from transformer_stability.numerics.figures.n11_sink_rows import _decade_medians
from transformer_stability.numerics.gpt2 import random_gpt2
from transformer_stability.numerics.lowp import Format
from transformer_stability.numerics.spec import GPT2Spec

SPEC = GPT2Spec(size="tiny", layers=2, width=16, heads=4, vocab=20, positions=12)


@pytest.fixture(scope="module")
def model_and_ids():
    generator = torch.Generator().manual_seed(0)
    model = random_gpt2(SPEC, generator)
    with torch.no_grad():  # larger query/key weights: rows far from uniform
        for block in model.transformer.h:
            block.attn.c_attn.weight[:, :32] *= 4
    return model, torch.randint(20, (3, 12), generator=generator)


@pytest.mark.parametrize(
    "scaling",
    [{}, {"scale_attn_weights": False}, {"scale_attn_by_inverse_layer_idx": True}],
    ids=["gpt2", "unscaled", "by-layer"],
)
def test_the_logits_reproduce_the_models_attention(model_and_ids, scaling):
    """Scaled by 1/sqrt(d_head) as GPT-2 is, or as the model's config says otherwise."""
    model, ids = model_and_ids
    if scaling:
        config = GPT2Config(**{**model.config.to_dict(), **scaling}, attn_implementation="eager")
        scaled = GPT2LMHeadModel(config).eval()
        scaled.load_state_dict(model.state_dict())
        model = scaled
    logits = attention_logits(model, ids)
    with torch.no_grad():
        attentions = model(input_ids=ids, output_attentions=True).attentions
    causal = torch.ones(12, 12, dtype=torch.bool).tril()
    assert len(logits) == 2
    for z, probs in zip(logits, attentions, strict=True):
        assert z.shape == (3, 4, 12, 12) and z.dtype == torch.float64
        p = torch.softmax(z.masked_fill(~causal, -math.inf), dim=-1)
        torch.testing.assert_close(p, probs.double(), atol=1e-6, rtol=0)
        if not scaling:  # spread and concentrated rows alike (unscaled: all concentrated)
            assert p.amax(dim=-1).min() < 0.5 < p.amax(dim=-1).max()


def test_each_row_is_its_causal_part_evaluated_alone(model_and_ids):
    model, ids = model_and_ids
    logits = attention_logits(model, ids)
    fmt = Format.parse("m7")
    rows = row_evaluation(logits, [fmt, Format.parse("bf16")], first_row=6)
    assert len(rows) == 2 * 2 * 4 * 3 * 6
    row = rows[(rows.format == "m7") & (rows.block == 1) & (rows["head"] == 2)]
    row = row[(row.sequence == 1) & (row["query"] == 9)].iloc[0]
    z = logits[1][1, 2, 9, :10]
    p = torch.softmax(z, dim=-1)
    error = (softmax.softmax_lowp(z, fmt, shifted=True) - p).abs().sum()
    assert row.measured == pytest.approx(float(error), rel=1e-12)
    assert row.bound == pytest.approx(float(softmax.softmax_error_bound(z, fmt, True).sum()))
    assert row.tail_mass == pytest.approx(float(1 - p.max()), rel=1e-9)
    assert row.mantissa_bits == 7 and (rows.measured <= rows.bound).all()
    assert (rows.measured > 0).all()


def test_n11_draws_the_medians_of_each_decade_of_tail_mass():
    """N11's points: per decade of 1 - p_max the medians of tail, error, bound and bound/error
    and the error's p10/p90; rows without a tail or without an error are not drawn."""
    rows = pd.DataFrame(
        {
            "tail_mass": [2e-9, 3e-9, 5e-9, 2e-4, 4e-4, 0.0, 6e-4],
            "measured": [1e-9, 2e-9, 4e-9, 1e-4, 3e-4, 1e-20, 0.0],
            "bound": [4e-9, 6e-9, 8e-9, 2e-4, 9e-4, 1e-19, 1e-3],
        }
    )
    found = _decade_medians(rows)
    assert list(found.index) == [-9.0, -4.0]
    assert found.loc[-9.0, ["tail_mass", "measured", "bound", "ratio"]].tolist() == pytest.approx(
        [3e-9, 2e-9, 6e-9, 3.0]
    )
    assert found.loc[-4.0, "ratio"] == pytest.approx((2.0 + 3.0) / 2)
    assert found.loc[-9.0, ["low", "high"]].tolist() == pytest.approx([1.2e-9, 3.6e-9])
