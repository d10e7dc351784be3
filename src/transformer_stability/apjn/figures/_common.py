"""Plot helpers that several of Study A's figures share: a variant's label, means over
samples and the measured/theory panels, and the styles and orders that must agree between
figures (a variant's rows: `Variant.rows`)."""

from __future__ import annotations

import pandas as pd

from transformer_stability.apjn.agreement import EARLY
from transformer_stability.apjn.items import Variant
from transformer_stability.apjn.style import NORM_ORDER, variant_label
from transformer_stability.plotting import matplotlib_ticker


def _label(variant: Variant) -> str:
    return variant_label(variant.norm, variant.alpha)


def _variants(table: pd.DataFrame) -> list[Variant]:
    pairs = table[["norm", "alpha"]].drop_duplicates().itertuples(index=False)
    found = [Variant(n, None if pd.isna(a) else float(a)) for n, a in pairs]
    return sorted(found, key=lambda v: (NORM_ORDER[v.norm], v.alpha or 0.0))


CLOSURE_STYLES = {"released": "-", "exact": "-."}
"""Line style of each closure of uniform attention: the authors' recursion and the exact one."""


def _sample_mean(part: pd.DataFrame, by: str, columns: list[str]) -> pd.DataFrame:
    """Mean and std over samples of `columns`, per value of `by`."""
    stats = part.groupby(by)[columns].agg(["mean", "std"])
    stats.columns = [f"{c}_{s}" for c, s in stats.columns]
    return stats.reset_index()


def _ratio_spread(part: pd.DataFrame, by: str, theory: str = "apjn_theory") -> pd.DataFrame:
    """Per value of `by`: mean, min and max of measured/theory over the curves (each
    initialization and sample its own ratio), so that single curves' deviations stay visible
    where the means hide them."""
    ratio = (part["apjn"] / part[theory]).groupby(part[by]).agg(["mean", "min", "max"])
    return ratio.reset_index()


def _ratio_panel(ax, stats: pd.DataFrame, by: str, color, marker: str = "o") -> None:
    """Measured/theory on a log axis: the mean (line and dots) inside the range of the curves
    (band), and a reference line at 1."""
    ax.fill_between(stats[by], stats["min"], stats["max"], color=color, alpha=0.18, lw=0)
    ax.plot(stats[by], stats["mean"], color=color, marker=marker, ms=3, lw=1.0)
    ax.axhline(1.0, color="0.4", lw=0.8, ls=":")
    ax.set_yscale("log")
    plain = matplotlib_ticker().FuncFormatter(lambda value, _: f"{value:.3g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)


REGIONS = (EARLY, "shallow", "middle", "deep")
"""Depth regions in the order A3 and A9 show them: the early image blocks first."""

_WINDOW_ROWS = (
    ("best_loss", "best final loss over rates"),
    ("window_decades", "window (decades of rate)"),
    ("events", "instability events (all runs)"),
)
"""Outcome columns of tuning_windows.csv and their axis labels: A7's rows, A8's first panels."""
