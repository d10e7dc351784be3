"""Storage and precision of the counting constructions (counting/precision.py) and C7's residual
error: classification stores (L+1)(d+1) head numbers and needs a relative margin that float32
cannot resolve at L = 64, while regression's margin shrinks only as 1/L; softmax regression's
best error falls with B but never reaches 0, linear attention's is 0 at sqrt(2)."""

import dataclasses
import math

import pytest
import torch

from transformer_stability.counting.constructions import construct
from transformer_stability.counting.grid import torch_grid
from transformer_stability.counting.model import ModelSpec, grid_forward
from transformer_stability.counting.precision import grid_margins, parameter_count
from transformer_stability.counting.tables import Residual
from transformer_stability.io import read_table
from transformer_stability.tables import result


def test_parameter_counts_follow_the_readout_and_the_learned_norm():
    assert parameter_count(ModelSpec("none", "regression", 8, 64)) == 3 * 8 + 9
    assert parameter_count(ModelSpec("post_learned", "regression", 8, 64)) == 5 * 8 + 9
    assert parameter_count(ModelSpec("post_learned", "classification", 8, 64)) == 40 + 65 * 9


def test_float32_loses_the_classification_grid_where_the_margin_drops_below_its_resolution():
    spec = ModelSpec("post_learned", "classification", 8, 64)
    found = construct(spec)
    f64, f32 = grid_margins(found, torch.float64), grid_margins(found, torch.float32)
    assert f64["accuracy"] == 1.0 and f64["margin"] > 0
    assert f64["relative_margin"] < 2.0**-23  # below float32's resolution
    assert f32["accuracy"] < 1.0 and math.isnan(f32["relative_margin"])
    regression = grid_margins(
        construct(ModelSpec("post_learned", "regression", 8, 64)), torch.float32
    )
    assert regression["accuracy"] == 1.0 and regression["relative_margin"] > 2.0**-16


def _with_head(found, weights, biases):
    """The construction with its classification head replaced."""
    params = dataclasses.replace(found.params, head_w=weights, head_b=biases)
    return dataclasses.replace(found, params=params)


def test_the_relative_margin_does_not_depend_on_the_scale_of_the_logits():
    """Scaling every head row by 1e-3 scales the margin and the largest logit alike (below 1):
    the grid is still counted exactly and the relative margin is the same."""
    found = construct(ModelSpec("post_learned", "classification", 8, 6))
    small = _with_head(found, 1e-3 * found.params.head_w, 1e-3 * found.params.head_b)
    full, scaled = grid_margins(found, torch.float64), grid_margins(small, torch.float64)
    assert full["accuracy"] == scaled["accuracy"] == 1.0
    assert scaled["output_scale"] == pytest.approx(1e-3 * full["output_scale"], rel=1e-12)
    assert scaled["output_scale"] < 1.0
    assert scaled["relative_margin"] == pytest.approx(full["relative_margin"], rel=1e-9)


def test_tied_logits_count_no_point_and_have_no_relative_margin():
    """Every class given the same head row: every logit ties with the true one, a margin of
    exactly 0, which counts no point exactly and leaves the relative margin undefined."""
    found = construct(ModelSpec("post_learned", "classification", 8, 6))
    weights, biases = found.params.head_w, found.params.head_b
    tied = _with_head(found, weights[:, :1].expand_as(weights), biases[:, :1].expand_as(biases))
    margins = grid_margins(tied, torch.float64)
    assert margins["accuracy"] == 0.0 and margins["margin"] == 0.0
    assert margins["output_scale"] > 0 and math.isnan(margins["relative_margin"])


@pytest.mark.slow
def test_softmax_error_falls_with_b_but_never_reaches_zero_and_linear_attention_does(tiny_run):
    """On the tiny run's C7 table (d = 8, L = 8, two target errors), which the workflow's rule
    computes with `residual_table`: the same table in-process would cost the fast tests 17 s."""
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    table = read_table(tiny_run.workdir / result(Residual), Residual)
    assert set(table["target_error"]) >= {0.5, 0.1}
    for (_, source), part in table[table["attention"] == "softmax"].groupby(
        ["placement", "source"]
    ):
        part = part.sort_values("target_error", ascending=False)
        if source == "lower_bound":  # constructions are upper bounds, not always monotone
            assert part["B"].is_monotonic_increasing and part["B"].is_unique
        assert (part["max_error"] <= part["target_error"] + 1e-6).all()
        assert (part["max_error"] > 0).all()
    softmax = table[table["attention"] == "softmax"].set_index(["placement", "target_error"])
    bounds = softmax.loc[softmax["source"] == "lower_bound", "B"]
    built = softmax.loc[softmax["source"] == "construction", "B"]
    assert (built >= bounds.reindex(built.index) * (1 - 1e-9)).all()
    linear = table[table["attention"] == "linear"].iloc[0]
    assert linear["B"] == pytest.approx(math.sqrt(2)) and linear["max_error"] < 1e-12


@pytest.mark.parametrize("readout", ["regression", "classification"])
def test_grid_margins_are_the_forward_passs_gap_in_any_chunking(readout):
    """The gap to the rounding threshold, recomputed from one forward pass over the grid: 1/2 -
    |y - c|, or the true logit minus the best other; a wrong point makes it negative."""
    spec = ModelSpec("post_bare", readout, 8, 10)
    found = construct(spec)
    c, m = torch_grid(10)
    for broken in (False, True):
        if broken and readout == "regression":
            found.params.u.mul_(1.3)
        elif broken:  # the heads of counts 3 and 4 swapped
            found.params.head_w[0, [3, 4]] = found.params.head_w[0, [4, 3]]
        out = grid_forward(spec, found.params, c, m)[0]
        if readout == "regression":
            gap = 0.5 - (out - c).abs()
        else:
            true = out.gather(-1, c[:, None])[:, 0]
            gap = true - out.scatter(-1, c[:, None], -math.inf).max(-1).values
        for chunk in (16, 1 << 18):
            found_margins = grid_margins(found, torch.float64, chunk=chunk)
            assert found_margins["margin"] == pytest.approx(float(gap.min()), rel=1e-12)
            assert found_margins["accuracy"] == pytest.approx(float((gap > 0).double().mean()))
            assert found_margins["output_scale"] == pytest.approx(float(out.abs().max()))
            relative = found_margins["relative_margin"]
            if broken:
                assert found_margins["accuracy"] < 1 and math.isnan(relative)
            else:
                assert relative == pytest.approx(float(gap.min() / out.abs().max()))
