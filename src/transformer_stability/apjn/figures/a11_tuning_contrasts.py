"""A11: how much tuning each norm needs, and its contrast with pre-LN, with seed intervals."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.apjn.figures._labels import _labels, _task, _trained
from transformer_stability.apjn.style import NORM_COLORS, NORM_LABELS, NORM_MARKERS, NORM_ORDER
from transformer_stability.apjn.tables import TuningStatistics
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_QUANTITIES = (
    ("sensitivity", "best-loss range over init choices"),
    ("tuning_cost", "untuned default − tuned best"),
    ("window", "window of rates (decades)"),
    ("instability", "instability events per run"),
)
_OFFSET = 0.12
"""Horizontal shift between the norms' markers at one depth, so the bars do not overlap."""


def _bars(ax, rows: pd.DataFrame, norm: str, shift: float) -> None:
    """One norm's values per depth (the mean over depths at the right, 'all') with their
    95 % seed intervals as error bars."""
    rows = rows.sort_values("depth", key=lambda d: d.replace(0, np.iinfo(np.int64).max))
    x = np.arange(len(rows)) + shift
    value = rows["value"].to_numpy(float)
    low, high = value - rows["lo"].to_numpy(float), rows["hi"].to_numpy(float) - value
    style = {"color": NORM_COLORS[norm], "marker": NORM_MARKERS[norm], "label": NORM_LABELS[norm]}
    ax.errorbar(x, value, yerr=[np.fmax(low, 0), np.fmax(high, 0)], ms=5, ls="none",
                elinewidth=1, capsize=2.5, **style)  # fmt: skip


def plot_tuning_contrasts(statistics: pd.DataFrame) -> Figure:
    """A11: per quantity (columns), each norm's value per depth (top) and each saturating
    norm's contrast with pre-LN (bottom, 0 dashed), with 95 % bootstrap intervals over
    training seeds; the last position of each axis is the mean over the depths."""
    set_style()
    fig = new_figure(figsize=(15, 6.4), layout="constrained")
    axes = fig.subplots(2, len(_QUANTITIES), sharex=True)
    depths = sorted(d for d in statistics["depth"].unique() if d != 0)
    ticks = [f"L = {d}" for d in depths] + ["all"]
    norms = sorted(set(statistics["norm"]) - {"all"}, key=NORM_ORDER.__getitem__)
    for j, (quantity, label) in enumerate(_QUANTITIES):
        rows = statistics[statistics["quantity"] == quantity]
        for k, norm in enumerate(norms):
            shift = (k - (len(norms) - 1) / 2) * _OFFSET
            own = rows[(rows["norm"] == norm) & ~rows["contrast"]]
            _bars(axes[0, j], own, norm, shift)
            contrast = rows[(rows["norm"] == norm) & rows["contrast"]]
            if len(contrast):
                _bars(axes[1, j], contrast, norm, shift)
        axes[1, j].axhline(0.0, color="0.5", lw=0.8, ls="--")
        for ax in axes[:, j]:
            ax.axvline(len(depths) - 0.5, color="0.8", lw=0.8)  # the depths | their mean
        axes[0, j].set_title(label, fontsize=10)
        axes[1, j].set_xticks(range(len(ticks)), ticks)
    axes[0, 0].set_ylabel("per norm")
    axes[1, 0].set_ylabel("norm − pre-LN")
    axes[0, 0].legend(frameon=False, fontsize=8)
    fig.suptitle("careful tuning: each norm, and its contrast with pre-LN (95 % seed intervals)")
    return fig


FIGURE = FigureSpec(
    name="apjn_tuning_contrasts",
    code="A11",
    study="apjn",
    tables={"statistics": TuningStatistics},
    plot=plot_tuning_contrasts,
    caption="""\
A11. How much tuning each norm needs on the grid of A7 ({{ config["apjn"]["train"]["seeds"] }}
seeds, {{ config["apjn"]["train"]["steps"] }} steps, peak rates
{{ config["apjn"]["train"]["lrs"] | join(", ") }}), from the mean final training loss over
seeds of every configuration and rate (a diverged seed counts as never trained). Columns:
sensitivity, the range of the best loss over rates across a norm's init choices (α₀ x init
multiplier for Derf and DyT, the multiplier for pre-LN); tuning cost, the loss at the untuned
default (α₀ = 1, multiplier 1, the median rate) minus the best over every choice and rate;
window, the width in decades of the log-rates where the loss (linear between rates) exceeds a
choice's best by at most 10 % of the lowest best loss at that depth, mean over the choices;
instability, events (divergence, loss spikes, gradient blow-ups) per run. Top: each norm per
depth and the mean over depths (all); bottom: Derf's and DyT's value minus pre-LN's (claim A.5
reads the 'all' contrasts: more sensitive, costlier untuned and a narrower window above, above
and below the dashed zero).
Error bars: 95 % bootstrap intervals over training seeds.
""",
    labels=_labels(
        "A11", "tuning sensitivity, cost, window and instability vs pre-LN", _task, models=_trained
    ),
)
