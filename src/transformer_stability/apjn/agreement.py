"""Agreement of measured and theoretical APJN curves: the GMFE, overall and by depth region."""

from __future__ import annotations

import numpy as np

REGIONS = ("shallow", "middle", "deep")


def gmfe(measured: np.ndarray, theory: np.ndarray) -> float:
    """Geometric mean fold error exp(mean |ln(measured / theory)|): 1 is perfect agreement."""
    return float(np.exp(np.mean(np.abs(np.log(measured / theory)))))


def region_gmfe(blocks: np.ndarray, measured: np.ndarray, theory: np.ndarray) -> dict[str, float]:
    """GMFE over three equal, consecutive ranges of `blocks`: shallow, middle, deep."""
    parts = np.array_split(np.argsort(blocks), len(REGIONS))
    return {r: gmfe(measured[i], theory[i]) for r, i in zip(REGIONS, parts, strict=True)}
