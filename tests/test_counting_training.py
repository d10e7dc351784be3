"""Study C training: projection keeps every vector within B, batching equals separate runs,
a short constrained training shows the regression/classification split, and a training item's
rows are its runs."""

import math

import numpy as np
import pytest
import torch

from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.theory import lower_bound
from transformer_stability.counting.training import (
    TrainConfig,
    init_params,
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


def test_a_training_item_bisects_within_the_theory_bracket_then_runs_unconstrained(schema):
    from transformer_stability.config import validate_config
    from transformer_stability.counting.experiment import training_table
    from transformer_stability.counting.items import train_items

    sweep = {"steps": 5, "lengths": [4], "unconstrained_lengths": [4]}
    bisection = {"probes": 2, "max_rounds": 2}
    training = {"regression": sweep, "bisection": bisection}
    config = validate_config({"counting": {"training": training}}, schema)
    item = next(i for i in train_items(config["counting"], 7) if i.id == "regression_L4")
    table = training_table(item, "cpu")
    bisected = table[table["round"] > 0]
    low = lower_bound("post_learned", 4, 8)
    assert (bisected["bracket_low"] == low).all()
    assert (bisected["B"] > low).all() and (bisected["B"] <= bisected["bracket_high"]).all()
    first = bisected[bisected["round"] == 1]
    assert list(first["seed"]) == [7, 7, 8, 8]
    assert (first.groupby("seed")["B"].max() == first["bracket_high"].iloc[0]).all()
    free = table[table["round"] == 0]
    assert list(free["seed"]) == [7, 8] and np.isinf(free["B"]).all()
    assert (bisected["max_vector_norm"] <= bisected["B"] * (1 + 1e-9)).all()
    assert bisected["max_error"].notna().all() and bisected["logit_margin"].isna().all()
    assert ((bisected["max_error"] < 0.5) == (bisected["accuracy"] == 1.0)).all()


def test_p_mean_error_approaches_the_largest_error_and_logit_margins_sign_exactness():
    out = torch.tensor([[0.0, 1.2, 2.0, 2.6]], dtype=torch.float64)
    c = torch.arange(4)
    w = torch.full((4,), 0.25, dtype=torch.float64)
    assert p_mean_error(out, c, w, 2.0).item() == pytest.approx(math.sqrt(0.2**2 / 4 + 0.4**2 / 4))
    assert p_mean_error(out, c, w, 4096.0).item() == pytest.approx(0.4, rel=1e-3)
    logits = torch.tensor([[[2.0, 1.0, 0.0], [0.0, 1.0, 1.5]]], dtype=torch.float64)
    np.testing.assert_allclose(logit_margins(logits, torch.tensor([0, 1])).numpy(), [[1.0, -0.5]])
