"""Percentile bootstrap over independent initializations: confidence intervals that carry every
source of noise nested in an initialization (its weights, its inputs, its probes)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

LEVEL = 0.95
RESAMPLES = 2000


def bootstrap_ci(
    units: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    seed: int = 0,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) percentile bounds of `statistic` over resamples of the rows of `units`
    (one row per initialization, drawn with replacement); `statistic` maps an array shaped like
    `units` to an array of results and is applied to every resample."""
    units = np.asarray(units, dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(units), size=(resamples, len(units)))
    draws = np.stack([statistic(units[pick]) for pick in picks])
    tail = 50.0 * (1.0 - level)
    return np.percentile(draws, tail, axis=0), np.percentile(draws, 100.0 - tail, axis=0)


def mean_ci(units: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mean over the rows of `units` and its bootstrap confidence interval."""
    lo, hi = bootstrap_ci(units, lambda rows: rows.mean(axis=0), seed)
    return np.asarray(units, dtype=float).mean(axis=0), lo, hi
