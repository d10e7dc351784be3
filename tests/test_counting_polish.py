"""The minimax polish of trained regression runs (counting/polish.py): it stays in the ball,
never makes a run worse, reaches exactness where projected Adam stalls, finds what a solve on the
whole grid finds, and makes no run exact below the theory's lower bound."""

import numpy as np
import pytest
import torch

from transformer_stability.counting import polish
from transformer_stability.counting.grid import grid_points
from transformer_stability.counting.model import ModelSpec, grid_forward
from transformer_stability.counting.theory import lower_bound
from transformer_stability.counting.training import TrainConfig, init_params, train_runs

REGRESSION = ModelSpec("post_learned", "regression", 8, 8)
SHORT = TrainConfig(steps=300, lr=0.01, final_lr_fraction=0.01, p_start=2.0, p_end=32.0)


def _largest_errors(spec, params):
    c, m = (torch.from_numpy(v) for v in grid_points(spec.length))
    with torch.no_grad():
        return (grid_forward(spec, params, c, m) - c).abs().amax(1).numpy()


@pytest.fixture(scope="module")
def trained():
    """Four runs at L = 8 after a short Adam: bounds 0.95, 1.1, 1.3 x the lower bound and one
    unconstrained run."""
    scale = lower_bound(REGRESSION.placement, REGRESSION.length, REGRESSION.d)
    bounds = [0.95 * scale, 1.1 * scale, 1.3 * scale, np.inf]
    _, params = train_runs(REGRESSION, bounds, [0, 1, 2, 3], SHORT)
    return torch.tensor(bounds, dtype=torch.float64), params


@pytest.fixture(scope="module")
def polished(trained):
    bounds, params = trained
    return polish.polish_runs(REGRESSION, params, bounds, iterations=200)


@pytest.mark.slow
def test_polish_keeps_every_vector_in_its_ball_and_leaves_unconstrained_runs_alone(
    trained, polished
):
    bounds, params = trained
    norms = polished.max_vector_norm().numpy()
    finite = np.isfinite(bounds.numpy())
    assert (norms[finite] <= bounds.numpy()[finite] * (1 + 1e-12)).all()
    for name, value in params.tensors().items():
        assert torch.equal(getattr(polished, name)[~torch.from_numpy(finite)], value[~finite])


def test_polish_never_worsens_a_run_and_makes_adam_s_runs_exact_above_the_bound(trained, polished):
    _, params = trained
    before, after = _largest_errors(REGRESSION, params), _largest_errors(REGRESSION, polished)
    assert (after[:3] <= before[:3] + 1e-12).all()
    assert (before[1:3] >= 0.5).all(), "Adam alone was already exact: the test shows nothing"
    assert (after[1:3] < 0.5).all()  # 1.1 and 1.3 x the lower bound: exact after the polish


@pytest.mark.slow
def test_every_seed_polishes_to_the_same_minimax_error():
    """The largest error within the ball has one minimum at (L, B), whatever Adam left: three
    seeds, whose Adam errors differ by tenths, end at the same largest error to 1e-7."""
    scale = lower_bound(REGRESSION.placement, REGRESSION.length, REGRESSION.d)
    asked = TrainConfig(**{**SHORT.__dict__, "polish_iterations": 200})
    metrics, _ = train_runs(REGRESSION, [1.1 * scale] * 3, [0, 1, 2], asked)
    assert np.ptp(metrics["adam_max_error"]) > 0.05
    assert np.ptp(metrics["max_error"]) < 1e-7
    assert (metrics["max_error"] < metrics["adam_max_error"]).all()


def test_no_run_is_exact_below_the_lower_bound_after_the_polish(polished):
    assert _largest_errors(REGRESSION, polished)[0] >= 0.5


def test_the_working_set_reaches_the_largest_error_of_a_solve_on_the_whole_grid(trained):
    bounds, params = trained
    one = params.map(lambda t: t[1:2].double())
    bound = float(bounds[1])
    worked = _largest_errors(REGRESSION, polish.polish_run(REGRESSION, one, bound, 200))[0]
    layout = polish._Layout(one)
    c, m = grid_points(REGRESSION.length)
    theta = polish._solve(REGRESSION, layout, layout.flatten(one), bound, c, m, 200)
    whole = _largest_errors(REGRESSION, layout.unflatten(theta))[0]
    assert worked == pytest.approx(whole, abs=1e-6)


def test_the_working_set_starts_on_the_grid_edges_and_grows_by_the_worst_violators(monkeypatch):
    """Errors laid out by hand (the edges 1, fifty interior points 2 .. 51, the rest 0) and a
    solve that changes nothing: the first solve sees the edges alone, the second adds the
    ADDED worst interior points, and then the working set holds the largest error: no third."""
    spec = ModelSpec("post_learned", "regression", 8, 16)
    c, m = grid_points(spec.length)
    edges = (m == 0) | (c + m == spec.length)
    errors = np.where(edges, 1.0, 0.0)
    inside = np.flatnonzero(~edges)[::2][:50]
    errors[inside] = 2.0 + np.arange(50)
    seen = []

    def solve(spec, layout, theta, bound, c, m, iterations):
        seen.append(set(zip(c.tolist(), m.tolist(), strict=True)))
        return theta

    monkeypatch.setattr(polish, "_solve", solve)
    monkeypatch.setattr(polish, "_errors", lambda spec, layout, theta, c, m: errors)
    params = init_params(spec, [0], torch.float64, "cpu")
    polish.polish_run(spec, params, 10.0, 5)
    points = list(zip(c.tolist(), m.tolist(), strict=True))
    first = {points[i] for i in np.flatnonzero(edges)}
    worst = {points[i] for i in inside[-polish.ADDED :]}
    assert seen == [first, first | worst]


@pytest.mark.slow
def test_train_runs_polishes_only_constrained_regression_runs_when_asked(trained):
    bounds, _ = trained
    asked = TrainConfig(**{**SHORT.__dict__, "polish_iterations": 50})
    metrics, params = train_runs(REGRESSION, bounds.tolist(), [0, 1, 2, 3], asked)
    plain, _ = train_runs(REGRESSION, bounds.tolist(), [0, 1, 2, 3], SHORT)
    assert np.isnan(plain["adam_max_error"]).all()
    np.testing.assert_array_equal(metrics["adam_max_error"][:3], plain["max_error"][:3])
    assert np.isnan(metrics["adam_max_error"][3])
    assert (metrics["max_error"][:3] <= plain["max_error"][:3]).all()
    np.testing.assert_array_equal(metrics["max_error"][3], plain["max_error"][3])


def test_polish_refuses_a_classification_read_out(trained):
    spec = ModelSpec("post_learned", "classification", 8, 8)
    bounds, params = trained
    with pytest.raises(ValueError, match="regression"):
        polish.polish_runs(spec, params, bounds, 10)
    with pytest.raises(ValueError, match="a regression run"):
        polish._Layout(init_params(spec, [0], torch.float64, "cpu"))
