"""C.1 and C.2: which attention counts exactly. Linear attention does, with a norm that is the
same at every length; softmax never does, since its LP lower bound diverges as the allowed
error vanishes and grows with L. Both are decided on theory curves and LP bounds, so every
term is exact."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.claims import ClaimSpec, Finding, Tables
from transformer_stability.counting.claims._common import (
    RESIDUAL,
    SAME,
    THEORY,
    exact_term,
    loglog_slope,
    no_violations,
    span,
    theory_curve,
)
from transformer_stability.counting.derived_tables import REGRESSION_RATE_PLACEMENTS
from transformer_stability.counting.theory import error_exponent, predicted_exponent
from transformer_stability.verdicts import at_most, nearer

ROUNDING = 1e-9  # a grid error below this is 0 up to float64 rounding


def linear_is_exact(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """The linear construction's norm is the same at every length and its grid error is 0."""
    linear = tables[THEORY][tables[THEORY]["attention"] == "linear"]
    if linear["L"].nunique() < 2:
        return None
    norms = linear.groupby("d")["bmin"]
    spread = float((norms.max() / norms.min() - 1).max())
    residual = tables[RESIDUAL]
    line = residual[residual["attention"] == "linear"]
    error = float(line["max_error"].max())
    missing = int((~np.isfinite(linear["bmin"])).sum())
    return Finding(
        statistic="relative spread of the linear construction's norm over L (per width); "
        "its largest grid error",
        value=f"norm {span(linear['bmin'], '.3g')} over "
        f"d = {', '.join(map(str, sorted(norms.groups)))}, spread over L = {span(linear['L'])} "
        f"at most {spread:.1g}; largest error {error:.1g} at L = {span(line['L'])}",
        terms=(
            no_violations("theory lengths without a linear construction", missing),
            exact_term("linear norm, relative spread over L", spread, at_most(SAME)),
            exact_term("linear construction, largest grid error", error, at_most(ROUNDING)),
        ),
    )


def _listed(values: Mapping[str, float], theory: Mapping[str, float]) -> str:
    """'none 0.99 (1), post_bare 1.47 (1.5)': values with the theory's in brackets."""
    return ", ".join(f"{key} {values[key]:.2f} ({theory[key]:g})" for key in values)


def _error_rate(bounds: pd.DataFrame, errors: tuple[float, float]) -> float:
    """k of B(e) ~ e^-k between the two target errors (smaller first) on a lower-bound curve."""
    b = bounds.set_index("target_error")["B"]
    return math.log(b[errors[0]] / b[errors[1]]) / math.log(errors[1] / errors[0])


def softmax_is_never_exact(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """The lower bound diverges as the allowed error vanishes, and grows with L."""
    residual, theory = tables[RESIDUAL], tables[THEORY]
    bounds = residual[(residual["attention"] == "softmax") & (residual["source"] == "lower_bound")]
    errors = sorted(bounds["target_error"].unique())
    if len(errors) < 2 or theory["L"].nunique() < 2:
        return None
    smallest = (errors[0], errors[1])
    rates = {p: _error_rate(part, smallest) for p, part in bounds.groupby("placement")}
    rate_theory = {p: error_exponent(p) for p in rates}
    curves = {p: theory_curve(theory, p, "lower_bound") for p in REGRESSION_RATE_PLACEMENTS}
    slopes = {p: loglog_slope(curve) for p, curve in curves.items()}
    slope_theory = {p: predicted_exponent(p, "regression") for p in slopes}
    flat = {p: int((np.diff(curve.to_numpy()) <= 0).sum()) for p, curve in curves.items()}
    length = int(bounds["L"].iloc[0])
    terms = [exact_term(f"k, {p}", rates[p], nearer(rate_theory[p], (0.0,))) for p in rates]
    terms += [
        exact_term(f"slope over L, {p}", slopes[p], nearer(slope_theory[p], (0.0,))) for p in slopes
    ]
    terms += [
        no_violations(f"steps in L where the bound does not rise, {p}", flat[p]) for p in flat
    ]
    return Finding(
        statistic="k of the lower bound B ~ e^-k between the two smallest target errors e; "
        "log-log slope of the lower bound over L (theory in brackets)",
        value=f"k at e = {smallest[0]:g}-{smallest[1]:g}, L = {length}: "
        f"{_listed(rates, rate_theory)}; slope over L = {span(theory['L'].unique())}: "
        f"{_listed(slopes, slope_theory)}; rising at every L: "
        f"{'no' if any(flat.values()) else 'yes'}",
        terms=tuple(terms),
    )


LINEAR_IS_EXACT = ClaimSpec(
    id="C.1",
    statement="Unnormalized linear attention counts exactly with parameter norms that do not "
    "grow with the length L.",
    criterion="The verified linear-attention construction exists at every theory length with "
    f"the same norm (relative spread over L at most {SAME:g} at every width) and its largest "
    f"grid error is 0 up to float64 rounding (at most {ROUNDING:g}); a norm growing with L "
    "or a nonzero error fails it. All exact (no sampling).",
    figure="C2",
    tables=(THEORY, RESIDUAL),
    test=linear_is_exact,
)


SOFTMAX_IS_NEVER_EXACT = ClaimSpec(
    id="C.2",
    statement="Softmax attention with a regression read-out never counts exactly with finite "
    "parameters; it counts after rounding only with vector norms that grow with L.",
    criterion="For every softmax placement of C7 the lower bound B grows as the allowed error "
    "e falls, as e^-k with k (between the two smallest target errors) closer to the theory's "
    "k than to 0 (k = 0: the error vanishes at a finite B); and every regression lower bound "
    "with a rate rises at every theory length, with a log-log slope over all lengths closer "
    "to its predicted exponent than to 0 (bounded norms). All exact (LP bounds, no "
    "sampling).",
    figure="C7",
    tables=(RESIDUAL, THEORY),
    test=softmax_is_never_exact,
)
