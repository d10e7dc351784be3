"""The search for a length's trained B_min (counting/bracket.py and its rounds in
training_tables.py): it gallops up while no ratio passes, bisects geometrically, stops at the
resolution, and its rounds train every seed at the ratio each round names."""

import math

import numpy as np
import pytest

from transformer_stability.counting import training_tables
from transformer_stability.counting.bracket import GROWTH, bracket, next_ratio
from transformer_stability.counting.items import BoundGrid, TrainItem


def test_the_bracket_is_the_last_failure_below_the_first_pass():
    assert bracket({0.99: False, 1.01: True, 1.1: True}) == (0.99, 1.01)
    assert bracket({0.95: False, 1.0: False, 1.05: True, 1.2: False}) == (1.0, 1.05)
    assert bracket({0.99: False, 1.01: False}) == (None, None)
    assert bracket({0.99: True, 1.2: True}) == (None, 0.99)


def test_no_pass_raises_the_largest_ratio():
    assert next_ratio({0.99: False, 1.01: False}, 0.01) == pytest.approx(1.01 * GROWTH)
    assert next_ratio({1.3: False, 0.5: False}, 0.01) == pytest.approx(1.3 * GROWTH)


def test_a_bracket_is_bisected_in_log_b_until_it_is_within_the_resolution():
    assert next_ratio({1.0: False, 1.21: True}, 0.01) == pytest.approx(1.1)
    assert next_ratio({1.0: False, 1.0201: True}, 0.01) == pytest.approx(1.01)
    assert next_ratio({1.0: False, 1.01: True}, 0.01) is None
    assert next_ratio({1.0: False, 1.0099: True}, 0.01) is None
    assert next_ratio({1.0: False, 1.0101: True}, 0.01) is not None
    assert next_ratio({1.0: False, 1.0201: True}, 0.05) is None


def test_nothing_failing_below_the_first_pass_leaves_nothing_to_refine():
    assert next_ratio({0.99: True, 1.01: True}, 0.01) is None


@pytest.mark.parametrize("threshold", [0.9, 0.995, 1.0, 1.004, 1.037, 1.5])
@pytest.mark.parametrize("resolution", [0.01, 0.02])
def test_a_search_brackets_a_sharp_threshold_to_the_resolution(threshold, resolution):
    """Against a step (pass from `threshold` on) the search ends with threshold in (lo, hi]
    and hi / lo <= 1 + resolution, or with nothing failing below the first ratio."""
    passed = {r: r >= threshold for r in (0.99, 1.01)}
    for _ in range(30):
        ratio = next_ratio(passed, resolution)
        if ratio is None:
            break
        passed[ratio] = ratio >= threshold
    lo, hi = bracket(passed)
    assert hi is not None and hi >= threshold
    if lo is None:
        assert threshold <= 0.99 and hi == 0.99
    else:
        assert lo < threshold and hi <= lo * (1 + resolution) * (1 + 1e-12)
    assert len(passed) <= 2 + math.ceil(math.log(1.5 / 1.01) / math.log(GROWTH)) + 6


def _item(rounds: int, unconstrained: bool = True, free_steps: int = 11) -> TrainItem:
    return TrainItem(
        readout="regression",
        length=8,
        width=8,
        seeds=(3, 4),
        steps=7,
        unconstrained_steps=free_steps,
        lr=0.01,
        final_lr_fraction=0.01,
        p_range=(2.0, 32.0),
        polish_iterations=0,
        head_fit=False,
        logit_scale=None,
        final_logit_scale=None,
        dtype="float64",
        grid=BoundGrid((0.99, 1.01), True, 0.01, rounds),
        unconstrained=unconstrained,
        edges_only=False,
    )


@pytest.fixture
def sharp(monkeypatch):
    """train_runs replaced by a model that counts exactly from 1.037 x the lower bound on (and,
    unconstrained, with seed 3 only); the calls are recorded."""
    calls = []
    scale = training_tables.bound_scale(
        training_tables.ModelSpec("post_learned", "regression", 8, 8)
    )

    def fake(spec, bounds, seeds, cfg, progress=False):
        calls.append((list(bounds), list(seeds), cfg.steps))
        b, s = np.array(bounds), np.array(seeds)
        exact = (b >= 1.037 * scale) & np.isfinite(b)
        accuracy = np.where(exact | (s == 3) & ~np.isfinite(b), 1.0, 0.5)
        keys = ("max_error", "adam_max_error", "logit_margin", "adam_logit_margin")
        keys += ("relative_margin",)
        metrics = {"accuracy": accuracy, "balanced_accuracy": accuracy}
        metrics |= {"first_failing_count": np.nan * b, "max_vector_norm": np.minimum(b, 1.0)}
        metrics |= {k: np.nan * b for k in keys} | {"accuracy_float32": accuracy}
        return metrics, None

    monkeypatch.setattr(training_tables, "train_runs", fake)
    return calls, scale


def test_the_rounds_train_every_seed_at_each_ratio_then_the_unconstrained_runs(sharp):
    calls, scale = sharp
    table = training_tables.training_table(_item(rounds=8), "cpu")
    rounds = [sorted({round(b / scale, 6) for b in bounds}) for bounds, _, _ in calls[:-1]]
    assert rounds[0] == [0.99, 1.01]
    assert rounds[1] == [pytest.approx(1.01 * GROWTH)]  # nothing passed: up by 10 %
    assert all(len(r) == 1 for r in rounds[1:])
    assert all(seeds == [3, 4] * len(r) for (_, seeds, _), r in zip(calls, rounds, strict=False))
    assert [steps for _, _, steps in calls] == [7] * len(rounds) + [11]
    assert calls[-1][0] == [math.inf, math.inf] and calls[-1][1] == [3, 4]
    grid = table[np.isfinite(table.B)]
    passed = (grid.groupby("ratio").accuracy.min() == 1.0).to_dict()
    lo, hi = bracket(passed)
    assert lo < 1.037 <= hi <= lo * 1.01 * (1 + 1e-12)
    assert (
        len(table) == 2 * len(passed) + 2
        and (table.steps == [7] * (len(table) - 2) + [11] * 2).all()
    )


def test_the_search_stops_after_its_rounds(sharp):
    calls, _ = sharp
    table = training_tables.training_table(_item(rounds=2, unconstrained=False), "cpu")
    assert len(calls) == 2 and len(table) == 2 * 3


def test_unconstrained_runs_of_the_same_steps_join_the_first_round(sharp):
    calls, _ = sharp
    table = training_tables.training_table(_item(rounds=1, free_steps=7), "cpu")
    ((bounds, seeds, steps),) = calls
    assert np.isinf(bounds[-2:]).all() and seeds == [3, 4, 3, 4, 3, 4] and steps == 7
    assert len(table) == 6 and table.ratio.isna().sum() == 2


def test_a_midpoint_that_rounds_onto_an_end_ends_the_search():
    """Below the ratios' rounding (six digits) a bisection could repeat an end forever."""
    assert next_ratio({1.0: False, 1.000001: True}, 1e-9) is None
    assert next_ratio({0.999999: False, 1.0: True}, 1e-9) is None
    assert next_ratio({0.9999988: False, 0.999999: True}, 1e-9) is None  # onto the upper end
    assert next_ratio({1.0: False, 1.000004: True}, 1e-9) == pytest.approx(1.000002)
