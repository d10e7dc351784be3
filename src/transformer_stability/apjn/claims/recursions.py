"""A.1: at initialization, on permutation-symmetric input, the measured token statistics and
APJN curves follow the closed recursions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.apjn.claims._common import (
    AGREEMENT,
    AGREES,
    CURVES,
    INITS,
    NESTED,
    _carried,
    _compared_means,
    _labelled,
    _terms,
    _worst,
)
from transformer_stability.claims import ClaimSpec, Finding, Tables
from transformer_stability.resampling import grid_means, labelled
from transformer_stability.verdicts import at_most, bootstrap

CORRELATION_GAP = 0.05
"""The largest gap between measured and theoretical token correlation p/q that agrees."""

A1_STATISTIC = (
    "GMFE of the APJN curves averaged over initializations and samples, against "
    "the recursion, per variant and direction, with its 95 % bootstrap interval "
    "(initializations, then samples within each); per variant, GMFE of the averaged q and "
    "largest gap in p/q along depth, with 95 % bootstrap intervals over initializations"
)
"""What A.1's Finding says it computed."""


CURVE_COLUMNS = ["model", "norm", "alpha", "init_seed", "block", "q", "q_theory", "p", "p_theory"]
"""The columns the bootstrap of A.1 reads (fewer columns, faster resamples)."""


def token_statistics(curves: pd.DataFrame) -> pd.Series:
    """Per variant ('model'), the GMFE of the averaged q against the recursion's and the
    largest gap of the averaged p/q from the recursion's, over the blocks of the forward
    curves (averaged over initializations and samples): indexed (statistic, model)."""
    (models, _), m = grid_means(curves, ["model", "block"], ["q", "q_theory", "p", "p_theory"])
    q = np.exp(np.nanmean(np.abs(np.log(m["q"] / m["q_theory"])), axis=1))
    gap = np.nanmax(np.abs(m["p"] / m["q"] - m["p_theory"] / m["q_theory"]), axis=1)
    values = {("q GMFE", model): v for model, v in zip(models, q, strict=True)}
    return labelled(values | {("p/q gap", model): v for model, v in zip(models, gap, strict=True)})


def permsym_recursions(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """GMFE of the averaged APJN curves (per variant and direction) with the interval of
    agreement_means.csv, and the GMFE of the averaged q and the largest p/q gap per variant,
    bootstrapped over initializations, on the permutation-symmetric input, source block left
    out."""
    curves = tables[CURVES]
    curves = curves[
        (curves["input"] == "equiangular") & (curves["block"] != curves["source_block"])
    ]
    if curves.empty:
        return None
    inits = int(curves.groupby(["norm", "alpha"], dropna=False)["init_seed"].nunique().min())
    means = _compared_means(tables, "equiangular")
    apjn = _carried(means, "gmfe_averaged", NESTED.format("samples"), inits)
    forward = _labelled(curves[curves["direction"] == "forward"])[CURVE_COLUMNS]  # blocks once
    stats = bootstrap(forward, token_statistics, "init_seed", INITS, strata=["norm", "alpha"])
    q = {k[1]: e for k, e in stats.items() if k[0] == "q GMFE"}
    gap = {k[1]: e for k, e in stats.items() if k[0] == "p/q gap"}
    return Finding(
        statistic=A1_STATISTIC,
        value=f"APJN GMFE worst {_worst(apjn)}; q GMFE worst {_worst(q)}; "
        f"largest p/q gap {_worst(gap)}",
        terms=_terms("APJN GMFE", apjn, at_most(AGREES))
        + _terms("q GMFE", q, at_most(AGREES))
        + _terms("p/q gap", gap, at_most(CORRELATION_GAP)),
    )


CLAIM = ClaimSpec(
    id="A.1",
    statement="At initialization, a ViT with bidirectional attention and "
    "permutation-symmetric input follows closed recursions for its token statistics and "
    "its APJN.",
    criterion=f"every variant and direction: the averaged APJN curve's GMFE against the "
    f"recursion at most {AGREES:g}, and per variant the averaged q's GMFE at most "
    f"{AGREES:g} and the largest p/q gap at most {CORRELATION_GAP:g}, each over its whole "
    "95 % bootstrap interval (initializations, with their samples); any of them above its "
    "bound over its whole interval contradicts it",
    figure="A1",
    tables=(CURVES, AGREEMENT),
    test=permsym_recursions,
    units={CURVES: ("init_seed",)},
)
