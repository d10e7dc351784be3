"""N9: attention sinks per head of the GPT-2 models, beside N6's synthetic sink rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.numerics.figures._labels import gpt2_labels
from transformer_stability.numerics.style import TAB10
from transformer_stability.numerics.tables import AttentionSinks, Softmax
from transformer_stability.plotting import FigureSpec, set_style, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def sinks_figure(table: pd.DataFrame, softmax: pd.DataFrame) -> Figure:
    """N9: per head, the tail mass 1 - p_max and the first token's weight of the late attention
    rows (median, p25-p75), against the block, one colour per model; the synthetic softmax
    rows' sink grid (N6) drawn across the first panel."""
    set_style()
    fig, axes = subplots(1, 2, figsize=(10, 3.6))
    models = list(dict.fromkeys(table.model))
    for k, model in enumerate(models):
        rows = table[table.model == model]
        heads = rows["head"].max() + 1
        for ax, statistic in zip(axes, ("p_max", "first_token"), strict=True):
            run = rows[rows.statistic == statistic]
            # heads side by side within a block, models side by side within a head
            x = run.block + 0.8 * (run["head"] + (k + 0.5) / len(models)) / heads - 0.4
            low, mid, high = (run[q] for q in ("p25", "p50", "p75"))
            if statistic == "p_max":  # the tail mass: its quantiles are the p_max's reversed
                low, mid, high = 1 - high, 1 - mid, 1 - low
            ax.errorbar(
                x,
                mid,
                yerr=[mid - low, high - mid],
                fmt="o",
                ms=3,
                lw=0.8,
                color=TAB10[k],
                label=model,
            )
    grid = sorted(set(1 - softmax[softmax.sweep == "sink"].p_max) - {0})
    for tail in grid:
        axes[0].axhline(tail, color="grey", lw=0.6, ls=":")
    axes[0].set(
        yscale="log",
        xlabel="block (one point per head)",
        ylabel="1 - p_max (late rows)",
        title="tail mass; dotted: N6's synthetic sink rows",
    )
    axes[1].set(
        yscale="log",
        xlabel="block (one point per head)",
        ylabel="weight on the first token",
        title="the first token's weight (late rows)",
    )
    for ax in axes:
        ax.set_xticks(sorted(table.block.unique()))
    axes[0].legend(fontsize=8)
    return fig


FIGURE = FigureSpec(
    name="numerics_sinks",
    code="N9",
    study="numerics",
    tables={"table": AttentionSinks, "softmax": Softmax},
    plot=sinks_figure,
    caption="""\
{% set n = config["numerics"] %}
N9. Does training grow attention sinks? Every head's attention rows of the queries in the second
half of each sequence ({{ n["inputs"]["sequences"] }} sequences of {{ n["inputs"]["seq_len"] }}
tokens; float32, alpha = 1; a spread row there has p_max below 2/T), one point per head (median
over the rows, bar p25-p75), one colour per model: random models read synthetic tokens, trained
ones (weights: trained, trained by the pipeline on WordNet's glosses) the held-out glosses. Left:
the tail mass 1 - p_max, with the sink strengths of N6's synthetic softmax rows dotted across
(where the softmax bound of claim N.3 tightens as the tail mass falls). Right: the weight on the
first token, where sinks of trained language models sit: a head concentrated with little
weight there attends elsewhere (a delimiter) and is no sink. Claim N.9 (results/claims.csv)
tests the growth of sinks on the Bigram-Backcopy model of figure N10 and reports these heads.
""",
    labels=gpt2_labels("N9", "attention sinks per head", "float32"),
)
