"""Shared figure style: Agg backend, one seaborn theme, colours that identify variants."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.colors import Colormap  # noqa: E402

PRE_LN_COLOR = "black"
_NORM_CMAPS = {"derf": "viridis", "dyt": "Oranges"}
NORM_LINESTYLES = {"ln": "-", "derf": "-", "dyt": "--"}


def set_style() -> None:
    sns.set_theme(context="paper", style="ticks", font_scale=1.1)
    plt.rcParams.update({"figure.dpi": 100, "axes.grid": True, "grid.alpha": 0.3})


def variant_colors(norm_alphas: list[tuple[str, float | None]]) -> dict[tuple, object]:
    """Pre-LN in black; each saturating norm on its own colour map, ordered by alpha."""
    colors: dict[tuple, object] = {}
    for norm in {n for n, _ in norm_alphas}:
        alphas = sorted({a for n, a in norm_alphas if n == norm and a is not None})
        if norm == "ln":
            colors[("ln", None)] = PRE_LN_COLOR
            continue
        cmap: Colormap = plt.get_cmap(_NORM_CMAPS[norm])
        # stay away from the colour maps' palest end so every line is visible on white
        lo, hi = (0.15, 0.85) if norm == "derf" else (0.5, 0.95)
        for alpha, pos in zip(alphas, np.linspace(lo, hi, max(len(alphas), 1)), strict=True):
            colors[(norm, alpha)] = cmap(pos if len(alphas) > 1 else hi)
    return colors
