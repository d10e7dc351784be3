"""C4: norm-constrained training of the regression read-out on a grid of bounds and seeds: the
trained B_min against the theory's lower bound and construction."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.counting.figures._common import (
    fit_label,
    length_axis,
    log_ticks,
    mark_exactness_threshold,
)
from transformer_stability.counting.figures._labels import report_labels
from transformer_stability.counting.style import READOUT_COLORS
from transformer_stability.counting.tables import (
    QUORUM,
    BminTheory,
    EmpiricalBmin,
    Rates,
    Success,
    Training,
)
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


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
    log_ticks(ax)
    length_axis(ax, sorted(found["L"].unique()))


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
    fit = fit_label(rates, "post_learned", "regression", "training")
    _bmin_panel(ax_bmin, runs, empirical, READOUT_COLORS["regression"], fit)
    post = theory[
        (theory["placement"] == "post_learned")
        & (theory["d"] == d)
        & (theory["attention"] == "softmax")
        & (theory["readout"] == "regression")
    ]
    lengths = sorted(runs["L"].unique())
    bound_fit = fit_label(rates, "post_learned", "regression", "training_bound")
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
    mark_exactness_threshold(ax_err, "exact below 1/2", x=0.02, ha="left", ls="--")
    ax_err.axvline(1.0, color="k", lw=0.8)
    ax_err.set(
        yscale="log",
        xlabel="B / theory lower bound",
        ylabel="max |y - c| on the grid",
        title="regression: largest error of every run",
    )
    ax_err.legend(fontsize=7, frameon=False)
    fig.suptitle(
        f"C4: norm-constrained training (projected Adam, then a minimax polish) on a grid of "
        f"B x seeds, learned post-norm, d = {d}"
    )
    return fig


FIGURE = FigureSpec(
    name="counting_constrained",
    code="C4",
    study="counting",
    tables={
        "training": Training,
        "success": Success,
        "empirical": EmpiricalBmin,
        "theory": BminTheory,
        "rates": Rates,
    },
    plot=plot_constrained,
    caption="""\
C4. Norm-constrained training of the regression read-out: after every Adam step each trainable
vector is rescaled to norm at most B (steps of lr x B; {{ config["counting"]["training"]["dtype"]
}}; a p-mean of \\|y - c\\| with p rising from
{{ config["counting"]["training"]["regression"]["p_start"] }} to
{{ config["counting"]["training"]["regression"]["p_end"] }},
{{ config["counting"]["training"]["regression"]["steps"] }} steps, then a float64 minimax polish of
the largest error within the ball, at most
{{ config["counting"]["training"]["regression"]["polish_iterations"] }} SLSQP steps per solve).
Every bound of a fixed grid,
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
argmax), so its runs at fixed bounds appear in C6, where its cost is measured.
""",
    labels=report_labels("C4", "norm-constrained training", "post (learned)"),
)
