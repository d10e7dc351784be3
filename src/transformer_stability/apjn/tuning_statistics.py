"""How much tuning a norm needs: four statistics per norm and depth, their contrasts with
pre-LN, and the theory's link to them, each with its bootstrap interval over training seeds
(claim A.5, figure A11). Torch-free: a derived-table rule.

From the trainability grid, the mean final loss over seeds of every configuration (norm, α₀,
init multiplier, depth) at every rate, a diverged seed counting as an infinite loss:
- sensitivity: the range of the best loss over rates across a norm's init choices (α₀ x
  multiplier for a saturating map, the multiplier for pre-LN): what a poor init costs even
  after the rate is tuned;
- tuning_cost: the loss at the untuned default (α₀ = 1, multiplier 1, the median rate) minus
  the best over every init choice and rate;
- window: the width in decades of the log-rates within the depth's tolerance of a choice's
  best, the loss linear between rates (tuning.window_widths, tuning.TOLERANCE), mean over the
  init choices;
- instability: instability events (a divergence, loss spikes, gradient blow-ups) per run.
A contrast is a saturating norm's value minus pre-LN's at the same depth; depth 0 holds the
mean over the depths. The theory's link: the partial correlation of the best loss with
ln J^{L,0} given the design factors, and how often the α₀ whose J^{L,0} is nearest the critical
value 1 is the α₀ that trains best (per depth and multiplier).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from transformer_stability.apjn.tuning import (
    CONFIG,
    TOLERANCE,
    partial_correlation_of,
    window_widths,
)
from transformer_stability.resampling import cell_means, grid_cells, labelled
from transformer_stability.verdicts import bootstrap

BASELINE = "ln"
"""The norm every other is contrasted with."""
ALL_DEPTHS = 0
"""The depth of a row that is the mean over every trained depth."""
DEFAULT_ALPHA, DEFAULT_MULT = 1.0, 1.0
"""The untuned default init: α₀ = 1 (a saturating map's), multiplier 1."""
QUANTITIES = ("sensitivity", "tuning_cost", "window", "instability")
"""The per-norm statistics, in the order of the table and the figure."""
SEEDS = "training seeds"
UNITS = "train_seed"
EVENTS = ["diverged", "loss_spikes", "grad_blowups"]
AXES = [*CONFIG, "lr"]
"""The axes of the seed-averaged grid."""


@dataclass(frozen=True)
class Grid:
    """The trainability table averaged over seeds on the grid (norm, α₀, multiplier, depth,
    rate): levels of each axis (pre-LN's α₀ is NaN, last) and the mean loss, events per run
    and theory ln J^{L,0} per cell (NaN: not trained)."""

    norms: pd.Index
    alphas: pd.Index
    mults: pd.Index
    depths: pd.Index
    lrs: pd.Index
    loss: np.ndarray
    events: np.ndarray
    log_j: np.ndarray

    @classmethod
    def of(cls, train: pd.DataFrame) -> Grid:
        return cls.of_cells(train, *grid_cells(train, AXES))

    @classmethod
    def of_cells(cls, train: pd.DataFrame, levels: list[pd.Index], cells: np.ndarray) -> Grid:
        """The grid of `train` whose rows lie in `cells` of the grid of `levels` (`grid_cells`
        over AXES): found once for every resample of a bootstrap over seeds, each of which
        trains every cell."""
        loss = np.where(
            train["diverged"].to_numpy(bool), np.inf, train["final_loss"].to_numpy(float)
        )
        events = train[EVENTS].to_numpy(float).sum(axis=1)
        log_j = train["theory_log_apjn"].to_numpy(float)
        means = cell_means({"loss": loss, "events": events, "log_j": log_j}, cells, levels)
        return cls(*levels, means["loss"], means["events"], means["log_j"])

    @property
    def present(self) -> np.ndarray:
        """(norm, α₀, mult, depth): the configurations trained."""
        return (~np.isnan(self.loss)).any(axis=-1)

    @property
    def best(self) -> np.ndarray:
        """Each configuration's lowest mean loss over rates (inf: none trained, or absent)."""
        return np.where(np.isnan(self.loss), np.inf, self.loss).min(axis=-1)

    def tolerance(self) -> np.ndarray:
        """Per depth: TOLERANCE times the lowest finite best loss of any configuration (NaN
        where none trained; a best is finite or +inf, never NaN)."""
        lowest = self.best.min(axis=(0, 1, 2))
        return TOLERANCE * np.where(np.isfinite(lowest), lowest, np.nan)

    def window(self) -> np.ndarray:
        """(norm, α₀, mult, depth): the width in decades of the log-rate interval within the
        depth's tolerance of the configuration's best (tuning.window_widths; 0 when none
        trained)."""
        limit = self.best + self.tolerance()
        return window_widths(self.loss, limit, self.lrs.to_numpy(float))

    def mean_log_j(self) -> np.ndarray:
        """(norm, α₀, mult, depth): ln J^{L,0} of the configuration's models (mean over rates
        and seeds)."""
        trained = ~np.isnan(self.loss)
        total = np.where(trained, self.log_j, 0.0).sum(axis=-1)
        with np.errstate(invalid="ignore"):  # 0 / 0: a configuration not trained
            return total / trained.sum(axis=-1)


def _index(levels: pd.Index, value: float) -> int | None:
    """The position of `value` (NaN matches NaN) among `levels`, None if absent."""
    hits = np.flatnonzero(levels.isna() if pd.isna(value) else levels == value)
    return int(hits[0]) if len(hits) else None


def _per_norm(grid: Grid) -> dict[tuple[str, str, int], float]:
    """QUANTITIES per (norm, depth) with a trained configuration."""
    present, best, window = grid.present, grid.best, grid.window()
    median = (len(grid.lrs) - 1) // 2
    m1 = _index(grid.mults, DEFAULT_MULT)
    out = {}
    for n, norm in enumerate(grid.norms):
        a1 = _index(grid.alphas, np.nan if norm == BASELINE else DEFAULT_ALPHA)
        for d, depth in enumerate(grid.depths):
            choices = present[n, :, :, d]
            if not choices.any():
                continue
            tuned = best[n, :, :, d][choices]
            lowest = tuned.min()
            default = np.nan if a1 is None or m1 is None else grid.loss[n, a1, m1, d, median]
            with np.errstate(invalid="ignore"):  # inf - inf: no choice ever trained
                values = (
                    tuned.max() - lowest,
                    default - lowest,
                    window[n, :, :, d][choices].mean(),
                    np.nanmean(grid.events[n, :, :, d][choices]),
                )
            for quantity, value in zip(QUANTITIES, values, strict=True):
                out[(quantity, norm, int(depth))] = float(value)
    return out


def _with_contrasts(values: dict[tuple[str, str, int], float]) -> dict[tuple, float]:
    """Per quantity and norm: the value and, for a saturating norm, its contrast with pre-LN
    (label (quantity, norm, depth, True)), per depth and as the mean over depths (depth 0)."""
    out: dict[tuple, float] = {}
    keys = sorted({(q, n) for q, n, _ in values}, key=lambda k: (QUANTITIES.index(k[0]), k[1]))
    for quantity, norm in keys:
        depths = sorted(d for q, n, d in values if (q, n) == (quantity, norm))
        own = {d: values[(quantity, norm, d)] for d in depths}
        out.update({(quantity, norm, d, False): v for d, v in own.items()})
        out[(quantity, norm, ALL_DEPTHS, False)] = float(np.mean(list(own.values())))
        if norm == BASELINE:
            continue
        base = {d: values.get((quantity, BASELINE, d), np.nan) for d in depths}
        with np.errstate(invalid="ignore"):
            diff = {d: own[d] - base[d] for d in depths}
        out.update({(quantity, norm, d, True): v for d, v in diff.items()})
        out[(quantity, norm, ALL_DEPTHS, True)] = float(np.mean(list(diff.values())))
    return out


def _theory_link(grid: Grid) -> dict[tuple, float]:
    """The partial correlation of the best loss with ln J^{L,0} given the design (label
    ('partial_r', 'all', 0, False)) and, per saturating norm, the fraction of (depth,
    multiplier) at which the α₀ with ln J^{L,0} nearest 0 has the lowest best loss
    ('j_picks_alpha', norm, 0, False)."""
    present, best, log_j = grid.present, grid.best, grid.mean_log_j()
    n, a, m, d = np.argwhere(present).T
    link = partial_correlation_of(
        grid.norms.to_numpy()[n], grid.alphas.to_numpy(float)[a], grid.mults.to_numpy(float)[m],
        grid.depths.to_numpy(float)[d], log_j[present], best[present],
    )  # fmt: skip
    out: dict[tuple, float] = {("partial_r", "all", ALL_DEPTHS, False): link}
    for n, norm in enumerate(grid.norms):
        if norm == BASELINE:
            continue
        hits = []
        for m, d in np.ndindex(len(grid.mults), len(grid.depths)):
            trained = present[n, :, m, d] & np.isfinite(best[n, :, m, d])
            if trained.sum() < 2:
                continue
            alphas = np.flatnonzero(trained)
            critical = alphas[np.argmin(np.abs(log_j[n, alphas, m, d]))]
            hits.append(critical == alphas[np.argmin(best[n, alphas, m, d])])
        out[("j_picks_alpha", norm, ALL_DEPTHS, False)] = float(np.mean(hits)) if hits else np.nan
    return out


def tuning_statistics(train: pd.DataFrame) -> pd.Series:
    """Every statistic of the module, labelled (quantity, norm, depth, contrast): one value per
    label, computed from the seed-averaged grid."""
    return _grid_statistics(Grid.of(train))


def _grid_statistics(grid: Grid) -> pd.Series:
    return labelled(_with_contrasts(_per_norm(grid)) | _theory_link(grid))


def best_losses(train: pd.DataFrame) -> pd.Series:
    """Each trained configuration's best loss over rates, labelled (norm, α₀, mult, depth)
    with pre-LN's α₀ None (a NaN in a label would match no resample's label)."""
    return _grid_best_losses(Grid.of(train))


def _grid_best_losses(grid: Grid) -> pd.Series:
    return labelled({
        (grid.norms[n], None if pd.isna(grid.alphas[a]) else float(grid.alphas[a]),
         float(grid.mults[m]), int(grid.depths[d])): grid.best[n, a, m, d]
        for n, a, m, d in np.argwhere(grid.present)
    })  # fmt: skip


def _intervals(
    train: pd.DataFrame, statistic: Callable[[Grid], pd.Series]
) -> list[tuple[tuple, float, float, float, int]]:
    """(label, point, lo, hi, seeds) of `statistic` of the grid bootstrapped over the training
    seeds. Every seed trains every cell, so the cells are found once, not per resample."""
    columns = [UNITS, "final_loss", "theory_log_apjn", *EVENTS]
    levels, cells = grid_cells(train, AXES)
    frame = train[columns].assign(cell=cells)
    estimates = bootstrap(
        frame, lambda f: statistic(Grid.of_cells(f, levels, f["cell"].to_numpy())), UNITS, SEEDS
    )
    return [(label, e.point, e.lo, e.hi, e.units) for label, e in estimates.items()]


def statistics_table(train: pd.DataFrame) -> pd.DataFrame:
    """One row per statistic (tuning_statistics) with its 95 % bootstrap interval over the
    training seeds."""
    rows = [
        {"quantity": q, "norm": n, "depth": d, "contrast": c, "value": v, "lo": lo, "hi": hi,
         "seeds": seeds}
        for (q, n, d, c), v, lo, hi, seeds in _intervals(train, _grid_statistics)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def with_best_intervals(windows: pd.DataFrame, train: pd.DataFrame) -> pd.DataFrame:
    """`windows` (tuning.rate_windows) with the 95 % bootstrap interval of each best loss over
    the training seeds (best_loss_lo, best_loss_hi); a bound among resamples in which the
    configuration never trained is infinite (the percentile of infinite draws is NaN)."""
    bounds = {
        label: (np.nan_to_num(lo, nan=np.inf), np.nan_to_num(hi, nan=np.inf))
        for label, _, lo, hi, _ in _intervals(train, _grid_best_losses)
    }
    alphas = windows["alpha"].astype(object).where(windows["alpha"].notna(), None)
    keys = zip(windows["norm"], alphas, windows["attn_mult"], windows["depth"], strict=True)
    lo, hi = zip(*(bounds[key] for key in keys), strict=True)
    out = windows.copy()
    at = out.columns.get_loc("best_loss") + 1
    out.insert(at, "best_loss_lo", lo)
    out.insert(at + 1, "best_loss_hi", hi)
    return out
