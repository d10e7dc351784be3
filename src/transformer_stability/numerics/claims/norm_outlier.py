"""N.2: LayerNorm against RMSNorm under a massive outlier coordinate, on the norms experiment:
the centring loses accuracy that RMSNorm keeps, at the same bulk condition number."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from transformer_stability import verdicts
from transformer_stability.claims import ClaimSpec, Finding
from transformer_stability.numerics.claims._common import (
    FACTOR,
    NORMS,
    UNITS,
    Tables,
    _by_label,
    _cells,
    _g,
)
from transformer_stability.verdicts import Term, at_least, within

CLEARLY_WORSE = 3.0  # LayerNorm's bulk error over RMSNorm's at the largest outlier
MASSIVE = 10.0  # outlier/dim: LayerNorm's centred values exceed the bulk's spread 10-fold


def _ln_over_rms(at: pd.DataFrame, labels: pd.DataFrame) -> pd.Series:
    """LayerNorm's median over RMSNorm's, per metric and format ('err_bulk m7'); `at` has
    cells over (metric, mantissa_bits, norm)."""
    med = _by_label(at, labels, "value")
    pairs = labels[["metric", "mantissa_bits"]].drop_duplicates().itertuples(index=False)
    return pd.Series(
        {
            f"{metric} m{bits}": med[metric, bits, "layernorm"] / med[metric, bits, "rmsnorm"]
            for metric, bits in pairs
        }
    )


def norms_under_outlier(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.2: at the largest outlier M, LayerNorm's bulk error against RMSNorm's, and their bulk
    condition numbers, per format: ratios of medians over the samples (the same inputs for
    both norms), bootstrapped over the samples."""
    norms = tables[NORMS]
    largest = float(norms.outlier.max())
    dim = section["norms"]["dim"]
    if largest / dim < MASSIVE:
        return None
    at = norms[(norms.outlier == largest) & norms.metric.isin(["err_bulk", "kappa_bulk"])]
    at, labels = _cells(
        at, ["metric", "mantissa_bits", "norm"], ["mantissa_bits", "sample", "value"]
    )
    ratios = verdicts.bootstrap(
        at, lambda f: _ln_over_rms(f, labels), "sample", "samples", ["mantissa_bits"]
    )
    formats = sorted(at.mantissa_bits.unique())
    value = f"M/d = {_g(largest / dim)}; " + "; ".join(
        f"m{bits}: bulk error LN/RMS {ratios[f'err_bulk m{bits}'].text()}, bulk kappa LN/RMS "
        f"{ratios[f'kappa_bulk m{bits}'].text()}"
        for bits in formats
    )
    terms = [
        term
        for bits in formats
        for term in (
            Term(
                f"bulk error LN/RMS, m{bits}", ratios[f"err_bulk m{bits}"], at_least(CLEARLY_WORSE)
            ),
            Term(
                f"bulk kappa LN/RMS, m{bits}",
                ratios[f"kappa_bulk m{bits}"],
                within(1 / FACTOR, FACTOR),
            ),
        )
    ]
    return Finding(
        "bulk error and bulk condition, LayerNorm / RMSNorm, at the largest M", value, tuple(terms)
    )


N2 = ClaimSpec(
    id="N.2",
    statement="Under a massive outlier coordinate LayerNorm loses accuracy that RMSNorm "
    "keeps, while both have the same bulk condition number: the difference lies in the "
    "algorithm (centring), not in the problem.",
    criterion=f"at the largest outlier M (needs M/d >= {MASSIVE:g}), for every format, over "
    f"the whole bootstrap interval (samples, the same inputs for both norms): LayerNorm's "
    f"median bulk error / RMSNorm's >= {CLEARLY_WORSE:g}, and their median bulk condition "
    f"numbers' ratio within a factor {FACTOR:g}",
    figure="N5",
    tables=(NORMS,),
    test=norms_under_outlier,
    units={NORMS: UNITS[NORMS]},
)
