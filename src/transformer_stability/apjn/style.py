"""How Study A's figures and report name and colour its variants. Only figure modules import
this, so restyling never reruns a measurement."""

from __future__ import annotations

import numpy as np

from transformer_stability.apjn.names import NormName

NORM_LABELS: dict[NormName, str] = {"ln": "pre-LN", "derf": "Derf", "dyt": "DyT"}
NORM_ORDER: dict[NormName, int] = {"ln": 0, "derf": 1, "dyt": 2}
NORM_LINESTYLES: dict[NormName, str] = {"ln": "-", "derf": "-", "dyt": "--"}
NORM_COLORS: dict[NormName, str] = {"ln": "black", "derf": "#21918c", "dyt": "#b63c02"}
NORM_MARKERS: dict[NormName, str] = {"ln": "o", "derf": "s", "dyt": "^"}
# each saturating norm on its own colour map, away from the map's palest end (positions in [0, 1])
NORM_CMAPS = {"derf": ("viridis", 0.15, 0.85), "dyt": ("Oranges", 0.5, 0.95)}


def variant_label(norm: NormName, alpha: float | None) -> str:
    """'pre-LN', 'Derf α=1.5', ..."""
    name = NORM_LABELS[norm]
    return name if alpha is None else f"{name} α={alpha:g}"


def variant_colors(norm_alphas: list[tuple[str, float | None]]) -> dict[tuple, object]:
    """Pre-LN in its norm colour; each saturating norm on its own colour map, ordered by alpha."""
    colors: dict[tuple, object] = {}
    for norm in {n for n, _ in norm_alphas}:
        alphas = sorted({a for n, a in norm_alphas if n == norm and a is not None})
        if norm == "ln":
            colors[("ln", None)] = NORM_COLORS["ln"]
            continue
        name, lo, hi = NORM_CMAPS[norm]
        from matplotlib import colormaps

        cmap = colormaps[name]
        for alpha, pos in zip(alphas, np.linspace(lo, hi, max(len(alphas), 1)), strict=True):
            colors[(norm, alpha)] = cmap(pos if len(alphas) > 1 else hi)
    return colors
