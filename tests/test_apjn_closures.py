"""The finite-N comparison (apjn/closures.py) and its bootstrap (resampling.py)."""

import numpy as np
import pandas as pd
import pytest

from transformer_stability.apjn.closures import closure_apjn, compared_blocks, finite_n_comparison
from transformer_stability.resampling import bootstrap_ci, mean_ci, nested_ci

A, M = 0.094372, 0.377487


def _measured(factor: dict[str, float], exact: bool, inits: int = 6) -> pd.DataFrame:
    """finite_n.csv rows whose J is one closure's times a per-init factor around `factor`."""
    frames = []
    for seed in range(inits):
        for kind, p0 in (("identical", 1.0), ("generic", 0.2)):
            rows = pd.DataFrame(
                {"width": 64, "depth": 32, "n_tokens": 4, "input": kind, "q0": 1.0, "p0": p0,
                 "init_seed": seed, "a": A, "m": M, "block": np.arange(33)}
            )  # fmt: skip
            spread = 1 + 0.01 * (seed - (inits - 1) / 2)
            frames.append(rows.assign(apjn=closure_apjn(rows, exact) * factor[kind] * spread))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("exact", [False, True])
def test_the_comparison_finds_the_closure_the_data_follow(exact):
    table = finite_n_comparison(_measured({"identical": 1.0, "generic": 1.0}, exact))
    winner = "exact" if exact else "released"
    assert set(table["verdict"]) == {winner}
    assert list(table["block"].unique()) == [8, 16, 32]
    np.testing.assert_allclose(table[f"ratio_{winner}"], 1.0, atol=1e-12)
    loser = table[f"ratio_{'released' if exact else 'exact'}"]
    assert ((loser < 1) if exact else (loser > 1)).all()  # the released J is the larger


def test_a_mismatch_of_both_closures_is_neither():
    table = finite_n_comparison(_measured({"identical": 1.5, "generic": 1.0}, True))
    assert set(table.loc[table["input"] == "identical", "verdict"]) == {"neither"}


def test_compared_blocks_are_powers_of_two_and_the_depth():
    assert list(compared_blocks(256)) == [8, 16, 32, 64, 128, 256]
    assert list(compared_blocks(100)) == [8, 16, 32, 64, 100]


def test_bootstrap_interval_covers_the_mean_and_shrinks_with_more_units():
    rng = np.random.default_rng(1)
    few, many = rng.normal(size=8), rng.normal(size=800)
    mean, lo, hi = mean_ci(few)
    assert lo < mean < hi
    lo_many, hi_many = bootstrap_ci(many, lambda rows: rows.mean(axis=0))
    assert hi_many - lo_many < (hi - lo) / 5
    # the percentile interval of the mean of N(0, 1) has half-width about 1.96 / sqrt(n)
    assert (hi_many - lo_many) / 2 == pytest.approx(1.96 / np.sqrt(800), rel=0.15)


def test_constant_units_give_a_zero_width_interval():
    mean, lo, hi = mean_ci(np.full((5, 3), 2.0))
    np.testing.assert_array_equal(mean, 2.0)
    np.testing.assert_array_equal(lo, 2.0)
    np.testing.assert_array_equal(hi, 2.0)


def test_nested_interval_carries_the_noise_of_initializations_and_inputs():
    """Initialization effects of sd 1 and input noise of sd 2 (40 initializations of 4
    inputs): the grand mean's standard error is sqrt(1/40 + 4/160); the two-stage interval
    matches it up to its known conservatism, and drops the input noise when there is none."""
    rng = np.random.default_rng(2)
    effects = rng.normal(size=(40, 1))
    noisy = effects + 2.0 * rng.normal(size=(40, 4))
    lo, hi = nested_ci(noisy, lambda u: u.mean(axis=(0, 1)))
    assert lo < noisy.mean() < hi
    half = 1.96 * np.sqrt(1 / 40 + 4 / 160)
    assert half < (hi - lo) / 2 < 1.4 * half
    lo_quiet, hi_quiet = nested_ci(np.repeat(effects, 4, axis=1), lambda u: u.mean(axis=(0, 1)))
    assert (hi_quiet - lo_quiet) / 2 == pytest.approx(1.96 / np.sqrt(40), rel=0.25)
