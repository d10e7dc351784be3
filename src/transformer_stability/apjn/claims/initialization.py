"""A.5's initialization half: how far J^{L,0} moves over the init multiplier sweeps, Derf's
spread against pre-LN's, and the theory's account of it (sensitivity_ratios.csv)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from transformer_stability.apjn.claims._common import _g, _label
from transformer_stability.resampling import grid_means


def multiplier_spread(end_to_end: pd.DataFrame) -> pd.DataFrame:
    """J^{L,0} at the largest over the smallest init multiplier (measured and theory, means
    over initializations and samples), per multiplier sweep and norm."""
    rows = []
    for sweep in ("attn_mult", "mlp_mult"):
        part = end_to_end[end_to_end["sweep"] == sweep]
        for norm, group in part.groupby("norm"):
            means = group.groupby(sweep)[["apjn", "apjn_theory"]].mean().sort_index()
            if len(means) < 2:
                continue
            ratio = means.iloc[-1] / means.iloc[0]
            rows.append({"sweep": sweep, "norm": norm, **ratio.to_dict()})
    return pd.DataFrame(rows, columns=["sweep", "norm", "apjn", "apjn_theory"])


SWEEP_COLUMNS = ["sweep", "norm", "attn_mult", "mlp_mult", "init_seed", "apjn"]
"""The columns the bootstrap of the spread reads (fewer columns, faster resamples)."""


def spread_contrast(sweeps: pd.DataFrame) -> pd.Series:
    """Per multiplier sweep (rows of end_to_end.csv of the attn_mult and mlp_mult sweeps):
    Derf's measured spread J^{L,0}(largest multiplier)/J^{L,0}(smallest) over pre-LN's, means
    over initializations and samples."""
    mult = np.where(sweeps["sweep"] == "attn_mult", sweeps["attn_mult"], sweeps["mlp_mult"])
    (names, norms, _), means = grid_means(sweeps.assign(mult=mult), ["sweep", "norm", "mult"],
                                          ["apjn"])  # fmt: skip
    spread = {}
    for (i, sweep), (j, norm) in itertools.product(enumerate(names), enumerate(norms)):
        swept = means["apjn"][i, j][~np.isnan(means["apjn"][i, j])]
        spread[(sweep, norm)] = swept[-1] / swept[0] if len(swept) >= 2 else np.nan
    return pd.Series({s: spread[(s, "derf")] / spread[(s, "ln")] for s in names})


def spread_text(spread: pd.DataFrame) -> str:
    return ", ".join(
        f"{s} {n} ×{_g(m)} (theory ×{_g(t)})"
        for s, n, m, t in spread[["sweep", "norm", "apjn", "apjn_theory"]].itertuples(index=False)
    )


def _point_text(row: pd.Series) -> str:
    """'0.83 [0.8, 0.86] (Derf α=1, attn_mult 2)': one sweep point's measured/theory."""
    sweep = row["sweep"]
    point = f"{_label(row['norm'], row['alpha'])}, {sweep} {row[sweep]:g}"
    return f"{_g(row['ratio'])} [{_g(row['ratio_lo'])}, {_g(row['ratio_hi'])}] ({point})"


def ratios_text(ratios: pd.DataFrame) -> str:
    """The lowest and highest measured/theory of the sensitivity sweeps, with their bootstrap
    intervals, and how many points' intervals leave out 1."""
    off = int(((ratios["ratio_lo"] > 1) | (ratios["ratio_hi"] < 1)).sum())
    low, high = ratios.loc[ratios["ratio"].idxmin()], ratios.loc[ratios["ratio"].idxmax()]
    return (
        f"measured/theory from {_point_text(low)} to {_point_text(high)} over "
        f"{len(ratios)} points ({int(ratios['inits'].min())}+ initializations each), "
        f"{off} of whose intervals leave out 1"
    )
