"""Agreement of measured and theoretical APJN curves: the GMFE of each curve, overall and by
depth region. The averages over initializations with their intervals are in
`agreement_intervals`, apart, so that the measurements that compute these GMFEs (the width
scan's) do not depend on the bootstrap code."""

from __future__ import annotations

import numpy as np
import pandas as pd

from transformer_stability.apjn.tables import Agreement
from transformer_stability.tables import select

REGIONS = ("shallow", "middle", "deep")


def gmfe(measured: np.ndarray, theory: np.ndarray) -> float:
    """Geometric mean fold error exp(mean |ln(measured / theory)|): 1 is perfect agreement."""
    return float(np.exp(np.mean(np.abs(np.log(measured / theory)))))


def region_gmfe(blocks: np.ndarray, measured: np.ndarray, theory: np.ndarray) -> dict[str, float]:
    """GMFE over three equal, consecutive ranges of `blocks`: shallow, middle, deep."""
    parts = np.array_split(np.argsort(blocks), len(REGIONS))
    return {r: gmfe(measured[i], theory[i]) for r, i in zip(REGIONS, parts, strict=True)}


EARLY = "early"
"""The region of image blocks before compare_from_block, reported apart from the others."""


def _compared(group: pd.DataFrame, compare_from: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(compared blocks, early image blocks): the source point, 1 on both sides by definition,
    is left out; on images, blocks before compare_from are set apart."""
    group = group[group["block"] != group["source_block"]]
    early = (group["input"] == "images") & (group["block"] < compare_from)
    return group[~early], group[early]


def _regions(part: pd.DataFrame, early: pd.DataFrame, theory: str) -> dict[str, float]:
    regions = region_gmfe(
        part["block"].to_numpy(), part["apjn"].to_numpy(), part[theory].to_numpy()
    )
    if not early.empty:
        regions[EARLY] = gmfe(early["apjn"].to_numpy(), early[theory].to_numpy())
    return regions


def agreement(curves: pd.DataFrame, compare_from: int = 0) -> pd.DataFrame:
    """GMFE of measured vs theory per (model, input, initialization, sample, direction) and
    depth region (three equal thirds of the compared blocks, plus "early" for image blocks
    before compare_from), for the (q, p) closure (`gmfe`) and the full-Gram closure
    (`gmfe_gram`, NaN where it was not computed)."""
    rows = []
    keys = ["norm", "alpha", "attn_mult", "mlp_mult", "input", "init_seed", "sample", "direction"]
    for key, group in curves.groupby(keys, dropna=False):
        ids = dict(zip(keys, key, strict=True))
        compared, early = _compared(group, compare_from)
        plain = _regions(compared, early, "apjn_theory")
        full = (
            _regions(compared, early, "apjn_theory_gram")
            if compared["apjn_theory_gram"].notna().all()
            else dict.fromkeys(plain, np.nan)
        )
        rows.extend(
            {**ids, "region": region, "gmfe": value, "gmfe_gram": full[region]}
            for region, value in plain.items()
        )
    return select(pd.DataFrame(rows), Agreement)


COMPARED = "compared"
"""Every compared block: the three regions together, early image blocks left out."""
