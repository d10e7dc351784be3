"""Storage and precision of the counting constructions (counting/precision.py) and C7's residual
error: classification stores (L+1)(d+1) head numbers and needs a relative margin that float32
cannot resolve at L = 64, while regression's margin shrinks only as 1/L; softmax regression's
best error falls with B but never reaches 0, linear attention's is 0 at sqrt(2)."""

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
