"""Study A figures; each function takes tidy tables and returns a matplotlib Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from transformer_stability.apjn.study import NORM_LABELS, Variant
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


def plot_depth_scaling(
    depth: pd.DataFrame, asymptotics: pd.DataFrame, measured: pd.DataFrame | None = None
) -> Figure:
    """A4: end-to-end J^{L,0} vs L. Top: pre-LN on log-log axes (power law) and the saturating
    maps as ln J vs sqrt(L) (stretched exponential), fits and predictions drawn, measured
    points (mean over samples) overlaid. Bottom: the local slopes converging to the closed
    forms."""
    set_style()
    variants = _variants(depth)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    fig = Figure(figsize=(11, 7.5), layout="constrained")
    (ax_pow, ax_sqrt), (ax_pow_local, ax_sqrt_local) = fig.subplots(2, 2, sharex="col")
    for variant in variants:
        part = _select(depth, variant).sort_values("depth")
        x, log_j = part["depth"].to_numpy(float), part["log_apjn"].to_numpy()
        color = colors[(variant.norm, variant.alpha)]
        points = None
        if measured is not None and not _select(measured, variant).empty:
            points = _sample_mean(_select(measured, variant), "depth", ["apjn"])
        if variant.norm == "ln":
            fit = _fit(asymptotics, variant, "power_law_exponent")
            label = f"{variant.label}: ζ fit {fit['fitted']:.3f}, theory {fit['predicted']:.3f}"
            window, fitted, predicted = _law_curves(x, log_j, fit, np.log)
            ax_pow.plot(x, np.exp(log_j), color=color, label=label)
            ax_pow.plot(window, np.exp(fitted), ":", color=color, lw=2.2)
            ax_pow.plot(window, np.exp(predicted), "--", color=color, lw=1.0)
            if points is not None:
                ax_pow.plot(
                    points["depth"],
                    points["apjn_mean"],
                    "o",
                    color=color,
                    ms=3,
                    mfc="white",
                    label=f"{variant.label}: measured",
                )
            ax_pow_local.plot(x, np.gradient(log_j, np.log(x)), color=color)
            ax_pow_local.axhline(fit["predicted"], color=color, ls="--", lw=1.0)
        else:
            fit = _fit(asymptotics, variant, "sqrt_depth_slope")
            label = f"{variant.label}: slope fit {fit['fitted']:.3f}, theory {fit['predicted']:.3f}"
            window, fitted, predicted = _law_curves(x, log_j, fit, np.sqrt)
            ax_sqrt.plot(np.sqrt(x), log_j, color=color, label=label)
            ax_sqrt.plot(np.sqrt(window), fitted, ":", color=color, lw=2.2)
            ax_sqrt.plot(np.sqrt(window), predicted, "--", color=color, lw=1.0)
            if points is not None:
                ax_sqrt.plot(
                    np.sqrt(points["depth"]),
                    np.log(points["apjn_mean"]),
                    "o",
                    color=color,
                    ms=3,
                    mfc="white",
                )
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


def _sample_mean(part: pd.DataFrame, by: str, columns: list[str]) -> pd.DataFrame:
    """Mean and std over samples of `columns`, per value of `by`."""
    stats = part.groupby(by)[columns].agg(["mean", "std"])
    stats.columns = [f"{c}_{s}" for c, s in stats.columns]
    return stats.reset_index()


def plot_permsym(curves: pd.DataFrame) -> Figure:
    """A1: measured APJN (dots: mean over samples, bars: spread) against the theory (lines) on
    the permutation-symmetric input, backward J^{L,b} and forward J^{b,0}."""
    set_style()
    curves = curves[curves["input"] == "equiangular"]
    variants = _variants(curves)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    fig = Figure(figsize=(10, 4.4), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, direction in zip(axes, ("backward", "forward"), strict=True):
        for variant in variants:
            part = _select(curves, variant)
            part = part[part["direction"] == direction]
            stats = _sample_mean(part, "block", ["apjn", "apjn_theory"])
            color = colors[(variant.norm, variant.alpha)]
            ax.plot(
                stats["block"],
                stats["apjn_theory_mean"],
                color=color,
                ls=NORM_LINESTYLES[variant.norm],
                label=variant.label,
            )
            ax.errorbar(
                stats["block"],
                stats["apjn_mean"],
                yerr=stats["apjn_std"].fillna(0),
                fmt="o",
                ms=3.5,
                color=color,
                mfc="white",
                mew=1.0,
                elinewidth=0.8,
            )
        ax.set_yscale("log")
        ax.set_xlabel("block b")
    depth = int(curves["depth"].iloc[0])
    axes[0].set_title(f"backward $J^{{L,b}}$ (L = {depth})")
    axes[1].set_title("forward $J^{b,0}$")
    axes[0].set_ylabel("APJN")
    axes[1].legend(
        title="lines: theory, dots: measured",
        loc="upper left",
        frameon=False,
        fontsize=8,
        title_fontsize=8,
    )
    width = int(curves["width"].iloc[0])
    fig.suptitle(f"timm ViT (d = {width}) at init, permutation-symmetric input: theory vs measured")
    return fig


def plot_images(curves: pd.DataFrame) -> Figure:
    """A2: per-image measured curves (dots) and the theory seeded with each image's (q, p)
    (lines), backward J^{L,b} (top) and forward from the source block (bottom)."""
    set_style()
    curves = curves[curves["input"] == "images"]
    variants = _variants(curves)
    samples = sorted(curves["sample"].unique())
    palette = dict(zip(samples, sns.color_palette("husl", len(samples)), strict=True))
    fig = Figure(figsize=(3.0 * len(variants) + 1, 6.2), layout="constrained")
    axes = fig.subplots(2, len(variants), sharey="row", squeeze=False)
    for col, variant in enumerate(variants):
        part = _select(curves, variant)
        for row, direction in enumerate(("backward", "forward")):
            ax = axes[row, col]
            rows = part[part["direction"] == direction]
            for sample, curve in rows.groupby("sample"):
                ax.plot(curve["block"], curve["apjn_theory"], color=palette[sample], lw=1.0)
                ax.plot(curve["block"], curve["apjn"], "o", color=palette[sample], ms=2.5)
            ax.set_yscale("log")
            if row == 0:
                ax.set_title(variant.label)
            else:
                ax.set_xlabel("block b")
    source = int(curves.loc[curves["direction"] == "forward", "source_block"].iloc[0])
    axes[0, 0].set_ylabel("backward $J^{L,b}$")
    axes[1, 0].set_ylabel(f"forward $J^{{b,{source}}}$")
    fig.suptitle(
        "natural images, one colour per image: lines theory seeded with that image's (q, p), "
        "dots measured"
    )
    return fig


def plot_gmfe(agreement: pd.DataFrame) -> Figure:
    """A3: GMFE of measured vs theory by depth region, one dot per (sample, model)."""
    set_style()
    table = agreement.copy()
    table["model"] = [
        Variant(n, None if pd.isna(a) else float(a)).label
        for n, a in zip(table["norm"], table["alpha"], strict=True)
    ]
    order = [v.label for v in _variants(table)]
    colors = variant_colors([(v.norm, v.alpha) for v in _variants(table)])
    palette = {v.label: colors[(v.norm, v.alpha)] for v in _variants(table)}
    inputs = [i for i in ("equiangular", "images") if i in set(table["input"])]
    fig = Figure(figsize=(5.0 * len(inputs) + 1, 7), layout="constrained")
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
                order=["shallow", "middle", "deep"],
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


def plot_sensitivity(table: pd.DataFrame) -> Figure:
    """A5: end-to-end J^{L,0} against alpha_0 and against the init multipliers: theory seeded
    with the measured input statistics (lines) and measurement (dots, mean over samples)."""
    set_style()
    sweeps = [
        ("alpha", r"$\alpha_0$"),
        ("attn_mult", "attn_mult (mlp_mult = 1)"),
        ("mlp_mult", "mlp_mult (attn_mult = 1)"),
    ]
    fig = Figure(figsize=(14, 4.4), layout="constrained")
    axes = fig.subplots(1, 3, sharey=True)
    for ax, (sweep, xlabel) in zip(axes, sweeps, strict=True):
        part = table[table["sweep"] == sweep]
        norms = ["derf", "dyt"] if sweep == "alpha" else ["ln", "derf"]
        for norm in norms:
            rows = part[part["norm"] == norm]
            x = "alpha" if sweep == "alpha" else sweep
            stats = _sample_mean(rows, x, ["apjn", "apjn_theory"])
            if sweep == "alpha":
                color, label = colors_for_norm(norm), NORM_LABELS[norm]
            else:
                alpha = rows["alpha"].iloc[0]
                variant = Variant(norm, None if pd.isna(alpha) else float(alpha))
                color, label = colors_for_norm(norm), variant.label
            ax.plot(stats[x], stats["apjn_theory_mean"], color=color, label=f"{label} theory")
            ax.errorbar(
                stats[x],
                stats["apjn_mean"],
                yerr=stats["apjn_std"].fillna(0),
                fmt="o",
                color=color,
                mfc="white",
                label=f"{label} measured",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        values = sorted(part["alpha" if sweep == "alpha" else sweep].dropna().unique())
        ax.set_xticks(values, [f"{v:g}" for v in values])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel(xlabel)
        ax.legend(frameon=False, fontsize=8)
    axes[0].set_ylabel("end-to-end APJN $J^{L,0}$")
    depth, width = int(table["depth"].iloc[0]), int(table["width"].iloc[0])
    fig.suptitle(f"sensitivity of the end-to-end APJN to init (d = {width}, L = {depth})")
    return fig


def colors_for_norm(norm: str) -> object:
    """One representative colour per norm for plots that sweep alpha."""
    return {
        "ln": "black",
        "derf": sns.color_palette("viridis", 5)[2],
        "dyt": sns.color_palette("Oranges", 5)[4],
    }[norm]


def plot_token_stats(curves: pd.DataFrame) -> Figure:
    """A6: token statistics q_b and p_b / q_b along depth, theory (lines) vs measured (dots),
    for the permutation-symmetric input and for images (mean over samples)."""
    set_style()
    curves = curves[curves["direction"] == "backward"]
    variants = _variants(curves)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    inputs = [i for i in ("equiangular", "images") if i in set(curves["input"])]
    fig = Figure(figsize=(10, 3.8 * len(inputs)), layout="constrained")
    axes = fig.subplots(len(inputs), 2, sharex=True, squeeze=False)
    for row, kind in enumerate(inputs):
        part = curves[curves["input"] == kind].assign(
            rho=lambda t: t["p"] / t["q"], rho_theory=lambda t: t["p_theory"] / t["q_theory"]
        )
        for variant in variants:
            stats = _sample_mean(
                _select(part, variant), "block", ["q", "q_theory", "rho", "rho_theory"]
            )
            color = colors[(variant.norm, variant.alpha)]
            for col, name in enumerate(("q", "rho")):
                ax = axes[row, col]
                ax.plot(
                    stats["block"],
                    stats[f"{name}_theory_mean"],
                    color=color,
                    ls=NORM_LINESTYLES[variant.norm],
                    label=variant.label,
                )
                ax.plot(stats["block"], stats[f"{name}_mean"], "o", color=color, ms=3, mfc="white")
        axes[row, 0].set_yscale("log")
        axes[row, 0].set_ylabel(f"{kind}: $q_b$")
        axes[row, 1].set_ylabel(f"{kind}: $p_b / q_b$")
    for ax in axes[-1]:
        ax.set_xlabel("block b")
    axes[0, 1].legend(
        frameon=False, fontsize=8, title="lines: theory, dots: measured", title_fontsize=8
    )
    fig.suptitle("token statistics along depth (CLS excluded)")
    return fig


def plot_trainability(table: pd.DataFrame) -> Figure:
    """A7: final training loss and test accuracy against alpha_0 for Derf and DyT (lines, one
    style per init multiplier) with pre-LN as horizontal references; diverged runs marked x."""
    set_style()
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    axes = fig.subplots(1, 2, sharex=True)
    mults = sorted(table["attn_mult"].unique())
    styles = dict(zip(mults, ["-", "--", ":", "-."], strict=False))
    for ax, metric, label in (
        (axes[0], "final_loss", "final training loss"),
        (axes[1], "test_accuracy", "test accuracy"),
    ):
        for mult in mults:
            part = table[table["attn_mult"] == mult]
            for norm in ("ln", "derf", "dyt"):
                rows = part[part["norm"] == norm]
                if rows.empty:
                    continue
                color = colors_for_norm(norm)
                name = f"{NORM_LABELS[norm]}, mult {mult:g}"
                if norm == "ln":
                    ax.axhline(
                        rows[metric].mean(), color=color, ls=styles[mult], lw=1.2, label=name
                    )
                    continue
                mean = rows.groupby("alpha")[metric].mean()
                ax.plot(
                    mean.index, mean.values, ls=styles[mult], marker="o", color=color, label=name
                )
                diverged = rows[rows["diverged"]]
                if not diverged.empty:
                    top = ax.get_ylim()[1]
                    ax.plot(
                        diverged["alpha"],
                        np.full(len(diverged), top),
                        "x",
                        color=color,
                        ms=8,
                        mew=2,
                    )
        ax.set_xscale("log")
        alphas = sorted(table["alpha"].dropna().unique())
        ax.set_xticks(alphas, [f"{a:g}" for a in alphas])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel(r"$\alpha_0$")
        ax.set_ylabel(label)
    axes[1].legend(frameon=False, fontsize=8)
    depth, width = int(table["depth"].iloc[0]), int(table["width"].iloc[0])
    steps, dataset = int(table["steps"].max()), table["dataset"].iloc[0]
    fig.suptitle(
        f"trainability: ViT d = {width}, L = {depth}, {steps} AdamW steps on {dataset} "
        "(x: diverged)"
    )
    return fig
