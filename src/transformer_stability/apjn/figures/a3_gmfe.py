"""A3: agreement of measured and theoretical curves (GMFE) by depth region."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.apjn.figures._common import REGIONS, _label, _variants
from transformer_stability.apjn.figures._labels import _labels
from transformer_stability.apjn.style import variant_colors, variant_label
from transformer_stability.apjn.tables import Agreement
from transformer_stability.plotting import FigureSpec, new_figure, seaborn, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_gmfe(agreement: pd.DataFrame) -> Figure:
    """A3: GMFE of measured vs theory by depth region, one dot per (sample, model)."""
    set_style()
    sns = seaborn()
    full = agreement[agreement["gmfe_gram"].notna()].assign(input="images, full-Gram")
    table = pd.concat([agreement, full.assign(gmfe=full["gmfe_gram"])], ignore_index=True)
    table["model"] = [
        variant_label(n, None if pd.isna(a) else float(a))
        for n, a in zip(table["norm"], table["alpha"], strict=True)
    ]
    order = [_label(v) for v in _variants(table)]
    colors = variant_colors([(v.norm, v.alpha) for v in _variants(table)])
    palette = {_label(v): colors[(v.norm, v.alpha)] for v in _variants(table)}
    kinds = ("equiangular", "images", "images, full-Gram")
    inputs = [i for i in kinds if i in set(table["input"])]
    fig = new_figure(figsize=(5.0 * len(inputs) + 1, 7), layout="constrained")
    axes = fig.subplots(2, len(inputs), sharey=True, squeeze=False)
    for col, kind in enumerate(inputs):
        for row, direction in enumerate(("backward", "forward")):
            ax = axes[row, col]
            part = table[(table["input"] == kind) & (table["direction"] == direction)]
            sns.stripplot(
                data=part,
                x="region",
                y="gmfe",
                hue="model",
                hue_order=order,
                order=[r for r in REGIONS if r in set(part["region"])],
                palette=palette,
                dodge=True,
                jitter=0.15,
                size=4,
                ax=ax,
                legend=(row == 0 and col == 0),
            )
            ax.axhline(1.05, color="grey", ls="--", lw=0.8)
            ax.set_title(f"{kind}, {direction}")
            ax.set_xlabel("depth region")
            ax.set_ylabel("GMFE (measured vs theory)")
    ax = axes[0, 0]
    if ax.get_legend() is not None:
        sns.move_legend(ax, "upper left", frameon=False, fontsize=8, title=None)
    fig.suptitle("geometric mean fold error per sample; dashed: 1.05")
    return fig


FIGURE = FigureSpec(
    name="apjn_gmfe",
    code="A3",
    study="apjn",
    tables={"agreement": Agreement},
    plot=plot_gmfe,
    caption="""\
A3. Agreement between measured and theoretical APJN curves: geometric mean fold error GMFE =
exp(mean of abs(ln(measured / theory))) over the blocks of each third of the compared depth
(shallow, middle, deep), one dot per (initialization, sample, model), for both input kinds and
both directions. On images the backward comparison starts at block
{{ config["apjn"]["images"]["compare_from_block"] }}; the blocks before it, where the CLS token's
tiny variance breaks the (q, p) closure (A2), are shown apart as "early". The right column
repeats the image comparison with the full-Gram closure (pre-LN and Derf). The dashed line marks
1.05. Columns: gmfe, gmfe_gram.
""",
    labels=_labels("A3", "GMFE by depth region", "both"),
)
