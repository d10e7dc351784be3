"""What limits the image agreement (A9): how the GMFE of the image curves falls with model width.

Per variant, direction, depth region and closure (`gram`: the full-Gram closure, `qp`: the
(q, p) closure), the excess GMFE - 1 of the mean over initializations and images at each width,
the range of the per-initialization means, and the slope of ln(excess) against ln(width): about
-1/2 to -1 for a finite-width effect, 0 for an error of the closure itself. Region `compared` is
the mean over every compared block (all regions but the early image blocks).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from transformer_stability.apjn.agreement import EARLY
from transformer_stability.apjn.tables import WidthExcess, WidthFitIds, WidthSlopes
from transformer_stability.tables import columns_of, select

CLOSURES = {"gram": "gmfe_gram", "qp": "gmfe"}
COMPARED = "compared"
KEYS = columns_of(WidthFitIds)


def _excess(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per width: GMFE - 1 of the mean over (initialization, image), and the range of the
    per-initialization means (NaN where nothing was computed)."""
    per_init = rows.groupby(["width", "init_seed"])[column].mean() - 1.0
    out = per_init.groupby("width").agg(["min", "max"])
    out["mean"] = rows.groupby("width")[column].mean() - 1.0
    return out.rename(columns=lambda c: f"excess_{c}").reset_index()


def width_excess(table: pd.DataFrame) -> pd.DataFrame:
    """The excess GMFE per (variant, direction, region, closure, width) of width_agreement.csv."""
    frames = []
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
                frames.append(_excess(rows, column).assign(**ids, closure=closure))
    return select(pd.concat(frames, ignore_index=True), WidthExcess)


def excess_slope(widths: np.ndarray, excess: np.ndarray) -> tuple[float, int]:
    """(slope of ln excess against ln width, points fitted) over the widths with a positive
    excess; NaN below two such widths."""
    keep = excess > 0
    if keep.sum() < 2:
        return float("nan"), int(keep.sum())
    slope = np.polyfit(np.log(widths[keep]), np.log(excess[keep]), 1)[0]
    return float(slope), int(keep.sum())


def width_slopes(excess: pd.DataFrame) -> pd.DataFrame:
    """The fitted width slope per (variant, direction, region, closure) of `width_excess`."""
    rows = []
    for key, part in excess.groupby(KEYS, dropna=False, sort=False):
        slope, points = excess_slope(
            part["width"].to_numpy(dtype=float), part["excess_mean"].to_numpy(dtype=float)
        )
        rows.append({**dict(zip(KEYS, key, strict=True)), "slope": slope, "points": points})
    return select(pd.DataFrame(rows), WidthSlopes)
