"""Study C training: projection keeps every vector within B, batching equals separate runs,
a short constrained training shows the regression/classification split, and a training item's
rows are its runs."""

import math

import numpy as np
import pytest
import torch

from transformer_stability.counting import training
from transformer_stability.counting.constructions import construct
from transformer_stability.counting.grid import grid_points
from transformer_stability.counting.margins import best_head_margin
from transformer_stability.counting.model import ModelSpec, grid_forward, grid_representation
from transformer_stability.counting.precision import grid_margins
from transformer_stability.counting.theory import lower_bound
from transformer_stability.counting.training import (
    TrainConfig,
    cosine_lr,
    evaluate,
    float32_accuracy,
    init_params,
    line_head_margin,
    logit_margins,
    logit_scale_at,
    p_at,
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_training_item_trains_every_ratio_with_every_seed_then_unconstrained(schema):
    from transformer_stability.config import validate_config
    from transformer_stability.counting.items import train_items
    from transformer_stability.counting.training_tables import training_table

    sweep = {"steps": 5, "lengths": [4], "unconstrained_lengths": [4], "ratios": [0.9, 1.3]}
    sweep |= {"rounds": 1, "unconstrained_steps": 6}  # no search: the first round alone
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
    assert (grid["steps"] == 5).all() and (free["steps"] == 6).all()
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


def test_the_line_head_margin_is_the_lp_on_every_count_of_the_line():
    """line_head_margin solves the best-head LP on the representations of c = 0 .. L at m = 0."""
    found = construct(ModelSpec("post_learned", "classification", 8, 6))
    spec, c = found.spec, torch.arange(7)
    exact = found.params.map(lambda t: t.double())
    with torch.no_grad():
        rep = grid_representation(spec, exact, c, torch.zeros_like(c))[0].numpy()
    expected = best_head_margin(rep, c.numpy(), spec.n_classes)
    assert line_head_margin(spec, found.params) == [expected]


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


def test_schedules_run_from_their_start_to_their_end():
    """The loss exponent and the logit scale ramp geometrically from start (step 0) to end (the
    last step), through the geometric mean halfway; the rate decays by a cosine from 1 to its
    final fraction, half-way at half the steps."""
    assert p_at(0, 11, 2.0, 32.0) == pytest.approx(2.0)
    assert p_at(5, 11, 2.0, 32.0) == pytest.approx(8.0)
    assert p_at(10, 11, 2.0, 32.0) == pytest.approx(32.0)
    assert p_at(0, 1, 2.0, 32.0) == pytest.approx(2.0)  # one step: the start
    assert p_at(1, 2, 2.0, 32.0) == pytest.approx(32.0)  # two steps: start, then end
    end = torch.tensor([9.0, 100.0])
    assert torch.allclose(logit_scale_at(4, 5, 1.0, end), end, rtol=1e-12)
    assert torch.allclose(logit_scale_at(2, 5, 1.0, end), end.sqrt(), rtol=1e-12)
    assert torch.allclose(logit_scale_at(1, 2, 1.0, end), end, rtol=1e-12)
    assert cosine_lr(0, 100, 0.1) == pytest.approx(1.0)
    assert cosine_lr(50, 100, 0.1) == pytest.approx(0.55)
    assert cosine_lr(100, 100, 0.1) == pytest.approx(0.1)
    assert cosine_lr(25, 100, 0.1) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.sqrt(0.5)))


def test_the_p_mean_is_per_run_and_survives_a_large_exponent():
    """Two runs whose errors differ by a factor 10^6: each run's p-mean is its own
    (sum w |e|^p)^(1/p), so the second is 10^-6 times the first, at p = 64 too, where a scale
    shared by the runs would underflow the smaller one to 0."""
    c = torch.tensor([0, 1, 2, 3])
    errors = torch.tensor([[0.1, 0.2, 0.3, 0.4], [1e-7, 2e-7, 3e-7, 4e-7]], dtype=torch.float64)
    out = c.to(torch.float64) + errors
    w = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    for p in (2.0, 64.0):
        means = p_mean_error(out, c, w, p)
        assert means[0] == pytest.approx(float(((w * errors[0] ** p).sum()) ** (1 / p)), rel=1e-12)
        assert means[1] == pytest.approx(1e-6 * float(means[0]), rel=1e-6)


@pytest.mark.parametrize("readout", ["regression", "classification"])
def test_evaluate_reads_exactness_per_run_and_count(readout):
    """An exact construction and, beside it, copies that fail somewhere (regression: b0 shifted
    by 0.3 and 0.45; classification: class 3's bias raised by 1): every metric against a direct
    computation on the grid_forward outputs, and the exact run's relative margin against
    precision.grid_margins (another code path)."""
    spec = ModelSpec("post_learned", readout, 8, 6)
    found = construct(spec)
    if readout == "regression":
        shifted = found.params.map(lambda t: torch.cat([t, t, t]))
        shifted.b0[1] += 0.3
        shifted.b0[2] += 0.45
    else:
        shifted = found.params.map(lambda t: torch.cat([t, t]))
        shifted.head_b[1, 3] += 1.0  # class 3 wins where its logit was close
    c, m = (torch.from_numpy(a) for a in grid_points(spec.length))
    metrics = evaluate(spec, shifted, c, m)
    out = grid_forward(spec, shifted, c, m)
    if readout == "regression":
        error = (out - c).abs()
        correct = (error < 0.5).numpy()
        np.testing.assert_allclose(metrics["max_error"], error.amax(1).numpy(), rtol=1e-12)
        gap = 0.5 - error.amax(1)
        assert np.isnan(metrics["logit_margin"]).all()
    else:
        correct = (out.argmax(-1) == c).numpy()
        gap = logit_margins(out, c).amin(1)
        np.testing.assert_allclose(metrics["logit_margin"], gap.numpy(), rtol=1e-12)
        assert np.isnan(metrics["max_error"]).all()
    scale = out.abs().reshape(len(gap), -1).amax(1)
    relative = np.where(gap.numpy() > 0, (gap / scale).numpy(), np.nan)
    np.testing.assert_allclose(metrics["relative_margin"], relative, rtol=1e-12)
    np.testing.assert_array_equal(metrics["accuracy"], correct.mean(1))
    counts = c.numpy()
    per_count = np.stack([correct[:, counts == k].mean(1) for k in range(7)], 1)
    np.testing.assert_allclose(metrics["balanced_accuracy"], per_count.mean(1), rtol=1e-15)
    first = [np.flatnonzero(row < 1)[0] if (row < 1).any() else np.nan for row in per_count]
    np.testing.assert_array_equal(metrics["first_failing_count"], np.array(first, float))
    assert metrics["accuracy"][0] == 1.0 and np.isnan(metrics["first_failing_count"][0])
    assert (metrics["accuracy"][1:] < 1.0).all()  # the shifted runs fail somewhere
    failing = shifted.map(lambda t: t[1:])
    assert evaluate(spec, failing, c, m)["first_failing_count"].dtype == np.float64
    reference = grid_margins(found, torch.float64)
    assert metrics["relative_margin"][0] == pytest.approx(reference["relative_margin"], rel=1e-9)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("readout", ["regression", "classification"])
def test_initial_vectors_have_unit_entries_and_the_read_out_unit_norm(readout, dtype):
    """Over 200 seeds at d = 8: e_q, e_a and e_b have entries of variance 1, the read-out's
    (u, or every head row) variance 1/d, so a read-out vector has norm about 1; gains start at
    1 and biases at 0, in the dtype asked for."""
    spec = ModelSpec("post_learned", readout, 8, 6)
    params = init_params(spec, list(range(200)), dtype, "cpu")
    for name in ("e_q", "e_a", "e_b"):
        assert getattr(params, name).std().item() == pytest.approx(1.0, rel=0.1), name
    head = params.u if readout == "regression" else params.head_w
    assert head.std().item() == pytest.approx(1 / math.sqrt(8), rel=0.1)
    assert params.gamma.eq(1).all() and params.beta.eq(0).all()
    bias = params.b0 if readout == "regression" else params.head_b
    assert bias.eq(0).all()
    assert all(t.dtype == dtype for t in params.tensors().values())


def test_a_training_steps_its_schedules_from_the_first_step_to_the_last(monkeypatch):
    """The loss exponent, the logit scale and the rate are read at steps 0 .. steps - 1, once
    each, in order (each ramp then starts at its start and ends at its end)."""
    calls = {"p": [], "scale": [], "lr": []}

    def recording(name, function):
        def call(step, *args):
            calls[name].append(step)
            return function(step, *args)

        return call

    monkeypatch.setattr(training, "p_at", recording("p", training.p_at))
    monkeypatch.setattr(training, "logit_scale_at", recording("scale", training.logit_scale_at))
    monkeypatch.setattr(training, "cosine_lr", recording("lr", training.cosine_lr))
    for readout, schedule in (("regression", "p"), ("classification", "scale")):
        calls = {name: [] for name in calls}
        spec = ModelSpec("post_learned", readout, 4, 4)
        train_runs(spec, [2.0], [0], TrainConfig(steps=7))
        assert calls[schedule] == list(range(7)), readout
        assert calls["lr"] == list(range(7)), readout


def test_each_run_steps_at_its_bounds_rate_and_ends_its_logit_ramp_at_its_bounds_scale(
    monkeypatch,
):
    """Per run: the rate is cfg.lr x the cosine factor x B (x 1 unbounded), and the logit ramp
    ends at final_logit_scale / B^2 (margins of a product of two B-vectors scale as B^2)."""
    ends, rates = [], []

    def scale_at(step, total, start, end):
        ends.append(end.clone())
        return torch.full_like(end, start)

    def adam_step(self, tensors, lr, t):
        rates.append((t, lr.clone()))
        for p in tensors.values():
            p.grad = None

    monkeypatch.setattr(training, "logit_scale_at", scale_at)
    monkeypatch.setattr(training._Adam, "step", adam_step)
    bounds = [0.5, 2.0, math.inf]
    cfg = TrainConfig(steps=3, lr=0.01, final_logit_scale=3000.0, dtype=torch.float64)
    train_runs(ModelSpec("post_learned", "classification", 4, 4), bounds, [0, 1, 2], cfg)
    expected_end = torch.tensor([3000.0 / 0.25, 3000.0 / 4.0, 3000.0], dtype=torch.float64)
    assert len(ends) == 3 and all(torch.equal(end, expected_end) for end in ends)
    assert [t for t, _ in rates] == [1, 2, 3]
    for t, lr in rates:
        factor = 0.01 * cosine_lr(t - 1, 3, cfg.final_lr_fraction)
        expected = torch.tensor([0.5, 2.0, 1.0], dtype=torch.float64) * factor
        torch.testing.assert_close(lr, expected, rtol=1e-15, atol=0.0)


@pytest.mark.parametrize("edges_only", [True, False])
def test_a_training_on_the_edges_trains_on_the_extreme_points_only(monkeypatch, edges_only):
    """edges_only trains on extreme_points (then judges on the whole grid); otherwise the whole
    grid is the training set."""
    drawn, original = [], training.extreme_points

    def extreme(length):
        drawn.append(length)
        return original(length)

    monkeypatch.setattr(training, "extreme_points", extreme)
    cfg = TrainConfig(steps=2, edges_only=edges_only)
    train_runs(ModelSpec("post_learned", "regression", 4, 6), [2.0], [0], cfg)
    assert drawn == ([6] if edges_only else [])


@pytest.mark.parametrize("readout", ["regression", "classification"])
def test_packing_the_parameters_gives_them_back_unchanged(readout):
    """The packed buffer's views are the parameters that went in, every tensor bit for bit."""
    params = init_params(ModelSpec("post_learned", readout, 8, 6), [0, 1], torch.float64, "cpu")
    back = training.PackedParams.pack(params).params()
    assert back.tensors().keys() == params.tensors().keys()
    for name, value in params.tensors().items():
        assert torch.equal(getattr(back, name), value), name


def test_a_float32_training_weighs_and_keeps_its_runs_in_float32(monkeypatch):
    """cfg.dtype reaches the count-balanced weights and the parameters, not only the grid."""
    seen = []

    def loss(spec, out, c, w, scale, p):
        seen.append((out.dtype, w.dtype))
        return original(spec, out, c, w, scale, p)

    original = training._loss
    monkeypatch.setattr(training, "_loss", loss)
    spec = ModelSpec("post_learned", "regression", 4, 4)
    _, params = train_runs(spec, [2.0], [0], TrainConfig(steps=2, dtype=torch.float32))
    assert seen == [(torch.float32, torch.float32)] * 2
    assert all(t.dtype == torch.float32 for t in params.tensors().values())


def test_an_error_of_exactly_one_half_is_not_exact(monkeypatch):
    """|y - c| = 1/2 rounds either way: the point is wrong and the run has no margin."""
    spec = ModelSpec("post_learned", "regression", 4, 4)
    params = init_params(spec, [0], torch.float64, "cpu")
    c, m = (torch.from_numpy(v) for v in grid_points(spec.length))

    def forward(spec, params, c, m):
        out = c.to(torch.float64)[None].clone()
        out[0, -1] += 0.5
        return out

    monkeypatch.setattr(training, "grid_forward", forward)
    metrics = evaluate(spec, params, c, m)
    assert metrics["accuracy"][0] == 1 - 1 / len(c)
    assert metrics["max_error"][0] == 0.5 and np.isnan(metrics["relative_margin"][0])


def test_a_training_with_a_progress_bar_trains_the_same():
    spec = ModelSpec("post_learned", "regression", 4, 4)
    quiet, _ = train_runs(spec, [2.0], [0], TrainConfig(steps=5))
    shown, _ = train_runs(spec, [2.0], [0], TrainConfig(steps=5), progress=True)
    for key, values in quiet.items():
        np.testing.assert_array_equal(shown[key], values, err_msg=key)


def test_figure_c3_names_the_steps_of_its_unconstrained_runs():
    """C3 shows the B = inf runs, which train for unconstrained_steps, not the bounded runs'."""
    from conftest import ROOT, load_yaml

    from transformer_stability.registry import FIGURES

    config = load_yaml(ROOT / "config.yaml")
    config["counting"]["training"]["regression"] |= {"steps": 123, "unconstrained_steps": 4567}
    config["counting"]["training"]["classification"]["steps"] = 890
    caption = " ".join(FIGURES["counting_training"].render_caption(config).split())
    assert "4567 steps for regression, 890 for classification" in caption
    assert "123" not in caption
