"""A.4: with pre-LN the APJN grows as a power law in depth, with the saturating maps DyT and
Derf as a stretched exponential (the recursion, exact)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.apjn.claims._common import (
    ASYMPTOTICS,
    DEPTH,
    MIN_POINTS,
    _g,
    _label,
    _labelled,
)
from transformer_stability.claims import ClaimSpec, Finding, Tables
from transformer_stability.verdicts import Estimate, Term, below

LAW_WINDOW = 10
"""The depth laws are told apart over the deepest factor LAW_WINDOW of the theory's depths."""

A4_STATISTIC = (
    "RMS residual of ln J^{L,0} (recursion) about straight lines in ln L "
    "(power law), sqrt(L) (stretched exponential) and L (exponential) over the deepest "
    f"factor {LAW_WINDOW} of depths; per variant the expected law's residual over the "
    "smallest other law's (exact); the fitted stretch exponent beta of ln J ~ L^beta "
    "(asymptotics.csv; theory 1/2)"
)
"""What A.4's Finding says it computed."""

LAWS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "power law": np.log,
    "stretched exponential": np.sqrt,
    "exponential": lambda depth: depth,
}
"""ln J^{L,0} is linear in ln L, sqrt(L) or L."""
EXPECTED_LAW = {"ln": "power law", "derf": "stretched exponential", "dyt": "stretched exponential"}


def law_residuals(depth: np.ndarray, log_j: np.ndarray) -> dict[str, float]:
    """The RMS residual of ln J against a straight line in each law's variable."""
    out = {}
    for law, variable in LAWS.items():
        x = variable(depth)
        fit = np.polyval(np.polyfit(x, log_j, 1), x)
        out[law] = float(np.sqrt(np.mean((log_j - fit) ** 2)))
    return out


def _law_text(label: str, residuals: dict[str, float], stretch: float | None) -> str:
    """'Derf α=1: stretched exponential (next 31× its residual, stretch exponent 0.52)'."""
    best, runner = sorted(residuals, key=residuals.get)[:2]
    ratio = residuals[runner] / residuals[best] if residuals[best] > 0 else np.inf
    exponent = "" if stretch is None else f", stretch exponent {_g(stretch)}"
    return f"{label}: {best} (next {_g(ratio)}× its residual{exponent})"


def _stretch_exponents(fits: pd.DataFrame) -> dict[str, float]:
    """The fitted exponent of ln J ~ L^beta of each saturating variant, by label."""
    rows = _labelled(fits[fits["quantity"] == "stretch_exponent"])
    return dict(zip(rows["model"], rows["fitted"], strict=True))


def expected_share(residuals: dict[str, float], expected: str) -> float:
    """The expected law's residual over the smallest of the other laws': below 1 exactly when
    the expected law fits best."""
    rival = min(r for law, r in residuals.items() if law != expected)
    return residuals[expected] / rival


def depth_laws(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Per variant, whether the expected law (power law for pre-LN, stretched exponential for
    the saturating maps) fits ln J^{L,0} of the recursion over the deepest decade of depths
    better than every other law: the ratio of residuals, exact (theory)."""
    depth = tables[DEPTH]
    deep = depth[depth["depth"] >= depth["depth"].max() / LAW_WINDOW]
    stretch = _stretch_exponents(tables[ASYMPTOTICS])
    texts, terms = [], []
    for (norm, alpha), rows in deep.groupby(["norm", "alpha"], dropna=False, sort=False):
        if len(rows) < MIN_POINTS:
            return None
        label = _label(norm, alpha)
        residuals = law_residuals(rows["depth"].to_numpy(float), rows["log_apjn"].to_numpy())
        texts.append(_law_text(label, residuals, stretch.get(label)))
        share = expected_share(residuals, EXPECTED_LAW[norm])
        terms.append(Term(f"{EXPECTED_LAW[norm]} residual / best rival's, {label}",
                          Estimate.exact(share), below(1)))  # fmt: skip
    if not terms:
        return None
    return Finding(
        statistic=A4_STATISTIC,
        value="; ".join(texts),
        terms=tuple(terms),
    )


CLAIM = ClaimSpec(
    id="A.4",
    statement="With pre-LN the APJN grows as a power law in depth; with the tanh-like "
    "maps DyT and Derf as a stretched exponential, subcritical (slower than exponential).",
    criterion="per variant the expected law's residual below every other law's (exact: "
    "the recursion has no sampling noise): the power law for pre-LN and the stretched "
    "exponential for every Derf and DyT variant; any other best law contradicts it",
    figure="A4",
    tables=(DEPTH, ASYMPTOTICS),
    test=depth_laws,
)
