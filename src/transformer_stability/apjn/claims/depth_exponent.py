"""A.2: attention changes pre-LN's large-depth exponent from 1 to zeta_- = m/(m + 2a), in the
recursion and in the built ViTs, and the closures hold at few tokens."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.apjn.claims._common import (
    AGREES,
    ASYMPTOTICS,
    END_TO_END,
    FINITE_N,
    FINITE_N_COMPARE,
    INITS,
    MIN_POINTS,
    _g,
)
from transformer_stability.apjn.claims.finite_n import (
    closure_fold_error,
    closure_ratios,
    finite_n_text,
)
from transformer_stability.claims import ClaimSpec, Finding, Tables
from transformer_stability.resampling import grid_means
from transformer_stability.verdicts import Estimate, Term, at_most, bootstrap, nearer, within

SLOPE_GAP = 0.05
"""The largest gap between measured and theoretical depth exponents that agrees."""
MEASURED_SPAN = 4
"""A.2 compares measured and theoretical exponents over the deepest factor MEASURED_SPAN of the
measured depths."""

A2_STATISTIC = (
    "slope of ln J^{L,0} against ln L of the recursion over its window L << N^3, "
    "per token count N, against ζ₋ = m/(m + 2a) and the attention-free 1 (exact); pre-LN's "
    f"slope measured over the deepest factor {MEASURED_SPAN} of the measured depths minus "
    "the recursion's, with its 95 % bootstrap interval over initializations; at few tokens "
    "N and large depth with identical tokens (finite_n.csv), the largest fold error of the "
    "mean measured/theory J^{b,0} over the compared blocks in the better of the exact and "
    "the authors' closure, with its 95 % bootstrap interval over initializations"
)
"""What A.2's Finding says it computed."""


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(x, y, 1)[0])


def exponents(rows: pd.DataFrame) -> pd.Series:
    """d ln J / d ln L over the deepest factor MEASURED_SPAN of the depths of `rows`, measured
    (mean over initializations and samples) and of the recursion seeded by each input, and
    their gap."""
    (depths,), means = grid_means(rows, ["depth"], ["apjn", "apjn_theory"])
    deep = depths.to_numpy(float) >= depths.max() / MEASURED_SPAN
    x = np.log(depths.to_numpy(float)[deep])
    measured = _slope(x, np.log(means["apjn"][deep]))
    theory = _slope(x, np.log(means["apjn_theory"][deep]))
    return pd.Series({"measured": measured, "recursion": theory, "gap": measured - theory})


DEPTH_COLUMNS = ["depth", "init_seed", "apjn", "apjn_theory"]
"""The columns the bootstrap of the measured exponent reads (fewer columns, faster resamples)."""


def _depth_rows(end_to_end: pd.DataFrame) -> pd.DataFrame | None:
    """Pre-LN's rows of the depth sweep; None below MIN_POINTS depths in the fit."""
    rows = end_to_end[(end_to_end["sweep"] == "depth") & (end_to_end["norm"] == "ln")]
    depths = rows["depth"].unique()
    enough = (depths >= depths.max(initial=0) / MEASURED_SPAN).sum() >= MIN_POINTS
    return rows if enough else None


def _exponent_terms(fits: pd.DataFrame) -> tuple[Term, ...]:
    """The recursion's exponent per token count against ζ₋ and 1: exact (theory)."""
    return tuple(
        Term(f"recursion exponent, N = {n}", Estimate.exact(f), nearer(z, [1.0]))
        for n, f, z in zip(fits["n_tokens"], fits["fitted"], fits["predicted"], strict=True)
    )


def attention_exponent(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Pre-LN's exponent of J^{L,0} ~ L^zeta fitted on the recursion for L << N^3 against
    zeta_- = m/(m + 2a) (with attention) and 1 (without), for every token count N whose window
    the theory reaches (exact); the exponent measured in the built ViTs minus the recursion's
    over the same depths, bootstrapped over initializations; and, at few tokens and large
    depth with identical tokens, the worst fold error of J^{b,0} over the compared blocks in
    the better closure, bootstrapped over initializations."""
    zeta_minus = tables[ASYMPTOTICS].query("quantity == 'zeta_minus'")
    fits = zeta_minus[zeta_minus["fitted"].notna()]
    unreached = ", ".join(str(n) for n in zeta_minus.loc[zeta_minus["fitted"].isna(), "n_tokens"])
    depth_rows = _depth_rows(tables[END_TO_END])
    finite_n = tables[FINITE_N]
    if fits.empty or depth_rows is None or not (finite_n["input"] == "identical").any():
        return None
    slopes = bootstrap(depth_rows[DEPTH_COLUMNS], exponents, "init_seed", INITS)
    folds = bootstrap(closure_ratios(finite_n), closure_fold_error, "init_seed", INITS)
    per_n = ", ".join(
        f"{_g(f)} (N = {n})" for n, f in zip(fits["n_tokens"], fits["fitted"], strict=True)
    )
    per_n += f" (no window within the theory depth for N = {unreached})" if unreached else ""
    fold_text = ", ".join(f"N = {n}: {e.text()}" for n, e in folds.items())
    return Finding(
        statistic=A2_STATISTIC,
        value=f"recursion {per_n}; ζ₋ = {_g(fits['predicted'].iloc[0])}, without attention 1; "
        f"measured {slopes['measured'].text()} vs recursion {slopes['recursion'].text()}; "
        f"identical-token fold error {fold_text}; finite N: "
        f"{finite_n_text(tables[FINITE_N_COMPARE])}",
        terms=_exponent_terms(fits)
        + (
            Term(
                "measured − recursion exponent, pre-LN",
                slopes["gap"],
                within(-SLOPE_GAP, SLOPE_GAP),
            ),
        )
        + tuple(
            Term(f"closure fold error, identical tokens, N = {n}", e, at_most(AGREES))
            for n, e in folds.items()
        ),
    )


CLAIM = ClaimSpec(
    id="A.2",
    statement="Attention changes the large-depth asymptotics of the APJN as the theory "
    "predicts: pre-LN grows as L^ζ₋ with ζ₋ = m/(m + 2a) < 1, not as L.",
    criterion="for every token count N whose window the theory reaches, the recursion's "
    "exponent nearer ζ₋ than the attention-free 1 (exact); the measured pre-LN exponent "
    f"minus the recursion's at the same depths within ±{SLOPE_GAP:g} over its whole "
    "bootstrap interval (initializations); and with identical tokens (attention exactly "
    "uniform) at every few-token count N, measured/theory J^{b,0} within a fold error of "
    f"{AGREES:g} (the agreement line of A.1 and A.3) at every compared block in the exact "
    "or the authors' closure, over the whole bootstrap interval of the worst block's fold "
    "error (initializations). The generic input (attention not exactly uniform, which both "
    "closures assume), which closure fits and whether an interval covers 1 are context: "
    "the closures share ζ₋ and differ in ζ₊",
    figure="A4",
    tables=(ASYMPTOTICS, END_TO_END, FINITE_N, FINITE_N_COMPARE),
    test=attention_exponent,
    units={END_TO_END: ("init_seed",), FINITE_N: ("init_seed",)},
)
