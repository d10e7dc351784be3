"""A5: end-to-end APJN against α₀ and the init multipliers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.apjn.figures._common import (
    _label,
    _ratio_panel,
    _ratio_spread,
    _sample_mean,
)
from transformer_stability.apjn.figures._labels import _labels
from transformer_stability.apjn.items import Variant
from transformer_stability.apjn.style import NORM_COLORS, NORM_LABELS
from transformer_stability.apjn.tables import EndToEnd, SensitivityRatios
from transformer_stability.plotting import FigureSpec, matplotlib_ticker, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _ratio_bars(ax, points: pd.DataFrame, by: str, color) -> None:
    """The bootstrap interval of the mean measured/theory at each point (sensitivity_ratios.csv)."""
    bars = [points["ratio"] - points["ratio_lo"], points["ratio_hi"] - points["ratio"]]
    ax.errorbar(points[by], points["ratio"], yerr=bars, fmt="none", color=color, capsize=3)


def plot_sensitivity(table: pd.DataFrame, ratios: pd.DataFrame) -> Figure:
    """A5: end-to-end J^{L,0} against alpha_0 and against the init multipliers: theory seeded
    with the measured input statistics (lines) and measurement (dots, mean over samples); below,
    measured/theory with the range of the single curves and the bootstrap interval of the
    mean."""
    set_style()
    sweeps = [
        ("alpha", r"$\alpha_0$"),
        ("attn_mult", "attn_mult (mlp_mult = 1)"),
        ("mlp_mult", "mlp_mult (attn_mult = 1)"),
    ]
    fig = new_figure(figsize=(14, 7.0), layout="constrained")
    grid = fig.subplots(2, 3, sharex="col", sharey="row", height_ratios=(3, 2))
    axes = grid[0]
    for col, (sweep, xlabel) in enumerate(sweeps):
        ax = axes[col]
        part = table[table["sweep"] == sweep]
        norms = ["derf", "dyt"] if sweep == "alpha" else ["ln", "derf"]
        for norm in norms:
            rows = part[part["norm"] == norm]
            if rows.empty:
                continue  # a norm this table does not sweep: its panel draws the others
            x = "alpha" if sweep == "alpha" else sweep
            stats = _sample_mean(rows, x, ["apjn", "apjn_theory"])
            if sweep == "alpha":
                color, label = NORM_COLORS[norm], NORM_LABELS[norm]
            else:
                alpha = rows["alpha"].iloc[0]
                variant = Variant(norm, None if pd.isna(alpha) else float(alpha))
                color, label = NORM_COLORS[norm], _label(variant)
            ax.plot(stats[x], stats["apjn_theory_mean"], color=color, label=f"{label} theory")
            ax.errorbar(
                stats[x],
                stats["apjn_mean"],
                yerr=stats["apjn_std"].fillna(0),
                fmt="o",
                color=color,
                mfc="white",
                label=f"{label} measured",
            )
            _ratio_panel(grid[1, col], _ratio_spread(rows, x), x, color)
            points = ratios[(ratios["sweep"] == sweep) & (ratios["norm"] == norm)]
            _ratio_bars(grid[1, col], points.sort_values(x), x, color)
        ax.set_xscale("log")
        ax.set_yscale("log")
        values = sorted(part["alpha" if sweep == "alpha" else sweep].dropna().unique())
        ax.set_xticks(values, [f"{v:g}" for v in values])
        ax.xaxis.set_minor_locator(matplotlib_ticker().NullLocator())
        grid[1, col].set_xlabel(xlabel)
        ax.legend(frameon=False, fontsize=8)
    axes[0].set_ylabel("end-to-end APJN $J^{L,0}$")
    grid[1, 0].set_ylabel("measured / theory\n(line: mean; bars: 95 % CI; band: range)")
    depth, width = int(table["depth"].iloc[0]), int(table["width"].iloc[0])
    fig.suptitle(f"sensitivity of the end-to-end APJN to init (d = {width}, L = {depth})")
    return fig


FIGURE = FigureSpec(
    name="apjn_sensitivity",
    code="A5",
    study="apjn",
    tables={"table": EndToEnd, "ratios": SensitivityRatios},
    plot=plot_sensitivity,
    caption="""\
A5. End-to-end APJN J^{L,0} of the depth-{{ config["apjn"]["model"]["depth"] }} model on
permutation-symmetric input, against the saturating map's alpha_0 (Derf, DyT; left) and against
the init multipliers of the attention (middle) and MLP (right) weights for pre-LN and Derf.
Lines: theory seeded with the measured input statistics; dots: measured (mean over samples and
the {{ config["apjn"]["sensitivity"]["inits"] }} initialization(s) of each point, each
with {{ config["apjn"]["measure"]["probes"] }} Hutchinson probes). Bottom: measured / theory of
each initialization and sample; line: the mean, band: the range, bars: the 95 % bootstrap
interval of the mean (initializations, then samples within each, drawn with replacement),
dotted: 1. Claim A.5 of results/claims.csv compares the spread over the multipliers of Derf with
pre-LN's and reads the ratios. Measured rows: sweeps alpha, attn_mult and mlp_mult of
end_to_end.csv.
""",
    labels=_labels(
        "A5",
        "end-to-end APJN vs α₀ and init multipliers",
        "permutation-symmetric",
        models=lambda config: "Derf, DyT (α₀ sweep); pre-LN, Derf (multipliers)",
    ),
)
