"""Panel helpers of the GPT-2 figures drawn along depth (N1, N2, N8): one colour per residual
scaling α, and a grid of panels per model and format or metric."""

from __future__ import annotations

from typing import TYPE_CHECKING

from transformer_stability.numerics.style import ALPHA_CMAP
from transformer_stability.plotting import legend_line, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def alpha_colors(alphas) -> dict:
    """One discrete colour per residual scaling α (few values: a legend, not a colour bar)."""
    alphas = sorted(set(alphas))
    from matplotlib import colormaps

    cmap = colormaps[ALPHA_CMAP]
    spots = [0.5] if len(alphas) == 1 else [0.9 * i / (len(alphas) - 1) for i in range(len(alphas))]
    return {a: cmap(x) for a, x in zip(alphas, spots, strict=True)}


def alpha_legend(fig: Figure, colors: dict) -> None:
    handles = [legend_line(color=c, lw=2, label=f"α = {a:g}") for a, c in colors.items()]
    fig.legend(handles=handles, loc="outside right center", fontsize=8, title="residual scaling")


def grid(rows: list, cols: list, width: float = 3.6, height: float = 3.0, sharey="row"):
    fig, axes = subplots(
        len(rows),
        len(cols),
        figsize=(width * len(cols), height * len(rows)),
        squeeze=False,
        sharex=True,
        sharey=sharey,
    )
    return fig, axes


def pairs(rows: list, cols: list):
    return [((r, a), (c, b)) for r, a in enumerate(rows) for c, b in enumerate(cols)]
