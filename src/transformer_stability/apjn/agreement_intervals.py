"""Averages of the APJN agreement over initializations and samples, each with its two-stage
bootstrap interval: the mean per-curve GMFE and the GMFE of the averaged curve per region, and
the measured/theory ratio at every sensitivity point (the tables the claims read)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from transformer_stability.apjn.agreement import COMPARED, EARLY, REGIONS, gmfe
from transformer_stability.apjn.tables import AgreementMeans, SensitivityRatios
from transformer_stability.resampling import nested_ci
from transformer_stability.tables import select

MEAN_KEYS = ["norm", "alpha", "input", "direction"]


def _grid(rows: pd.DataFrame, columns: str, values: str) -> pd.DataFrame:
    """`values` with one row per (initialization, sample) and one column per `columns`."""
    return rows.pivot(index=["init_seed", "sample"], columns=columns, values=values)


def _units(wide: pd.DataFrame) -> np.ndarray:
    """`wide` (rows: initialization, sample) as (initializations, samples, columns): the units
    of the two-stage bootstrap; every initialization holds the same samples."""
    inits = wide.index.get_level_values("init_seed").nunique()
    return wide.to_numpy(dtype=float).reshape(inits, len(wide) // inits, -1)


def _mean_gmfe(rows: pd.DataFrame, column: str, seed: int) -> pd.DataFrame:
    """Per region, and `compared` (per curve the mean of the three regions, as A.3 and A9
    read it): the mean over initializations and samples of the per-curve GMFE, with its
    bootstrap interval."""
    wide = _grid(rows, "region", column)
    wide[COMPARED] = wide[list(REGIONS)].mean(axis=1)
    units = _units(wide)
    lo, hi = nested_ci(units, lambda u: u.mean(axis=(0, 1)), seed)
    mean = units.mean(axis=(0, 1))
    return pd.DataFrame(
        {"region": wide.columns, column: mean, f"{column}_lo": lo, f"{column}_hi": hi}
    )


def _region_masks(blocks: np.ndarray, early: np.ndarray) -> dict[str, np.ndarray]:
    """Boolean masks over `blocks` (sorted) for the regions `agreement` uses, and compared."""
    compared = np.flatnonzero(~early)
    masks = {COMPARED: ~early}
    for region, part in zip(REGIONS, np.array_split(compared, len(REGIONS)), strict=True):
        masks[region] = np.isin(np.arange(len(blocks)), part)
    if early.any():
        masks[EARLY] = early
    return masks


def _averaged_gmfe(curves: pd.DataFrame, compare_from: int, seed: int) -> pd.DataFrame:
    """Per region: the GMFE of the curve averaged over initializations and samples (measured
    and theory averaged alike, as A.1 reads it), with its bootstrap interval."""
    curves = curves[curves["block"] != curves["source_block"]]
    measured, theory = (_grid(curves, "block", c) for c in ("apjn", "apjn_theory"))
    blocks = measured.columns.to_numpy()
    early = (curves["input"].iloc[0] == "images") & (blocks < compare_from)
    masks = _region_masks(blocks, early)
    units = np.stack([_units(measured), _units(theory)], axis=-1)

    def statistic(u: np.ndarray) -> np.ndarray:
        mean = u.mean(axis=(0, 1))
        return np.array([gmfe(mean[m, 0], mean[m, 1]) for m in masks.values()])

    lo, hi = nested_ci(units, statistic, seed)
    return pd.DataFrame(
        {"region": list(masks), "gmfe_averaged": statistic(units), "gmfe_averaged_lo": lo,
         "gmfe_averaged_hi": hi}
    )  # fmt: skip


def agreement_means(
    table: pd.DataFrame, curves: pd.DataFrame, compare_from: int = 0, seed: int = 0
) -> pd.DataFrame:
    """Per (variant, input, direction, region) of `agreement`'s table: the mean per-curve GMFE
    of both closures and the GMFE of the averaged curve, each with a 95 % two-stage bootstrap
    interval (initializations, then the inputs within each), so a claim reads its
    uncertainty from the table."""
    frames = []
    for key, rows in table.groupby(MEAN_KEYS, dropna=False, sort=False):
        ids = dict(zip(MEAN_KEYS, key, strict=True))
        group = select_group(curves, ids)
        parts = [_mean_gmfe(rows, c, seed) for c in ("gmfe", "gmfe_gram")]
        parts.append(_averaged_gmfe(group, compare_from, seed))
        merged = parts[0].merge(parts[1], on="region").merge(parts[2], on="region")
        frames.append(merged.assign(**ids))
    return select(pd.concat(frames, ignore_index=True), AgreementMeans)


def select_group(frame: pd.DataFrame, ids: dict[str, object]) -> pd.DataFrame:
    """The rows of `frame` equal to `ids` in every key (NaN matches NaN, as for pre-LN's
    alpha)."""
    keep = np.ones(len(frame), dtype=bool)
    for column, value in ids.items():
        keep &= frame[column].isna() if pd.isna(value) else frame[column] == value
    return frame[keep]


SENSITIVITY_KEYS = ["sweep", "norm", "alpha", "attn_mult", "mlp_mult", "width", "depth"]


def sensitivity_ratios(end_to_end: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per point of the sensitivity sweeps (every sweep of end_to_end.csv but `depth`): the
    mean measured and theoretical J^{L,0} and the mean of measured/theory over initializations
    and samples, with its two-stage bootstrap interval (initializations, then samples within
    each), so that a deviation of one initialization is not read as the theory's."""
    rows = []
    points = end_to_end[end_to_end["sweep"] != "depth"].sort_values(["init_seed", "sample"])
    for key, point in points.groupby(SENSITIVITY_KEYS, dropna=False, sort=False):
        inits = point["init_seed"].nunique()
        ratios = (point["apjn"] / point["apjn_theory"]).to_numpy().reshape(inits, -1)
        lo, hi = nested_ci(ratios, lambda u: u.mean(axis=(0, 1)), seed)
        rows.append(
            {
                **dict(zip(SENSITIVITY_KEYS, key, strict=True)),
                "inits": inits,
                "apjn": point["apjn"].mean(),
                "apjn_theory": point["apjn_theory"].mean(),
                "ratio": ratios.mean(),
                "ratio_lo": float(lo),
                "ratio_hi": float(hi),
            }
        )
    return select(pd.DataFrame(rows), SensitivityRatios)
