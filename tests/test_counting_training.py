"""Study C training: projection keeps every vector within B, batching equals separate runs,
a short constrained training shows the regression/classification split, and a training item's
rows are its runs."""

import math

import numpy as np
import pytest
import torch

from transformer_stability.counting.constructions import construct
from transformer_stability.counting.grid import grid_points
from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.theory import lower_bound
from transformer_stability.counting.training import (
    TrainConfig,
    evaluate,
    float32_accuracy,
    init_params,
    line_head_margin,
    logit_margins,
    logit_scale_at,
    p_mean_error,
    project,
    train_runs,
)


@pytest.mark.parametrize("readout", ["regression", "classification"])
def test_projection_keeps_every_vector_within_its_bound(readout):
    spec = ModelSpec("post_learned", readout, 8, 12)
    params = init_params(spec, [0, 1, 2], torch.float64, "cpu")
    params = params.map(lambda t: 5 * t + 1)  # far outside the bounds
    bounds = torch.tensor([0.5, 2.0, math.inf], dtype=torch.float64)
    before = params.vector_norms()
    params = project(params, bounds)
    for name, norms in params.vector_norms().items():
        assert (
            norms[:2] <= bounds[:2, None].reshape((2,) + (1,) * (norms.dim() - 1)) * (1 + 1e-12)
        ).all(), name
        torch.testing.assert_close(norms[2], before[name][2])  # B = inf leaves the run alone
    assert float(params.max_vector_norm()[0]) == pytest.approx(0.5)


def test_projected_training_stays_within_bound():
    spec = ModelSpec("post_learned", "regression", 8, 6)
    cfg = TrainConfig(steps=50, lr=0.05, dtype=torch.float64)
    metrics, params = train_runs(spec, [0.7, 1.3], [0, 1], cfg)
    assert (metrics["max_vector_norm"] <= np.array([0.7, 1.3]) * (1 + 1e-12)).all()
    for norms in params.vector_norms().values():
        assert (norms[0] <= 0.7 * (1 + 1e-12)).all()


def test_batched_runs_equal_separate_runs():
    spec = ModelSpec("post_learned", "classification", 8, 5)
    cfg = TrainConfig(steps=30, lr=0.05, dtype=torch.float64)
    together, _ = train_runs(spec, [1.0, math.inf], [3, 4], cfg)
    for i, (bound, seed) in enumerate([(1.0, 3), (math.inf, 4)]):
        alone, _ = train_runs(spec, [bound], [seed], cfg)
        for key, values in alone.items():
            np.testing.assert_allclose(together[key][i], values[0], rtol=1e-9, equal_nan=True)


def test_small_bound_splits_regression_from_classification():
    """At L = 10 and B = 1 classification learns to count exactly, while regression cannot: its
    lower bound (about 1.5) exceeds B, which the projection must enforce."""
    cfg = TrainConfig(steps=400, lr=0.05, dtype=torch.float64)
    results = {}
    for readout in ("regression", "classification"):
        spec = ModelSpec("post_learned", readout, 8, 10)
        metrics, _ = train_runs(spec, [1.0], [0], cfg)
        results[readout] = metrics["accuracy"][0]
    assert lower_bound("post_learned", 10, 8) > 1.0
    assert results["classification"] == 1.0
    assert results["regression"] < 1.0


def test_logit_scale_ramps_geometrically_from_start_to_end():
    end = torch.tensor([3000.0, 30.0], dtype=torch.float64)
    scales = torch.stack([logit_scale_at(t, 5, 30.0, end) for t in range(5)])
    expected = [[30.0, 30 * 10**0.5, 300.0, 300 * 10**0.5, 3000.0], [30.0] * 5]
    np.testing.assert_allclose(scales.T.numpy(), expected)


def test_a_training_item_trains_every_ratio_with_every_seed_then_unconstrained(schema):
    from transformer_stability.config import validate_config
    from transformer_stability.counting.items import train_items
    from transformer_stability.counting.training_tables import training_table

    sweep = {"steps": 5, "lengths": [4], "unconstrained_lengths": [4], "ratios": [0.9, 1.3]}
    config = validate_config({"counting": {"training": {"regression": sweep, "seeds": 2}}}, schema)
    item = next(i for i in train_items(config["counting"], 7) if i.id == "regression_L4")
    table = training_table(item, "cpu")
    grid = table[np.isfinite(table["B"])]
    low = lower_bound("post_learned", 4, 8)
    assert (grid["lower_bound"] == low).all()
    assert list(zip(grid["ratio"], grid["seed"], strict=True)) == [
        (0.9, 7),
        (0.9, 8),
        (1.3, 7),
        (1.3, 8),
    ]
    np.testing.assert_allclose(grid["B"], grid["ratio"] * low)
    free = table[~np.isfinite(table["B"])]
    assert list(free["seed"]) == [7, 8] and free["ratio"].isna().all()
    assert (grid["max_vector_norm"] <= grid["B"] * (1 + 1e-9)).all()
    assert grid["max_error"].notna().all() and grid["logit_margin"].isna().all()
    assert ((grid["max_error"] < 0.5) == (grid["accuracy"] == 1.0)).all()
    assert table["best_head_margin"].isna().all() and (table["train_points"] == "grid").all()


def test_edge_training_is_judged_on_the_whole_grid_and_gets_a_best_head():
    """A classifier trained on the edges only is evaluated on every grid point (an interior
    error would show), and the best head on its representation beats or ties its own."""
    spec = ModelSpec("post_learned", "classification", 8, 6)
    cfg = TrainConfig(steps=300, lr=0.05, edges_only=True)
    metrics, params = train_runs(spec, [1.0, math.inf], [0, 1], cfg)
    c, m = (torch.from_numpy(v) for v in grid_points(6))
    np.testing.assert_array_equal(metrics["accuracy"], evaluate(spec, params, c, m)["accuracy"])
    best = line_head_margin(spec, params)
    exact = metrics["accuracy"] >= 1.0
    assert exact.any()
    assert (np.array(best)[exact] >= metrics["relative_margin"][exact] * (1 - 1e-6)).all()


def test_float32_accuracy_rounds_the_parameters():
    """A construction whose margin float32 cannot resolve loses points in float32 only."""
    found = construct(ModelSpec("none", "classification", 8, 128))
    c, m = (torch.from_numpy(v) for v in grid_points(128))
    assert evaluate(found.spec, found.params, c, m)["accuracy"][0] == 1.0
    assert float32_accuracy(found.spec, found.params, c, m)[0] < 1.0


def test_p_mean_error_approaches_the_largest_error_and_logit_margins_sign_exactness():
    out = torch.tensor([[0.0, 1.2, 2.0, 2.6]], dtype=torch.float64)
    c = torch.arange(4)
    w = torch.full((4,), 0.25, dtype=torch.float64)
    assert p_mean_error(out, c, w, 2.0).item() == pytest.approx(math.sqrt(0.2**2 / 4 + 0.4**2 / 4))
    assert p_mean_error(out, c, w, 4096.0).item() == pytest.approx(0.4, rel=1e-3)
    logits = torch.tensor([[[2.0, 1.0, 0.0], [0.0, 1.0, 1.5]]], dtype=torch.float64)
    np.testing.assert_allclose(logit_margins(logits, torch.tensor([0, 1])).numpy(), [[1.0, -0.5]])
