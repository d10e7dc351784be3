"""The statistics of careful tuning, their contrasts with pre-LN and their seed intervals
(apjn/tuning_statistics.py), against values worked out by hand and against tuning.py's
per-configuration table."""

import numpy as np
import pandas as pd
import pytest

from transformer_stability import verdicts
from transformer_stability.apjn.tuning import partial_correlation, rate_windows
from transformer_stability.apjn.tuning_statistics import (
    ALL_DEPTHS,
    best_losses,
    statistics_table,
    tuning_statistics,
    with_best_intervals,
)

RATES = (1e-4, 1e-3, 1e-2)  # one decade per rate cell


@pytest.fixture(autouse=True)
def fewer_resamples(monkeypatch):
    monkeypatch.setattr(verdicts, "RESAMPLES", 50)


def runs(losses, seeds=(0, 1), shift=None, log_j=None, events=None) -> pd.DataFrame:
    """Rows of trainability.csv: `losses[(norm, alpha, mult, depth)]` per rate, plus
    `shift(seed)` on every loss; NaN loss: a diverged run. `log_j` per configuration (default
    0), `events` per configuration (loss spikes of every run)."""
    rows = []
    for (norm, alpha, mult, depth), values in losses.items():
        for lr, loss in zip(RATES, values, strict=True):
            for seed in seeds:
                lost = np.isnan(loss)
                rows.append({
                    "norm": norm, "alpha": alpha, "attn_mult": mult, "mlp_mult": mult,
                    "depth": depth, "lr": lr, "train_seed": seed, "diverged": lost,
                    "final_loss": np.nan if lost else loss + (shift(seed) if shift else 0.0),
                    "loss_spikes": (events or {}).get((norm, alpha, mult, depth), 0),
                    "grad_blowups": 0,
                    "theory_log_apjn": (log_j or {}).get((norm, alpha, mult, depth), 0.0),
                })  # fmt: skip
    return pd.DataFrame(rows)


NAN = np.nan
# depth 2: pre-LN flat and good; Derf's best depends on alpha and mult, its default (alpha 1,
# mult 1, the median rate 1e-3) is poor
GRID = {
    ("ln", NAN, 1.0, 2): (1.0, 1.02, 1.5),
    ("ln", NAN, 4.0, 2): (1.1, 1.2, 1.6),
    ("derf", 1.0, 1.0, 2): (1.2, 1.6, 2.0),
    ("derf", 1.0, 4.0, 2): (1.3, 1.8, 2.0),
    ("derf", 2.0, 1.0, 2): (0.9, 2.0, 2.5),
    ("derf", 2.0, 4.0, 2): (2.0, 2.1, 2.6),
}


def test_each_statistic_at_its_hand_worked_value():
    stats = tuning_statistics(runs(GRID))
    # pre-LN: bests 1.0 and 1.1 -> range 0.1; default (mult 1, rate 1e-3) 1.02 - 1.0
    assert stats[("sensitivity", "ln", 2, False)] == pytest.approx(0.1)
    assert stats[("tuning_cost", "ln", 2, False)] == pytest.approx(0.02)
    # Derf: bests 1.2, 1.3, 0.9, 2.0 -> range 1.1; default 1.6 - 0.9
    assert stats[("sensitivity", "derf", 2, False)] == pytest.approx(1.1)
    assert stats[("tuning_cost", "derf", 2, False)] == pytest.approx(0.7)
    # tolerance 0.1 x 0.9 (the depth's lowest best), the loss linear between rates a decade
    # apart: pre-LN's mult-1 choice is within from 1e-4 to where 1.02 -> 1.5 crosses 1.09,
    # its mult-4 choice up to where 1.1 -> 1.2 crosses 1.19; each Derf choice from its best
    # rate to where the next rate's line crosses its best + 0.09
    ln = (1 + 0.07 / 0.48 + 0.09 / 0.10) / 2
    derf = (0.09 / 0.40 + 0.09 / 0.50 + 0.09 / 1.10 + 0.09 / 0.10) / 4
    assert stats[("window", "ln", 2, False)] == pytest.approx(ln)
    assert stats[("window", "derf", 2, False)] == pytest.approx(derf)
    assert stats[("sensitivity", "derf", 2, True)] == pytest.approx(1.0)
    assert stats[("tuning_cost", "derf", 2, True)] == pytest.approx(0.68)
    assert stats[("window", "derf", 2, True)] == pytest.approx(derf - ln)


def test_depth_zero_is_the_mean_over_depths_and_contrasts_subtract_pre_ln_per_depth():
    deeper = {(n, a, m, 4): tuple(2 * x for x in v) for (n, a, m, _), v in GRID.items()}
    stats = tuning_statistics(runs(GRID | deeper))
    for quantity in ("sensitivity", "tuning_cost", "window", "instability"):
        for norm in ("ln", "derf"):
            per_depth = [stats[(quantity, norm, d, False)] for d in (2, 4)]
            assert stats[(quantity, norm, ALL_DEPTHS, False)] == pytest.approx(np.mean(per_depth))
        for depth in (2, 4, ALL_DEPTHS):
            expected = (
                stats[(quantity, "derf", depth, False)] - stats[(quantity, "ln", depth, False)]
            )
            assert stats[(quantity, "derf", depth, True)] == pytest.approx(expected)
    # doubling every loss doubles the ranges, costs and the tolerance; windows keep their width
    assert stats[("sensitivity", "derf", 4, False)] == pytest.approx(2.2)
    assert stats[("window", "derf", 4, False)] == pytest.approx(stats[("window", "derf", 2, False)])
    assert ("sensitivity", "ln", 2, True) not in stats.index


def test_windows_agree_with_the_per_configuration_table():
    """The grid's windows (mean over init choices) equal rate_windows' window_decades."""
    train = runs(GRID, shift=lambda s: 0.03 * s)
    windows = rate_windows(train)
    stats = tuning_statistics(train)
    for norm, part in windows.groupby("norm"):
        assert stats[("window", norm, 2, False)] == pytest.approx(part["window_decades"].mean())
        best = part["best_loss"]
        assert stats[("sensitivity", norm, 2, False)] == pytest.approx(best.max() - best.min())


def test_instability_counts_events_per_run_and_a_divergence_is_an_event():
    events = {("derf", 2.0, 4.0, 2): 3}
    lost = GRID | {("ln", NAN, 4.0, 2): (1.1, NAN, 1.6)}
    stats = tuning_statistics(runs(lost, events=events))
    assert stats[("instability", "derf", 2, False)] == pytest.approx(3 / 4)
    assert stats[("instability", "ln", 2, False)] == pytest.approx(1 / 6)
    assert stats[("instability", "derf", 2, True)] == pytest.approx(3 / 4 - 1 / 6)


def test_a_configuration_that_never_trains_is_infinitely_worse():
    never = GRID | {("derf", 2.0, 4.0, 2): (NAN, NAN, NAN)}
    stats = tuning_statistics(runs(never))
    assert stats[("sensitivity", "derf", 2, False)] == np.inf
    assert stats[("tuning_cost", "derf", 2, False)] == pytest.approx(0.7)
    # the dead choice has no window; the others keep theirs
    expected = (0.09 / 0.40 + 0.09 / 0.50 + 0.09 / 1.10 + 0) / 4
    assert stats[("window", "derf", 2, False)] == pytest.approx(expected)


def test_tuning_cost_is_nan_without_the_default_init():
    stats = tuning_statistics(runs({k: v for k, v in GRID.items() if k[1] != 1.0}))
    assert np.isnan(stats[("tuning_cost", "derf", 2, False)])
    assert stats[("tuning_cost", "ln", 2, False)] == pytest.approx(0.02)


def test_j_picks_the_alpha_nearest_criticality():
    """At mult 1 alpha 2 trains best (0.9 < 1.2); at mult 4 alpha 1 (1.3 < 2.0)."""
    right = {("derf", 2.0, 1.0, 2): 0.1, ("derf", 1.0, 1.0, 2): 3.0,
             ("derf", 1.0, 4.0, 2): -0.2, ("derf", 2.0, 4.0, 2): 2.0}  # fmt: skip
    assert tuning_statistics(runs(GRID, log_j=right))[("j_picks_alpha", "derf", 0, False)] == 1.0
    half = right | {("derf", 1.0, 4.0, 2): -4.0}
    assert tuning_statistics(runs(GRID, log_j=half))[("j_picks_alpha", "derf", 0, False)] == 0.5


def test_partial_correlation_is_tuning_partial_correlation_of_the_windows():
    log_j = {key: 0.3 * i for i, key in enumerate(GRID)}
    deeper = {(n, a, m, 4): tuple(x + 0.2 * i for x in v)
              for i, ((n, a, m, _), v) in enumerate(GRID.items())}  # fmt: skip
    log_j |= {(n, a, m, 4): 0.5 - 0.1 * i for i, (n, a, m, _) in enumerate(GRID)}
    train = runs(GRID | deeper, log_j=log_j)
    expected = partial_correlation(rate_windows(train))
    assert np.isfinite(expected)
    assert tuning_statistics(train)[("partial_r", "all", 0, False)] == pytest.approx(expected)


def test_intervals_collapse_without_seed_noise_and_cover_the_point_with_it():
    flat = statistics_table(runs(GRID, seeds=(0, 1, 2)))
    finite = flat[np.isfinite(flat["value"])]
    assert (finite["lo"] == finite["value"]).all() and (finite["hi"] == finite["value"]).all()
    assert (flat["seeds"] == 3).all()
    noisy = statistics_table(runs(GRID, seeds=(0, 1, 2), shift=lambda s: 0.2 * s * s))
    spread = noisy[noisy["quantity"] == "tuning_cost"]
    assert (spread["lo"] <= spread["value"]).all() and (spread["value"] <= spread["hi"]).all()
    derf = spread.set_index(["norm", "depth", "contrast"]).loc[("derf", 2, False)]
    assert derf["lo"] < derf["hi"]


def test_best_loss_intervals_per_configuration():
    train = runs(GRID, seeds=(0, 1, 2), shift=lambda s: 0.1 * s)
    windows = with_best_intervals(rate_windows(train), train)
    assert (windows["best_loss_lo"] <= windows["best_loss"]).all()
    assert (windows["best_loss"] <= windows["best_loss_hi"]).all()
    assert (windows["best_loss_lo"] < windows["best_loss_hi"]).all()
    # every seed shifts every loss alike: no resample goes past all seeds 0 or all seeds 2
    assert (windows["best_loss_lo"] >= windows["best_loss"] - 0.1 - 1e-12).all()
    assert (windows["best_loss_hi"] <= windows["best_loss"] + 0.1 + 1e-12).all()
    best = best_losses(train)
    assert best[("derf", 2.0, 1.0, 2)] == pytest.approx(1.0)
    assert best[("ln", None, 4.0, 2)] == pytest.approx(1.2)


def test_best_loss_bounds_sit_beside_the_best_and_are_infinite_where_it_never_trained():
    never = GRID | {("derf", 2.0, 4.0, 2): (NAN, NAN, NAN)}
    train = runs(never, seeds=(0, 1, 2), shift=lambda s: 0.1 * s)
    windows = with_best_intervals(rate_windows(train), train)
    columns = list(windows.columns)
    at = columns.index("best_loss")
    assert columns[at : at + 3] == ["best_loss", "best_loss_lo", "best_loss_hi"]
    dead = windows[(windows["alpha"] == 2.0) & (windows["attn_mult"] == 4.0)].iloc[0]
    assert dead["best_loss"] == dead["best_loss_lo"] == dead["best_loss_hi"] == np.inf
    ln = windows[windows["norm"] == "ln"].set_index("attn_mult")
    assert ln.loc[1.0, "best_loss_lo"] < ln.loc[1.0, "best_loss"] < ln.loc[1.0, "best_loss_hi"]


def test_windows_ignore_rates_a_configuration_never_ran():
    """A configuration trained at two of the three rates: its window and best count only
    those (the missing rate is not a diverged one)."""
    train = runs(GRID)
    train = train[~((train["alpha"] == 1.0) & (train["attn_mult"] == 1.0) & (train["lr"] == 1e-2))]
    stats = tuning_statistics(train)
    # the missing rate lies beyond the choice's crossing (1.2 -> 1.6 crosses 1.29 first)
    derf = (0.09 / 0.40 + 0.09 / 0.50 + 0.09 / 1.10 + 0.09 / 0.10) / 4
    assert stats[("window", "derf", 2, False)] == pytest.approx(derf)
    assert stats[("sensitivity", "derf", 2, False)] == pytest.approx(1.1)
