"""A8: trainability against the theory's end-to-end APJN at init."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.apjn.figures._common import _WINDOW_ROWS
from transformer_stability.apjn.figures._labels import _labels, _task, _trained
from transformer_stability.apjn.style import NORM_COLORS, NORM_LABELS, NORM_MARKERS
from transformer_stability.apjn.tables import MatchedPairs, Trainability, TuningWindows
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _log10_axis(axis) -> None:
    axis.set_major_formatter(lambda v, _: f"$10^{{{v:g}}}$")


def plot_trainability_theory(
    windows: pd.DataFrame, pairs: pd.DataFrame, table: pd.DataFrame
) -> Figure:
    """A8: every configuration's best loss and window against the theory's J^{L,0} of its
    models at init, J-matched pairs joined by grey lines (left, middle); the theory against
    the Hutchinson estimate of J^{L,0}, one dot per built model (right)."""
    set_style()
    fig = new_figure(figsize=(15, 4.4), layout="constrained")
    axes = fig.subplots(1, 3)
    log10 = np.log(10)
    for ax, (column, label) in zip(axes, _WINDOW_ROWS[:2], strict=False):
        first, second = pairs[f"{column}_first"], pairs[f"{column}_second"]
        for row in pairs.assign(a=first, b=second).itertuples(index=False):
            ax.plot([row.log_apjn_first / log10, row.log_apjn_second / log10], [row.a, row.b],
                    color="0.7", lw=0.6, zorder=1)  # fmt: skip
        for (norm, mult), part in windows.groupby(["norm", "attn_mult"]):
            filled = mult == windows["attn_mult"].min()
            color = NORM_COLORS[norm]
            if column == "best_loss":
                best = part[["best_loss", "best_loss_lo", "best_loss_hi"]].replace(np.inf, np.nan)
                ax.errorbar(part["log_apjn"] / log10, best["best_loss"], fmt="none", lw=0.8,
                            yerr=[best["best_loss"] - best["best_loss_lo"],
                                  best["best_loss_hi"] - best["best_loss"]],
                            color=color, alpha=0.6, zorder=1.5)  # fmt: skip
            ax.scatter(part["log_apjn"] / log10, part[column].replace(np.inf, np.nan),
                       marker=NORM_MARKERS[norm], s=18 + 4 * part["depth"], zorder=2,
                       facecolors=color if filled else "none", edgecolors=color)  # fmt: skip
        ax.set_xlabel(r"theory $J^{L,0}$ at init")
        _log10_axis(ax.xaxis)
        ax.set_ylabel(label)
    models = table.drop_duplicates(["norm", "alpha", "attn_mult", "depth", "train_seed"])
    theory, measured = models["theory_log_apjn"] / log10, models["measured_log_apjn"] / log10
    for norm, part in models.groupby("norm"):
        axes[2].scatter(theory[part.index], measured[part.index], marker=NORM_MARKERS[norm],
                        color=NORM_COLORS[norm], s=22, label=NORM_LABELS[norm])  # fmt: skip
    span = [min(theory.min(), measured.min()), max(theory.max(), measured.max())]
    axes[2].plot(span, span, color="0.5", lw=0.8, ls="--", label="measured = theory")
    axes[2].set_xlabel(r"theory $J^{L,0}$")
    axes[2].set_ylabel(r"measured $J^{L,0}$ (Hutchinson, CLS included)")
    _log10_axis(axes[2].xaxis)
    _log10_axis(axes[2].yaxis)
    axes[2].legend(frameon=False, fontsize=8)
    fig.suptitle(
        "trainability against the theory's end-to-end APJN (filled: init mult "
        f"{windows['attn_mult'].min():g}, open: larger; size: depth; grey: J-matched pairs)"
    )
    return fig


FIGURE = FigureSpec(
    name="apjn_trainability_theory",
    code="A8",
    study="apjn",
    tables={"windows": TuningWindows, "pairs": MatchedPairs, "table": Trainability},
    plot=plot_trainability_theory,
    caption="""\
A8. Every configuration of A7 against the end-to-end APJN J^{L,0} that the mean-field theory
gives for its models at init: the built model's (a, m) read off its weights and (q0, p0) of its
patch embedding of training images (exact at init for ReLU MLPs), mean over seeds. Left: best
final training loss over rates, bars its 95 % bootstrap interval over seeds; middle: the tuning
window (decades of log-rate where the loss, linear between rates, exceeds the best by at most
10 % of the depth's lowest best loss);
marker: norm, filled: init multiplier 1, open: larger, size: depth; grey lines join the J-matched
pairs (ln J^{L,0} within 0.1 of each other, different α₀, multiplier or depth). If J^{L,0}
decided trainability, outcomes would order by it and matched pairs would lie flat. Right: the
theory against the Hutchinson estimate of the same J^{L,0} at init (16 training images, every
token); pre-LN's measured value lies far above the theory because the CLS token (std 1e-6 plus
the position embedding) has a tiny variance, so its LayerNorm Jacobian is huge, and the theory
has no CLS channel.
""",
    labels=_labels(
        "A8",
        "best loss and tuning window vs the theory's end-to-end APJN",
        _task,
        models=_trained,
    ),
)
