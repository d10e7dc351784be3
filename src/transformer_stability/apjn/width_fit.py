"""What limits the image agreement (A9): how the GMFE of the image curves falls with model width.

Per variant, direction, depth region and closure (`gram`: the full-Gram closure, `qp`: the
(q, p) closure), the excess GMFE - 1 of the mean over initializations and images at each width,
the range of the per-initialization means, and the slope of ln(excess) against ln(width): about
-1/2 to -1 for a finite-width effect, 0 for an error of the closure itself, with a 95 % bootstrap
interval over the initializations of each width. Region `compared` is the mean over every
compared block (all regions but the early image blocks).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.apjn.agreement import COMPARED, EARLY
from transformer_stability.apjn.items import Variant, WidthItem
from transformer_stability.apjn.tables import WidthExcess, WidthFitIds, WidthSlopes
from transformer_stability.resampling import RESAMPLES, percentile_bounds
from transformer_stability.tables import columns_of, select

CLOSURES = {"gram": "gmfe_gram", "qp": "gmfe"}
KEYS = columns_of(WidthFitIds)


def scan_table(
    measured: pd.DataFrame,
    agreement: pd.DataFrame,
    scan: list[WidthItem],
    swept: list[WidthItem],
) -> pd.DataFrame:
    """The agreement rows of every model of the width scan (`scan`, items.scan_items), model by
    model: the width sweep's rows (`measured`, width_agreement.csv) for the models it measures
    (`swept`, items.width_items), the image rows of agreement.csv for the others (the curve
    sweep's models)."""
    images = agreement[agreement["input"] == "images"]
    parts = []
    for item in scan:
        spec, init = item.curve.spec, item.curve.settings.seed
        source = measured[measured["width"] == spec.width] if item in swept else images
        rows = Variant(spec.norm, spec.alpha).rows(source)
        rows = rows[rows["init_seed"] == init].assign(width=spec.width)
        if rows.empty:
            raise ValueError(f"no agreement rows for the width scan's model {item.id}")
        parts.append(rows)
    return pd.concat(parts, ignore_index=True)


def _excess(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per width: GMFE - 1 of the mean over (initialization, image), and the range of the
    per-initialization means (NaN where nothing was computed)."""
    per_init = rows.groupby(["width", "init_seed"])[column].mean() - 1.0
    out = per_init.groupby("width").agg(["min", "max"])
    out["mean"] = rows.groupby("width")[column].mean() - 1.0
    return out.rename(columns=lambda c: f"excess_{c}").reset_index()


def _groups(table: pd.DataFrame) -> Iterator[tuple[dict[str, Any], pd.DataFrame, str]]:
    """(ids of WidthFitIds, the rows they select, the GMFE column of the closure) per
    variant, direction, region (and `compared`) and closure of width_agreement.csv."""
    regions = [*table["region"].unique(), COMPARED]
    for (norm, alpha, direction), part in table.groupby(
        ["norm", "alpha", "direction"], dropna=False, sort=False
    ):
        for region in regions:
            rows = (
                part[part["region"] != EARLY]
                if region == COMPARED
                else part[part["region"] == region]
            )
            if rows.empty:
                continue
            for closure, column in CLOSURES.items():
                ids = dict(norm=norm, alpha=alpha, direction=direction, region=region)
                yield {**ids, "closure": closure}, rows, column


def width_excess(table: pd.DataFrame) -> pd.DataFrame:
    """The excess GMFE per (variant, direction, region, closure, width) of width_agreement.csv."""
    frames = [_excess(rows, column).assign(**ids) for ids, rows, column in _groups(table)]
    return select(pd.concat(frames, ignore_index=True), WidthExcess)


def excess_slope(widths: np.ndarray, excess: np.ndarray) -> tuple[float, int]:
    """(slope of ln excess against ln width, points fitted) over the widths with a positive
    excess; NaN below two such widths."""
    keep = excess > 0
    if keep.sum() < 2:
        return float("nan"), int(keep.sum())
    slope = np.polyfit(np.log(widths[keep]), np.log(excess[keep]), 1)[0]
    return float(slope), int(keep.sum())


def slope_interval(
    widths: np.ndarray, per_init: list[np.ndarray], seed: int = 0, resamples: int = RESAMPLES
) -> tuple[float, float]:
    """Bootstrap interval of the width slope: at each width, independently (its models are
    its own), the per-initialization excesses are drawn with replacement and averaged."""
    rng = np.random.default_rng(seed)
    means = np.stack(
        [e[rng.integers(0, len(e), size=(resamples, len(e)))].mean(axis=1) for e in per_init],
        axis=1,
    )
    lo, hi = percentile_bounds(np.array([excess_slope(widths, m)[0] for m in means]))
    return float(lo), float(hi)


def width_slopes(table: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The fitted width slope per (variant, direction, region, closure) of width_agreement.csv,
    on the mean excess per width, with its bootstrap interval over initializations."""
    rows = []
    for ids, part, column in _groups(table):
        per_init = part.groupby(["width", "init_seed"])[column].mean() - 1.0
        widths = per_init.index.get_level_values("width").unique().to_numpy(dtype=float)
        slope, points = excess_slope(
            widths, (part.groupby("width")[column].mean() - 1.0).to_numpy()
        )
        units = [per_init.loc[int(w)].to_numpy() for w in widths]
        lo, hi = slope_interval(widths, units, seed)
        rows.append({**ids, "slope": slope, "slope_lo": lo, "slope_hi": hi, "points": points})
    return select(pd.DataFrame(rows), WidthSlopes)
