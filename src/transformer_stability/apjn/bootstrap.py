"""Percentile bootstrap over independent initializations: confidence intervals that carry every
source of noise nested in an initialization (its weights, its inputs, its probes)."""

from __future__ import annotations

import warnings
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
    `units` to an array of results and is applied to every resample. The one-stage case of
    `nested_ci`: every initialization holds a single input."""
    units = np.asarray(units, dtype=float)[:, None]
    return nested_ci(units, lambda drawn: statistic(drawn[:, 0]), seed, resamples, level)


def percentile_bounds(draws: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """The central `level` percentile interval of the resampled statistics (axis 0); draws
    that are NaN (a fit with too few points) are left out."""
    tail = 50.0 * (1.0 - level)
    with warnings.catch_warnings():  # a statistic never computed (all NaN) stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanpercentile(draws, tail, axis=0), np.nanpercentile(draws, 100.0 - tail, axis=0)


def nested_ci(
    units: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    seed: int = 0,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
) -> tuple[np.ndarray, np.ndarray]:
    """Two-stage bootstrap for `units` shaped (initializations, inputs, ...): draw the
    initializations with replacement, then the inputs of each drawn initialization, so the
    interval carries both the weights' and the inputs' noise; `statistic` maps the resampled
    array (same shape) to an array of results."""
    units = np.asarray(units, dtype=float)
    inits, inputs = units.shape[:2]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, inits, size=(resamples, inits, 1))
    within = rng.integers(0, inputs, size=(resamples, inits, inputs))
    draws = np.stack([statistic(units[p, w]) for p, w in zip(picks, within, strict=True)])
    return percentile_bounds(draws, level)


def mean_ci(units: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mean over the rows of `units` and its bootstrap confidence interval."""
    lo, hi = bootstrap_ci(units, lambda rows: rows.mean(axis=0), seed)
    return np.asarray(units, dtype=float).mean(axis=0), lo, hi
