"""Agreement of measured and theoretical APJN curves: the GMFE, overall and by depth region."""

from __future__ import annotations

import numpy as np
import pandas as pd

REGIONS = ("shallow", "middle", "deep")


def gmfe(measured: np.ndarray, theory: np.ndarray) -> float:
    """Geometric mean fold error exp(mean |ln(measured / theory)|): 1 is perfect agreement."""
    return float(np.exp(np.mean(np.abs(np.log(measured / theory)))))


def region_gmfe(blocks: np.ndarray, measured: np.ndarray, theory: np.ndarray) -> dict[str, float]:
    """GMFE over three equal, consecutive ranges of `blocks`: shallow, middle, deep."""
    parts = np.array_split(np.argsort(blocks), len(REGIONS))
    return {r: gmfe(measured[i], theory[i]) for r, i in zip(REGIONS, parts, strict=True)}


AGREEMENT_COLUMNS = ["norm", "alpha", "input", "sample", "region", "gmfe", "direction"]


def agreement(curves: pd.DataFrame) -> pd.DataFrame:
    """GMFE of measured vs theory per (model, input, sample, direction) and depth region; the
    source point, equal to 1 on both sides by definition, is left out."""
    rows = []
    keys = ["norm", "alpha", "attn_mult", "mlp_mult", "input", "sample", "direction"]
    for key, group in curves.groupby(keys, dropna=False):
        group = group[group["block"] != group["source_block"]]
        ids = dict(zip(keys, key, strict=True))
        for region, value in region_gmfe(
            group["block"].to_numpy(), group["apjn"].to_numpy(), group["apjn_theory"].to_numpy()
        ).items():
            rows.append({**ids, "region": region, "gmfe": value})
    return pd.DataFrame(rows)[AGREEMENT_COLUMNS]
