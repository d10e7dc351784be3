"""What Study N's claims share: the tables they read with their replication units, the factor
that means "the same", and the medians per cell that a bootstrap recomputes on every resample
(one numpy pass instead of a groupby)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from transformer_stability.numerics.tables import (
    AttentionSinks,
    Gpt2Errors,
    Gpt2Recursion,
    Lipschitz,
    Norms,
    RecursionSources,
    SinkEmergence,
    SinkSoftmax,
    Softmax,
)
from transformer_stability.tables import meta
from transformer_stability.verdicts import Estimate, Term, at_most

NORMS, SOFTMAX, LIPSCHITZ = (meta(m)["path"] for m in (Norms, Softmax, Lipschitz))
ERRORS, RECURSION = meta(Gpt2Errors)["path"], meta(Gpt2Recursion)["path"]
SOURCES = meta(RecursionSources)["path"]
SINKS = meta(AttentionSinks)["path"]
EMERGENCE = meta(SinkEmergence)["path"]
SINK_ROWS = meta(SinkSoftmax)["path"]
UNITS = {
    NORMS: ("sample",),  # an input vector, the same for both norms at one outlier and format
    SOFTMAX: ("sample",),  # a logit vector, the same for every format and mode at one setting
    LIPSCHITZ: ("draw",),  # a weight draw, the same weights at every n
    SINKS: ("block", "head"),  # a head of one model
    EMERGENCE: ("sequence",),  # a held-out sequence, the same at every checkpoint
    SINK_ROWS: ("sequence",),  # a held-out sequence, the same at both steps and in every format
}
"""The replication units of the sampled tables; the GPT-2 tables hold quantiles over the run's
tokens, with no unit to resample, and their statistics are exact on the run's inputs."""

FACTOR = 2.0  # "the same" / "separated": within, or beyond, a factor 2
COUNTED = "exact count over every sample"

Tables = Mapping[str, pd.DataFrame]


def _g(x: float) -> str:
    return f"{x:.3g}"


def _slope(x: pd.Series, y: pd.Series) -> float:
    """Least-squares slope of log y against log x; NaN where a value is not positive and
    finite (then no power law is measured)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if not (np.isfinite(y).all() and (y > 0).all()):
        return np.nan
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _ratio_median(bound: pd.Series, measured: pd.Series) -> float:
    """Median of bound/measured over the pairs with a measured error (an exact result has
    nothing to be tight against)."""
    bound, measured = np.asarray(bound, float), np.asarray(measured, float)
    some = measured > 0
    return float(np.nanmedian(bound[some] / measured[some]))


def _cells(
    frame: pd.DataFrame, keys: list[str], columns: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The `columns` of `frame` with `cell`, the number of its combination of `keys`, and the
    combinations in cell order: a resample's medians per combination are then one numpy pass
    (a claim's bootstrap recomputes them on every resample)."""
    cells = frame.groupby(keys, sort=True).ngroup()
    labels = frame.assign(cell=cells).drop_duplicates("cell").sort_values("cell")[keys]
    return frame[columns].assign(cell=cells), labels.reset_index(drop=True)


def _cell_medians(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The median of `column` in each cell (`_cells`), NaN left out (NaN in a cell without a
    value)."""
    codes, values = frame.cell.to_numpy(), frame[column].to_numpy(float)
    codes, values = codes[~np.isnan(values)], values[~np.isnan(values)]
    order = np.lexsort((values, codes))
    counts = np.bincount(codes, minlength=int(frame.cell.max()) + 1)
    starts = np.cumsum(counts) - counts
    lo = np.minimum(starts + (counts - 1) // 2, len(values) - 1)
    hi = np.minimum(starts + counts // 2, len(values) - 1)
    ordered = values[order]
    return np.where(counts > 0, (ordered[lo] + ordered[hi]) / 2, np.nan)


def _by_label(frame: pd.DataFrame, labels: pd.DataFrame, column: str) -> dict[tuple, float]:
    """The cell medians of `column` by their combination of keys."""
    keys = zip(*(labels[key].tolist() for key in labels.columns), strict=True)
    return dict(zip(keys, _cell_medians(frame, column), strict=True))


def _none_above(name: str, count: int) -> Term:
    """No measured value above its bound: a count over every sample, without sampling noise."""
    return Term(name, Estimate.exact(count, COUNTED), at_most(0))
