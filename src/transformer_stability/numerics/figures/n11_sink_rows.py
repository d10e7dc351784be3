"""N11: the softmax bound on a trained model's own attention rows, spread at initialization and
sinks after training."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.numerics.spec import SINK_MODEL, SINK_TIGHT
from transformer_stability.numerics.style import SOFTMAX_FORMAT_COLORS, TAB10
from transformer_stability.numerics.tables import SinkSoftmax
from transformer_stability.plotting import FigureSpec, set_style, subplots

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _decade_medians(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with a tail grouped by the decade of their tail mass: the medians of the tail
    mass, the error, the bound and bound/error, and the p10/p90 of the error."""
    rows = rows[(rows.tail_mass > 0) & (rows.measured > 0)]
    rows = rows.assign(ratio=rows.bound / rows.measured)
    groups = rows.groupby(np.floor(np.log10(rows.tail_mass)))
    found = groups[["tail_mass", "measured", "bound", "ratio"]].median()
    found["low"] = groups.measured.quantile(0.1)
    found["high"] = groups.measured.quantile(0.9)
    return found


def _format_colors(names: list[str]) -> dict[str, str]:
    """The torch casts in N6's colours, the emulated formats in the other tab10 colours."""
    emulated = [name for name in names if name not in SOFTMAX_FORMAT_COLORS]
    free = [color for color in TAB10 if color not in SOFTMAX_FORMAT_COLORS.values()]
    return dict(zip(emulated, free, strict=False)) | SOFTMAX_FORMAT_COLORS


def _errors_panel(ax: Axes, by_format: dict[str, pd.DataFrame], colors: dict) -> None:
    for name, medians in by_format.items():
        color = colors[name]
        ax.plot(medians.tail_mass, medians.measured, "o-", ms=3, color=color, label=name)
        ax.fill_between(medians.tail_mass, medians.low, medians.high, color=color, alpha=0.15)
        ax.plot(medians.tail_mass, medians.bound, "--", color=color, label=f"{name} bound")
    ax.set(xscale="log", yscale="log", xlabel="1 − p_max of the row", ylabel="‖p̂ − p‖₁")


def sink_rows_figure(table: pd.DataFrame) -> Figure:
    """N11: per format, the evaluation's 1-norm error (median per decade of tail mass, band
    p10-p90) and its bound against the row's tail mass, the initialization's and the trained
    model's rows pooled; and the ratio bound/error."""
    set_style()
    names = list(dict.fromkeys(table.format))
    colors = _format_colors(names)
    emulated = [name for name in names if name not in SOFTMAX_FORMAT_COLORS]
    casts = [name for name in names if name in SOFTMAX_FORMAT_COLORS]
    medians_of = {name: _decade_medians(table[table.format == name]) for name in names}
    fig, axes = subplots(1, 3, figsize=(14, 3.9))
    _errors_panel(axes[0], {name: medians_of[name] for name in emulated}, colors)
    axes[0].set_title("emulated, float64's exponent range")
    _errors_panel(axes[1], {name: medians_of[name] for name in casts}, colors)
    axes[1].set_title("torch casts (subnormals: a floor)")
    for name, medians in medians_of.items():
        axes[2].plot(medians.tail_mass, medians.ratio, "o-", ms=3, color=colors[name], label=name)
    axes[2].axhline(SINK_TIGHT, color="black", lw=0.8, ls="--", label=f"{SINK_TIGHT:g}x")
    axes[2].set(
        xscale="log", yscale="log", xlabel="1 − p_max of the row", title="bound / error (median)"
    )
    start = table[table.step == table.step.min()].tail_mass.median()
    for ax in axes:
        ax.axvline(start, color="grey", lw=0.8, ls=":")
        ax.legend(fontsize=7, ncols=2)
    fig.suptitle(
        f"{SINK_MODEL}: its late attention rows at the initialization (dotted: their median "
        f"1 − p_max) and after training (step {int(table.step.max())})",
        fontsize=10,
    )
    return fig


FIGURE = FigureSpec(
    name="numerics_sink_rows",
    code="N11",
    study="numerics",
    tables={"table": SinkSoftmax},
    plot=sink_rows_figure,
    caption="""\
{% set s = config["numerics"]["sinks"] %}
N11. The softmax evaluation on a trained model's own attention rows: the Bigram-Backcopy GPT-2
of N10, its logits recomputed in float64 from the queries and keys of its float32 forward on
{{ s["sequences"] }} held-out sequences, every head's rows of the queries in the second half,
at the random initialization (spread rows, right of the dotted line) and after training (sink
rows, down to tail masses far below any unit roundoff). Each row is evaluated shifted in
{{ s["formats"] | join(", ") }}; its 1-norm error (median per decade of 1 - p_max, band
p10-p90) and the rigorous bound (dashed). Left: the emulated formats (float64's exponent range)
-- the bound falls with the tail mass like the error, a few times above it; middle: the real
torch casts, where gradual underflow puts a floor under both; right: bound / error (dashed: the
10x of claim N.3, whose real-row terms in results/claims.csv are computed from these rows).
""",
    labels=lambda config: {
        "figure": "N11",
        "quantity": "softmax error and bound on a trained model's attention rows",
        "models": SINK_MODEL,
        "precision": ", ".join(config["numerics"]["sinks"]["formats"]),
    },
)
