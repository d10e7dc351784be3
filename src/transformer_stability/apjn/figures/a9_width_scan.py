"""A9: image-input agreement against model width."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.apjn.agreement import COMPARED, EARLY
from transformer_stability.apjn.figures._common import REGIONS, _label, _variants
from transformer_stability.apjn.figures._labels import _labels, _variant_list
from transformer_stability.apjn.tables import WidthExcess, WidthSlopes
from transformer_stability.plotting import FigureSpec, matplotlib_ticker, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


WIDTH_REGION_COLORS = {EARLY: "0.6", "shallow": "#9ecae1", "middle": "#3182bd", "deep": "#08306b"}


def _closure(excess: pd.DataFrame, region: str, closure: str) -> pd.DataFrame:
    rows = excess[(excess["region"] == region) & (excess["closure"] == closure)]
    return rows.sort_values("width")


def _slope_label(slopes: pd.DataFrame, region: str) -> str:
    """'deep: slope -0.71 [-0.93, -0.52]' from the fitted full-Gram slope and its bootstrap
    interval; the region alone without a fit."""
    fit = slopes[(slopes["region"] == region) & (slopes["closure"] == "gram")]
    if fit.empty or fit["slope"].isna().all():
        return region
    row = fit.iloc[0]
    return f"{region}: slope {row['slope']:.2f} [{row['slope_lo']:.2f}, {row['slope_hi']:.2f}]"


def plot_width_scan(excess: pd.DataFrame, slopes: pd.DataFrame) -> Figure:
    """A9: GMFE - 1 of the image curves against model width per depth region, full-Gram closure
    (solid, with the fitted slope of width_slopes.csv and its interval in the legend) and (q, p)
    closure (dashed), a 1/d guide through the compared blocks' first width."""
    set_style()
    variants = _variants(excess)
    fig = new_figure(figsize=(10, 3.6 * len(variants) + 0.6), layout="constrained")
    axes = fig.subplots(len(variants), 2, sharex=True, squeeze=False)
    widths = np.sort(excess["width"].unique())
    for row, variant in enumerate(variants):
        for col, direction in enumerate(("backward", "forward")):
            ax = axes[row, col]
            part = variant.rows(excess)
            part = part[part["direction"] == direction]
            fits = variant.rows(slopes)
            fits = fits[fits["direction"] == direction]
            for region in [r for r in REGIONS if r in set(part["region"])]:
                full, color = _closure(part, region, "gram"), WIDTH_REGION_COLORS[region]
                plain = _closure(part, region, "qp")
                ax.errorbar(
                    full["width"],
                    full["excess_mean"],
                    yerr=[full["excess_mean"] - full["excess_min"],
                          full["excess_max"] - full["excess_mean"]],
                    color=color, marker="o", ms=4, capsize=2, label=_slope_label(fits, region),
                )  # fmt: skip
                ax.plot(plain["width"], plain["excess_mean"], "--", color=color, marker="x", ms=4)
            compared = _closure(part, COMPARED, "gram")
            anchor = compared["excess_mean"]
            if anchor.notna().any() and anchor.max() > 0:
                at = compared["width"].to_numpy(dtype=float)
                ax.plot(at, anchor.iloc[0] * at[0] / at, ":", color="black", lw=1, label="∝ 1/d")
            ax.axhline(0.05, color="grey", ls="--", lw=0.8)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(widths, [str(w) for w in widths])
            ax.xaxis.set_minor_locator(matplotlib_ticker().NullLocator())
            ax.set_title(f"{_label(variant)}, {direction}")
            ax.set_ylabel("GMFE − 1 (measured vs theory)")
            ax.legend(frameon=False, fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("model width d")
    fig.suptitle(
        "natural images: agreement against width (solid: full-Gram closure, bars: spread of "
        "the initializations; dashed: (q, p) closure; grey dashed: GMFE = 1.05)",
        fontsize=10,
    )
    return fig


FIGURE = FigureSpec(
    name="apjn_width_scan",
    code="A9",
    study="apjn",
    tables={"excess": WidthExcess, "slopes": WidthSlopes},
    plot=plot_width_scan,
    caption="""\
{% set head_dim = config["apjn"]["model"]["width"] // config["apjn"]["model"]["heads"] -%}
A9. What limits the agreement on natural images: the measurement of A2/A3 repeated at model
widths d = {% for h in config["apjn"]["width_scan"]["heads"] %}{{ h * head_dim }}{{ ", " if not
loop.last }}{% endfor %} (head dimension {{ head_dim }}, block weights
drawn with init_std = {{ config["apjn"]["model"]["init_std"] }}, so ViT-B's mean-field constants
at every width when "vit_b"; {{ config["apjn"]["width_scan"]["inits"] }} initializations of
{{ config["apjn"]["images"]["count"] }} images each; the configured width reproduces A3's
models). GMFE - 1 per depth region (compared from block
{{ config["apjn"]["images"]["compare_from_block"] }} backward and from the source block
{{ config["apjn"]["images"]["forward_source_block"] }} forward; "early": the blocks before),
mean over initializations and images, log-log. Solid: full-Gram closure, with the fitted slope
of ln(GMFE - 1) against ln d in the legend and its 95 % bootstrap interval (the
initializations of each width drawn again), and bars spanning the per-initialization means;
dashed: (q, p) closure; dotted: a 1/d guide; grey dashed: GMFE = 1.05. A mismatch that falls
as a power of d (slope -1/2 for the sample-to-sample fluctuations of one finite model, -1 for
the finite-width bias of their mean) vanishes at infinite width, where the theory holds; one
that stays flat is the closure's own error, as in the early blocks, where the CLS token breaks
it (A2).
""",
    labels=_labels(
        "A9",
        "image-input GMFE − 1 vs model width",
        "natural images",
        models=lambda config: _variant_list(config["apjn"]["width_scan"]["variants"]),
    ),
)
