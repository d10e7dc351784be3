"""C.5: a classification read-out keeps every norm bounded, and pays in stored head rows and in
precision. The margin's fall is tested on the constructions' heads and on the best head of
their representations, so the cost is shown to be the representation's, not one head's; the
trained classifiers' margins are context beside the exact terms."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.claims import ClaimSpec, Finding, Tables
from transformer_stability.counting.claims._common import (
    PRECISION,
    SAME,
    THEORY,
    exact_term,
    loglog_slope,
    no_violations,
    span,
    theory_curve,
    three_digits,
)
from transformer_stability.counting.names import PLACEMENTS, READOUTS
from transformer_stability.verdicts import at_most, below


def _storage(precision: pd.DataFrame) -> tuple[dict[str, int], float, int]:
    """(per read-out, the placements whose storage breaks its pattern: classification's must
    rise with L, regression's stay constant; classification / regression trainable numbers
    without a norm at the longest L; that L)."""
    broken = {readout: 0 for readout in READOUTS}
    for (_, readout), part in precision.groupby(["placement", "readout"]):
        counts = np.diff(part.sort_values("L")["parameters"].to_numpy())
        kept = (counts > 0).all() if readout == "classification" else (counts == 0).all()
        broken[readout] += int(not kept)
    longest = precision[
        (precision["L"] == precision["L"].max()) & (precision["placement"] == "none")
    ]
    sizes = longest.set_index("readout")["parameters"]
    return broken, float(sizes["classification"] / sizes["regression"]), int(longest["L"].iloc[0])


def _margin_slopes(built: pd.DataFrame, column: str) -> dict[str, float]:
    """Log-log slope over L of a margin column, per placement of the classification
    constructions (its finite points; placements with fewer than two left out)."""
    slopes = {}
    for placement, part in built[built["readout"] == "classification"].groupby("placement"):
        curve = part.set_index("L")[column].sort_index().dropna()
        if len(curve) >= 2:
            slopes[placement] = loglog_slope(curve)
    return slopes


def _trained_precision(precision: pd.DataFrame) -> str:
    """The exact trained classifiers at their longest L: how many, their relative margin and
    how many float32 keeps exact."""
    runs = precision[(precision["source"] == "training") & (precision["accuracy"] >= 1.0)]
    if runs.empty:
        return "no exact trained classifier"
    longest = runs[runs["L"] == runs["L"].max()]
    kept = int((longest["accuracy_float32"] >= 1.0).sum())
    return (
        f"trained exact classifiers at L = {int(longest['L'].iloc[0])}: {len(longest)}, relative "
        f"margin {span(longest['relative_margin'], '.2g')}, {kept} exact in float32"
    )


UNMEASURED = {"no placement": math.nan}  # a margin slope the run could not fit: undecided


def _range(slopes: Mapping[str, float]) -> str:
    """'-3.51 to -3.49', or 'not run' without slopes."""
    values = slopes.values()
    return f"{min(values):.2f} to {max(values):.2f}" if slopes else "not run"


def classification_is_bounded(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Classification constructions keep their norm at every L; their head storage grows with L
    and the relative margin shrinks, for the constructions' heads and for the best head on their
    representations."""
    theory, precision = tables[THEORY], tables[PRECISION]
    lengths = theory.loc[theory["readout"] == "classification", "L"].unique()
    if len(lengths) < 2:
        return None
    curves = {p: theory_curve(theory, p, "construction", "classification") for p in PLACEMENTS}
    growth = {p: float(c.max() / c.iloc[0]) for p, c in curves.items()}
    missing = sum(int((~np.isfinite(c)).sum()) for c in curves.values())
    built = precision[
        (precision["source"] == "construction") & (precision["d"] == precision["d"].min())
    ]
    broken, ratio, longest = _storage(built)
    slopes = _margin_slopes(built, "relative_margin")
    best = _margin_slopes(built, "best_head_margin")
    regression = theory_curve(theory, "none", "construction")
    terms = [
        no_violations("placement-lengths without a classification construction", missing),
        *(
            exact_term(f"norm / norm at shortest L, {p}", g, at_most(1 + SAME))
            for p, g in growth.items()
        ),
        no_violations(
            "placements whose classification storage does not rise with L", broken["classification"]
        ),
        no_violations("placements whose regression storage varies with L", broken["regression"]),
        *(
            exact_term(f"margin slope, {p}", s, below(0.0))
            for p, s in (slopes or UNMEASURED).items()
        ),
        *(exact_term(f"best-head margin slope, {p}", s, below(0.0)) for p, s in best.items()),
    ]
    return Finding(
        statistic="largest classification norm over L relative to the shortest L; head storage; "
        "log-log slope of the float64 relative margin of the constructions and of the best "
        "head on their representations (LP); the trained classifiers' margins",
        value=f"largest norm {max(growth.values()):.3g}x the one at L = {min(lengths)} over "
        f"L = {span(lengths)} in {len(curves)} placements (no-norm regression "
        f"{three_digits(regression.max() / regression.iloc[0])}x); "
        f"{ratio:.3g}x the regression read-out's trainable numbers at L = {longest}; "
        f"margin slope {_range(slopes)}, best head {_range(best)}; "
        f"{_trained_precision(precision)}",
        terms=tuple(terms),
    )


CLASSIFICATION_IS_BOUNDED = ClaimSpec(
    id="C.5",
    statement="A classification read-out keeps every norm bounded in every placement, at the "
    "price of L+1 stored head rows and of precision.",
    criterion="In every placement the verified classification construction exists at every "
    "length up to classification_max_length and its norm never exceeds the one at the "
    f"shortest length (relative {SAME:g}); its trainable numbers rise with L while the "
    "regression read-out's stay constant; its float64 relative logit margin falls with L "
    "(negative log-log slope) in every placement, and so does the best head's on the same "
    "representation (where the LP runs), so the cost is the representation's, not one "
    "head's. All exact (constructions and LPs, no sampling); the trained classifiers' "
    "margins and float32 exactness are context, reported beside.",
    figure="C6",
    tables=(THEORY, PRECISION),
    test=classification_is_bounded,
)
