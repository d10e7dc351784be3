"""Study C rates and laws, computed from the theory and training tables for the figures to draw:
the success fractions of the bound grid and the empirical B_min, fitted and predicted exponents
of B_min(L), the C5 exponent table, the reference power laws of C2 and the precision table that
sets trained classifiers beside the constructions. Torch-free and construction-free."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from transformer_stability.counting.bracket import bracket
from transformer_stability.counting.names import PLACEMENTS
from transformer_stability.counting.slopes import bracket_slopes, regression_brackets
from transformer_stability.counting.tables import (
    QUORUM,
    SOURCES,
    EmpiricalBmin,
    Exponents,
    Precision,
    Rates,
    ReferenceSlopes,
    Success,
)
from transformer_stability.counting.theory import fit_window, fitted_exponent, predicted_exponent
from transformer_stability.tables import columns_of, select

REGRESSION_RATE_PLACEMENTS = ("none", "pre_learned", "post_bare", "post_learned")
# C2 draws the predicted law of these placements (pre_learned shares the no-norm exponent)
REFERENCE_PLACEMENTS = ("none", "post_bare", "post_learned")
REFERENCE_OFFSET = 1.6  # reference lines pass this factor above the construction's last point


def precision_table(constructions: pd.DataFrame, training: pd.DataFrame) -> pd.DataFrame:
    """precision.csv: every construction (its float64 and float32 rows side by side) and every
    classification run, with storage, exactness in both formats, the relative margin and the
    best head's on the same representation. A run stores what its construction of the same
    (placement, read-out, d, L) stores."""
    keys = ["placement", "readout", "d", "L"]
    f64 = constructions[constructions["format"] == "float64"].set_index(keys)
    f32 = constructions[constructions["format"] == "float32"].set_index(keys)
    built = f64.assign(
        source="construction", B=f64["max_norm"], seed=np.nan, accuracy_float32=f32["accuracy"]
    ).reset_index()
    runs = training[training["readout"] == "classification"]
    stored = f64["parameters"].reindex(pd.MultiIndex.from_frame(runs[keys]))
    trained = runs.assign(
        source="training", parameters=stored.to_numpy(), max_norm=runs["max_vector_norm"]
    )
    trained = trained[trained["parameters"].notna()]
    return select(pd.concat([built, trained], ignore_index=True), Precision)


def success_table(training: pd.DataFrame) -> pd.DataFrame:
    """success.csv: per (read-out, L, B) of the bound grid, how many seeds count the whole grid
    exactly and that fraction, and (regression) which rows end B_min's bracket; the
    unconstrained runs are left out."""
    constrained = training[np.isfinite(training["B"])]
    keys = ["placement", "readout", "d", "L", "B"]
    grouped = constrained.groupby(keys, dropna=False)
    table = grouped.agg(
        lower_bound=("lower_bound", "first"),
        ratio=("ratio", "first"),
        seeds=("seed", "nunique"),
        exact=("accuracy", lambda a: int((a >= 1.0).sum())),
    ).reset_index()
    table = table.assign(fraction=table["exact"] / table["seeds"], bracket="none")
    for _, part in table[table["readout"] == "regression"].groupby(["placement", "d", "L"]):
        passed = dict(zip(part["B"], part["fraction"] >= QUORUM, strict=True))
        last_failing, first_passing = bracket(passed)
        for end, name in ((last_failing, "last failing"), (first_passing, "first passing")):
            table.loc[part.index[part["B"] == end], "bracket"] = name
    return select(table, Success)


def _seed_minimum(runs: pd.DataFrame) -> float:
    """The smallest B at which one seed counts exactly (inf if at none)."""
    exact = runs.loc[runs["accuracy"] >= 1.0, "B"]
    return float(exact.min()) if len(exact) else math.inf


def empirical_bmin(training: pd.DataFrame, success: pd.DataFrame) -> pd.DataFrame:
    """B_min(L) of the regression grid: the smallest B at which at least QUORUM of the seeds
    count the whole grid exactly (inf if at none; no monotonicity in B assumed: a larger B that
    fails does not move it), with the fraction there, the spread of the seeds' own smallest
    exact B, and the exact runs below the theory's lower bound (which no parameters reach)."""
    graded = success[np.isfinite(success["lower_bound"])]
    rows = []
    for (placement, readout, d, length), part in graded.groupby(["placement", "readout", "d", "L"]):
        part = part.sort_values("B")
        passed = part[part["fraction"] >= QUORUM]
        bound = float(part["lower_bound"].iloc[0])
        bmin = float(passed["B"].iloc[0]) if len(passed) else math.inf
        runs = training[
            (training["readout"] == readout) & (training["L"] == length) & (training["d"] == d)
        ]
        runs = runs[np.isfinite(runs["B"])]
        per_seed = [_seed_minimum(r) for _, r in runs.groupby("seed")]
        rows.append(
            {
                "placement": placement,
                "readout": readout,
                "d": d,
                "L": length,
                "lower_bound": bound,
                "bmin": bmin,
                "ratio": bmin / bound,
                "fraction": float(passed["fraction"].iloc[0]) if len(passed) else math.nan,
                "seed_bmin_low": min(per_seed),
                "seed_bmin_high": max(per_seed),
                "exact_below_bound": int(part.loc[part["B"] < bound, "exact"].sum()),
                "bounds": len(part),
                "seeds": int(part["seeds"].max()),
            }
        )
    return pd.DataFrame(rows, columns=columns_of(EmpiricalBmin))


def _rate_row(placement: str, readout: str, source: str, part: pd.DataFrame, points: int):
    """One fitted exponent with its window: the first and last length and the point count."""
    lengths, values = part["L"].to_numpy(), part["bmin"].to_numpy()
    window = fit_window(lengths, values, points)
    return {
        "placement": placement,
        "readout": readout,
        "source": source,
        "fitted_exponent": fitted_exponent(lengths, values, points),
        "predicted_exponent": predicted_exponent(placement, readout),
        "fit_from": int(window[0]) if len(window) else 0,
        "fit_to": int(window[-1]) if len(window) else 0,
        "fit_points": len(window),
        "exponent_low": math.nan,
        "exponent_high": math.nan,
    }


def _training_rows(
    placement: str, readout: str, part: pd.DataFrame, success: pd.DataFrame, points: int
) -> list[dict]:
    """The trained B_min's fit, with the interval of slopes its brackets on the bound grid allow
    over the fit's lengths (counting/slopes.py), and the lower bound's fit over the very same
    lengths (source training_bound): a local slope of the bound, not its asymptote, is what
    training can match over a short window."""
    trained = _rate_row(placement, readout, "training", part, points)
    window = part[part["L"].between(trained["fit_from"], trained["fit_to"])]
    brackets = [b for b in regression_brackets(success, placement) if b.length in set(window["L"])]
    if len(brackets) >= 2:
        _, low, high = bracket_slopes(brackets)
        trained |= {"exponent_low": low, "exponent_high": high}
    bound = window.assign(bmin=window["lower_bound"])
    return [trained, _rate_row(placement, readout, "training_bound", bound, len(window))]


def rates_table(
    theory: pd.DataFrame,
    empirical: pd.DataFrame,
    success: pd.DataFrame,
    precision: pd.DataFrame,
    fit_points: int,
) -> pd.DataFrame:
    """Fitted exponents of B_min(L) over the last `fit_points` finite points of each curve,
    next to the theory's prediction (softmax attention, smallest width), with the window; the
    trained B_min's beside the lower bound's on the same window; the rate of the
    classification constructions' relative logit margin in float64 (source "margin", no
    prediction), and of the trained classifiers' at the smallest bound trained (smallest
    width), with the best head's on their representations (`_trained_margin_medians`). Only the
    trained B_min's row has an interval of exponents (its brackets'); the others' are NaN."""
    rows = []
    softmax = theory[(theory["attention"] == "softmax") & (theory["d"] == theory["d"].min())]
    for (placement, readout, source), part in softmax.groupby(["placement", "readout", "bound"]):
        if readout == "regression" and placement not in REGRESSION_RATE_PLACEMENTS:
            continue  # bare pre-norm has a wall, not a rate
        rows.append(_rate_row(placement, readout, source, part.sort_values("L"), fit_points))
    for (placement, readout), part in empirical.groupby(["placement", "readout"]):
        rows += _training_rows(placement, readout, part.sort_values("L"), success, fit_points)
    margins = precision[
        (precision["readout"] == "classification")
        & (precision["source"] == "construction")
        & (precision["d"] == precision["d"].min())
    ]
    for placement, part in margins.groupby("placement"):
        part = part.sort_values("L").rename(columns={"relative_margin": "bmin"})
        row = _rate_row(placement, "classification", "margin", part, fit_points)
        rows.append(row | {"predicted_exponent": math.nan})
    trained = precision[
        (precision["readout"] == "classification")
        & (precision["source"] == "training")
        & np.isfinite(precision["B"].astype(float))
    ]
    smallest = (trained["B"] == trained["B"].min()) & (trained["d"] == trained["d"].min())
    for placement, part in trained[smallest].groupby("placement"):
        for source, medians in _trained_margin_medians(part).items():
            row = _rate_row(placement, "classification", source, medians, fit_points)
            rows.append(row | {"predicted_exponent": math.nan})
    return pd.DataFrame(rows, columns=columns_of(Rates))


def _trained_margin_medians(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per length, the median over seeds of the trained classifiers' relative margin (source
    trained_margin; NaN where fewer than half the seeds count exactly, whose margin is NaN) and
    of the best head's on their representations (head_margin), as (L, bmin) for `_rate_row`."""
    by_length = runs.groupby("L")
    exact = by_length["relative_margin"].apply(lambda m: m.notna().mean() >= QUORUM)
    margin = by_length["relative_margin"].median().where(exact)
    head = by_length["best_head_margin"].median()
    return {
        source: values.rename("bmin").reset_index()
        for source, values in (("trained_margin", margin), ("head_margin", head))
    }


def reference_slopes(theory: pd.DataFrame) -> pd.DataFrame:
    """reference_slopes.csv: per width d and placement of REFERENCE_PLACEMENTS, the predicted
    power law L^p of the softmax regression construction, drawn at every theory length and
    passing REFERENCE_OFFSET times above the construction at the longest length."""
    reg = theory[(theory["readout"] == "regression") & (theory["attention"] == "softmax")]
    frames = []
    for d, part in reg.groupby("d", sort=True):
        lengths = np.array(sorted(part["L"].unique()), float)
        for placement in REFERENCE_PLACEMENTS:
            anchor = part[
                (part["placement"] == placement) & (part["bound"] == "construction")
            ].sort_values("L")
            exponent = predicted_exponent(placement, "regression")
            top = REFERENCE_OFFSET * anchor["bmin"].iloc[-1]
            frames.append(
                pd.DataFrame(
                    {
                        "placement": placement,
                        "readout": "regression",
                        "d": d,
                        "exponent": exponent,
                        "L": lengths.astype(int),
                        "bmin": top * (lengths / lengths[-1]) ** exponent,
                    }
                )
            )
    return select(pd.concat(frames, ignore_index=True), ReferenceSlopes)


def exponent_table(rates: pd.DataFrame, walls: pd.DataFrame) -> pd.DataFrame:
    """exponents.csv (C5): one row per (placement, read-out), exponents per source (wide) with
    each fit's window ("16-64, 3 pts"), and the bare pre-norm wall at the smallest width (a
    walls.csv row), which replaces a rate."""
    windows = rates.assign(
        window=[
            f"{a}-{b}, {n} pts" if n else ""
            for a, b, n in zip(rates["fit_from"], rates["fit_to"], rates["fit_points"], strict=True)
        ]
    )
    index = ["placement", "readout"]
    wide = windows.pivot_table(
        index=index, columns="source", values="fitted_exponent", aggfunc="first"
    )
    spans = windows.pivot(index=index, columns="source", values="window")
    spans.columns = [f"{source}_window" for source in spans.columns]
    predicted = rates.groupby(index)["predicted_exponent"].first()
    table = wide.reindex(columns=list(SOURCES)).assign(predicted=predicted)
    table = table.join(spans.reindex(columns=[f"{s}_window" for s in SOURCES]))
    table = select(table.reset_index().assign(note=""), Exponents)
    wall = walls.sort_values("d").iloc[0]
    note = f"wall: no B counts beyond L = {int(wall['max_length'])} (d = {int(wall['d'])})"
    row = {"placement": wall["placement"], "readout": wall["readout"], "note": note}
    table = pd.concat([table, pd.DataFrame([row])], ignore_index=True)
    order = {p: i for i, p in enumerate(PLACEMENTS)}
    return table.sort_values(
        ["readout", "placement"],
        key=lambda s: s.map(order) if s.name == "placement" else s,
        ignore_index=True,
    )
