"""Study A figures; each function takes tidy tables and returns a matplotlib Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from transformer_stability.apjn.study import Variant
from transformer_stability.plotting import NORM_LINESTYLES, set_style, variant_colors

_ORDER = {"ln": 0, "derf": 1, "dyt": 2}


def _variants(table: pd.DataFrame) -> list[Variant]:
    pairs = table[["norm", "alpha"]].drop_duplicates().itertuples(index=False)
    found = [Variant(n, None if pd.isna(a) else float(a)) for n, a in pairs]
    return sorted(found, key=lambda v: (_ORDER[v.norm], v.alpha or 0.0))


def _select(table: pd.DataFrame, variant: Variant) -> pd.DataFrame:
    same_alpha = table["alpha"].isna() if variant.alpha is None else table["alpha"] == variant.alpha
    return table[(table["norm"] == variant.norm) & same_alpha]


def plot_theory_curves(curves: pd.DataFrame) -> Figure:
    """A1 (theory part): backward J^{L,b} and forward J^{b,0} against block b, log y."""
    set_style()
    variants = _variants(curves)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    depth = int(curves["depth"].iloc[0])
    titles = {
        "backward": f"backward  $J^{{L,b}}$  (L = {depth})",
        "forward": "forward  $J^{b,0}$",
    }
    for ax, direction in zip(axes, ("backward", "forward"), strict=True):
        for variant in variants:
            part = _select(curves, variant)
            part = part[part["direction"] == direction].sort_values("block")
            ax.plot(
                part["block"],
                part["apjn"],
                color=colors[(variant.norm, variant.alpha)],
                linestyle=NORM_LINESTYLES[variant.norm],
                label=variant.label,
            )
        ax.set_yscale("log")
        ax.set_xlabel("block b")
        ax.set_title(titles[direction])
    axes[0].set_ylabel("APJN (mean-field theory)")
    axes[1].legend(title="norm", loc="upper left", frameon=False)
    width = int(curves["width"].iloc[0])
    fig.suptitle(f"APJN at initialization, permutation-symmetric input (d = {width})")
    return fig


def _fit(asymptotics: pd.DataFrame, variant: Variant, quantity: str) -> pd.Series:
    rows = _select(asymptotics, variant)
    return rows[rows["quantity"] == quantity].iloc[0]


def _law_curves(
    x: np.ndarray, log_j: np.ndarray, fit: pd.Series, transform
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ln J of the fitted law and of the predicted slope over the fit window, in the law's
    linearizing variable t = transform(L); the prediction passes through the curve at the
    window's start."""
    lo, hi = fit["fit_min_depth"], fit["fit_max_depth"]
    window = x[(x >= lo) & (x <= hi)]
    t = transform(window)
    fitted = fit["fit_intercept"] + fit["fitted"] * t
    predicted = np.interp(lo, x, log_j) + fit["predicted"] * (t - transform(lo))
    return window, fitted, predicted


def plot_depth_scaling(depth: pd.DataFrame, asymptotics: pd.DataFrame) -> Figure:
    """A4 (theory part): end-to-end J^{L,0} vs L. Top: pre-LN on log-log axes (power law) and
    the saturating maps as ln J vs sqrt(L) (stretched exponential), fits and predictions drawn.
    Bottom: the local slopes along depth converging to the closed-form values."""
    set_style()
    variants = _variants(depth)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    fig = Figure(figsize=(11, 7.5), layout="constrained")
    (ax_pow, ax_sqrt), (ax_pow_local, ax_sqrt_local) = fig.subplots(2, 2, sharex="col")
    for variant in variants:
        part = _select(depth, variant).sort_values("depth")
        x, log_j = part["depth"].to_numpy(float), part["log_apjn"].to_numpy()
        color = colors[(variant.norm, variant.alpha)]
        if variant.norm == "ln":
            fit = _fit(asymptotics, variant, "power_law_exponent")
            label = f"{variant.label}: ζ fit {fit['fitted']:.3f}, theory {fit['predicted']:.3f}"
            window, fitted, predicted = _law_curves(x, log_j, fit, np.log)
            ax_pow.plot(x, np.exp(log_j), color=color, label=label)
            ax_pow.plot(window, np.exp(fitted), ":", color=color, lw=2.2)
            ax_pow.plot(window, np.exp(predicted), "--", color=color, lw=1.0)
            ax_pow_local.plot(x, np.gradient(log_j, np.log(x)), color=color)
            ax_pow_local.axhline(fit["predicted"], color=color, ls="--", lw=1.0)
        else:
            fit = _fit(asymptotics, variant, "sqrt_depth_slope")
            label = f"{variant.label}: slope fit {fit['fitted']:.3f}, theory {fit['predicted']:.3f}"
            window, fitted, predicted = _law_curves(x, log_j, fit, np.sqrt)
            ax_sqrt.plot(np.sqrt(x), log_j, color=color, label=label)
            ax_sqrt.plot(np.sqrt(window), fitted, ":", color=color, lw=2.2)
            ax_sqrt.plot(np.sqrt(window), predicted, "--", color=color, lw=1.0)
            ax_sqrt_local.plot(np.sqrt(x), np.gradient(log_j, np.sqrt(x)), color=color)
            ax_sqrt_local.axhline(fit["predicted"], color=color, ls="--", lw=1.0)
    ax_pow.set_xscale("log")
    ax_pow.set_yscale("log")
    ax_pow.set_ylabel(r"$J^{L,0}$")
    ax_pow.set_title("pre-LN: power law $J \\propto L^{\\zeta}$")
    ax_pow_local.set_xlabel("depth L")
    ax_pow_local.set_ylabel(r"local exponent $d\ln J / d\ln L$")
    ax_sqrt.set_ylabel(r"$\ln J^{L,0}$")
    ax_sqrt.set_title(r"saturating maps: $\ln J \propto \alpha\sqrt{L}$")
    ax_sqrt_local.set_xlabel(r"$\sqrt{L}$")
    ax_sqrt_local.set_ylabel(r"local slope $d\ln J / d\sqrt{L}$")
    for ax in (ax_pow, ax_sqrt):
        if ax.get_lines():
            ax.legend(loc="upper left", frameon=False, fontsize=8)
    fig.text(
        0.5,
        -0.02,
        "solid: mean-field recursion; dotted: least-squares fit over the deepest depths "
        "(asymptotics.csv); dashed: closed-form asymptotic law",
        ha="center",
        fontsize=8,
    )
    return fig
