"""A7: tuning windows of the trained configurations."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.apjn.figures._common import _WINDOW_ROWS
from transformer_stability.apjn.figures._labels import _labels, _task, _trained
from transformer_stability.apjn.style import NORM_COLORS, NORM_LABELS, NORM_MARKERS, NORM_ORDER
from transformer_stability.apjn.tables import TuningWindows
from transformer_stability.plotting import FigureSpec, legend_line, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


_MULT_STYLES = ("-", "--", ":", "-.")
_BEST = ("best_loss", "best_loss_lo", "best_loss_hi")


def _window_panel(ax, rows: pd.DataFrame, column: str) -> None:
    """One depth's configurations: Derf and DyT against α₀ (one line per init multiplier),
    pre-LN as a horizontal line per multiplier; the best loss with its 95 % seed interval as a
    band."""
    mults = sorted(rows["attn_mult"].unique())
    for norm, part in rows.groupby("norm"):
        for k, mult in enumerate(mults):
            line = part[part["attn_mult"] == mult].sort_values("alpha")
            style = {"color": NORM_COLORS[norm], "ls": _MULT_STYLES[k % len(_MULT_STYLES)]}
            band = column == "best_loss"
            if norm == "ln":
                ax.axhline(line[column].iloc[0], lw=1.2, **style)
                if band:
                    lo, hi = line["best_loss_lo"].iloc[0], line["best_loss_hi"].iloc[0]
                    ax.axhspan(lo, hi, color=style["color"], alpha=0.12, lw=0)
                continue
            ax.plot(line["alpha"], line[column], marker=NORM_MARKERS[norm], ms=4, lw=1.2, **style)
            if band:
                ax.fill_between(line["alpha"], line["best_loss_lo"], line["best_loss_hi"],
                                color=style["color"], alpha=0.12, lw=0)  # fmt: skip
    ax.set_xscale("log")


def plot_trainability(windows: pd.DataFrame) -> Figure:
    """A7: per depth (columns), the best final loss over rates, the window of rates near it
    and the instability events of every configuration, against α₀ (pre-LN: horizontal)."""
    set_style()
    windows = windows.assign(events=windows[["diverged", "loss_spikes", "grad_blowups"]].sum(1))
    depths = sorted(windows["depth"].unique())
    fig = new_figure(figsize=(3.6 * len(depths) + 1, 8), layout="constrained")
    axes = fig.subplots(len(_WINDOW_ROWS), len(depths), squeeze=False, sharex=True, sharey="row")
    finite = {c: windows[c].replace(np.inf, np.nan) for c in _BEST}
    for j, depth in enumerate(depths):
        rows = windows[windows["depth"] == depth].assign(**finite)
        for i, (column, label) in enumerate(_WINDOW_ROWS):
            _window_panel(axes[i, j], rows, column)
            axes[i, 0].set_ylabel(label)
        axes[0, j].set_title(f"L = {depth}", fontsize=10)
        axes[-1, j].set_xlabel(r"$\alpha_0$")
    mults = sorted(windows["attn_mult"].unique())
    handles = [legend_line(color=NORM_COLORS[n], marker=NORM_MARKERS[n], label=NORM_LABELS[n])
               for n in NORM_ORDER if n in set(windows["norm"])]  # fmt: skip
    handles += [legend_line(color="0.3", ls=_MULT_STYLES[k % len(_MULT_STYLES)],
                       label=f"init mult {m:g}") for k, m in enumerate(mults)]  # fmt: skip
    axes[0, -1].legend(handles=handles, frameon=False, fontsize=8)
    fig.suptitle("tuning windows: best loss over peak rates, the rates near it, instability")
    return fig


FIGURE = FigureSpec(
    name="apjn_trainability",
    code="A7",
    study="apjn",
    tables={"windows": TuningWindows},
    plot=plot_trainability,
    caption="""\
A7. Tuning windows with the authors' recipe (AdamW, betas (0.9, 0.999), weight decay
{{ config["apjn"]["train"]["weight_decay"] }} on weight matrices only, linear warm-up over
{{ config["apjn"]["train"]["warmup_fraction"] }} of {{ config["apjn"]["train"]["steps"] }} steps
then a constant rate, batch {{ config["apjn"]["train"]["batch_size"] }}) of ViTs of width
{{ config["apjn"]["train"]["model"]["width"] }} with {{ config["apjn"]["train"]["activation"] }}
MLPs, init std {{ config["apjn"]["train"]["model"]["init_std"] }}, on the
{{ config["apjn"]["train"]["data"]["source"] }} task, each configuration (norm, α₀, init
multiplier = attn_mult = mlp_mult, depth) trained at the peak rates
{{ config["apjn"]["train"]["lrs"] | join(", ") }} with
{{ config["apjn"]["train"]["seeds"] }} seeds. Top: the best over rates of the final training
loss (mean over the last 10 % of steps and over seeds; a rate at which a seed diverged counts as
never trained), its band the 95 % bootstrap interval over seeds; middle: the tuning window, the
width in decades of the log-rates where the loss (linear between rates) exceeds that best by at
most 10 % of the lowest best loss at that depth; bottom: instability events over all its runs
(non-finite loss or gradient, loss spikes above 1.5 x the lowest smoothed loss so far, gradient
norms above 10 x their running mean).
Columns: depth; lines: Derf and DyT against α₀, one style per init multiplier; pre-LN:
horizontal lines.
""",
    labels=_labels(
        "A7",
        "best loss over rates, tuning window and instability vs α₀, multiplier, depth",
        _task,
        models=_trained,
    ),
)
