"""The bound grid of Study C's training: no run is exact below the theory's lower bound, and
B_min is read from success fractions over seeds without assuming success monotone in B."""

import math

import numpy as np
import pandas as pd
import pytest

from transformer_stability.counting.derived_tables import (
    empirical_bmin,
    precision_table,
    rates_table,
    reference_slopes,
    success_table,
)
from transformer_stability.counting.model import ModelSpec
from transformer_stability.counting.tables import (
    ConstructionPrecision,
    EmpiricalBmin,
    Precision,
    Rates,
)
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


NO_SUCCESS = pd.DataFrame(columns=["placement", "readout", "L", "B", "fraction", "lower_bound"])


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


def test_the_training_exponent_carries_the_interval_its_brackets_allow():
    """B_min in (1, 1.01] x a lower bound 0.5 L^{3/4} at L = 16, 32, 64: the slope through the
    grid's B_min is 3/4, and B_min anywhere in the brackets moves it by +- ln(1.01) / ln(4)
    (the middle length has no weight); only the training row has an interval."""
    lengths = [16, 32, 64]
    runs = pd.concat(
        _runs(n, {0.99 * b: [False] * 4, b: [False] * 4, 1.01 * b: [True] * 4}, low=b)
        for n, b in ((n, 0.5 * n**0.75) for n in lengths)
    )
    success = success_table(runs)
    empirical = empirical_bmin(runs, success)
    empty = pd.DataFrame(columns=["attention", "d", "placement", "readout", "bound", "L", "bmin"])
    precision = pd.DataFrame(columns=["readout", "source", "d", "placement", "L", "B"])
    rates = rates_table(empty, empirical, success, precision, 3).set_index("source")
    trained = rates.loc["training"]
    half = math.log(1.01) / math.log(4)
    assert trained["fitted_exponent"] == pytest.approx(0.75)
    assert trained["exponent_low"] == pytest.approx(0.75 - half)
    assert trained["exponent_high"] == pytest.approx(0.75 + half)
    assert rates.loc["training_bound", ["exponent_low", "exponent_high"]].isna().all()
    one = rates_table(empty, empirical.iloc[:1], success, precision, 3).set_index("source")
    assert one.loc["training", ["exponent_low", "exponent_high"]].isna().all()  # one length


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
    assert list(success["bracket"]) == ["none", "last failing", "first passing", "none"]
    row = empirical_bmin(runs, success).iloc[0]
    assert row["bmin"] == 1.2 and row["ratio"] == 1.2 and row["fraction"] == 0.5
    assert row["exact_below_bound"] == 1
    assert row["seed_bmin_low"] == 0.9 and row["seed_bmin_high"] == 1.3
    assert row["bounds"] == 4 and row["seeds"] == 4


def test_a_first_bound_that_passes_has_no_failing_end_and_lengths_bracket_apart():
    runs = pd.concat(
        [_runs(8, {1.1: [True, True], 1.2: [True, True]}), _runs(16, {0.9: [False], 1.0: [True]})]
    )
    assert list(success_table(runs)["bracket"]) == [
        "first passing",
        "none",
        "last failing",
        "first passing",
    ]


def test_bmin_is_inf_where_no_bound_reaches_half_the_seeds():
    runs = _runs(16, {1.1: [False, False, False, True], 1.3: [True, False, False, False]})
    success = success_table(runs)
    assert list(success["bracket"]) == ["none", "none"]
    row = empirical_bmin(runs, success).iloc[0]
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
    precision = pd.DataFrame(columns=["readout", "source", "d", "placement", "L", "B"])
    rates = rates_table(empty, empirical, NO_SUCCESS, precision, 2).set_index("source")
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
    assert table.index.equals(pd.RangeIndex(len(table)))
    construction = table[table["source"] == "construction"].iloc[0]
    assert construction["accuracy"] == 1.0 and construction["accuracy_float32"] == 0.9
    assert construction["B"] == 1.0 and math.isnan(construction["seed"])
    trained = table[table["source"] == "training"]
    assert list(trained["L"]) == [16]  # no construction stores L = 32: no storage to report
    assert trained["parameters"].iloc[0] == 200 and trained["max_norm"].iloc[0] == 0.5


def _law(lengths: list[int], exponent: float) -> np.ndarray:
    """L^p, three times too high at the first length: only the last points fit the law."""
    values = np.asarray(lengths, float) ** exponent
    values[0] *= 3.0
    return values


def _theory_curves(lengths: list[int]) -> pd.DataFrame:
    """Theory curves whose exponent names the row: a base per (placement, read-out), +0.1 for
    the construction, +1 for linear attention, +2 at the wider d; rows in reverse L order."""
    base = {("none", "regression"): 1.0, ("pre_bare", "regression"): 5.0}
    base |= {("pre_learned", "regression"): 1.2}  # a rate listed after the skipped wall
    base |= {("post_bare", "regression"): 1.5, ("post_learned", "regression"): 0.75}
    base |= {("none", "classification"): 0.3}
    frames = [
        pd.DataFrame(
            {
                "attention": attention,
                "d": d,
                "placement": placement,
                "readout": readout,
                "bound": bound,
                "L": lengths[::-1],
                "bmin": _law(lengths, exponent)[::-1],
            }
        )
        for d in (16, 8)
        for attention in ("linear", "softmax")
        for (placement, readout), p in base.items()
        for bound in ("lower_bound", "construction")
        if (exponent := p + 0.1 * (bound == "construction") + (attention == "linear") + d / 8 - 1)
    ]
    return pd.concat(frames, ignore_index=True)


def _margins(lengths: list[int]) -> pd.DataFrame:
    """Relative margins of constructions and runs; the exponent names the row as above. The
    runs' best heads fall one power of L slower than their own margin; runs at a larger bound
    (B = 1) fall ten powers faster: no rate may read them."""
    rows = [
        {
            "placement": placement,
            "readout": readout,
            "source": source,
            "d": d,
            "L": length,
            "B": bound,
            "relative_margin": value * (length**-10 if bound == 1.0 else 1.0),
            "best_head_margin": value * length,
        }
        for placement, p in (("none", -2.0), ("post_learned", -3.0))
        for readout in ("classification", "regression")
        for source in ("construction", "training")
        for d in (8, 16)
        for bound in ((0.5, 1.0) if source == "training" else (math.inf,))
        for length, value in zip(
            lengths,
            _law(lengths, p - (readout == "regression") - (source == "training") - d / 8),
            strict=True,
        )
    ]
    return pd.DataFrame(rows).iloc[::-1]


def test_rates_fit_the_softmax_smallest_width_curves_runs_and_margins_each_on_its_window():
    lengths = [4, 8, 16, 32]
    empirical = pd.DataFrame(
        {
            "placement": ["post_learned"] * 4 + ["none"] * 4,
            "readout": "regression",
            "d": 8,
            "L": lengths * 2,
            "lower_bound": np.r_[_law(lengths, 0.7), _law(lengths, 1.0)],
            "bmin": np.r_[_law(lengths, 0.9), [math.inf] * 4],
        }
    )
    rates = rates_table(_theory_curves(lengths), empirical, NO_SUCCESS, _margins(lengths), 3)
    assert list(rates.columns) == columns_of(Rates)
    got = {
        (r.placement, r.readout, r.source): (
            None if math.isnan(r.fitted_exponent) else round(r.fitted_exponent, 9),
            None if math.isnan(r.predicted_exponent) else r.predicted_exponent,
            (r.fit_from, r.fit_to, r.fit_points),
        )
        for r in rates.itertuples()
    }
    window, empty = (8, 32, 3), (0, 0, 0)
    expected = {
        ("none", "regression", "lower_bound"): (1.0, 1.0, window),
        ("none", "regression", "construction"): (1.1, 1.0, window),
        ("post_bare", "regression", "lower_bound"): (1.5, 1.5, window),
        ("post_bare", "regression", "construction"): (1.6, 1.5, window),
        ("post_learned", "regression", "lower_bound"): (0.75, 0.75, window),
        ("post_learned", "regression", "construction"): (0.85, 0.75, window),
        ("none", "classification", "lower_bound"): (0.3, 0.0, window),
        ("none", "classification", "construction"): (0.4, 0.0, window),
        ("pre_learned", "regression", "lower_bound"): (1.2, 1.0, window),
        ("pre_learned", "regression", "construction"): (1.3, 1.0, window),
        ("post_learned", "regression", "training"): (0.9, 0.75, window),
        ("post_learned", "regression", "training_bound"): (0.7, 0.75, window),
        ("none", "regression", "training"): (None, 1.0, empty),  # never exact: no fit
        ("none", "regression", "training_bound"): (None, 1.0, empty),
        ("none", "classification", "margin"): (-3.0, None, window),
        ("post_learned", "classification", "margin"): (-4.0, None, window),
        ("none", "classification", "trained_margin"): (-4.0, None, window),
        ("none", "classification", "head_margin"): (-3.0, None, window),
        ("post_learned", "classification", "trained_margin"): (-5.0, None, window),
        ("post_learned", "classification", "head_margin"): (-4.0, None, window),
    }
    assert got == expected and len(rates) == len(expected)


def test_a_trained_margin_rate_skips_lengths_where_fewer_than_half_the_seeds_are_exact():
    """Per length the median over seeds; a non-exact run has no margin (NaN), and a length
    where fewer than half the seeds have one is left out of the fit, as an unreached B_min is."""
    lengths = [8, 16, 32, 64]
    power = np.asarray(lengths, float)
    runs = pd.DataFrame(
        {
            "placement": "post_learned",
            "readout": "classification",
            "source": "training",
            "d": 8,
            "L": np.repeat(lengths, 4),
            "B": 0.5,
            "seed": np.tile(range(4), 4),
            "relative_margin": np.repeat(power**-4.0, 4) * np.tile([0.5, 1, 1, 2], 4),
            "best_head_margin": np.repeat(power**-2.0, 4),
        }
    )
    runs.loc[(runs["L"] == 64) & (runs["seed"] < 3), "relative_margin"] = np.nan
    runs.loc[(runs["L"] == 32) & (runs["seed"] == 3), "relative_margin"] = np.nan
    empty = pd.DataFrame(columns=["attention", "d", "placement", "readout", "bound", "L", "bmin"])
    no_runs = pd.DataFrame(columns=["placement", "readout", "L"])
    rates = rates_table(empty, no_runs, NO_SUCCESS, runs, 3).set_index("source")
    trained, head = rates.loc["trained_margin"], rates.loc["head_margin"]
    assert (trained["fit_from"], trained["fit_to"], trained["fit_points"]) == (8, 32, 3)
    assert np.isclose(trained["fitted_exponent"], -4.0)  # medians: the law itself, to L = 32
    assert (head["fit_from"], head["fit_to"]) == (16, 64)
    assert np.isclose(head["fitted_exponent"], -2.0)


def test_reference_laws_follow_the_softmax_regression_construction_at_every_width():
    lengths = [4, 8, 16, 32]
    theory = _theory_curves(lengths)
    lines = reference_slopes(theory)
    assert lines.index.equals(pd.RangeIndex(len(lines)))
    assert list(lines.drop_duplicates("d")["d"]) == [8, 16]
    assert set(lines["readout"]) == {"regression"} and lines["L"].dtype.kind == "i"
    assert set(lines["placement"]) == {"none", "post_bare", "post_learned"}
    for (d, placement), line in lines.groupby(["d", "placement"]):
        assert list(line["L"]) == lengths
        anchor = theory[
            (theory["d"] == d)
            & (theory["attention"] == "softmax")
            & (theory["placement"] == placement)
            & (theory["bound"] == "construction")
            & (theory["readout"] == "regression")
        ]
        last = anchor.loc[anchor["L"] == 32, "bmin"].iloc[0]
        assert np.isclose(line["bmin"].iloc[-1], 1.6 * last)


def test_bmin_rows_keep_their_width_and_bound_and_count_only_runs_strictly_below_it():
    at_8 = _runs(8, {1.8: [True, True, False, False], 2.0: [True, True, True, False]}, low=2.0)
    at_8 = pd.concat([at_8, at_8.assign(d=16, accuracy=0.5)], ignore_index=True)
    at_8 = pd.concat([at_8, _runs(8, {2.4: [True, True, True, True]}, 2.0).assign(d=16)])
    single = _runs(16, {3.0: [True, False, True, True]}, low=2.5).assign(readout="classification")
    runs = pd.concat([at_8, single], ignore_index=True)
    table = empirical_bmin(runs, success_table(runs))
    assert list(table.columns) == columns_of(EmpiricalBmin)
    rows = {(r.readout, r.d, r.L): r for r in table.itertuples()}
    assert set(rows) == {("regression", 8, 8), ("regression", 16, 8), ("classification", 8, 16)}
    narrow, wide, one = (
        rows["regression", 8, 8],
        rows["regression", 16, 8],
        rows["classification", 8, 16],
    )
    assert (narrow.placement, narrow.lower_bound, narrow.bmin, narrow.ratio) == (
        "post_learned",
        2.0,
        1.8,
        0.9,
    )
    assert narrow.fraction == 0.5 and narrow.exact_below_bound == 2  # B = bound is not below
    assert (narrow.seed_bmin_low, narrow.seed_bmin_high) == (1.8, math.inf)  # seed 3 never
    assert (wide.bmin, wide.fraction, wide.seed_bmin_low, wide.bounds) == (2.4, 1.0, 2.4, 3)
    assert (one.lower_bound, one.bmin, one.ratio, one.fraction, one.bounds) == (
        2.5,
        3.0,
        1.2,
        0.75,
        1,
    )
    assert (one.seed_bmin_low, one.seed_bmin_high, one.seeds) == (3.0, math.inf, 4)


def test_bmin_and_rates_tables_keep_their_columns_when_empty():
    unconstrained = _runs(8, {math.inf: [True, True]}).assign(lower_bound=np.nan)
    assert list(empirical_bmin(unconstrained, success_table(unconstrained)).columns) == columns_of(
        EmpiricalBmin
    )
    theory = _theory_curves([4, 8]).iloc[:0]
    precision = _margins([4, 8]).iloc[:0]
    no_runs = pd.DataFrame(columns=["placement", "readout", "L"])
    empty = rates_table(theory, no_runs, NO_SUCCESS, precision, 3)
    assert empty.empty and list(empty.columns) == columns_of(Rates)
