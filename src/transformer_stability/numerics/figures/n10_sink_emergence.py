"""N10: attention sinks growing along training, on the Bigram-Backcopy model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.numerics.items import format_unit_roundoff
from transformer_stability.numerics.spec import SINK_MODEL, SINK_WEIGHT
from transformer_stability.numerics.style import TAB10
from transformer_stability.numerics.tables import SinkEmergence, SinkTraining
from transformer_stability.plotting import FigureSpec, set_style, subplots

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _bands(ax: Axes, table: pd.DataFrame, column: str) -> None:
    """Per head, the median over held-out sequences against the step, band p25-p75."""
    for k, ((block, head), rows) in enumerate(table.groupby(["block", "head"])):
        stats = rows.groupby("step")[column].quantile([0.25, 0.5, 0.75]).unstack()
        color = TAB10[k % len(TAB10)]
        ax.plot(stats.index, stats[0.5], "o-", ms=3, lw=1, color=color, label=f"{block}.{head}")
        ax.fill_between(stats.index, stats[0.25], stats[0.75], color=color, alpha=0.2, lw=0)


def sink_emergence_figure(emergence: pd.DataFrame, training: pd.DataFrame) -> Figure:
    """N10: per head (block.head), the first token's weight and the tail mass 1 - p_max of the
    late attention rows against the training step (step 0: the random initialization), and the
    held-out loss against the task's Bayes loss."""
    set_style()
    fig, axes = subplots(1, 3, figsize=(13, 3.8))
    _bands(axes[0], emergence, "first_token")
    axes[0].axhline(SINK_WEIGHT, color="black", lw=0.8, ls="--", label=f"sink: {SINK_WEIGHT:g}")
    _bands(axes[1], emergence, "tail_mass")
    axes[1].axhline(format_unit_roundoff("bf16"), color="grey", lw=0.8, ls=":", label="2^-8")
    losses = training.groupby("step")[["loss", "bayes_loss"]].mean()
    axes[2].plot(losses.index, losses.loss, "o-", ms=3, color="black", label="model")
    axes[2].plot(losses.index, losses.bayes_loss, ls="--", color="grey", label="Bayes loss")
    for ax in axes:
        ax.set_xlabel("training step (0: initialization)")
        ax.legend(fontsize=7, ncols=2, title="block.head" if ax is not axes[2] else None)
    axes[0].set(ylim=(0, 1), ylabel="weight on the first token (BOS)", title="sink weight")
    axes[1].set(yscale="log", ylabel="1 - p_max (late rows)", title="tail mass")
    axes[2].set(ylabel="held-out cross-entropy (nats)", title="the task learned")
    return fig


FIGURE = FigureSpec(
    name="numerics_sink_emergence",
    code="N10",
    study="numerics",
    tables={"emergence": SinkEmergence, "training": SinkTraining},
    plot=sink_emergence_figure,
    caption="""\
{% set s = config["numerics"]["sinks"] %}
N10. Attention sinks growing along training. A GPT-2 of {{ s["model"]["layers"] }} blocks x
{{ s["model"]["heads"] }} heads (width {{ s["model"]["width"] }}) trained by AdamW on the
Bigram-Backcopy task: BOS, then a bigram Markov chain over {{ s["task"]["vocab"] }} tokens where
the token after each of {{ s["task"]["triggers"] }} triggers copies the token before it
({{ s["task"]["seq_len"] }} tokens per sequence). At step 0 (the random initialization) and at
every checkpoint, each head's attention rows of the queries in the second half of
{{ s["sequences"] }} held-out sequences: one line per head (block.head, median over the
sequences, band p25-p75). Left: the mean weight on the first token (dashed: 1/2, a sink head);
middle: the median tail mass 1 - p_max (dotted: bf16's unit roundoff, where N.3's softmax bound
tightens); right: the held-out loss against the task's Bayes loss. The comparison is claim N.9
in results/claims.csv.
""",
    labels=lambda config: {
        "figure": "N10",
        "quantity": "attention sinks along training",
        "models": SINK_MODEL,
        "precision": "float32",
    },
)
