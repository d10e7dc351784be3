"""C2: the parameter cost of counting, B_min against L, from the theory: lower bounds, verified
constructions, the predicted laws and the bare pre-norm wall."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.counting.figures._common import PLACEMENTS, fit_label
from transformer_stability.counting.figures._labels import report_labels
from transformer_stability.counting.style import PLACEMENT_COLORS, PLACEMENT_LABELS
from transformer_stability.counting.tables import BminTheory, Rates, ReferenceSlopes, Walls
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_bmin(
    theory: pd.DataFrame, rates: pd.DataFrame, walls: pd.DataFrame, references: pd.DataFrame
) -> Figure:
    """C2: B_min vs L (log-log): lower bounds (dashed) and verified constructions (solid) per
    placement, reference slopes and the bare pre-norm wall (classification: C6)."""
    set_style()
    d = int(theory["d"].min())
    theory = theory[theory["d"] == d]
    fig = new_figure(figsize=(9, 5.6), layout="constrained")
    ax = fig.subplots()
    reg = theory[(theory["readout"] == "regression") & (theory["attention"] == "softmax")]
    for placement in PLACEMENTS:
        # lower bounds wide and translucent underneath, constructions thin on top: curves that
        # coincide (the no-norm bound and the learned-pre-norm construction) stay visible
        for bound, style, width, alpha, z in (
            ("lower_bound", "--", 2.6, 0.45, 2),
            ("construction", "-o", 1.0, 1.0, 3),
        ):
            part = reg[(reg["placement"] == placement) & (reg["bound"] == bound)].sort_values("L")
            part = part[np.isfinite(part["bmin"])]
            fit = fit_label(rates, placement, "regression", bound)
            label = f"{PLACEMENT_LABELS[placement]}, {bound.replace('_', ' ')}{fit}"
            ax.plot(
                part["L"],
                part["bmin"],
                style,
                color=PLACEMENT_COLORS[placement],
                ms=3,
                lw=width,
                alpha=alpha,
                zorder=z,
                label=label,
            )
    linear = theory[theory["attention"] == "linear"].sort_values("L")
    ax.plot(linear["L"], linear["bmin"], ":s", color="0.4", ms=3, label="linear attention, no norm")
    for _, line in references[references["d"] == d].groupby("placement", sort=False):
        line = line.sort_values("L")
        ax.plot(line["L"], line["bmin"], color="0.6", lw=0.8)
        ax.text(
            line["L"].iloc[-1] * 1.1,
            line["bmin"].iloc[-1],
            f"$L^{{{line['exponent'].iloc[0]:g}}}$",
            fontsize=9,
            va="center",
            color="0.4",
        )
    wall = int(
        walls.loc[(walls["placement"] == "pre_bare") & (walls["d"] == d), "max_length"].iloc[0]
    )
    ax.axvline(wall, color=PLACEMENT_COLORS["pre_bare"], lw=1, ls="-.")
    # at mid-height, right of the line, on white: the curves rise from the lower left and the
    # linear-attention line runs along the bottom
    ax.text(
        wall * 1.08,
        0.62,
        f"bare pre-norm wall\nL_max = {wall}",
        color=PLACEMENT_COLORS["pre_bare"],
        fontsize=8,
        transform=ax.get_xaxis_transform(),
        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1.5},
        zorder=6,
    )
    ax.set(xscale="log", yscale="log", xlabel="length L", ylabel=r"$B_{\min}$ (max vector norm)")
    ax.set_title(f"regression read-out, softmax attention, d = {d}")
    ax.legend(fontsize=6.5, frameon=False, loc="upper left")
    fig.suptitle(
        "C2: the parameter cost of counting — dashed: reduced-problem (LP) lower bounds; solid: "
        "constructions verified on the full (c, m) grid"
    )
    return fig


FIGURE = FigureSpec(
    name="counting_bmin",
    code="C2",
    study="counting",
    tables={"theory": BminTheory, "rates": Rates, "walls": Walls, "references": ReferenceSlopes},
    plot=plot_bmin,
    caption="""\
C2. B_min(L), the smallest bound on the 2-norm of every trainable vector that still lets one
softmax attention layer count exactly (after rounding) every input of length at most L, log-log,
for d = {{ config["counting"]["theory"]["widths"][0] }}. Dashed: lower bounds from the reduced
problems on the m = 0 line (LP for the no-norm and pre-norm gain, read-out LP over the line
geometry for post-norm). Solid: explicit constructions, each checked on the whole (c, m) grid.
Grey lines: the predicted laws L, L^{3/2}, L^{3/4} (the reference slopes table);
fitted slopes over the longest lengths are in the legend and in the rates table. Bare
pre-norm bounds the scores, so no norm suffices past its wall (dash-dotted,
the walls table). Linear attention needs a constant norm. The classification
read-out's unit norms, with its storage and precision, are in C6.
""",
    labels=report_labels("C2", "B_min vs L", "none, pre, post (bare and learned)"),
)
