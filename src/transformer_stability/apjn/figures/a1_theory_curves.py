"""A1 (theory): mean-field APJN against block at initialization."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.apjn.figures._common import _label, _variants
from transformer_stability.apjn.figures._labels import _labels
from transformer_stability.apjn.style import NORM_LINESTYLES, variant_colors
from transformer_stability.apjn.tables import TheoryCurves
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_theory_curves(curves: pd.DataFrame) -> Figure:
    """A1 (theory part): backward J^{L,b} and forward J^{b,0} against block b, log y."""
    set_style()
    variants = _variants(curves)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    fig = new_figure(figsize=(10, 4.2), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    depth = int(curves["depth"].iloc[0])
    titles = {
        "backward": f"backward  $J^{{L,b}}$  (L = {depth})",
        "forward": "forward  $J^{b,0}$",
    }
    for ax, direction in zip(axes, ("backward", "forward"), strict=True):
        for variant in variants:
            part = variant.rows(curves)
            part = part[part["direction"] == direction].sort_values("block")
            ax.plot(
                part["block"],
                part["apjn"],
                color=colors[(variant.norm, variant.alpha)],
                linestyle=NORM_LINESTYLES[variant.norm],
                label=_label(variant),
            )
        ax.set_yscale("log")
        ax.set_xlabel("block b")
        ax.set_title(titles[direction])
    axes[0].set_ylabel("APJN (mean-field theory)")
    axes[1].legend(title="norm", loc="upper left", frameon=False)
    fig.suptitle("APJN at initialization, permutation-symmetric input (infinite-width theory)")
    return fig


FIGURE = FigureSpec(
    name="apjn_theory_curves",
    code="A1-theory",
    study="apjn",
    tables={"curves": TheoryCurves},
    plot=plot_theory_curves,
    caption="""\
A1 (theory). Mean-field (infinite-width) APJN at initialization for a ViT of depth
{{ config["apjn"]["model"]["depth"] }} with
permutation-symmetric input (q0 = {{ config["apjn"]["input"]["q0"] }}, p0 =
{{ config["apjn"]["input"]["p0"] }}). Left: backward curve J^{L,b} (sensitivity of the last
block output to block b); right: forward curve J^{b,0}. Pre-LN (black) grows as a power law; the
saturating maps Derf (viridis, by alpha) and DyT (orange, dashed) grow as stretched exponentials
whose rate rises with alpha.
""",
    labels=_labels("A1-theory", "APJN vs block (mean-field theory)", "permutation-symmetric"),
)
