"""Study C figures C1-C5; each function takes tidy tables and returns a matplotlib Figure. They
draw what the data rules computed (fits, the pre-norm wall, reference laws and the exponent
table live in counting/rates.py) and compute nothing themselves."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

from transformer_stability.counting.style import PLACEMENT_COLORS, PLACEMENT_LABELS, READOUT_COLORS
from transformer_stability.plotting import FigureSpec, set_style

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
    slope = f"{row['fitted_exponent'].iloc[0]:.2f}".replace("-0.00", "0.00")
    return f" (slope {slope})"


def plot_bmin(
    theory: pd.DataFrame, rates: pd.DataFrame, walls: pd.DataFrame, references: pd.DataFrame
) -> Figure:
    """C2: B_min vs L (log-log): lower bounds (dashed) and verified constructions (solid) per
    placement, reference slopes and the bare pre-norm wall (classification: C6)."""
    set_style()
    d = int(theory["d"].min())
    theory = theory[theory["d"] == d]
    fig = Figure(figsize=(9, 5.6), layout="constrained")
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
            fit = _fit_label(rates, placement, "regression", bound)
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


def _log_ticks(ax) -> None:
    """Labelled 1-2-5 ticks on a log y axis that spans less than a few decades."""
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())


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
        ax.set(xlabel="length L", ylim=(-0.02, 1.05), title=title)
    ax_norm.set(yscale="log", xlabel="length L", title="largest trainable-vector norm")
    _log_ticks(ax_norm)
    for ax in (ax_acc, ax_bal, ax_norm):
        _length_axis(ax, sorted(free["L"].unique()))
    ax_acc.legend(frameon=False)
    steps = ", ".join(f"{r}: {int(v)}" for r, v in free.groupby("readout")["steps"].first().items())
    fig.suptitle(
        f"C3: unconstrained training, learned post-norm, d = {int(free['d'].iloc[0])}, "
        f"full-batch Adam steps {steps}, step size independent of L (dots: seeds, line: mean)"
    )
    return fig


def _diverged(runs: pd.DataFrame) -> pd.Series:
    """Runs whose optimisation blew up (a non-finite output error or norm): failures of the
    optimiser, not evidence about B."""
    gap = runs["max_error"].where(runs["readout"] == "regression", runs["logit_margin"])
    return ~np.isfinite(gap) | ~np.isfinite(runs["max_vector_norm"])


def _probes(ax, runs: pd.DataFrame, color: str) -> None:
    """Every bisection run at (L, B): filled = exact on the grid, open = not, red x = diverged."""
    bad = _diverged(runs)
    ok = (runs["accuracy"] >= 1.0) & ~bad
    jitter = 1 + 0.04 * (runs["seed"] - runs["seed"].min())  # seeds side by side
    x = runs["L"] * jitter
    ax.scatter(x[ok], runs.loc[ok, "B"], s=14, color=color, alpha=0.6, lw=0)
    fail = ~ok & ~bad
    ax.scatter(x[fail], runs.loc[fail, "B"], s=14, facecolor="none", edgecolor=color, alpha=0.6)
    if bad.any():
        ax.scatter(
            x[bad],
            runs.loc[bad, "B"],
            marker="x",
            color="red",
            s=24,
            label="diverged (optimiser failure)",
        )


def _bmin_panel(ax, runs: pd.DataFrame, found: pd.DataFrame, color: str, fit: str) -> None:
    """The bisection of one read-out: every probe, B_min with its bracket, unreached lengths
    as triangles at their upper bracket (inside the axes)."""
    _probes(ax, runs, color)
    found = found.sort_values("L")
    reached = found[found["reached"]]
    ax.errorbar(
        reached["L"],
        reached["bmin"],
        yerr=[reached["bmin"] - reached["bmin_low"], 0 * reached["bmin"]],
        fmt="-o",
        color=color,
        ms=5,
        capsize=3,
        label=f"trained $B_{{\\min}}$ (bar: bracket){fit}",
    )
    missed = found[~found["reached"]]
    if len(missed):
        ax.scatter(
            missed["L"],
            missed["bracket_high"],
            marker="^",
            s=60,
            color=color,
            edgecolor="k",
            zorder=5,
            label="unreached: training fails at the upper bracket",
        )
    ax.plot(found["L"], found["bracket_high"], ":", color="0.5", lw=1, label="upper bracket")
    ax.set(yscale="log", xlabel="length L", ylabel="norm bound B")
    _log_ticks(ax)
    _length_axis(ax, sorted(found["L"].unique()))


def _mark_exactness_threshold(ax: Axes, text: str, x: float, ha: str, ls: str) -> None:
    """The line max |y - c| = 1/2, below which the rounded output counts exactly, labelled at
    x (axes fraction)."""
    ax.axhline(0.5, color="k", lw=0.8, ls=ls)
    ax.text(x, 0.5, text, ha=ha, va="bottom", fontsize=7, transform=ax.get_yaxis_transform())


def plot_constrained(
    training: pd.DataFrame, empirical: pd.DataFrame, theory: pd.DataFrame, rates: pd.DataFrame
) -> Figure:
    """C4: the bisection for B_min per read-out (every probe; B_min with its bracket; the
    theory's lower bound and construction for regression) and the regression runs' largest
    error against B relative to the lower bound."""
    set_style()
    fig = Figure(figsize=(15, 4.8), layout="constrained")
    ax_reg, ax_cls, ax_err = fig.subplots(1, 3)
    runs = training[training["round"] > 0]
    if runs.empty:
        raise ValueError("C4 needs bisection runs (round >= 1); training.csv has none")
    d = int(runs["d"].iloc[0])
    post = theory[
        (theory["placement"] == "post_learned")
        & (theory["d"] == d)
        & (theory["attention"] == "softmax")
        & (theory["readout"] == "regression")
    ]
    for ax, readout in ((ax_reg, "regression"), (ax_cls, "classification")):
        part, found = runs[runs["readout"] == readout], empirical[empirical["readout"] == readout]
        if part.empty:
            continue
        fit = _fit_label(rates, "post_learned", readout, "training")
        _bmin_panel(ax, part, found, READOUT_COLORS[readout], fit)
        ax.set_title(f"{readout}: bisection on B (filled: exact, open: not)")
    lengths = sorted(runs["L"].unique())
    for bound, style in (("lower_bound", "--"), ("construction", "-")):
        curve = post[(post["bound"] == bound) & post["L"].isin(lengths)].sort_values("L")
        ax_reg.plot(
            curve["L"],
            curve["bmin"],
            style,
            color="0.3",
            lw=1,
            label=f"theory {bound.replace('_', ' ')} ($L^{{3/4}}$)",
        )
    ax_reg.legend(fontsize=6.5, frameon=False, loc="upper left")
    ax_cls.legend(fontsize=6.5, frameon=False, loc="upper left")
    reg = runs[(runs["readout"] == "regression") & ~_diverged(runs)]
    cmap = colormaps["viridis"]
    for i, (length, part) in enumerate(reg.groupby("L")):
        ax_err.scatter(
            part["B"] / part["bracket_low"],
            part["max_error"],
            s=14,
            color=cmap(i / max(reg["L"].nunique() - 1, 1)),
            label=f"L = {length}",
        )
    _mark_exactness_threshold(ax_err, "exact below 1/2", x=0.02, ha="left", ls="--")
    ax_err.set(
        yscale="log",
        xlabel="B / theory lower bound",
        ylabel="max |y - c| on the grid",
        title="regression: largest error of every run",
    )
    ax_err.legend(fontsize=7, frameon=False)
    fig.suptitle(f"C4: norm-constrained training (projected Adam), learned post-norm, d = {d}")
    return fig


def plot_exponent_table(table: pd.DataFrame) -> Figure:
    """C5: the exponent table rendered as a figure."""
    set_style()

    def fmt(value, window=None) -> str:
        if value is None or (isinstance(value, float) and not np.isfinite(value)):
            return "—"
        text = f"{value:.2f}".replace("-0.00", "0.00")
        return f"{text}  (L {window})" if isinstance(window, str) and window else text

    cells = [
        [
            PLACEMENT_LABELS[r.placement],
            r.readout,
            fmt(r.predicted),
            fmt(r.lower_bound, r.lower_bound_window),
            fmt(r.construction, r.construction_window),
            fmt(r.training, r.training_window),
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
        "C5: growth exponent of $B_{\\min}(L)$ — theory vs least-squares fits of log B on log L "
        "over the longest lengths (fit window and point count beside each)"
    )
    return fig


def _margin_label(rates: pd.DataFrame, placement: str) -> str:
    row = rates[(rates["placement"] == placement) & (rates["source"] == "margin")]
    if row.empty or not np.isfinite(row["fitted_exponent"].iloc[0]):
        return ""
    r = row.iloc[0]
    return f" ($L^{{{r['fitted_exponent']:.1f}}}$, L {r['fit_from']}-{r['fit_to']})"


def plot_precision(
    precision: pd.DataFrame, empirical: pd.DataFrame, training: pd.DataFrame, rates: pd.DataFrame
) -> Figure:
    """C6: the classification read-out side by side with regression: bounded norm, growing
    storage, shrinking margin, and what float32 then gets right."""
    set_style()
    d = int(precision["d"].min())
    prec = precision[precision["d"] == d]
    f64, f32 = prec[prec["format"] == "float64"], prec[prec["format"] == "float32"]
    fig = Figure(figsize=(16, 4.4), layout="constrained")
    ax_norm, ax_store, ax_margin, ax_f32 = fig.subplots(1, 4)
    styles = {"regression": "--", "classification": "-"}
    for (placement, readout), part in f64.groupby(["placement", "readout"]):
        part = part.sort_values("L")
        color, style = PLACEMENT_COLORS[placement], styles[readout]
        label = f"{PLACEMENT_LABELS[placement]}, {readout}"
        ax_norm.plot(part["L"], part["max_norm"], style, color=color, lw=1, label=label)
        if readout == "classification":
            ax_margin.plot(
                part["L"],
                part["relative_margin"],
                "-o",
                ms=3,
                color=color,
                label=f"{PLACEMENT_LABELS[placement]}{_margin_label(rates, placement)}",
            )
    post = f64[f64["placement"] == "post_learned"]
    for readout, part in post.groupby("readout"):
        ax_store.plot(
            part["L"], part["parameters"], "-o", ms=3, color=READOUT_COLORS[readout], label=readout
        )
        reg = part.sort_values("L")
        if readout == "regression":
            ax_margin.plot(
                reg["L"],
                reg["relative_margin"],
                "--",
                color="0.4",
                label="regression construction (post-norm, learned)",
            )
    trained = training[(training["readout"] == "classification") & (training["round"] > 0)]
    best = empirical[(empirical["readout"] == "classification") & empirical["reached"]]
    ax_norm.plot(
        best["L"],
        best["bmin"],
        "D",
        color=READOUT_COLORS["classification"],
        ms=6,
        label="trained classification $B_{\\min}$ (post-norm, learned)",
    )
    ok = trained[trained["accuracy"] >= 1.0]
    ax_margin.scatter(
        ok["L"],
        ok["relative_margin"],
        marker="D",
        s=16,
        color=READOUT_COLORS["classification"],
        alpha=0.6,
        label="trained classification runs (exact)",
    )
    for bits, name in ((24, "float32"), (53, "float64")):
        ax_margin.axhline(2.0**-bits, color="0.3", lw=0.8, ls=":")
        ax_margin.text(
            prec["L"].max(),
            2.0**-bits * 1.6,
            f"{name} unit roundoff $2^{{-{bits}}}$",
            fontsize=7,
            color="0.3",
            ha="right",
        )
    for (placement, readout), part in f32.groupby(["placement", "readout"]):
        part = part.sort_values("L")
        ax_f32.plot(
            part["L"],
            part["accuracy"],
            styles[readout] + "o",
            ms=3,
            color=PLACEMENT_COLORS[placement],
            label=f"{PLACEMENT_LABELS[placement]}, {readout}",
        )
    ax_norm.set(
        yscale="log",
        ylabel="largest vector norm",
        title="norm: constructions (lines), trained $B_{\\min}$",
    )
    ax_store.set(yscale="log", ylabel="trainable numbers", title="storage: (L+1)(d+1) head rows")
    ax_margin.set(
        yscale="log",
        ylabel="smallest margin / largest output",
        title="precision: relative margin (float64)",
    )
    ax_f32.set(
        ylabel="fraction of the grid counted exactly",
        ylim=(0.4, 1.02),
        title="the same constructions in float32",
    )
    lengths = sorted(prec["L"].unique())
    for ax in (ax_norm, ax_store, ax_margin, ax_f32):
        ax.set_xlabel("length L")
        _length_axis(ax, lengths)
        ax.tick_params(axis="x", labelrotation=45)
    ax_norm.legend(fontsize=5.5, frameon=False, ncol=2, loc="upper left")
    ax_store.legend(fontsize=7, frameon=False)
    ax_margin.legend(fontsize=6, frameon=False, loc="lower left")
    ax_f32.legend(fontsize=5.5, frameon=False, loc="lower left")
    fig.suptitle(
        f"C6: classification keeps norms bounded but stores L+1 head rows and needs precision "
        f"that grows with L (d = {d}; regression for comparison)"
    )
    return fig


def _mark_linear_attention(ax: Axes, linear: pd.Series) -> None:
    """Linear attention's exact zero (float64 rounding of it) as an arrow at the axis floor."""
    floor = ax.get_ylim()[0]
    ax.annotate(
        f"linear attention: max error {linear['max_error']:.0e} (float64 rounding of 0)\n"
        f"at B = {linear['B']:.3g}, the same at every L",
        xy=(linear["B"], floor),
        xytext=(linear["B"] * 1.3, floor * 2.5),
        fontsize=7,
        arrowprops={"arrowstyle": "->", "color": "0.3"},
    )
    ax.scatter([linear["B"]], [floor], marker="v", s=50, color="0.3", clip_on=False, zorder=5)


def plot_residual(residual: pd.DataFrame, training: pd.DataFrame) -> Figure:
    """C7: the smallest B that keeps max |y - c| within a target, per placement (lower bound
    and construction), the trained learned-post-norm runs at the same L, and linear attention,
    which reaches 0 at a norm that does not depend on L."""
    set_style()
    length, d = int(residual["L"].iloc[0]), int(residual["d"].iloc[0])
    fig = Figure(figsize=(11, 5.6), layout="constrained")
    ax = fig.subplots()
    softmax = residual[residual["attention"] == "softmax"]
    for placement, part in softmax.groupby("placement", sort=False):
        color = PLACEMENT_COLORS[placement]
        for source, style in (("lower_bound", "--"), ("construction", "-o")):
            rows = part[part["source"] == source].sort_values("B")
            ax.plot(
                rows["B"],
                rows["max_error"],
                style,
                color=color,
                ms=4,
                label=f"{PLACEMENT_LABELS[placement]}, {source.replace('_', ' ')}",
            )
    runs = training[(training["readout"] == "regression") & (training["L"] == length)]
    runs = runs[np.isfinite(runs["B"]) & np.isfinite(runs["max_error"])]
    if len(runs):
        ax.scatter(
            runs["B"],
            runs["max_error"],
            marker="x",
            s=22,
            color=PLACEMENT_COLORS["post_learned"],
            label="trained post-norm (learned gain), every bisection run",
        )
    _mark_exactness_threshold(ax, "exact after rounding below 1/2", x=0.99, ha="right", ls=":")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="norm bound B (largest vector norm)",
        ylabel="best attainable max |y - c| on the grid",
    )
    linear = residual[residual["attention"] == "linear"]
    if len(linear):
        _mark_linear_attention(ax, linear.iloc[0])
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(
        f"C7: softmax regression is never exact: the error falls with B but reaches 0 only as "
        f"B -> inf (L = {length}, d = {d})"
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
a norm or with pre-norm the outputs lie on a line; with bare post-norm they lie on an arc of the
sphere of radius sqrt(d) (the direction of an affine line in c, read by a cosine). With a
learned gain the construction puts gain and read-out on one coordinate (u ⊙ gamma along one
axis), so gamma ⊙ N(z) + beta is the projection of that arc on the axis: a line. Bottom:
classification constructions,
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
results/counting/walls.csv). Linear attention needs a constant norm. The classification
read-out's unit norms, with its storage and precision, are in C6. Data:
results/counting/bmin_theory.csv.
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
C3. Unconstrained full-batch training (Adam, cosine decay, count-balanced weights, a step
size that does not depend on L; regression minimises an annealed p-mean of \\|y - c\\|,
classification a cross-entropy; {{ config["counting"]["training"]["regression"]["steps"] }}
steps for regression, {{ config["counting"]["training"]["classification"]["steps"] }} for
classification, {{ config["counting"]["training"]["dtype"] }}) of the
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
at most B (steps of lr x B; {{ config["counting"]["training"]["dtype"] }}; regression
minimises a p-mean of \\|y - c\\| with p rising from
{{ config["counting"]["training"]["regression"]["p_start"] }} to
{{ config["counting"]["training"]["regression"]["p_end"] }}). B_min of each (L, seed) is
bisected: the regression bracket runs from the theory's lower bound (dashed; below it no
parameters count) to {{ config["counting"]["training"]["regression"]["upper_factor"] }} times
the verified construction (solid), the classification bracket from
{{ config["counting"]["training"]["classification"]["low"] }} (probed too) to
{{ config["counting"]["training"]["classification"]["high"] }};
{{ config["counting"]["training"]["bisection"]["probes"] }} probes per seed and round, one
batched training per round, until the bracket is within
{{ (100 * config["counting"]["training"]["bisection"]["precision"]) | round(1) }} % or after
{{ config["counting"]["training"]["bisection"]["max_rounds"] }} rounds. Left and middle: every
probe (filled: exact on the whole grid; open: not; red x: diverged, a failure of the optimiser),
the trained B_min (smallest exact B over seeds; bar down to the largest B known to fail) with
its fitted exponent, and the upper bracket (dotted); a triangle at the upper bracket marks a
length where training failed even there. Right: the largest \\|y - c\\| of every regression run
against B over the lower bound; exact below 1/2. Data: results/counting/training.csv,
results/counting/empirical_bmin.csv, results/counting/rates.csv.
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
prediction next to least-squares slopes of log B_min on log L over the longest lengths (the
last {{ config["counting"]["theory"]["fit_points"] }} finite points; window and point count in
each cell) of the lower bounds, of the verified constructions and of the trained B_min (C4).
Bare pre-norm has a wall instead of a rate.
Data: results/counting/exponents.csv (from results/counting/rates.csv and walls.csv).
""",
        labels=_labels("C5", "table of exponents", "none, pre, post (bare and learned)"),
    ),
    FigureSpec(
        name="counting_precision",
        code="C6",
        study="counting",
        tables={
            "precision": "results/counting/precision.csv",
            "empirical": "results/counting/empirical_bmin.csv",
            "training": "results/counting/training.csv",
            "rates": "results/counting/rates.csv",
        },
        plot=plot_precision,
        caption="""\
C6. What the classification read-out pays instead of norm (d =
{{ config["counting"]["theory"]["widths"][0] }}). Norm: the classification constructions keep
unit norms at every L (solid lines), and training finds exact classifiers at a small bound
(diamonds: the bisected B_min of C4), while the regression constructions grow (dashed).
Storage: classification stores one head row (w_k, b_k) per count, (L+1)(d+1) numbers, against
d+1 for the regression read-out. Precision: the smallest gap between the true logit and the
best other, over the largest logit, on the whole grid, in float64; it shrinks as a power of L
(fitted rate in the legend, results/counting/rates.csv) and drops below float32's unit
roundoff, while a regression construction's relative margin only shrinks as 1/L; diamonds are
the trained classifiers that are exact. Right: the same constructions evaluated in float32 (the
parameters rounded too) lose exactness once the margin falls below float32's resolution. Data:
results/counting/precision.csv.
""",
        labels=_labels("C6", "storage and precision", "none, pre, post (bare and learned)"),
    ),
    FigureSpec(
        name="counting_residual",
        code="C7",
        study="counting",
        tables={
            "residual": "results/counting/residual.csv",
            "training": "results/counting/training.csv",
        },
        plot=plot_residual,
        caption="""\
C7. Softmax regression never counts exactly with finite parameters: at L = {{
config["counting"]["residual"]["length"] }} (d = {{ config["counting"]["theory"]["widths"][0]
}}), the smallest norm bound B that keeps max \\|y - c\\| over the whole grid within a target
error, for the no-norm, bare post-norm and learned post-norm models. Dashed: the reduced
problem's lower bound (on the m = 0 line; no parameters with a smaller B do better); solid:
constructions verified on the whole grid (their measured error). The error crosses 1/2 at B_min
and keeps falling, but only as a power of B (as the error vanishes, the lower bounds' B grows as
the error^(-1/2), or error^(-1/4) with a learned gain), so it reaches 0 only as B -> infinity:
the read-out sees c only through a strictly nonlinear function (the saturation
alpha c / (1 + alpha c) without a norm, the cosine of a direction moving along a line with
post-norm). Crosses: the trained learned-post-norm runs at this L (C4's bisection). Triangle:
linear attention's construction, exact (error 0 up to float64 rounding) at a norm B that does
not depend on L (its value is in the data). Data:
results/counting/residual.csv, results/counting/training.csv.
""",
        labels=_labels("C7", "best error vs B", "none, post (bare and learned)"),
    ),
)
