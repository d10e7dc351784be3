"""A1: measured APJN against the theory on the permutation-symmetric input."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.apjn.figures._common import (
    _label,
    _ratio_panel,
    _ratio_spread,
    _sample_mean,
    _variants,
)
from transformer_stability.apjn.figures._labels import _labels
from transformer_stability.apjn.style import NORM_LINESTYLES, variant_colors
from transformer_stability.apjn.tables import MeasuredCurves
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_permsym(curves: pd.DataFrame) -> Figure:
    """A1: measured APJN (dots: mean over samples, bars: spread) against the theory (lines) on
    the permutation-symmetric input, backward J^{L,b} and forward J^{b,0}."""
    set_style()
    curves = curves[curves["input"] == "equiangular"]
    if curves.empty:
        raise ValueError("A1 needs equiangular-input rows; measured_curves.csv has none")
    variants = _variants(curves)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    fig = new_figure(figsize=(10, 7.2), layout="constrained")
    grid = fig.subplots(2, 2, sharex="col", sharey="row", height_ratios=(3, 2))
    axes = grid[0]
    for col, direction in enumerate(("backward", "forward")):
        ax = axes[col]
        for variant in variants:
            part = variant.rows(curves)
            part = part[part["direction"] == direction]
            stats = _sample_mean(part, "block", ["apjn", "apjn_theory"])
            color = colors[(variant.norm, variant.alpha)]
            _ratio_panel(grid[1, col], _ratio_spread(part, "block"), "block", color)
            ax.plot(
                stats["block"],
                stats["apjn_theory_mean"],
                color=color,
                ls=NORM_LINESTYLES[variant.norm],
                label=_label(variant),
            )
            ax.errorbar(
                stats["block"],
                stats["apjn_mean"],
                yerr=stats["apjn_std"].fillna(0),
                fmt="o",
                ms=3.5,
                color=color,
                mfc="white",
                mew=1.0,
                elinewidth=0.8,
            )
        ax.set_yscale("log")
        grid[1, col].set_xlabel("block b")
    depth = int(curves["depth"].iloc[0])
    axes[0].set_title(f"backward $J^{{L,b}}$ (L = {depth})")
    axes[1].set_title("forward $J^{b,0}$")
    axes[0].set_ylabel("APJN")
    grid[1, 0].set_ylabel("measured / theory\n(line: mean; band: range of the curves)")
    axes[1].legend(
        title="lines: theory, dots: measured",
        loc="upper left",
        frameon=False,
        fontsize=8,
        title_fontsize=8,
    )
    width = int(curves["width"].iloc[0])
    fig.suptitle(f"timm ViT (d = {width}) at init, permutation-symmetric input: theory vs measured")
    return fig


FIGURE = FigureSpec(
    name="apjn_permsym",
    code="A1",
    study="apjn",
    tables={"curves": MeasuredCurves},
    plot=plot_permsym,
    caption="""\
{% set model = config["apjn"]["model"] -%}
{% set heads = config["apjn"]["measure"]["equiangular_heads"] -%}
{% set width = model["width"] if heads is none else heads * (model["width"] // model["heads"]) -%}
A1. APJN of random-init timm ViTs (width {{ width }}, depth
{{ config["apjn"]["model"]["depth"] }}, ReLU MLPs, eval mode, block weights drawn with
init_std = {{ config["apjn"]["model"]["init_std"] }}: ViT-B's mean-field constants when
"vit_b") on permutation-symmetric input written into block 0 (q0 =
{{ config["apjn"]["input"]["q0"] }}, p0 = {{ config["apjn"]["input"]["p0"] }}). Dots:
Hutchinson estimates (mean over {{ config["apjn"]["measure"]["inits"] }} initializations and
their input samples, bars: the spread over all of them); lines: the infinite-width recursion
seeded with the measured (q, p) at the source block and the mean-field constants read off the
built weights. Left: backward J^{L,b}, right: forward J^{b,0}. Bottom: measured / theory of
each curve (one per initialization and sample); line: their mean, band: their range, dotted: 1.
Rows: input = equiangular.
""",
    labels=_labels("A1", "APJN vs block", "permutation-symmetric"),
)
