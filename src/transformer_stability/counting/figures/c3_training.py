"""C3: what unconstrained training of the learned-post-norm model reaches, regression against
classification read-out: accuracy on the grid and the norms it grows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.counting.figures._common import length_axis, log_ticks
from transformer_stability.counting.figures._labels import report_labels
from transformer_stability.counting.style import READOUT_COLORS
from transformer_stability.counting.tables import Training
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _unconstrained(training: pd.DataFrame) -> pd.DataFrame:
    return training[~np.isfinite(training["B"])]


def plot_training(training: pd.DataFrame) -> Figure:
    """C3: unconstrained training of the learned-post-norm model: grid accuracy (overall and
    count-balanced) and the largest vector norm vs L, regression vs classification."""
    set_style()
    free = _unconstrained(training)
    if free.empty:
        raise ValueError("C3 needs unconstrained training runs (B = inf); training.csv has none")
    fig = new_figure(figsize=(12, 4.3), layout="constrained")
    ax_acc, ax_bal, ax_norm = fig.subplots(1, 3)
    for readout, part in free.groupby("readout"):
        color = READOUT_COLORS[readout]
        mean = part.groupby("L")[["accuracy", "balanced_accuracy", "max_vector_norm"]].mean()
        for ax, key in (
            (ax_acc, "accuracy"),
            (ax_bal, "balanced_accuracy"),
            (ax_norm, "max_vector_norm"),
        ):
            ax.plot(mean.index, mean[key], "-o", color=color, label=readout, ms=4)
            ax.scatter(part["L"], part[key], color=color, s=10, alpha=0.5)
    for ax, title in (
        (ax_acc, "exact-count accuracy on the grid"),
        (ax_bal, "count-balanced accuracy"),
    ):
        ax.set(xlabel="length L", ylim=(-0.02, 1.05), title=title)
    ax_norm.set(yscale="log", xlabel="length L", title="largest trainable-vector norm")
    log_ticks(ax_norm)
    for ax in (ax_acc, ax_bal, ax_norm):
        length_axis(ax, sorted(free["L"].unique()))
    ax_acc.legend(frameon=False)
    steps = ", ".join(f"{r}: {int(v)}" for r, v in free.groupby("readout")["steps"].first().items())
    fig.suptitle(
        f"C3: unconstrained training, learned post-norm, d = {int(free['d'].iloc[0])}, "
        f"full-batch Adam steps {steps}, step size independent of L (dots: seeds, line: mean)"
    )
    return fig


FIGURE = FigureSpec(
    name="counting_training",
    code="C3",
    study="counting",
    tables={"training": Training},
    plot=plot_training,
    caption="""\
C3. Unconstrained full-batch training (Adam, cosine decay, count-balanced weights, a step
size that does not depend on L; regression minimises an annealed p-mean of \\|y - c\\|,
classification a cross-entropy;
{{ config["counting"]["training"]["regression"]["unconstrained_steps"] }} steps for regression,
{{ config["counting"]["training"]["classification"]["steps"] }} for
classification, {{ config["counting"]["training"]["dtype"] }}) of the
learned-post-norm model on the whole (c, m) grid, regression vs classification read-out:
exact-count accuracy on the grid, its count-balanced version, and the largest trainable-vector
norm at the end of training, against L. Dots are seeds, lines their mean. Rows: B = inf.
""",
    labels=report_labels("C3", "unconstrained training", "post (learned)"),
)
