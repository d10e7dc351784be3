"""What several of Study C's claims share: the tables they read, the fit minimum, the study's
growth laws that a fitted exponent is judged against, and the helpers that read a theory curve,
fit its slope, write a value and make an exact term."""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from transformer_stability.counting.names import PLACEMENTS, READOUTS
from transformer_stability.counting.tables import (
    BminTheory,
    Precision,
    Rates,
    Residual,
    Training,
    Walls,
)
from transformer_stability.counting.theory import predicted_exponent
from transformer_stability.tables import meta
from transformer_stability.verdicts import Criterion, Estimate, Term, at_most

THEORY, WALLS, RESIDUAL, PRECISION, RATES, TRAINING = (
    meta(model)["path"] for model in (BminTheory, Walls, Residual, Precision, Rates, Training)
)
MIN_FIT_POINTS = 3  # any two points lie on some power law: a rate is tested by three or more
SAME = 1e-6  # a relative spread below this: the same norm at every length, up to rounding
LAWS = tuple(
    sorted(
        {e for p in PLACEMENTS for r in READOUTS if math.isfinite(e := predicted_exponent(p, r))}
    )
)
NONE = 0  # a count of violations that the claim allows


def loglog_slope(curve: pd.Series) -> float:
    """Log-log slope of a curve (values indexed by L) between its first and last point."""
    return math.log(curve.iloc[-1] / curve.iloc[0]) / math.log(curve.index[-1] / curve.index[0])


def theory_curve(
    theory: pd.DataFrame,
    placement: str,
    bound: str,
    readout: str = "regression",
    attention: str = "softmax",
) -> pd.Series:
    """B_min against L (the index) of one theory curve at the smallest width."""
    rows = theory[
        (theory["placement"] == placement)
        & (theory["attention"] == attention)
        & (theory["readout"] == readout)
        & (theory["bound"] == bound)
        & (theory["d"] == theory["d"].min())
    ]
    return rows.set_index("L")["bmin"].sort_index()


def three_digits(value: float) -> str:
    """A number to 3 significant digits."""
    return f"{value:.3g}"


def span(values: Iterable[float], fmt: str = "g") -> str:
    """'4-2048', or '8' where all values agree: the lengths (or norms) a statistic covers."""
    low, high = min(values), max(values)
    return f"{low:{fmt}}" if low == high else f"{low:{fmt}}-{high:{fmt}}"


def exact_term(name: str, value: float, criterion: Criterion) -> Term:
    """A term on a value computed without sampling (theory, LP bound, construction, count)."""
    return Term(name, Estimate.exact(value), criterion)


def no_violations(name: str, count: int) -> Term:
    """A count of violations, of which the claim allows none."""
    return exact_term(name, count, at_most(NONE))
