"""Study C rates and laws, computed from the theory and training tables for the figures to draw:
the empirical B_min, fitted and predicted exponents of B_min(L), the C5 exponent table and the
reference power laws of C2. Torch-free and construction-free."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from transformer_stability.counting.names import PLACEMENTS
from transformer_stability.counting.tables import (
    SOURCES,
    EmpiricalBmin,
    Exponents,
    Rates,
    ReferenceSlopes,
)
from transformer_stability.counting.theory import fit_window, fitted_exponent, predicted_exponent
from transformer_stability.tables import columns_of, select

REGRESSION_RATE_PLACEMENTS = ("none", "pre_learned", "post_bare", "post_learned")
# C2 draws the predicted law of these placements (pre_learned shares the no-norm exponent)
REFERENCE_PLACEMENTS = ("none", "post_bare", "post_learned")
REFERENCE_OFFSET = 1.6  # reference lines pass this factor above the construction's last point


def _seed_bracket(runs: pd.DataFrame) -> tuple[float, float]:
    """(largest B known to fail below the smallest success, smallest success) of one seed's
    bisection runs; (upper bracket, inf) when nothing succeeded."""
    ok = runs.loc[runs["accuracy"] >= 1.0, "B"]
    if ok.empty:
        return float(runs["B"].max()), math.inf
    high = float(ok.min())
    failed = runs.loc[(runs["accuracy"] < 1.0) & (runs["B"] < high), "B"]
    low = float(failed.max()) if len(failed) else float(runs["bracket_low"].iloc[0])
    return min(low, high), high


def empirical_bmin(training: pd.DataFrame) -> pd.DataFrame:
    """B_min(L) of the bisection: the smallest B at which some seed counts the whole grid
    exactly, with the bracket below it (bmin_low: a failed probe or the theory's lower bound,
    which regression's bracket starts from, so ratio = bmin / lower_bound; bmin_low = bmin when
    the classification floor itself succeeded: B_min <= bmin); bmin = inf and reached = False
    only when every seed failed at the upper bracket."""
    constrained = training[training["round"] > 0]
    rows = []
    for (placement, readout, d, length), part in constrained.groupby(
        ["placement", "readout", "d", "L"]
    ):
        per_seed = {seed: _seed_bracket(runs) for seed, runs in part.groupby("seed")}
        low, high = min(per_seed.values(), key=lambda bracket: (bracket[1], -bracket[0]))
        bound = float(part["bracket_low"].iloc[0]) if readout == "regression" else math.nan
        rows.append(
            {
                "placement": placement,
                "readout": readout,
                "d": d,
                "L": length,
                "bmin": high,
                "bmin_low": low,
                "lower_bound": bound,
                "ratio": high / bound,
                "bracket_high": float(part["bracket_high"].iloc[0]),
                "reached": math.isfinite(high),
                "seeds_reached": sum(math.isfinite(h) for _, h in per_seed.values()),
                "runs": len(part),
                "rounds": int(part["round"].max()),
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
    }


def rates_table(
    theory: pd.DataFrame, empirical: pd.DataFrame, precision: pd.DataFrame, fit_points: int
) -> pd.DataFrame:
    """Fitted exponents of B_min(L) over the last `fit_points` finite points of each curve,
    next to the theory's prediction (softmax attention, smallest width), with the window; and
    the rate of the classification constructions' relative logit margin in float64 (source
    "margin", no prediction)."""
    rows = []
    softmax = theory[(theory["attention"] == "softmax") & (theory["d"] == theory["d"].min())]
    for (placement, readout, source), part in softmax.groupby(["placement", "readout", "bound"]):
        if readout == "regression" and placement not in REGRESSION_RATE_PLACEMENTS:
            continue  # bare pre-norm has a wall, not a rate
        rows.append(_rate_row(placement, readout, source, part.sort_values("L"), fit_points))
    for (placement, readout), part in empirical.groupby(["placement", "readout"]):
        rows.append(_rate_row(placement, readout, "training", part.sort_values("L"), fit_points))
    margins = precision[
        (precision["readout"] == "classification")
        & (precision["format"] == "float64")
        & (precision["d"] == precision["d"].min())
    ]
    for placement, part in margins.groupby("placement"):
        part = part.sort_values("L").rename(columns={"relative_margin": "bmin"})
        row = _rate_row(placement, "classification", "margin", part, fit_points)
        rows.append(row | {"predicted_exponent": math.nan})
    return pd.DataFrame(rows, columns=columns_of(Rates))


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
