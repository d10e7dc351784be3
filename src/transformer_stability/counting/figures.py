"""Study C figures C1-C5; each function takes tidy tables and returns a matplotlib Figure. They
draw what the data rules computed (fits, the pre-norm wall, reference laws and the exponent
table live in counting/rates.py) and compute nothing themselves."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from transformer_stability.plotting import FigureSpec, set_style
from transformer_stability.vocabulary import PLACEMENT_COLORS, PLACEMENT_LABELS, READOUT_COLORS

PLACEMENTS = tuple(PLACEMENT_LABELS)  # panel and legend order


def plot_geometry(geometry: pd.DataFrame) -> Figure:
    """C1: psi(z(c, 0)) of each construction on its best 2-plane, coloured by c."""
    set_style()
    fig = Figure(figsize=(15, 6.2), layout="constrained")
    axes = fig.subplots(2, len(PLACEMENTS))
    length = int(geometry["L"].iloc[0])
    scatter = None
    for row, readout in enumerate(("regression", "classification")):
        for col, placement in enumerate(PLACEMENTS):
            ax = axes[row, col]
            part = geometry[(geometry["placement"] == placement) & (geometry["readout"] == readout)]
            if part.empty:
                ax.text(
                    0.5,
                    0.5,
                    "no construction\n(past the pre-norm wall)",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                )
            else:
                ax.plot(part["x"], part["y"], color="0.7", lw=0.8, zorder=1)
                scatter = ax.scatter(
                    part["x"], part["y"], c=part["c"], cmap="viridis", s=14, zorder=2
                )
                ax.plot([0], [0], "k+", ms=8)
                ax.set_aspect("equal", adjustable="datalim")
            ax.set_title(f"{PLACEMENT_LABELS[placement]}\n{readout}", fontsize=9)
            ax.tick_params(labelsize=7)
    if scatter is not None:
        fig.colorbar(scatter, ax=axes, label="count c (m = 0)", shrink=0.8)
    fig.suptitle(
        f"C1: output at Q of the explicit constructions, c = 0..{length}, on its best 2-plane "
        "through the origin (+)"
    )
    return fig


def _fit_label(rates: pd.DataFrame, placement: str, readout: str, source: str) -> str:
    row = rates[
        (rates["placement"] == placement)
        & (rates["readout"] == readout)
        & (rates["source"] == source)
    ]
    if row.empty or not np.isfinite(row["fitted_exponent"].iloc[0]):
        return ""
    return f" (slope {row['fitted_exponent'].iloc[0]:.2f})"


def plot_bmin(
    theory: pd.DataFrame, rates: pd.DataFrame, walls: pd.DataFrame, references: pd.DataFrame
) -> Figure:
    """C2: B_min vs L (log-log): lower bounds (dashed) and verified constructions (solid) per
    placement, reference slopes and the bare pre-norm wall; right: classification."""
    set_style()
    d = int(theory["d"].min())
    theory = theory[theory["d"] == d]
    fig = Figure(figsize=(13, 5.2), layout="constrained")
    ax, ax_cls = fig.subplots(1, 2, width_ratios=[1.6, 1])
    reg = theory[(theory["readout"] == "regression") & (theory["attention"] == "softmax")]
    for placement in PLACEMENTS:
        for bound, style in (("construction", "-o"), ("lower_bound", "--")):
            part = reg[(reg["placement"] == placement) & (reg["bound"] == bound)].sort_values("L")
            part = part[np.isfinite(part["bmin"])]
            fit = _fit_label(rates, placement, "regression", bound)
            label = f"{PLACEMENT_LABELS[placement]}, {bound.replace('_', ' ')}{fit}"
            ax.plot(
                part["L"], part["bmin"], style, color=PLACEMENT_COLORS[placement], ms=3, label=label
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
    ax.text(
        wall * 1.05,
        ax.get_ylim()[0] * 2 if ax.get_ylim()[0] > 0 else 1,
        f"bare pre-norm wall\nL_max = {wall}",
        color=PLACEMENT_COLORS["pre_bare"],
        fontsize=8,
    )
    ax.set(xscale="log", yscale="log", xlabel="length L", ylabel=r"$B_{\min}$ (max vector norm)")
    ax.set_title(f"regression read-out, softmax attention, d = {d}")
    ax.legend(fontsize=6.5, frameon=False, loc="upper left")
    cls = theory[theory["readout"] == "classification"]
    for placement in PLACEMENTS:
        part = cls[cls["placement"] == placement].sort_values("L")
        ax_cls.plot(
            part["L"],
            part["bmin"],
            "-o",
            ms=3,
            color=PLACEMENT_COLORS[placement],
            label=PLACEMENT_LABELS[placement],
        )
    ax_cls.set(xscale="log", yscale="log", xlabel="length L", ylim=(0.3, 3))
    ax_cls.set_title("classification read-out: constructions (unit norms)")
    ax_cls.legend(fontsize=7, frameon=False)
    fig.suptitle(
        "C2: the parameter cost of counting — dashed: reduced LP/QP lower bounds; solid: "
        "constructions verified on the full (c, m) grid"
    )
    return fig


def _length_axis(ax, lengths) -> None:
    """Log x axis labelled at the lengths themselves (no overlapping 10^k minor labels)."""
    ax.set_xscale("log")
    ax.set_xticks(list(lengths), [str(int(v)) for v in lengths])
    ax.minorticks_off()


def _unconstrained(training: pd.DataFrame) -> pd.DataFrame:
    return training[~np.isfinite(training["B"])]


def plot_training(training: pd.DataFrame) -> Figure:
    """C3: unconstrained training of the learned-post-norm model: grid accuracy (overall and
    count-balanced) and the largest vector norm vs L, regression vs classification."""
    set_style()
    free = _unconstrained(training)
    if free.empty:
        raise ValueError("C3 needs unconstrained training runs (B = inf); training.csv has none")
    fig = Figure(figsize=(12, 4.3), layout="constrained")
    ax_acc, ax_bal, ax_norm = fig.subplots(1, 3)
    for readout, part in free.groupby("readout"):
        color = READOUT_COLORS[readout]
        mean = part.groupby("L")[["accuracy", "balanced_accuracy", "max_vector_norm"]].mean()
        for ax, key in (
            (ax_acc, "accuracy"),
            (ax_bal, "balanced_accuracy"),
            (ax_norm, "max_vector_norm"),
        ):
            ax.plot(mean.index, mean[key], "-o", color=color, label=readout, ms=4)
            ax.scatter(part["L"], part[key], color=color, s=10, alpha=0.5)
    for ax, title in (
        (ax_acc, "exact-count accuracy on the grid"),
        (ax_bal, "count-balanced accuracy"),
    ):
        ax.set(xscale="log", xlabel="length L", ylim=(-0.02, 1.05), title=title)
    ax_norm.set(
        xscale="log", yscale="log", xlabel="length L", title="largest trainable-vector norm"
    )
    ax_acc.legend(frameon=False)
    steps = ", ".join(f"{r}: {int(v)}" for r, v in free.groupby("readout")["steps"].first().items())
    fig.suptitle(
        f"C3: unconstrained training, learned post-norm, d = {int(free['d'].iloc[0])}, "
        f"full-batch Adam steps {steps} (dots: seeds, line: mean)"
    )
    return fig


def _heatmap(ax, part: pd.DataFrame, theory_curves: list[tuple[str, pd.DataFrame]]) -> object:
    grid = part.groupby(["B", "L"])["accuracy"].max().unstack("L")
    lengths, bounds = list(grid.columns), list(grid.index)
    image = ax.imshow(grid.to_numpy(), origin="lower", aspect="auto", cmap="magma", vmin=0, vmax=1)
    ax.set_xticks(range(len(lengths)), [str(v) for v in lengths])
    ax.set_yticks(range(len(bounds)), [f"{b:g}" for b in bounds])
    for i, b in enumerate(bounds):
        for j, length in enumerate(lengths):
            value = grid.loc[b, length]
            ax.text(
                j,
                i,
                f"{value:.2f}",
                ha="center",
                va="center",
                fontsize=6,
                color="black" if value > 0.6 else "white",
            )
    for label, curve in theory_curves:  # B on the categorical axis: interpolate in log B
        ys = np.interp(
            np.log(curve.set_index("L").loc[lengths, "bmin"]), np.log(bounds), range(len(bounds))
        )
        ax.plot(range(len(lengths)), ys, "c--" if "lower" in label else "c-", lw=1.5, label=label)
    ax.set(xlabel="length L", ylabel="norm bound B")
    return image


def plot_constrained(
    training: pd.DataFrame, empirical: pd.DataFrame, theory: pd.DataFrame, rates: pd.DataFrame
) -> Figure:
    """C4: projected-Adam accuracy (best seed) over (L, B) per read-out with the theory's B_min
    overlaid, and the empirical B_min vs L with its fitted exponent."""
    set_style()
    fig = Figure(figsize=(15, 4.8), layout="constrained")
    ax_reg, ax_cls, ax_b = fig.subplots(1, 3)
    constrained = training[np.isfinite(training["B"])]
    if constrained.empty:
        raise ValueError("C4 needs constrained training runs (finite B); training.csv has none")
    d = int(constrained["d"].iloc[0])
    post = theory[
        (theory["placement"] == "post_learned")
        & (theory["d"] == d)
        & (theory["attention"] == "softmax")
    ]
    curves = [
        (
            f"theory {bound.replace('_', ' ')}",
            post[(post["readout"] == "regression") & (post["bound"] == bound)],
        )
        for bound in ("lower_bound", "construction")
    ]
    image = None
    for ax, readout in ((ax_reg, "regression"), (ax_cls, "classification")):
        part = constrained[constrained["readout"] == readout]
        if part.empty:
            continue
        image = _heatmap(ax, part, curves if readout == "regression" else [])
        ax.set_title(f"{readout}: grid accuracy (best of seeds)")
    ax_reg.legend(fontsize=7, loc="upper left", frameon=True)
    if image is not None:
        fig.colorbar(image, ax=[ax_reg, ax_cls], label="exact-count accuracy", shrink=0.85)
    for readout, part in empirical.groupby("readout"):
        part = part.sort_values("L")
        color = READOUT_COLORS[readout]
        reached = part[part["reached"]]
        label = f"{readout}{_fit_label(rates, 'post_learned', readout, 'training')}"
        ax_b.plot(reached["L"], reached["bmin"], "-o", color=color, label=label)
        missed = part[~part["reached"]]
        if len(missed):
            top = max(float(b) for row in missed["bounds_tried"] for b in str(row).split())
            ax_b.scatter(
                missed["L"],
                [top * 1.3] * len(missed),
                marker="^",
                color=color,
                label=f"{readout}: no B up to {top:g} succeeds",
            )
    for label, curve in curves:
        ax_b.plot(
            curve["L"], curve["bmin"], "--" if "lower" in label else ":", color="0.3", label=label
        )
    lengths = np.array(sorted(empirical["L"].unique()), float)
    if len(lengths):
        curve = curves[0][1].set_index("L")["bmin"]
        ax_b.set_xlim(lengths[0] / 1.3, lengths[-1] * 1.3)
        ax_b.set_ylim(0.3, np.nanmax([curve.reindex(lengths).max() * 4, 20]))  # NaN: no theory
    ax_b.set(yscale="log", xlabel="length L", ylabel="smallest successful B")
    _length_axis(ax_b, lengths)
    ax_b.set_title(
        "empirical $B_{\\min}$ (100 % of the grid)\ntheory (post-norm, learned gain): $L^{3/4}$"
    )
    ax_b.legend(fontsize=7, frameon=False, loc="upper left")
    fig.suptitle(f"C4: norm-constrained training (projected Adam), learned post-norm, d = {d}")
    return fig


def plot_exponent_table(table: pd.DataFrame) -> Figure:
    """C5: the exponent table rendered as a figure."""
    set_style()

    def fmt(value) -> str:
        if value is None or (isinstance(value, float) and not np.isfinite(value)):
            return "—"
        return f"{value:.2f}".replace("-0.00", "0.00")

    cells = [
        [
            PLACEMENT_LABELS[r.placement],
            r.readout,
            fmt(r.predicted),
            fmt(r.lower_bound),
            fmt(r.construction),
            fmt(r.training),
            r.note if isinstance(r.note, str) else "",  # empty notes read back as NaN
        ]
        for r in table.itertuples()
    ]
    fig = Figure(figsize=(13, 0.32 * len(cells) + 0.8), layout="constrained")
    ax = fig.subplots()
    ax.axis("off")
    header = [
        "placement",
        "read-out",
        "theory",
        "lower bound (fit)",
        "construction (fit)",
        "training (fit)",
        "note",
    ]
    tab = ax.table(cellText=cells, colLabels=header, loc="center", cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(8.5)
    tab.auto_set_column_width(list(range(len(header))))
    tab.scale(1, 1.4)
    ax.set_title(
        "C5: growth exponent of $B_{\\min}(L)$ — theory vs fits over the longest lengths "
        "(training: over the lengths some B of the grid solved, see C4)"
    )
    return fig


# --- the registry's declarations of Study C's figures (see transformer_stability/registry.py) ---


def _labels(code: str, quantity: str, placement: str):
    return lambda config: {
        "figure": code,
        "quantity": quantity,
        "placement": placement,
        "readout": "regression, classification",
    }


FIGURES = (
    FigureSpec(
        name="counting_geometry",
        code="C1",
        study="counting",
        tables={"geometry": "results/counting/geometry.csv"},
        plot=plot_geometry,
        caption="""\
C1. Output at the query token Q of the explicit constructions of Study C (d =
{{ config["counting"]["theory"]["widths"][0] }}, L =
{{ config["counting"]["geometry_length"] }}), for c = 0..L and m = 0, projected on the best
2-plane through the origin (+), coloured by the count c. Top: regression constructions. Without
a norm or with pre-norm the outputs lie on a line; with post-norm they lie on a very flat arc
(the direction of an affine line in c read by a cosine). Bottom: classification constructions,
whose outputs are read by one head row per count (nearest-direction head on the arc or line,
barycentric head for pre-norm). The setting is a reconstruction from the seed paper's abstract.
Data: results/counting/geometry.csv.
""",
        labels=_labels("C1", "representation geometry", "none, pre, post (bare and learned)"),
    ),
    FigureSpec(
        name="counting_bmin",
        code="C2",
        study="counting",
        tables={
            "theory": "results/counting/bmin_theory.csv",
            "rates": "results/counting/rates.csv",
            "walls": "results/counting/walls.csv",
            "references": "results/counting/reference_slopes.csv",
        },
        plot=plot_bmin,
        caption="""\
C2. B_min(L), the smallest bound on the 2-norm of every trainable vector that still lets one
softmax attention layer count exactly (after rounding) every input of length at most L, log-log,
for d = {{ config["counting"]["theory"]["widths"][0] }}. Dashed: lower bounds from the reduced
problems on the m = 0 line (LP for the no-norm and pre-norm gain, read-out LP over the line
geometry for post-norm). Solid: explicit constructions, each checked on the whole (c, m) grid.
Grey lines: the predicted laws L, L^{3/2}, L^{3/4} (results/counting/reference_slopes.csv);
fitted slopes over the longest lengths are in the legend and in results/counting/rates.csv. Bare
pre-norm bounds the scores, so no norm suffices past its wall (dash-dotted,
results/counting/walls.csv). Linear attention needs a constant norm. Right: classification
constructions keep unit norms at every L. Data: results/counting/bmin_theory.csv.
""",
        labels=_labels("C2", "B_min vs L", "none, pre, post (bare and learned)"),
    ),
    FigureSpec(
        name="counting_training",
        code="C3",
        study="counting",
        tables={"training": "results/counting/training.csv"},
        plot=plot_training,
        caption="""\
C3. Unconstrained full-batch training (Adam, cosine decay, count-balanced weights;
{{ config["counting"]["training"]["regression"]["steps"] }} steps for regression,
{{ config["counting"]["training"]["classification"]["steps"] }} for classification) of the
learned-post-norm model on the whole (c, m) grid, regression vs classification read-out:
exact-count accuracy on the grid, its count-balanced version, and the largest trainable-vector
norm at the end of training, against L. Dots are seeds, lines their mean. Data:
results/counting/training.csv (rows with B = inf).
""",
        labels=_labels("C3", "unconstrained training", "post (learned)"),
    ),
    FigureSpec(
        name="counting_constrained",
        code="C4",
        study="counting",
        tables={
            "training": "results/counting/training.csv",
            "empirical": "results/counting/empirical_bmin.csv",
            "theory": "results/counting/bmin_theory.csv",
            "rates": "results/counting/rates.csv",
        },
        plot=plot_constrained,
        caption="""\
C4. Norm-constrained training: after every Adam step each trainable vector is rescaled to norm
at most B. Left and middle: exact-count grid accuracy (best seed) over (L, B) for the regression
and classification read-outs of the learned-post-norm model, with the theory's lower bound
(dashed) and construction (solid) for B_min(L) overlaid on the regression panel. Right: the
empirical B_min (smallest B in the grid at which some seed reaches 100 %) against L with its
fitted exponent; lengths where no B of the grid succeeds are marked with triangles above the
grid. Data: results/counting/training.csv, results/counting/empirical_bmin.csv,
results/counting/rates.csv.
""",
        labels=_labels("C4", "norm-constrained training", "post (learned)"),
    ),
    FigureSpec(
        name="counting_exponents",
        code="C5",
        study="counting",
        tables={"table": "results/counting/exponents.csv"},
        plot=plot_exponent_table,
        caption="""\
C5. Growth exponent of B_min(L) per normalization placement and read-out: the theory's
prediction next to the exponents fitted over the longest lengths of the lower bounds, of the
verified constructions and of constrained training. Bare pre-norm has a wall instead of a rate.
Data: results/counting/exponents.csv (from results/counting/rates.csv and walls.csv).
""",
        labels=_labels("C5", "table of exponents", "none, pre, post (bare and learned)"),
    ),
)
