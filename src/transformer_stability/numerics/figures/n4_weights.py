"""N4: the weight magnitudes ω per block that the error recursion multiplies."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.numerics.figures._labels import gpt2_labels
from transformer_stability.numerics.style import OMEGA_LABELS
from transformer_stability.numerics.tables import Gpt2Weights
from transformer_stability.plotting import FigureSpec, set_style, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def weights_figure(table: pd.DataFrame) -> Figure:
    """N4: ω_OV, ω_UD (and ω_KQ) per block, one line per model."""
    set_style()
    quantities = ["omega_ov", "omega_ud", "omega_kq"]
    fig, axes = subplots(1, 3, figsize=(12, 3.4))
    for ax, quantity in zip(axes, quantities, strict=True):
        values = table[table.quantity == quantity]
        for model, run in values.groupby("model"):
            ax.plot(run.block, run.value, marker="o", ms=3, label=model)
        ax.set(xlabel="block", title=OMEGA_LABELS[quantity])
        # within a decade: a linear axis from 0, so a few percent of seed noise looks small;
        # across decades (random next to trained weights): log
        if values.value.max() > 10 * values.value.min():
            ax.set_yscale("log")
        else:
            ax.set_ylim(0, 1.1 * values.value.max())
        ax.legend(fontsize=8)
    return fig


FIGURE = FigureSpec(
    name="numerics_weights",
    code="N4",
    study="numerics",
    tables={"table": Gpt2Weights},
    plot=weights_figure,
    caption="""\
{% set n = config["numerics"] %}
N4. Weight magnitudes per block: omega_OV = max-row-sum(W_O) x max-row-sum(W_V), omega_UD (MLP
up and down projections) and omega_KQ = (2/sqrt(d_h)) max over heads of the product of the
2-norms of the absolute row sums of W_K and W_Q, at alpha = 1.
""",
    labels=gpt2_labels("N4", "weight magnitudes per block", "weights only"),
)
