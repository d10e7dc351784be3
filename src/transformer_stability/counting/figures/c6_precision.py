"""C6: what the classification read-out pays instead of norm: bounded norms, but a head row per
count and a relative precision set by its logit margin."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.counting.figures._common import length_axis
from transformer_stability.counting.figures._labels import report_labels
from transformer_stability.counting.style import (
    PLACEMENT_COLORS,
    PLACEMENT_LABELS,
    PLACEMENT_MARKERS,
    READOUT_COLORS,
)
from transformer_stability.counting.tables import Precision, Rates, Success
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _margin_label(rates: pd.DataFrame, placement: str, source: str = "margin") -> str:
    """The fitted rate of a margin (rates.csv's `source` row), for a legend entry."""
    row = rates[(rates["placement"] == placement) & (rates["source"] == source)]
    if row.empty or not np.isfinite(row["fitted_exponent"].iloc[0]):
        return ""
    r = row.iloc[0]
    return f" ($L^{{{r['fitted_exponent']:.1f}}}$, L {r['fit_from']}-{r['fit_to']})"


def _roundoff_lines(ax: Axes) -> None:
    """float32's and float64's unit roundoff, labelled at the left edge (where the margins are
    still large, so no curve crosses the labels)."""
    for bits, name in ((24, "float32"), (53, "float64")):
        ax.axhline(2.0**-bits, color="0.3", lw=0.8, ls=":")
        ax.text(
            0.02,
            2.0**-bits * 1.8,
            f"{name} unit roundoff $2^{{-{bits}}}$",
            fontsize=7,
            color="0.3",
            transform=ax.get_yaxis_transform(),
        )


def _trained_margins(ax: Axes, trained: pd.DataFrame, rates: pd.DataFrame) -> None:
    """Exact trained classifiers: their relative margin (diamonds, filled where float32 keeps
    them exact) and the best head's on their own representation (crosses), each with its
    fitted rate at the smallest bound trained."""
    color = READOUT_COLORS["classification"]
    placement = trained["placement"].iloc[0] if len(trained) else ""
    rate = _margin_label(rates, placement, "trained_margin")
    kept = trained["accuracy_float32"] >= 1.0
    exact = f"trained classifiers (exact in float32){rate}"
    for mask, face, label in ((kept, color, exact), (~kept, "none", "trained classifiers (not)")):
        ax.scatter(
            trained.loc[mask, "L"],
            trained.loc[mask, "relative_margin"],
            marker="D",
            s=18,
            facecolor=face,
            edgecolor=color,
            label=label,
            zorder=4,
        )
    ax.scatter(
        trained["L"] * 1.08,
        trained["best_head_margin"],
        marker="x",
        s=18,
        color=color,
        label="best head on a trained representation (LP)"
        + _margin_label(rates, placement, "head_margin"),
        zorder=4,
    )


def plot_precision(precision: pd.DataFrame, success: pd.DataFrame, rates: pd.DataFrame) -> Figure:
    """C6: what classification pays instead of norm: bounded norms, storage, and the relative
    logit margin of the constructions, of the best head on their representations and of the
    trained classifiers, with what float32 keeps exact."""
    set_style()
    d = int(precision["d"].min())
    prec = precision[precision["d"] == d]
    built = prec[prec["source"] == "construction"]
    trained = prec[(prec["source"] == "training") & (prec["accuracy"] >= 1.0)]
    fig = new_figure(figsize=(17, 7.0), layout="constrained")
    ax_norm, ax_store, ax_margin, ax_f32 = fig.subplots(1, 4)
    for (placement, readout), part in built.groupby(["placement", "readout"]):
        part = part.sort_values("L")
        classification = readout == "classification"
        style = {
            "color": PLACEMENT_COLORS[placement],
            "marker": PLACEMENT_MARKERS[placement],
            "ms": 4,
            "ls": "-" if classification else ":",
            "mfc": PLACEMENT_COLORS[placement] if classification else "none",
        }
        label = f"{PLACEMENT_LABELS[placement]}, {readout}"
        ax_norm.plot(part["L"], part["max_norm"], lw=1, label=label, **style)
        ax_f32.plot(part["L"], part["accuracy_float32"], lw=1, label=label, **style)
        if classification:
            ax_margin.plot(
                part["L"],
                part["relative_margin"],
                lw=1,
                label=f"{PLACEMENT_LABELS[placement]}{_margin_label(rates, placement)}",
                **style,
            )
            ax_margin.plot(
                part["L"], part["best_head_margin"], color=style["color"], lw=0.8, ls="--"
            )
    ax_margin.plot([], [], color="0.4", lw=0.8, ls="--", label="best head on it (LP)")
    _trained_margins(ax_margin, trained, rates)
    classified = success[(success["readout"] == "classification") & (success["fraction"] >= 0.5)]
    ax_norm.plot(
        classified["L"],
        classified["B"],
        "D",
        color=READOUT_COLORS["classification"],
        ms=6,
        label="trained classification exact at this bound (half the seeds or more)",
    )
    post = built[built["placement"] == "post_learned"]
    for readout, part in post.groupby("readout"):
        part = part.sort_values("L")
        ax_store.plot(
            part["L"], part["parameters"], "-o", ms=3, color=READOUT_COLORS[readout], label=readout
        )
    ax_f32.scatter(
        trained["L"],
        trained["accuracy_float32"],
        marker="D",
        s=18,
        color=READOUT_COLORS["classification"],
        label="trained classifiers (exact in float64)",
        zorder=4,
    )
    _roundoff_lines(ax_margin)
    ax_norm.set(yscale="log", ylabel="largest vector norm", title="norm")
    ax_store.set(yscale="log", ylabel="trainable numbers", title="storage: (L+1)(d+1) head rows")
    ax_margin.set(
        yscale="log",
        ylabel="smallest logit margin / largest logit",
        title="precision: relative margin (float64)",
    )
    ax_f32.set(
        ylabel="fraction of the grid counted exactly",
        ylim=(-0.02, 1.04),
        title="the same models in float32",
    )
    lengths = sorted(prec["L"].unique())
    for ax in (ax_norm, ax_store, ax_margin, ax_f32):
        ax.set_xlabel("length L")
        length_axis(ax, lengths)
        ax.tick_params(axis="x", labelrotation=45)
    # legends below their panels: inside, every corner of these panels holds data
    for ax, columns in ((ax_norm, 2), (ax_store, 1), (ax_margin, 1), (ax_f32, 2)):
        ax.legend(
            fontsize=5.5,
            frameon=False,
            ncol=columns,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.22),
        )
    fig.suptitle(
        f"C6: classification keeps norms bounded but stores L+1 head rows and needs a relative "
        f"precision set by its margin: constructions, the best head on their representations "
        f"and trained classifiers (d = {d})"
    )
    return fig


FIGURE = FigureSpec(
    name="counting_precision",
    code="C6",
    study="counting",
    tables={"precision": Precision, "success": Success, "rates": Rates},
    plot=plot_precision,
    caption="""\
C6. What the classification read-out pays instead of norm (d =
{{ config["counting"]["theory"]["widths"][0] }}). B is not its cost: scaling the head rows keeps
the argmax, so no bound on B grows with L. Norm: the classification constructions keep unit
norms at every L (solid), while the regression constructions grow (dotted); trained classifiers
are exact at the fixed bounds {{ config["counting"]["training"]["classification"]["bounds"] |
join(", ") }} (diamonds, where at least half the seeds are exact). Storage: one head row (w_k,
b_k) per count, (L+1)(d+1) numbers, against d+1 for the regression read-out. Precision: the
smallest gap between the true logit and the best other over the largest logit, on the whole
grid in float64: for each construction (markers; fitted rate in the legend), for the best head
on the same representation (dashed: an LP on the m = 0 line, so an upper bound for the whole
grid, up to L = {{ config["counting"]["theory"]["margin_lp_max_length"] }}), and for every
exact trained classifier (diamonds, filled where float32 keeps it exact; crosses: the best head
on its representation; in the legend, the rate of their medians over seeds at the smallest
bound, a length counted where at least half the seeds are exact). Dotted: float32's and
float64's unit roundoff. Right: the fraction of the grid counted exactly when the parameters and
the forward pass are float32. Trained classifiers learn on the grid's edges (m = 0 and c + m =
L) when counting.training.classification.edges_only is set; every exactness here is measured on
the whole grid. Their heads: {{ "after Adam, each refitted by LP on its run's own representation
(the head of largest margin on the whole grid, scaled into the ball; counting/head_fit.py)" if
config["counting"]["training"]["classification"]["head_fit"] else "Adam's, not refitted" }}.
""",
    labels=report_labels("C6", "storage and precision", "none, pre, post (bare and learned)"),
)
