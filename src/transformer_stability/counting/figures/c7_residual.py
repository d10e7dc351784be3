"""C7: softmax regression is never exact with finite parameters: the best error on the grid
falls with the norm bound B but reaches 0 only as B grows without end."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.counting.figures._common import mark_exactness_threshold
from transformer_stability.counting.figures._labels import report_labels
from transformer_stability.counting.style import PLACEMENT_COLORS, PLACEMENT_LABELS
from transformer_stability.counting.tables import Residual, Training
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _mark_linear_attention(ax: Axes, linear: pd.Series) -> None:
    """Linear attention's error, far below the axis: a marker clipped to the bottom edge (an
    arrow pointing down, off scale) with the measured value beside it."""
    floor = ax.get_ylim()[0]
    ax.annotate(
        f"linear attention: max error {linear['max_error']:.1e}, off scale below\n"
        f"(float64 rounding of 0) at B = {linear['B']:.3g}, the same at every L",
        xy=(linear["B"], floor),
        xytext=(linear["B"] * 1.3, floor * 3),
        fontsize=7,
        arrowprops={"arrowstyle": "->", "color": "0.3"},
    )
    ax.scatter([linear["B"]], [floor], marker="v", s=50, color="0.3", clip_on=False, zorder=5)


def plot_residual(residual: pd.DataFrame, training: pd.DataFrame) -> Figure:
    """C7: the smallest B that keeps max |y - c| within a target, per placement (lower bound
    and construction), the trained learned-post-norm runs at the same L, and linear attention,
    which reaches 0 at a norm that does not depend on L."""
    set_style()
    length, d = int(residual["L"].iloc[0]), int(residual["d"].iloc[0])
    fig = new_figure(figsize=(11, 5.6), layout="constrained")
    ax = fig.subplots()
    softmax = residual[residual["attention"] == "softmax"]
    for placement, part in softmax.groupby("placement", sort=False):
        color = PLACEMENT_COLORS[placement]
        for source, style in (("lower_bound", "--"), ("construction", "-o")):
            rows = part[part["source"] == source].sort_values("B")
            ax.plot(
                rows["B"],
                rows["max_error"],
                style,
                color=color,
                ms=4,
                label=f"{PLACEMENT_LABELS[placement]}, {source.replace('_', ' ')}",
            )
    runs = training[(training["readout"] == "regression") & (training["L"] == length)]
    runs = runs[np.isfinite(runs["B"]) & np.isfinite(runs["max_error"])]
    if len(runs):
        ax.scatter(
            runs["B"],
            runs["max_error"],
            marker="x",
            s=22,
            color=PLACEMENT_COLORS["post_learned"],
            label="trained post-norm (learned gain), every run of the bound grid",
        )
    mark_exactness_threshold(ax, "exact after rounding below 1/2", x=0.99, ha="right", ls=":")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="norm bound B (largest vector norm)",
        ylabel="best attainable max |y - c| on the grid",
    )
    # the floor a decade below the smallest target error, so that the clipped marker of linear
    # attention cannot be read as one of the targets
    ax.set_ylim(bottom=0.1 * softmax["max_error"][softmax["max_error"] > 0].min())
    linear = residual[residual["attention"] == "linear"]
    if len(linear):
        _mark_linear_attention(ax, linear.iloc[0])
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(
        f"C7: softmax regression is never exact: the error falls with B but reaches 0 only as "
        f"B -> inf (L = {length}, d = {d})"
    )
    return fig


FIGURE = FigureSpec(
    name="counting_residual",
    code="C7",
    study="counting",
    tables={"residual": Residual, "training": Training},
    plot=plot_residual,
    caption="""\
C7. Softmax regression never counts exactly with finite parameters: at L = {{
config["counting"]["residual"]["length"] }} (d = {{ config["counting"]["theory"]["widths"][0]
}}), the smallest norm bound B that keeps max \\|y - c\\| over the whole grid within a target
error, for the no-norm, bare post-norm and learned post-norm models. Dashed: the reduced
problem's lower bound (on the m = 0 line; no parameters with a smaller B do better); solid:
constructions verified on the whole grid (their measured error). The error crosses 1/2 at B_min
and keeps falling, but only as a power of B (as the error vanishes, the lower bounds' B grows as
the error^(-1/2), or error^(-1/4) with a learned gain), so it reaches 0 only as B -> infinity:
the read-out sees c only through a strictly nonlinear function (the saturation
alpha c / (1 + alpha c) without a norm, the cosine of a direction moving along a line with
post-norm). Crosses: the trained learned-post-norm runs at this L (C4's bound grid). Triangle
at the bottom edge: linear attention's construction, whose error (0 up to float64 rounding,
its value printed beside it) lies far below the axis, at a norm B that depends on d but not
on L.
""",
    labels=report_labels("C7", "best error vs B", "none, post (bare and learned)"),
)
