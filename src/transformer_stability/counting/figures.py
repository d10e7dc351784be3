"""Study C figures C1-C5; each function takes tidy tables and returns a matplotlib Figure. They
draw what the data rules computed (fits, the pre-norm wall, reference laws and the exponent
table live in counting/rates.py) and compute nothing themselves."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.counting.style import (
    PLACEMENT_COLORS,
    PLACEMENT_LABELS,
    PLACEMENT_MARKERS,
    READOUT_COLORS,
)
from transformer_stability.counting.tables import QUORUM
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PLACEMENTS = tuple(PLACEMENT_LABELS)  # panel and legend order


def plot_geometry(geometry: pd.DataFrame) -> Figure:
    """C1: psi(z(c, 0)) of each construction on its best 2-plane, coloured by c."""
    set_style()
    fig = new_figure(figsize=(15, 6.2), layout="constrained")
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


def _length_axis(ax, lengths) -> None:
    """Log x axis labelled at the lengths themselves (no overlapping 10^k minor labels)."""
    ax.set_xscale("log")
    ax.set_xticks(list(lengths), [str(int(v)) for v in lengths])
    ax.minorticks_off()


def _log_ticks(ax) -> None:
    """Labelled 1-2-5 ticks on a log y axis that spans less than a few decades."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

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
    fig = new_figure(figsize=(12, 4.3), layout="constrained")
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
    """Every constrained run at (L, B): filled = exact on the grid, open = not, red x =
    diverged; seeds side by side."""
    bad = _diverged(runs)
    ok = (runs["accuracy"] >= 1.0) & ~bad
    jitter = 1 + 0.03 * (runs["seed"] - runs["seed"].min())
    x = runs["L"] * jitter
    ax.scatter(x[ok], runs.loc[ok, "B"], s=12, color=color, alpha=0.6, lw=0, label="exact run")
    fail = ~ok & ~bad
    ax.scatter(
        x[fail],
        runs.loc[fail, "B"],
        s=12,
        facecolor="none",
        edgecolor=color,
        alpha=0.6,
        label="not exact",
    )
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
    """Trained regression B_min per L over every run, with the seeds' spread as a bar (each
    seed's own smallest exact B); a length where no bound reaches the quorum as a triangle at
    the grid's top."""
    _probes(ax, runs, color)
    found = found.sort_values("L")
    reached = found[np.isfinite(found["bmin"])]
    spread_top = np.where(
        np.isfinite(reached["seed_bmin_high"]), reached["seed_bmin_high"], reached["bmin"]
    )
    ax.errorbar(
        reached["L"],
        reached["bmin"],
        yerr=[reached["bmin"] - reached["seed_bmin_low"], spread_top - reached["bmin"]],
        fmt="-o",
        color=color,
        ms=5,
        capsize=3,
        label=f"trained $B_{{\\min}}$: half the seeds exact (bar: seeds' own){fit}",
    )
    missed = found[~np.isfinite(found["bmin"])]
    if len(missed):
        top = runs.groupby("L")["B"].max().reindex(missed["L"])
        ax.scatter(
            missed["L"],
            top,
            marker="^",
            s=60,
            color=color,
            edgecolor="k",
            zorder=5,
            label="no bound of the grid reaches half the seeds",
        )
    ax.set(yscale="log", xlabel="length L", ylabel="norm bound B")
    _log_ticks(ax)
    _length_axis(ax, sorted(found["L"].unique()))


def _success_panel(ax: Axes, success: pd.DataFrame) -> None:
    """Regression: the fraction of seeds exact against B / lower bound, one line per L; the
    quorum that defines B_min and the lower bound (below it no parameters count)."""
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    lengths = sorted(success["L"].unique())
    for i, length in enumerate(lengths):
        part = success[success["L"] == length].sort_values("ratio")
        color = cmap(i / max(len(lengths) - 1, 1))
        ax.plot(part["ratio"], part["fraction"], "-o", ms=4, color=color, label=f"L = {length}")
    ax.axvspan(ax.get_xlim()[0], 1.0, color="0.85", zorder=0)
    ax.axvline(1.0, color="k", lw=0.8)
    ax.text(
        0.98,
        0.5,
        "below the lower bound:\nno parameters count",
        ha="right",
        fontsize=7,
        transform=ax.get_xaxis_transform(),
        rotation=90,
        va="center",
    )
    ax.axhline(QUORUM, color="0.4", lw=0.8, ls="--")
    ax.set(
        xlabel="B / theory lower bound",
        ylabel="fraction of seeds exact on the whole grid",
        ylim=(-0.04, 1.04),
        title="regression: success fraction over seeds",
    )
    ax.legend(fontsize=7, frameon=False, loc="upper left")


def _mark_exactness_threshold(ax: Axes, text: str, x: float, ha: str, ls: str) -> None:
    """The line max |y - c| = 1/2, below which the rounded output counts exactly, labelled at
    x (axes fraction)."""
    ax.axhline(0.5, color="k", lw=0.8, ls=ls)
    ax.text(x, 0.5, text, ha=ha, va="bottom", fontsize=7, transform=ax.get_yaxis_transform())


def plot_constrained(
    training: pd.DataFrame,
    success: pd.DataFrame,
    empirical: pd.DataFrame,
    theory: pd.DataFrame,
    rates: pd.DataFrame,
) -> Figure:
    """C4: norm-constrained regression on the bound grid: the success fraction over seeds
    against B / lower bound, B_min per L over every run (with the theory's lower bound and
    construction), and every run's largest error against B / lower bound."""
    set_style()
    fig = new_figure(figsize=(15, 4.8), layout="constrained")
    ax_frac, ax_bmin, ax_err = fig.subplots(1, 3)
    runs = training[np.isfinite(training["B"]) & (training["readout"] == "regression")]
    if runs.empty:
        raise ValueError("C4 needs constrained regression runs; training.csv has none")
    d = int(runs["d"].iloc[0])
    _success_panel(ax_frac, success[success["readout"] == "regression"])
    fit = _fit_label(rates, "post_learned", "regression", "training")
    _bmin_panel(ax_bmin, runs, empirical, READOUT_COLORS["regression"], fit)
    post = theory[
        (theory["placement"] == "post_learned")
        & (theory["d"] == d)
        & (theory["attention"] == "softmax")
        & (theory["readout"] == "regression")
    ]
    lengths = sorted(runs["L"].unique())
    bound_fit = _fit_label(rates, "post_learned", "regression", "training_bound")
    for bound, style, fitted in (("lower_bound", "--", bound_fit), ("construction", "-", "")):
        curve = post[(post["bound"] == bound) & post["L"].isin(lengths)].sort_values("L")
        ax_bmin.plot(
            curve["L"],
            curve["bmin"],
            style,
            color="0.3",
            lw=1,
            label=f"theory {bound.replace('_', ' ')}{fitted}",
        )
    ax_bmin.set_title("regression: trained $B_{\\min}$ and every run")
    ax_bmin.legend(fontsize=6.5, frameon=False, loc="upper left")
    reg = runs[~_diverged(runs)]
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    for i, (length, part) in enumerate(reg.groupby("L")):
        ax_err.scatter(
            part["ratio"],
            part["max_error"],
            s=14,
            color=cmap(i / max(reg["L"].nunique() - 1, 1)),
            label=f"L = {length}",
        )
    _mark_exactness_threshold(ax_err, "exact below 1/2", x=0.02, ha="left", ls="--")
    ax_err.axvline(1.0, color="k", lw=0.8)
    ax_err.set(
        yscale="log",
        xlabel="B / theory lower bound",
        ylabel="max |y - c| on the grid",
        title="regression: largest error of every run",
    )
    ax_err.legend(fontsize=7, frameon=False)
    fig.suptitle(
        f"C4: norm-constrained training (projected Adam) on a grid of B x seeds, learned "
        f"post-norm, d = {d}"
    )
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
            fmt(r.training_bound, r.training_bound_window),
            r.note if isinstance(r.note, str) else "",  # empty notes read back as NaN
        ]
        for r in table.itertuples()
    ]
    fig = new_figure(figsize=(15, 0.32 * len(cells) + 0.8), layout="constrained")
    ax = fig.subplots()
    ax.axis("off")
    header = [
        "placement",
        "read-out",
        "theory",
        "lower bound (fit)",
        "construction (fit)",
        "training (fit)",
        "lower bound on training's lengths",
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


def _trained_margins(ax: Axes, trained: pd.DataFrame) -> None:
    """Exact trained classifiers: their relative margin (diamonds, filled where float32 keeps
    them exact) and the best head's on their own representation (crosses)."""
    color = READOUT_COLORS["classification"]
    kept = trained["accuracy_float32"] >= 1.0
    for mask, face, label in ((kept, color, "exact in float32"), (~kept, "none", "not")):
        ax.scatter(
            trained.loc[mask, "L"],
            trained.loc[mask, "relative_margin"],
            marker="D",
            s=18,
            facecolor=face,
            edgecolor=color,
            label=f"trained classifiers ({label})",
            zorder=4,
        )
    ax.scatter(
        trained["L"] * 1.08,
        trained["best_head_margin"],
        marker="x",
        s=18,
        color=color,
        label="best head on a trained representation (LP)",
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
    _trained_margins(ax_margin, trained)
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
        _length_axis(ax, lengths)
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


def _mark_linear_attention(ax: Axes, linear: pd.Series) -> None:
    """Linear attention's error, far below the axis: a marker clipped to the bottom edge (an
    arrow pointing down, off scale) with the measured value beside it."""
    floor = ax.get_ylim()[0]
    ax.annotate(
        f"linear attention: max error {linear['max_error']:.1e}, off scale below\n"
        f"(float64 rounding of 0) at B = {linear['B']:.3g}, the same at every L",
        xy=(linear["B"], floor),
        xytext=(linear["B"] * 1.3, floor * 3),
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
    fig = new_figure(figsize=(11, 5.6), layout="constrained")
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
            label="trained post-norm (learned gain), every run of the bound grid",
        )
    _mark_exactness_threshold(ax, "exact after rounding below 1/2", x=0.99, ha="right", ls=":")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="norm bound B (largest vector norm)",
        ylabel="best attainable max |y - c| on the grid",
    )
    # the floor a decade below the smallest target error, so that the clipped marker of linear
    # attention cannot be read as one of the targets
    ax.set_ylim(bottom=0.1 * softmax["max_error"][softmax["max_error"] > 0].min())
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
            "success": "results/counting/success.csv",
            "empirical": "results/counting/empirical_bmin.csv",
            "theory": "results/counting/bmin_theory.csv",
            "rates": "results/counting/rates.csv",
        },
        plot=plot_constrained,
        caption="""\
C4. Norm-constrained training of the regression read-out: after every Adam step each trainable
vector is rescaled to norm at most B (steps of lr x B; {{ config["counting"]["training"]["dtype"]
}}; a p-mean of \\|y - c\\| with p rising from
{{ config["counting"]["training"]["regression"]["p_start"] }} to
{{ config["counting"]["training"]["regression"]["p_end"] }},
{{ config["counting"]["training"]["regression"]["steps"] }} steps). Every bound of a fixed grid,
B = {{ config["counting"]["training"]["regression"]["ratios"] | sort | join(", ") }} times the
theory's lower bound at L, is trained with each of {{ config["counting"]["training"]["seeds"] }}
seeds, all in one batched program per L; no search, so nothing assumes that success is monotone
in B. Ratios below 1 are controls: no parameters count there, so an exact run there would be a
bug. Left: the fraction of seeds exact on the whole grid against B over the lower bound (grey:
below the bound; dashed: half the seeds). Middle: the trained B_min, the smallest grid bound at
which at least half the seeds are exact, with its fitted exponent; the bar spans the seeds' own
smallest exact bounds; dots are every run (filled: exact, open: not; red x: diverged, a failure
of the optimiser); the theory's lower bound (dashed, fitted over the same lengths as the trained
B_min) and construction (solid). Right: the largest \\|y - c\\| of every run against B over the
lower bound; exact below 1/2. Classification has no lower bound (scaling the head keeps the
argmax), so its runs at fixed bounds appear in C6, where its cost is measured. Data:
results/counting/training.csv, results/counting/success.csv, results/counting/empirical_bmin.csv,
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
prediction next to least-squares slopes of log B_min on log L over the longest lengths (the
last {{ config["counting"]["theory"]["fit_points"] }} finite points; window and point count in
each cell) of the lower bounds, of the verified constructions and of the trained B_min (C4).
Beside the trained exponent, the lower bound fitted over the very same lengths (over a short
window its local slope is what training can match). Bare pre-norm has a wall instead of a rate.
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
            "success": "results/counting/success.csv",
            "rates": "results/counting/rates.csv",
        },
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
on its representation). Dotted: float32's and float64's unit roundoff. Right: the fraction of
the grid counted exactly when the parameters and the forward pass are float32. Trained
classifiers learn on the grid's edges (m = 0 and c + m = L) when
counting.training.classification.edges_only is set; every exactness here is measured on the
whole grid. Data: results/counting/precision.csv, results/counting/success.csv,
results/counting/rates.csv.
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
post-norm). Crosses: the trained learned-post-norm runs at this L (C4's bound grid). Triangle
at the bottom edge: linear attention's construction, whose error (0 up to float64 rounding,
its value printed beside it) lies far below the axis, at a norm B that depends on d but not
on L. Data:
results/counting/residual.csv, results/counting/training.csv.
""",
        labels=_labels("C7", "best error vs B", "none, post (bare and learned)"),
    ),
)
