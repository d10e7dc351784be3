"""The bound grid of Study C's training: no run is exact below the theory's lower bound, and
B_min is read from success fractions over seeds without assuming success monotone in B."""

import math

import numpy as np
import pandas as pd

from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.rates import (
    empirical_bmin,
    precision_table,
    rates_table,
    success_table,
)
from transformer_stability.counting.tables import ConstructionPrecision, Precision
from transformer_stability.counting.theory import lower_bound
from transformer_stability.counting.training import TrainConfig, train_runs
from transformer_stability.tables import columns_of


def test_no_run_is_exact_below_the_lower_bound():
    """Below the theory's bound no parameters count: training there, with an optimiser that
    reaches exactness just above it, must never report an exact run (a projection or an
    evaluation bug would)."""
    spec = ModelSpec("post_learned", "regression", 8, 6)
    low = lower_bound("post_learned", 6, 8)
    ratios = [0.97, 0.97, 0.97, 1.5, 1.5]
    metrics, _ = train_runs(spec, [r * low for r in ratios], [0, 1, 2, 0, 1], TrainConfig(400))
    exact = metrics["accuracy"] >= 1.0
    assert not exact[:3].any() and (metrics["max_error"][:3] >= 0.5).all()
    assert exact[3:].any()  # the same training counts above the bound: the control can fail


def _runs(length: int, table: dict[float, list[bool]], low: float = 1.0) -> pd.DataFrame:
    """Regression rows at one L: for each B, one run per seed, exact or not."""
    rows = [
        {
            "placement": "post_learned",
            "readout": "regression",
            "d": 8,
            "L": length,
            "B": b,
            "lower_bound": low,
            "ratio": b / low,
            "seed": seed,
            "accuracy": 1.0 if ok else 0.5,
        }
        for b, exact in table.items()
        for seed, ok in enumerate(exact)
    ]
    return pd.DataFrame(rows)


def test_bmin_is_the_smallest_bound_where_half_the_seeds_are_exact_whatever_lies_above():
    runs = _runs(
        8,
        {
            0.9: [True, False, False, False],  # below the bound: counted as a bug, not a B_min
            1.1: [True, False, False, False],
            1.2: [True, True, False, False],
            1.3: [False, False, True, True],  # seed 1 fails above its success: nothing moves
        },
    )
    free = runs.iloc[:2].assign(B=math.inf, ratio=np.nan, lower_bound=np.nan)
    success = success_table(pd.concat([runs, free], ignore_index=True))
    assert list(success["fraction"]) == [0.25, 0.25, 0.5, 0.5]
    row = empirical_bmin(runs, success).iloc[0]
    assert row["bmin"] == 1.2 and row["ratio"] == 1.2 and row["fraction"] == 0.5
    assert row["exact_below_bound"] == 1
    assert row["seed_bmin_low"] == 0.9 and row["seed_bmin_high"] == 1.3
    assert row["bounds"] == 4 and row["seeds"] == 4


def test_bmin_is_inf_where_no_bound_reaches_half_the_seeds():
    runs = _runs(16, {1.1: [False, False, False, True], 1.3: [True, False, False, False]})
    row = empirical_bmin(runs, success_table(runs)).iloc[0]
    assert math.isinf(row["bmin"]) and math.isnan(row["fraction"])
    assert row["seed_bmin_high"] == math.inf


def test_the_training_exponent_is_fitted_beside_the_lower_bound_on_the_same_lengths():
    lengths = np.array([8, 16, 32, 64])
    bound = 0.5 * lengths**0.75
    empirical = pd.DataFrame(
        {
            "placement": "post_learned",
            "readout": "regression",
            "d": 8,
            "L": lengths,
            "lower_bound": bound,
            "bmin": bound * np.array([1.1, 1.2, 1.2, math.inf]),
        }
    )
    empty = pd.DataFrame(columns=["attention", "d", "placement", "readout", "bound", "L", "bmin"])
    precision = pd.DataFrame(columns=["readout", "source", "d", "placement", "L"])
    rates = rates_table(empty, empirical, precision, 2).set_index("source")
    trained, beside = rates.loc["training"], rates.loc["training_bound"]
    assert (trained["fit_from"], trained["fit_to"]) == (16, 32)  # the unreached 64 drops out
    assert (beside["fit_from"], beside["fit_to"], beside["fit_points"]) == (16, 32, 2)
    assert np.isclose(beside["fitted_exponent"], 0.75)
    assert np.isclose(trained["fitted_exponent"], 0.75)


def test_the_precision_table_sets_runs_beside_the_constructions_in_both_formats():
    base = {"placement": "post_learned", "readout": "classification", "d": 8, "L": 16}
    built = pd.DataFrame(
        [
            base | {"format": "float64", "accuracy": 1.0, "relative_margin": 1e-5},
            base | {"format": "float32", "accuracy": 0.9, "relative_margin": np.nan},
        ]
    ).assign(parameters=200, max_norm=1.0, best_head_margin=3e-3, margin=1e-5, output_scale=1.0)
    built = built[columns_of(ConstructionPrecision)]
    runs = pd.DataFrame(
        [
            base | {"B": 0.5, "seed": 3, "max_vector_norm": 0.5, "accuracy": 1.0},
            base | {"L": 32, "B": math.inf, "seed": 3, "max_vector_norm": 4.0, "accuracy": 1.0},
            base | {"readout": "regression", "B": 2.0, "seed": 3, "max_vector_norm": 2.0},
        ]
    ).assign(accuracy_float32=1.0, relative_margin=2e-3, best_head_margin=4e-3)
    table = precision_table(built, runs)
    assert list(table.columns) == columns_of(Precision)
    construction = table[table["source"] == "construction"].iloc[0]
    assert construction["accuracy"] == 1.0 and construction["accuracy_float32"] == 0.9
    assert construction["B"] == 1.0 and math.isnan(construction["seed"])
    trained = table[table["source"] == "training"]
    assert list(trained["L"]) == [16]  # no construction stores L = 32: no storage to report
    assert trained["parameters"].iloc[0] == 200 and trained["max_norm"].iloc[0] == 0.5
