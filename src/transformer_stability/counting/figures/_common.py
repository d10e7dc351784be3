"""Drawing helpers that several Study C figures share: the placements' panel order, fitted-slope
legend labels, log axes labelled at the lengths, and the threshold below which the rounded
output counts exactly."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.counting.style import PLACEMENT_LABELS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PLACEMENTS = tuple(PLACEMENT_LABELS)  # panel and legend order


def fit_label(rates: pd.DataFrame, placement: str, readout: str, source: str) -> str:
    """A legend suffix with the slope rates.csv fitted to this curve; empty where none is."""
    row = rates[
        (rates["placement"] == placement)
        & (rates["readout"] == readout)
        & (rates["source"] == source)
    ]
    if row.empty or not np.isfinite(row["fitted_exponent"].iloc[0]):
        return ""
    slope = f"{row['fitted_exponent'].iloc[0]:.2f}".replace("-0.00", "0.00")
    return f" (slope {slope})"


def length_axis(ax, lengths) -> None:
    """Log x axis labelled at the lengths themselves (no overlapping 10^k minor labels)."""
    ax.set_xscale("log")
    ax.set_xticks(list(lengths), [str(int(v)) for v in lengths])
    ax.minorticks_off()


def log_ticks(ax) -> None:
    """Labelled 1-2-5 ticks on a log y axis that spans less than a few decades."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())


def mark_exactness_threshold(ax: Axes, text: str, x: float, ha: str, ls: str) -> None:
    """The line max |y - c| = 1/2, below which the rounded output counts exactly, labelled at
    x (axes fraction)."""
    ax.axhline(0.5, color="k", lw=0.8, ls=ls)
    ax.text(x, 0.5, text, ha=ha, va="bottom", fontsize=7, transform=ax.get_yaxis_transform())
