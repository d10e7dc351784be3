"""Percentile bootstrap over an experiment's independent replication units (initializations,
seeds, samples): confidence intervals that carry every source of noise nested in a unit (an
initialization's weights, its inputs, its probes). Arrays (`bootstrap_ci`, `nested_ci`) for
estimators, tables (`unit_interval`) for the claims. Knows no study."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

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


def drawn_units(first: Sequence[int], size: Sequence[int], resamples: int, seed: int) -> np.ndarray:
    """(resamples, slots): the unit drawn into each slot of each resample, slot i refilled from
    the units [first[i], first[i] + size[i]) of its stratum. Every unit bootstrap draws here,
    so a fast path that weights units instead of copying rows draws the same resamples."""
    rng = np.random.default_rng(seed)
    return np.asarray(first) + rng.integers(0, size, size=(resamples, len(size)))


def unit_resamples(
    frame: pd.DataFrame,
    units: Sequence[str],
    strata: Sequence[str] = (),
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Iterator[pd.DataFrame]:
    """`resamples` copies of `frame` whose replication units (the distinct values of the `units`
    columns within each stratum of `strata`) are drawn with replacement, each unit keeping all
    its rows. The `units` columns of a copy hold the draw's slot (numbered across all strata),
    so a unit drawn twice counts as two units in a statistic that groups by them. Strata are
    experimental conditions (a model, a length): their units are drawn apart, and every copy
    keeps every condition."""
    keys = [*strata, *units]
    groups = frame.groupby(keys, sort=True, dropna=False).indices
    strata_of = [key[: len(strata)] if isinstance(key, tuple) else () for key in groups]
    members = list(groups.values())
    lengths = np.array([len(rows) for rows in members])
    rows, starts = np.concatenate(members), np.cumsum(lengths) - lengths
    # each unit's slot is refilled by a unit drawn from its own stratum, [first, first + size):
    # the groups are sorted with the strata first, so a stratum's units are contiguous
    first, size = [], []
    for _, run in itertools.groupby(range(len(strata_of)), key=strata_of.__getitem__):
        slots = list(run)
        first += [slots[0]] * len(slots)
        size += [len(slots)] * len(slots)
    for units_drawn in drawn_units(first, size, resamples, seed):
        counts = lengths[units_drawn]
        ends = np.cumsum(counts)
        within = np.arange(ends[-1]) - np.repeat(ends - counts, counts)
        copy = frame.take(rows[np.repeat(starts[units_drawn], counts) + within])
        label = np.repeat(np.arange(len(units_drawn)), counts)
        yield copy.reset_index(drop=True).assign(**{column: label for column in units})


def unit_draws(
    frame: pd.DataFrame,
    statistic: Callable[[pd.DataFrame], pd.Series],
    units: Sequence[str],
    strata: Sequence[str] = (),
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> pd.DataFrame:
    """`statistic` (a Series of named values) over `unit_resamples` of `frame`: one row per
    resample, one column per value. A value a resample cannot compute is NaN."""
    copies = unit_resamples(frame, units, strata, resamples, seed)
    return pd.DataFrame([statistic(copy) for copy in copies]).reset_index(drop=True)


def grid_means(
    frame: pd.DataFrame, keys: list[str], columns: list[str]
) -> tuple[list[pd.Index], dict[str, np.ndarray]]:
    """The levels of each of `keys` (sorted distinct values, NaN last) and the mean of each of
    `columns` in every cell of their grid (NaN in a cell without rows). By np.bincount: a
    bootstrap recomputes it on each of its resamples, where a groupby would take seconds."""
    levels, cells = grid_cells(frame, keys)
    return levels, cell_means({c: frame[c].to_numpy(float) for c in columns}, cells, levels)


def grid_cells(frame: pd.DataFrame, keys: list[str]) -> tuple[list[pd.Index], np.ndarray]:
    """The levels of each of `keys` (as `grid_means`) and each row's cell on their grid (a flat
    index): found once where every resample of a bootstrap holds every level."""
    codes, levels = zip(
        *(pd.factorize(frame[k], sort=True, use_na_sentinel=False) for k in keys), strict=True
    )
    return list(levels), np.ravel_multi_index(codes, tuple(len(level) for level in levels))


def cell_means(
    values: Mapping[str, np.ndarray], cells: np.ndarray, levels: Sequence[pd.Index]
) -> dict[str, np.ndarray]:
    """The mean of each of `values` (one per row) per cell (`grid_cells`) on the grid of
    `levels`, shaped like it."""
    shape = tuple(len(level) for level in levels)
    count = np.bincount(cells, minlength=int(np.prod(shape)))
    with np.errstate(invalid="ignore"):  # 0 / 0: a cell without rows
        return {
            name: (np.bincount(cells, column, count.size) / count).reshape(shape)
            for name, column in values.items()
        }


def labelled(values: Mapping[tuple, float]) -> pd.Series:
    """`values` as a Series on an index of tuples: a bootstrap statistic's result, built in
    microseconds where a MultiIndex takes milliseconds."""
    return pd.Series(list(values.values()), pd.Index(list(values), tupleize_cols=False), float)
