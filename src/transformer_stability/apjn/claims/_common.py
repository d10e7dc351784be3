"""What the modules of Study A's claims share: the paths of the tables they read, the
agreement line and the smallest fit, and the helpers that label variants, average on a grid
fast enough for a bootstrap and turn estimates into terms and text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.apjn.names import NormName
from transformer_stability.apjn.style import variant_label
from transformer_stability.apjn.tables import (
    AgreementMeans,
    Asymptotics,
    EndToEnd,
    FiniteN,
    FiniteNCompare,
    MatchedPairs,
    MeasuredCurves,
    SensitivityRatios,
    TheoryDepth,
    Trainability,
    TuningWindows,
    WidthExcess,
    WidthSlopes,
)
from transformer_stability.claims import Tables
from transformer_stability.tables import meta
from transformer_stability.verdicts import Estimate, Term

CURVES = meta(MeasuredCurves)["path"]
AGREEMENT = meta(AgreementMeans)["path"]
WIDTH_EXCESS = meta(WidthExcess)["path"]
WIDTH_SLOPES = meta(WidthSlopes)["path"]
ASYMPTOTICS = meta(Asymptotics)["path"]
DEPTH = meta(TheoryDepth)["path"]
END_TO_END = meta(EndToEnd)["path"]
RATIOS = meta(SensitivityRatios)["path"]
TRAINABILITY = meta(Trainability)["path"]
WINDOWS = meta(TuningWindows)["path"]
PAIRS = meta(MatchedPairs)["path"]
FINITE_N = meta(FiniteN)["path"]
FINITE_N_COMPARE = meta(FiniteNCompare)["path"]

AGREES = 1.05
"""The GMFE at which a measured curve agrees with the theory (the line A3 and A9 draw); also
the largest fold error at any compared block at which a closure describes J^{b,0} (A.2)."""

MIN_POINTS = 5
"""The fewest depths a fit of a depth law takes."""

INITS = "initializations"
NESTED = "bootstrap over initializations, then {} within each"


def _g(value: float) -> str:
    return f"{value:.3g}"


def _label(norm: NormName, alpha: float) -> str:
    return variant_label(norm, None if pd.isna(alpha) else float(alpha))


def _labelled(means: pd.DataFrame) -> pd.DataFrame:
    labels = [_label(n, a) for n, a in zip(means["norm"], means["alpha"], strict=True)]
    return means.assign(model=labels)


def _where(label: Any) -> str:
    return ", ".join(str(k) for k in np.atleast_1d(label))


def _worst(estimates: Mapping[Any, Estimate]) -> str:
    """'1.02 [1.01, 1.03] (Derf α=1.5, backward)': the largest point value, its interval and
    where it is."""
    label = max(estimates, key=lambda k: estimates[k].point)
    return f"{estimates[label].text()} ({_where(label)})"


def _terms(name: str, estimates: Mapping[Any, Estimate], criterion: Any) -> tuple[Term, ...]:
    """One term per label: '<name>, <label>'."""
    return tuple(Term(f"{name}, {_where(k)}", e, criterion) for k, e in estimates.items())


def _carried(rows: pd.DataFrame, column: str, basis: str, units: int) -> dict[Any, Estimate]:
    """The Estimates of `column` whose bootstrap interval a table carries (`column`_lo, _hi),
    by (model, direction)."""
    return {
        (r["model"], r["direction"]): Estimate(
            float(r[column]), float(r[f"{column}_lo"]), float(r[f"{column}_hi"]), basis, units,
            INITS,
        )
        for _, r in rows.iterrows()
    }  # fmt: skip


def _compared_means(tables: Tables, kind: str) -> pd.DataFrame:
    """The labelled rows of agreement_means.csv for input `kind` over every compared block."""
    means = tables[AGREEMENT]
    return _labelled(means[(means["input"] == kind) & (means["region"] == "compared")])
