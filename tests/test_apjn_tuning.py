"""Tuning windows, J-matched pairs and the partial correlation (apjn/tuning.py)."""

import numpy as np
import pandas as pd
import pytest

from transformer_stability.apjn.tuning import (
    matched_pairs,
    partial_correlation,
    rate_windows,
    window_widths,
)

RATES = (1e-4, 1e-3, 1e-2)


def runs(losses: dict[tuple, tuple[float, ...]], diverged=(), log_j=None) -> pd.DataFrame:
    """Two seeds per (norm, alpha, mult, depth) and rate with the given losses; runs listed
    in `diverged` as (config, rate index, seed) lost."""
    rows = []
    for config, values in losses.items():
        norm, alpha, mult, depth = config
        for k, (lr, loss) in enumerate(zip(RATES, values, strict=True)):
            for seed in (0, 1):
                lost = (config, k, seed) in diverged
                rows.append({"norm": norm, "alpha": alpha, "attn_mult": mult, "depth": depth,
                             "lr": lr, "train_seed": seed, "diverged": lost,
                             "final_loss": np.nan if lost else loss, "loss_spikes": seed,
                             "grad_blowups": int(lost),
                             "theory_log_apjn": (log_j or {}).get(config, 1.0)})  # fmt: skip
    return pd.DataFrame(rows)


LN, DERF = ("ln", np.nan, 1.0, 4), ("derf", 1.0, 1.0, 4)


def test_window_counts_rates_within_the_depths_tolerance_and_measures_its_width():
    """The depth's lowest best loss is Derf's 0.5, so the tolerance is 0.05 for both: pre-LN
    keeps 1.04 (not 1.2), Derf loses 0.56 although it is within 10 % of its own best. The
    width runs, the loss linear between rates a decade apart, to where it crosses the limit."""
    table = rate_windows(runs({LN: (1.0, 1.04, 1.2), DERF: (2.0, 0.5, 0.56)}))
    ln, derf = table.set_index("norm").loc["ln"], table.set_index("norm").loc["derf"]
    assert (ln["best_loss"], ln["best_lr"]) == (1.0, 1e-4)
    assert ln["window_rates"] == 2 and ln["window_decades"] == pytest.approx(1 + 0.01 / 0.16)
    assert derf["best_lr"] == 1e-3 and derf["window_rates"] == 1
    assert derf["window_decades"] == pytest.approx(0.05 / 1.5 + 0.05 / 0.06)
    assert (table["runs"] == 6).all()
    assert (table["loss_spikes"] == 3).all()  # seed 1 has one spike per rate


def test_a_worse_configuration_gets_no_wider_window():
    """Scaling a configuration's losses up leaves the tolerance (the depth's best) alone, so
    its window can only shrink; a tolerance relative to its own best would widen it."""
    good = rate_windows(runs({LN: (1.0, 1.08, 1.3), DERF: (1.0, 1.08, 1.3)}))
    worse = rate_windows(runs({LN: (1.0, 1.08, 1.3), DERF: (2.0, 2.16, 2.6)}))
    assert good.set_index("norm").loc["derf", "window_rates"] == 2
    assert worse.set_index("norm").loc["derf", "window_rates"] == 1


def test_the_window_width_follows_the_loss_line_to_its_crossing():
    lrs = np.array([1e-4, 1e-3, 1e-1])
    limit = np.array(1.5)
    assert window_widths(np.array([1.0, 1.0, 1.0]), limit, lrs) == pytest.approx(3.0)
    assert window_widths(np.array([1.0, 2.0, 3.0]), limit, lrs) == pytest.approx(0.5)
    assert window_widths(np.array([3.0, 2.0, 1.0]), limit, lrs) == pytest.approx(2 * 0.5 / 1.0)
    assert window_widths(np.array([1.0, np.inf, 1.0]), limit, lrs) == 0.0  # a diverged rate
    assert window_widths(np.array([1.0, np.nan, 1.0]), limit, lrs) == 0.0  # an untrained one
    assert window_widths(np.array([1.0]), limit, lrs[:1]) == 0.0
    # continuous where a rate crosses the limit, where a cell per rate would jump
    near = [window_widths(np.array([1.0, 1.5 + e, 3.0]), limit, lrs) for e in (-1e-9, 0, 1e-9)]
    assert near == pytest.approx([1.0] * 3, abs=1e-8)
    grid = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 2.0]])
    assert window_widths(grid, np.array([1.5, 1.5]), lrs) == pytest.approx([0.5, 0.5 + 1.0])


def test_a_diverged_seed_removes_its_rate_and_a_never_trained_config_has_no_window():
    lost = {(DERF, 1, 0)} | {(LN, k, s) for k in range(3) for s in (0, 1)}
    table = rate_windows(runs({LN: (1.0, 1.0, 1.0), DERF: (2.0, 0.5, 0.52)}, diverged=lost))
    derf, ln = table.set_index("norm").loc["derf"], table.set_index("norm").loc["ln"]
    assert derf["best_lr"] == 1e-2 and derf["window_rates"] == 1 and derf["diverged"] == 1
    assert np.isinf(ln["best_loss"]) and np.isnan(ln["best_lr"]) and ln["window_rates"] == 0
    assert ln["grad_blowups"] == 6


def test_pairs_match_on_ln_j_within_the_tolerance_only():
    configs = {("ln", np.nan, 1.0, 4): 1.0, ("derf", 1.0, 1.0, 4): 1.05,
               ("derf", 2.0, 1.0, 4): 1.3}  # fmt: skip
    losses = dict.fromkeys(configs, (1.0, 1.0, 1.0))
    pairs = matched_pairs(rate_windows(runs(losses, log_j=configs)))
    assert pairs[["first", "second"]].values.tolist() == [["derf a1 x1 L4", "ln x1 L4"]]


def _grid(outcome) -> pd.DataFrame:
    """A 2 x 3 x 2 design of Derf with ln J = alpha * depth, outcome(alpha, depth, log_j)."""
    rows = []
    for alpha in (0.5, 1.0, 2.0):
        for depth in (2, 4, 8):
            for mult in (1.0, 4.0):
                log_j = alpha * depth + mult
                loss = outcome(alpha, depth, log_j)
                rows.append({"norm": "derf", "alpha": alpha, "attn_mult": mult, "depth": depth,
                             "log_apjn": log_j, "best_loss": loss})  # fmt: skip
    return pd.DataFrame(rows)


def test_partial_correlation_sees_j_beyond_the_design_factors():
    """ln J = alpha * depth + mult is not linear in the logs of the factors: an outcome that
    follows ln J keeps a partial correlation of 1, one linear in the log factors none."""
    assert partial_correlation(_grid(lambda a, d, j: 0.1 * j)) == pytest.approx(1.0)
    assert partial_correlation(_grid(lambda a, d, j: -0.1 * j)) == pytest.approx(-1.0)
    assert np.isnan(partial_correlation(_grid(lambda a, d, j: np.log(a) + np.log(d))))
