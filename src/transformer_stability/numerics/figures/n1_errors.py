"""N1: the rounding error along GPT-2's residual adds, in units of each format's u."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.numerics.figures._common import alpha_colors, alpha_legend, grid, pairs
from transformer_stability.numerics.figures._labels import gpt2_labels
from transformer_stability.numerics.items import format_unit_roundoff
from transformer_stability.numerics.tables import Gpt2Errors
from transformer_stability.plotting import FigureSpec, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def errors_figure(table: pd.DataFrame, metric: str = "rel_linf") -> Figure:
    """N1: relative error along the residual adds in units of each format's own u; p50 line,
    p25–p75 and p01–p99 bands."""
    set_style()
    data = table[table.metric == metric]
    models, precisions = sorted(data.model.unique()), list(dict.fromkeys(data.precision))
    colors = alpha_colors(data.alpha)
    fig, axes = grid(models, precisions)
    for (r, model), (c, precision) in pairs(models, precisions):
        ax = axes[r, c]
        u = format_unit_roundoff(precision)
        for alpha, run in data[(data.model == model) & (data.precision == precision)].groupby(
            "alpha"
        ):
            run = run.sort_values("checkpoint")
            k = run.checkpoint
            ax.fill_between(k, run.p01 / u, run.p99 / u, color=colors[alpha], alpha=0.08, lw=0)
            ax.fill_between(k, run.p25 / u, run.p75 / u, color=colors[alpha], alpha=0.25, lw=0)
            ax.plot(k, run.p50 / u, color=colors[alpha], lw=1.3)
        ax.set_yscale("log")
        ax.set_title(f"{model}, {precision} (u = 2^{math.log2(u):.0f})", fontsize=9)
        if r == len(models) - 1:
            ax.set_xlabel("residual add (attn, mlp, ...)")
        if c == 0:
            label = "‖Δ_t‖∞ / ‖h_t‖∞" if metric == "rel_linf" else metric
            ax.set_ylabel(f"{label}  [units of u]")
    alpha_legend(fig, colors)
    return fig


FIGURE = FigureSpec(
    name="numerics_errors",
    code="N1",
    study="numerics",
    tables={"table": Gpt2Errors},
    plot=errors_figure,
    caption="""\
{% set n = config["numerics"] %}
N1. Relative error rel_linf = max-norm of (test - reference) over the max-norm of the float64
reference stream, per token, in units of each format's own unit roundoff u (fp32 2^-24, bf16
2^-8, m<bits> 2^-(bits+1)), after every residual add of GPT-2 ({{ n["inputs"]["sequences"] }}
sequences of {{ n["inputs"]["seq_len"] }} tokens: synthetic for random weights, held-out text for
weights trained by the pipeline). Line: median over tokens and
sequences; bands: p25-p75 and p01-p99. One panel per model and test format (fp32/bf16/fp16 are
torch dtypes; m<bits> rounds every linear/matmul output to that many mantissa bits), one colour
per residual scaling alpha (legend). The reference holds exactly the numbers the test format
stores. For alpha large enough that the stream is residual-dominated the curves coincide; for
small alpha the stream is embedding-dominated and the error falls.
""",
    labels=gpt2_labels("N1", "relative error vs residual add"),
)
