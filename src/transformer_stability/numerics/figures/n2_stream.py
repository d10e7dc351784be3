"""N2: the residual stream's size along depth per residual scaling α."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.numerics.figures._common import alpha_colors, alpha_legend, grid, pairs
from transformer_stability.numerics.figures._labels import gpt2_labels
from transformer_stability.numerics.tables import Gpt2Errors
from transformer_stability.plotting import FigureSpec, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def stream_figure(table: pd.DataFrame) -> Figure:
    """N2: residual-stream size (median over tokens, min over tokens) along depth, per α."""
    set_style()
    data = table[table.metric.isin(["stream_median_l2", "stream_min_l2"])]
    data = data[data.precision == data.precision.iloc[0]]  # the reference holds the stream
    models = sorted(data.model.unique())
    colors = alpha_colors(data.alpha)
    fig, axes = grid(models, ["stream_median_l2", "stream_min_l2"], width=4.2)
    for (r, model), (c, metric) in pairs(models, ["stream_median_l2", "stream_min_l2"]):
        ax = axes[r, c]
        subset = data[(data.model == model) & (data.metric == metric)]
        for alpha, run in subset.groupby("alpha"):
            run = run.sort_values("checkpoint")
            ax.plot(run.checkpoint, run.p50, color=colors[alpha], marker=".", ms=3)
        ax.set_yscale("log")
        label = "median_t" if metric == "stream_median_l2" else "min_t"
        ax.set_title(f"{model}\n{label} ‖h_t‖₂, median over sequences", fontsize=8)
        ax.set_xlabel("residual add")
    axes[0, 0].set_ylabel("stream size ‖h_t‖₂")
    alpha_legend(fig, colors)
    return fig


FIGURE = FigureSpec(
    name="numerics_stream",
    code="N2",
    study="numerics",
    tables={"table": Gpt2Errors},
    plot=stream_figure,
    caption="""\
{% set n = config["numerics"] %}
N2. Residual-stream size along depth per alpha: median over tokens (left) and minimum over
tokens (right) of the token 2-norm, median over sequences (float64 reference). Small alpha: flat
at the embedding's size (embedding-dominated); large alpha: proportional to alpha
(residual-dominated). Metrics: stream_median_l2, stream_min_l2.
""",
    labels=gpt2_labels("N2", "residual-stream size vs residual add"),
)
