"""A2: measured APJN against both closures on natural images."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.apjn.figures._common import (
    _label,
    _ratio_panel,
    _ratio_spread,
    _variants,
)
from transformer_stability.apjn.figures._labels import _labels
from transformer_stability.apjn.style import variant_colors
from transformer_stability.apjn.tables import MeasuredCurves
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _images_panel(ax, rows: pd.DataFrame, color) -> None:
    """One variant and direction: the mean over images of the measured curve (dots) and of
    both closures (solid: (q, p), dashed: full Gram)."""
    means = rows.groupby("block")[["apjn", "apjn_theory", "apjn_theory_gram"]].mean()
    ax.plot(means.index, means["apjn_theory"], color=color, lw=1.2, label="(q, p) closure")
    ax.plot(means.index, means["apjn_theory_gram"], "--", color=color, lw=1.0, label="full Gram")
    ax.plot(means.index, means["apjn"], "o", color=color, ms=3, mfc="white", label="measured")
    ax.set_yscale("log")


def plot_images(curves: pd.DataFrame) -> Figure:
    """A2: on natural images, the mean over images of the measured curve against both closures
    (top of each pair of rows) and measured/theory per image (below: mean and range over the
    images, solid (q, p), dashed full Gram), backward J^{L,b} and forward from the source
    block."""
    set_style()
    curves = curves[curves["input"] == "images"]
    if curves.empty:
        raise ValueError("A2 needs image-input rows; measured_curves.csv has none")
    variants = _variants(curves)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    fig = new_figure(figsize=(3.0 * len(variants) + 1, 10.5), layout="constrained")
    axes = fig.subplots(
        4, len(variants), sharex="col", sharey="row", squeeze=False, height_ratios=(3, 2, 3, 2)
    )
    for col, variant in enumerate(variants):
        part, color = variant.rows(curves), colors[(variant.norm, variant.alpha)]
        for row, direction in ((0, "backward"), (2, "forward")):
            rows = part[part["direction"] == direction]
            _images_panel(axes[row, col], rows, color)
            _ratio_panel(axes[row + 1, col], _ratio_spread(rows, "block"), "block", color)
            gram = _ratio_spread(rows, "block", "apjn_theory_gram").dropna()
            axes[row + 1, col].plot(gram["block"], gram["mean"], "--", color=color, lw=1.0)
        axes[0, col].set_title(_label(variant))
        axes[3, col].set_xlabel("block b")
    source = int(curves.loc[curves["direction"] == "forward", "source_block"].iloc[0])
    axes[0, 0].set_ylabel("backward $J^{L,b}$")
    axes[2, 0].set_ylabel(f"forward $J^{{b,{source}}}$")
    for row in (1, 3):
        axes[row, 0].set_ylabel("measured / theory")
    axes[0, 0].legend(frameon=False, fontsize=7)
    fig.suptitle(
        "natural images: mean over images (dots: measured; solid: theory seeded with each "
        "image's (q, p); dashed: full-Gram closure);\nbelow each: measured / theory per image "
        "(line: mean, band: range over images and initializations)"
    )
    return fig


FIGURE = FigureSpec(
    name="apjn_images",
    code="A2",
    study="apjn",
    tables={"curves": MeasuredCurves},
    plot=plot_images,
    caption="""\
A2. Per-image APJN curves for natural images ({{ config["apjn"]["images"]["source"] }} source,
{{ config["apjn"]["images"]["count"] }} images per initialization,
{{ config["apjn"]["measure"]["inits"] }} initializations) fed through the patch embedding.
First and third rows: the mean over images and initializations of the measured curves (dots),
of the theory seeded with each image's own token statistics (q, p) at the source block (solid)
and of the full-Gram closure seeded with its whole token Gram matrix (dashed; CLS included;
pre-LN and Derf only, tanh has no closed pair kernel). Second and fourth rows: measured / theory
of each image's curve; line: the mean, band: the range over images and initializations (the
(q, p) closure), dashed: the mean for the full-Gram closure; dotted: 1. Top pair: backward
J^{L,b}; bottom pair: forward from block
{{ config["apjn"]["images"]["forward_source_block"] }}. The theory and measurement part in the
first blocks of the backward curves: the CLS token (cls_token drawn with std 1e-6 plus the
position embedding) has a tiny variance q, so its normalization Jacobian (~1/sqrt(q)) is huge,
and the per-token q of an image varies so much that mean(1/q_i) is several times 1/mean(q_i),
which the (q, p) closure replaces it with; the full-Gram closure keeps every token's own
variance and removes most of this. As the authors do, the agreement (A3) is measured
from block {{ config["apjn"]["images"]["compare_from_block"] }} backward and from the source
block forward; the earlier backward blocks are reported apart ("early"). Rows: input = images.
""",
    labels=_labels("A2", "per-image APJN vs block", "natural images"),
)
