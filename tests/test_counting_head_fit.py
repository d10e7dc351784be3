"""The head refit of trained classifiers (counting/head_fit.py, margins.separating_head): the
cutting planes find the LP over every (point, rival) pair, the head they return scores that
margin, and the refit makes short-trained runs exact inside their ball without touching
anything else or making any run worse."""

import numpy as np
import pytest
import scipy.optimize
import torch

from transformer_stability.counting import head_fit, margins
from transformer_stability.counting.grid import torch_grid
from transformer_stability.counting.margins import AffineFrame, separating_head
from transformer_stability.counting.model import ModelSpec, grid_representation
from transformer_stability.counting.training import TrainConfig, evaluate, train_runs

CLASSIFIER = ModelSpec("post_learned", "classification", 8, 16)
SHORT = TrainConfig(steps=150, lr=0.01, logit_scale=30.0, final_logit_scale=3000.0)


def _smallest_margin(logits: np.ndarray, counts: np.ndarray) -> float:
    points = np.arange(len(logits))
    rivals = logits.copy()
    rivals[points, counts] = -np.inf
    return float((logits[points, counts] - rivals.max(1)).min())


def _every_pair_lp(features: np.ndarray, counts: np.ndarray, classes: int) -> float:
    """The same LP with every (point, rival) pair at once, posed densely for scipy's linprog."""
    x = AffineFrame.of(features).coordinates(features)
    width = x.shape[1]
    rows = []
    for p, count in enumerate(counts):
        for k in range(classes):
            if k != count:
                row = np.zeros(classes * width + 1)
                row[k * width : (k + 1) * width] += x[p]
                row[count * width : (count + 1) * width] -= x[p]
                row[-1] = 1.0
                rows.append(row)
    cost = np.zeros(classes * width + 1)
    cost[-1] = -1.0
    bounds = [(-1, 1)] * (classes * width) + [(None, None)]
    found = scipy.optimize.linprog(cost, np.array(rows), np.zeros(len(rows)), bounds=bounds)
    return -found.fun


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cutting_planes_reach_the_lp_over_every_pair_and_the_head_scores_it(seed):
    """Counts on a noisy curve in R^4 whose order is scrambled in part, so that the neighbouring
    counts alone do not hold the binding margins: the cutting planes must add pairs."""
    rng = np.random.default_rng(seed)
    counts = np.repeat(np.arange(6), 3)
    order = rng.permutation(6)[counts]
    t = order + 0.2 * rng.standard_normal(len(counts))
    features = np.c_[t, t**2, np.sin(t), 0.1 * rng.standard_normal(len(t))]
    weights, biases, delta = separating_head(features, counts, 6)
    assert delta == pytest.approx(_every_pair_lp(features, counts, 6), abs=1e-8)
    assert _smallest_margin(features @ weights.T + biases, counts) == pytest.approx(delta, abs=1e-7)


def test_a_separable_set_gets_a_positive_margin_and_identical_points_none():
    line = np.arange(5.0)[:, None] @ np.ones((1, 3)) + np.arange(3.0)
    assert separating_head(line, np.arange(5), 5)[2] > 0
    weights, biases, delta = separating_head(np.ones((2, 3)), np.array([0, 1]), 2)
    assert delta == pytest.approx(0.0, abs=1e-12)
    assert _smallest_margin(np.ones((2, 3)) @ weights.T + biases, np.array([0, 1])) <= 1e-12


@pytest.fixture(scope="module")
def trained():
    """Three runs at L = 16 after a short Adam on the whole grid: two at B = 0.5 and 0.8, one
    unconstrained."""
    bounds = [0.5, 0.8, np.inf]
    metrics, params = train_runs(CLASSIFIER, bounds, [0, 1, 2], SHORT)
    return torch.tensor(bounds, dtype=torch.float64), params, metrics


def test_the_refit_makes_short_runs_exact_in_their_ball_and_changes_only_their_heads(trained):
    bounds, params, metrics = trained
    assert (metrics["accuracy"][:2] < 1).all(), "Adam alone was already exact: nothing shown"
    fitted = head_fit.fit_heads(CLASSIFIER, params, bounds)
    c, m = torch_grid(CLASSIFIER.length)
    after = evaluate(CLASSIFIER, fitted, c, m)
    np.testing.assert_array_equal(after["accuracy"][:2], 1.0)
    rows = fitted.vector_norms()["head_w"].amax(1).numpy()
    np.testing.assert_allclose(rows[:2], bounds[:2].numpy(), rtol=1e-12)  # the longest row: B
    for name, value in params.tensors().items():
        same = getattr(fitted, name)
        if name.startswith("head"):
            assert torch.equal(same[2], value[2])  # the unconstrained run's head stays
        else:
            assert torch.equal(same, value)


def test_a_run_keeps_its_head_where_no_head_separates(trained, monkeypatch):
    bounds, params, _ = trained
    monkeypatch.setattr(
        head_fit, "separating_head", lambda *args: (np.zeros((17, 8)), np.zeros(17), 0.0)
    )
    kept = head_fit.fit_heads(CLASSIFIER, params, bounds)
    assert torch.equal(kept.head_w, params.head_w) and torch.equal(kept.head_b, params.head_b)


def test_a_head_of_smaller_relative_margin_never_replaces_a_run_s_head(trained, monkeypatch):
    """Refitted (exact) heads stay against a random head that claims a positive margin."""
    bounds, params, _ = trained
    fitted = head_fit.fit_heads(CLASSIFIER, params, bounds)
    rng = np.random.default_rng(0)
    random = (rng.standard_normal((17, 8)), rng.standard_normal(17), 1.0)
    monkeypatch.setattr(head_fit, "separating_head", lambda *args: random)
    kept = head_fit.fit_heads(CLASSIFIER, fitted, bounds)
    assert torch.equal(kept.head_w, fitted.head_w) and torch.equal(kept.head_b, fitted.head_b)


def test_relative_margin_is_the_smallest_margin_over_the_largest_logit():
    rep = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    weights = torch.tensor([[2.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    biases = torch.zeros(2, dtype=torch.float64)
    # logits [[2, 0], [0, 1]]: margins 2 and 1, largest |logit| 2
    assert head_fit.relative_margin(rep, weights, biases, torch.tensor([0, 1])) == 0.5
    assert head_fit.relative_margin(rep, weights, biases, torch.tensor([1, 0])) == -1.0
    zero = head_fit.relative_margin(rep, 0 * weights, biases, torch.tensor([0, 1]))
    assert zero == -np.inf
    # biases (1, -4): logits [[3, -4], [1, -3]], margins 7 and -4, largest |logit| 4
    shifted = head_fit.relative_margin(
        rep, weights, torch.tensor([1.0, -4.0], dtype=torch.float64), torch.tensor([0, 1])
    )
    assert shifted == -1.0


def test_train_runs_refits_only_constrained_classification_heads_when_asked(trained):
    bounds, _, plain = trained
    asked = TrainConfig(**{**SHORT.__dict__, "head_fit": True})
    metrics, _ = train_runs(CLASSIFIER, bounds.tolist(), [0, 1, 2], asked)
    assert np.isnan(plain["adam_logit_margin"]).all() and np.isnan(plain["adam_max_error"]).all()
    np.testing.assert_array_equal(metrics["adam_logit_margin"][:2], plain["logit_margin"][:2])
    assert np.isnan(metrics["adam_logit_margin"][2]) and np.isnan(metrics["adam_max_error"]).all()
    np.testing.assert_array_equal(metrics["accuracy"][:2], 1.0)
    assert metrics["logit_margin"][2] == plain["logit_margin"][2]


def test_the_refit_refuses_a_regression_read_out(trained):
    bounds, params, _ = trained
    with pytest.raises(ValueError, match="classification"):
        head_fit.fit_heads(ModelSpec("post_learned", "regression", 8, 16), params, bounds)


def test_the_representation_of_a_trained_run_has_rank_three(trained):
    """Why the frame matters: post-norm maps the 2-d family of attention outputs onto a sphere's
    3-d span, so the LP works on 4 numbers per head row, not d + 1 = 9."""
    _, params, _ = trained
    c, m = torch_grid(CLASSIFIER.length)
    with torch.no_grad():
        rep = grid_representation(CLASSIFIER, params, c, m)[0].numpy()
    assert AffineFrame.of(rep).basis.shape[0] == 3


def test_the_refit_keeps_the_runs_dtype(trained):
    """float32 parameters get a float32 head (the LP runs in float64 either way)."""
    bounds, params, _ = trained
    single = params.map(lambda t: t.float())
    fitted = head_fit.fit_heads(CLASSIFIER, single, bounds)
    assert all(t.dtype == torch.float32 for t in fitted.tensors().values())
    assert not torch.equal(fitted.head_w, single.head_w)


def test_a_run_without_a_separating_head_keeps_its_own_and_the_next_run_is_still_refitted(
    trained, monkeypatch
):
    """The first run's LP reports no positive margin (yet hands back the exact head of a true
    refit): its Adam head stays; the second run is refitted as usual."""
    bounds, params, _ = trained
    calls = []

    def first_without_margin(*args):
        found = separating_head(*args)
        calls.append(found)
        return (*found[:2], 0.0) if len(calls) == 1 else found

    monkeypatch.setattr(head_fit, "separating_head", first_without_margin)
    fitted = head_fit.fit_heads(CLASSIFIER, params, bounds)
    assert torch.equal(fitted.head_w[0], params.head_w[0])
    assert not torch.equal(fitted.head_w[1], params.head_w[1]) and len(calls) == 2


def test_a_refit_only_as_good_as_the_runs_head_leaves_it(trained, monkeypatch):
    """A head of the same relative margin (the run's exact head at half its scale, offered back
    at full scale) is not taken: only a strictly larger margin replaces a head."""
    bounds, params, _ = trained
    fitted = head_fit.fit_heads(CLASSIFIER, params, bounds)
    halved = fitted.map(lambda t: t)
    halved.head_w, halved.head_b = fitted.head_w / 2, fitted.head_b / 2
    offers = iter(
        (w.numpy(), b.numpy(), 1.0) for w, b in zip(fitted.head_w, fitted.head_b, strict=True)
    )
    monkeypatch.setattr(head_fit, "separating_head", lambda *args: next(offers))
    kept = head_fit.fit_heads(CLASSIFIER, halved, bounds)
    assert torch.equal(kept.head_w, halved.head_w) and torch.equal(kept.head_b, halved.head_b)


def test_the_frame_scales_each_coordinate_to_one_and_maps_heads_back_exactly():
    rng = np.random.default_rng(3)
    features = rng.standard_normal((12, 2)) @ np.diag([1.0, 1e-3]) @ rng.standard_normal((2, 5))
    features += rng.standard_normal(5)
    frame = AffineFrame.of(features)
    x = frame.coordinates(features)
    assert x.shape == (12, 3)  # a plane in R^5, and the constant column
    np.testing.assert_allclose(np.abs(x[:, :2]).max(0), 1.0)
    np.testing.assert_allclose(x[:, :2].mean(0), 0.0, atol=1e-12)
    coefficients = rng.standard_normal((4, 3))
    weights, biases = frame.head(coefficients)
    np.testing.assert_allclose(features @ weights.T + biases, x @ coefficients.T, atol=1e-9)


def test_float32_features_are_fitted_in_float64():
    rng = np.random.default_rng(4)
    t = np.arange(6.0) + 0.1 * rng.standard_normal(6)
    single = np.c_[t, t**2, np.cos(t)].astype(np.float32)
    counts = np.arange(6)
    low, high = separating_head(single, counts, 6), separating_head(single.astype(float), counts, 6)
    assert low[2] == high[2]
    np.testing.assert_array_equal(low[0], high[0])


def test_the_first_lp_holds_the_neighbouring_counts_only(monkeypatch):
    counts = np.array([0, 1, 2, 2, 3])
    features = np.c_[np.arange(5.0), np.arange(5.0) ** 2]
    seen = []
    rows = margins._margin_rows

    def record(x, counts, p, k, classes):
        seen.append(set(zip(p.tolist(), k.tolist(), strict=True)))
        return rows(x, counts, p, k, classes)

    monkeypatch.setattr(margins, "_margin_rows", record)
    separating_head(features, counts, 4)
    assert seen[0] == {(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 1), (3, 3), (4, 2)}


def test_short_pairs_are_the_unknown_ones_below_delta_less_the_tolerance_shortest_first():
    """delta = 1. Point 0 (count 0): rival 1 at 0.5, rival 2 at exactly 1 - tolerance (not
    short). Point 1 (count 1): rival 0 at -1 (short but known), rival 2 at 1 - tolerance / 2
    (not short). Point 2 (count 2): rivals 0 and 1 at 0.25."""
    tol = margins.FEASIBILITY
    logits = np.array([[1.0 - tol, 0.5 - tol, 0.0], [2.0, 1.0, tol / 2], [0.0, 0.0, 0.25]])
    known = np.array([[1, 0]])
    short = margins._short_pairs(logits, np.array([0, 1, 2]), 1.0, known)
    np.testing.assert_array_equal(short, [[2, 0], [2, 1], [0, 1]])


def test_a_failed_lp_is_an_error(monkeypatch):
    monkeypatch.setattr(margins.linprog, "minimize", lambda *args: None)
    with pytest.raises(RuntimeError, match="^margin LP failed: HiGHS found no optimum$"):
        separating_head(np.c_[np.arange(3.0)], np.arange(3), 3)


@pytest.mark.parametrize("refit", [True, False])
def test_figure_c6_says_whether_the_heads_were_refitted(refit):
    from conftest import ROOT, load_yaml

    from transformer_stability.registry import FIGURES

    config = load_yaml(ROOT / "config.yaml")
    config["counting"]["training"]["classification"]["head_fit"] = refit
    caption = " ".join(FIGURES["counting_precision"].render_caption(config).split())
    assert ("refitted by LP" in caption) is refit
    assert ("Adam's, not refitted" in caption) is not refit
