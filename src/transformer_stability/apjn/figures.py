"""Study A figures; each function takes tidy tables and returns a matplotlib Figure."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.apjn.agreement import EARLY
from transformer_stability.apjn.items import Variant
from transformer_stability.apjn.style import (
    NORM_COLORS,
    NORM_LABELS,
    NORM_LINESTYLES,
    NORM_MARKERS,
    NORM_ORDER,
    variant_colors,
    variant_label,
)
from transformer_stability.apjn.width_fit import COMPARED
from transformer_stability.plotting import (
    FigureSpec,
    legend_line,
    matplotlib_ticker,
    new_figure,
    seaborn,
    set_style,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _label(variant: Variant) -> str:
    return variant_label(variant.norm, variant.alpha)


def _variants(table: pd.DataFrame) -> list[Variant]:
    pairs = table[["norm", "alpha"]].drop_duplicates().itertuples(index=False)
    found = [Variant(n, None if pd.isna(a) else float(a)) for n, a in pairs]
    return sorted(found, key=lambda v: (NORM_ORDER[v.norm], v.alpha or 0.0))


def _select(table: pd.DataFrame, variant: Variant) -> pd.DataFrame:
    same_alpha = table["alpha"].isna() if variant.alpha is None else table["alpha"] == variant.alpha
    return table[(table["norm"] == variant.norm) & same_alpha]


def plot_theory_curves(curves: pd.DataFrame) -> Figure:
    """A1 (theory part): backward J^{L,b} and forward J^{b,0} against block b, log y."""
    set_style()
    variants = _variants(curves)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    fig = new_figure(figsize=(10, 4.2), layout="constrained")
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
                label=_label(variant),
            )
        ax.set_yscale("log")
        ax.set_xlabel("block b")
        ax.set_title(titles[direction])
    axes[0].set_ylabel("APJN (mean-field theory)")
    axes[1].legend(title="norm", loc="upper left", frameon=False)
    fig.suptitle("APJN at initialization, permutation-symmetric input (infinite-width theory)")
    return fig


def _fit(asymptotics: pd.DataFrame, variant: Variant, quantity: str) -> pd.Series:
    rows = _select(asymptotics, variant)
    return rows[rows["quantity"] == quantity].iloc[0]


CLOSURE_STYLES = {"released": "-", "exact": "-."}
"""Line style of each closure of uniform attention: the authors' recursion and the exact one."""


def _preln_power_panel(ax, depth: pd.DataFrame, asymptotics, laws, color) -> None:
    """Pre-LN's J^{L,0} at the model's own N on log-log axes with the zeta_- fit and law."""
    variant = Variant("ln")
    part = _select(depth, variant).sort_values("depth")
    if part.empty:
        return
    rows = _select(asymptotics, variant)
    n = part["n_tokens"].iloc[0]
    fit = rows[(rows["n_tokens"] == n) & (rows["quantity"] == "zeta_minus")].iloc[0]
    law = _select(laws, variant).sort_values("depth")
    label = (
        f"{_label(variant)}: ζ₋ fit {fit['fitted']:.3f} (two-mode {fit['two_mode_fit']:.3f}),"
        f" ζ₋ = {fit['predicted']:.3f}"
    )
    ax.plot(part["depth"], np.exp(part["log_apjn"]), color=color, label=label)
    ax.plot(law["depth"], np.exp(law["fitted_log_apjn"]), ":", color=color, lw=2.2)
    ax.plot(law["depth"], np.exp(law["predicted_log_apjn"]), "--", color=color, lw=1)
    ax.legend(loc="upper left", frameon=False, fontsize=8)
    ax.set_title(f"pre-LN, N = {n}: J between $L^{{\\zeta_-}}$ and $L^{{\\zeta_+}}$")


def _crossover_label(n: int, crossovers: pd.DataFrame) -> str:
    """N, then per closure the generic-input crossover depth and the rho = 1 one."""
    parts = []
    for row in crossovers[crossovers["n_tokens"] == n].itertuples():
        generic = (
            "none"
            if np.isnan(row.generic_crossover_depth)
            else f"{row.generic_crossover_depth:.2g}"
        )
        parts.append(f"{row.closure} {generic} (ρ=1: {row.crossover_depth:.2g})")
    return f"N = {n}: " + ", ".join(parts)


def _preln_token_panel(ax, tokens: pd.DataFrame, crossovers: pd.DataFrame) -> None:
    """Pre-LN's local exponent of every token count N against L / N^3 in both closures, each
    N's zeta_+ labelled, its generic-input crossover marked (x) and listed in the legend."""
    counts = sorted(tokens["n_tokens"].unique())
    palette = dict(zip(counts, seaborn().color_palette("viridis", len(counts)), strict=True))
    x_max = tokens["scaled_depth"].max()
    for n in counts:
        for closure, style in CLOSURE_STYLES.items():
            rows = tokens[(tokens["n_tokens"] == n) & (tokens["closure"] == closure)]
            rows = rows.sort_values("depth")
            label = _crossover_label(n, crossovers) if closure == "released" else None
            ax.plot(rows["scaled_depth"], rows["local_slope"], style, color=palette[n], label=label)
            cross = crossovers[(crossovers["n_tokens"] == n) & (crossovers["closure"] == closure)]
            depth = cross["generic_crossover_depth"].iloc[0]
            if not np.isnan(depth):
                y = np.interp(depth, rows["depth"], rows["local_slope"])
                ax.plot(depth / n**3, y, "x", color=palette[n], ms=7)
        zeta_plus = tokens[(tokens["n_tokens"] == n) & (tokens["closure"] == "released")]
        value = zeta_plus["zeta_plus"].iloc[0]
        ax.axhline(value, color=palette[n], ls=":", lw=0.8)
        ax.text(
            x_max,
            value,
            f"ζ₊ = {value:.3f} (N = {n}) ",
            ha="right",
            va="bottom",
            fontsize=7,
            color=palette[n],
        )
    if counts:
        exact_plus = tokens.loc[tokens["closure"] == "exact", "zeta_plus"].iloc[0]
        ax.axhline(exact_plus, color="black", ls="-.", lw=0.8)
        ax.text(
            x_max,
            exact_plus,
            f"exact closure: ζ₊ = {exact_plus:g} at every N ",
            ha="right",
            va="top",
            fontsize=7,
        )
        zeta_minus = tokens["zeta_minus"].iloc[0]
        ax.axhline(zeta_minus, color="grey", ls=":", lw=1.0)
        ax.text(
            tokens["scaled_depth"].min(), zeta_minus, " ζ₋", va="bottom", fontsize=8, color="grey"
        )
    ax.set_xscale("log")
    ax.set_xlabel(r"$L / N^3$")
    ax.set_ylabel(r"pre-LN local exponent $d\ln J / d\ln L$")
    ax.set_title("local exponent; x: crossover from the generic input")
    ax.legend(
        frameon=False,
        fontsize=7,
        loc="lower right",
        title="generic-input crossover depth",
        title_fontsize=7,
    )


def _measured_panel(ax, measured: pd.DataFrame, colors: dict) -> None:
    """J^{L,0} at the measured depths, log-log: mean over initializations and inputs (dots,
    bars: their spread) and the theory seeded with each input's statistics (lines)."""
    for variant in _variants(measured):
        stats = _sample_mean(_select(measured, variant), "depth", ["apjn", "apjn_theory"])
        color = colors[(variant.norm, variant.alpha)]
        ax.plot(stats["depth"], stats["apjn_theory_mean"], color=color, label=_label(variant))
        ax.errorbar(
            stats["depth"],
            stats["apjn_mean"],
            yerr=stats["apjn_std"].fillna(0),
            fmt="o",
            ms=3,
            color=color,
            mfc="white",
            elinewidth=0.7,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("depth L")
    ax.set_ylabel(r"measured $J^{L,0}$")
    ax.set_title("measured (dots) vs theory (lines)")
    ax.legend(frameon=False, fontsize=8, loc="upper left")


def plot_depth_scaling(
    depth: pd.DataFrame,
    asymptotics: pd.DataFrame,
    laws: pd.DataFrame,
    measured: pd.DataFrame,
    tokens: pd.DataFrame,
    crossovers: pd.DataFrame,
) -> Figure:
    """A4: end-to-end J^{L,0} vs L. Left: pre-LN on log-log axes with the zeta_- law, and its
    local exponent against L / N^3 for several token counts in both closures (the crossover
    to zeta_+). Middle:
    the saturating maps as ln J vs sqrt(L) and their local slopes. Right: the measured points
    at the measured depths with the theory."""
    set_style()
    variants = _variants(depth)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    fig = new_figure(figsize=(15, 7.5), layout="constrained")
    axes = fig.subplot_mosaic([["pow", "sqrt", "meas"], ["tokens", "sqrt_local", "meas"]])
    _preln_power_panel(axes["pow"], depth, asymptotics, laws, colors.get(("ln", None)))
    _preln_token_panel(axes["tokens"], tokens, crossovers)
    for variant in variants:
        if variant.norm == "ln":
            continue
        part = _select(depth, variant).sort_values("depth")
        law = _select(laws, variant).sort_values("depth")
        x, log_j = part["depth"].to_numpy(float), part["log_apjn"].to_numpy()
        color = colors[(variant.norm, variant.alpha)]
        fit = _fit(asymptotics, variant, "sqrt_depth_slope")
        label = f"{_label(variant)}: slope fit {fit['fitted']:.3f}, theory {fit['predicted']:.3f}"
        root = np.sqrt(law["depth"])
        axes["sqrt"].plot(np.sqrt(x), log_j, color=color, label=label)
        axes["sqrt"].plot(root, law["fitted_log_apjn"], ":", color=color, lw=2.2)
        axes["sqrt"].plot(root, law["predicted_log_apjn"], "--", color=color, lw=1.0)
        axes["sqrt_local"].plot(np.sqrt(x), part["local_slope"], color=color)
        axes["sqrt_local"].axhline(fit["predicted"], color=color, ls="--", lw=1.0)
    _measured_panel(axes["meas"], measured[measured["sweep"] == "depth"], colors)
    axes["pow"].set_xscale("log")
    axes["pow"].set_yscale("log")
    axes["pow"].set_xlabel("depth L")
    axes["pow"].set_ylabel(r"$J^{L,0}$")
    axes["sqrt"].set_ylabel(r"$\ln J^{L,0}$")
    axes["sqrt"].set_title(r"saturating maps: $\ln J \propto \alpha\sqrt{L}$")
    axes["sqrt_local"].set_xlabel(r"$\sqrt{L}$")
    axes["sqrt_local"].set_ylabel(r"local slope $d\ln J / d\sqrt{L}$")
    if axes["sqrt"].get_lines():
        axes["sqrt"].legend(loc="upper left", frameon=False, fontsize=8)
    fig.text(
        0.5,
        -0.02,
        "solid: mean-field recursion; dotted: least-squares fit (asymptotics.csv); dashed: "
        "closed form (pre-LN: two-mode model; saturating maps: sqrt-depth law)",
        ha="center",
        fontsize=8,
    )
    return fig


def plot_finite_n(compare: pd.DataFrame) -> Figure:
    """A10: measured/theory J^{b,0} of deep pre-LN models at few tokens for both closures, one
    panel per input; mean over initializations with bootstrap bars."""
    set_style()
    inputs = list(dict.fromkeys(compare["input"]))
    counts = sorted(compare["n_tokens"].unique())
    palette = dict(zip(counts, seaborn().color_palette("viridis", len(counts)), strict=True))
    fig = new_figure(figsize=(5 * len(inputs), 4.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(inputs), sharey=True))
    for ax, kind in zip(axes, inputs, strict=True):
        for n in counts:
            rows = compare[(compare["input"] == kind) & (compare["n_tokens"] == n)]
            rows = rows.sort_values("block")
            for k, (closure, style) in enumerate(CLOSURE_STYLES.items()):
                ratio = rows[f"ratio_{closure}"]
                bars = [ratio - rows[f"ratio_{closure}_lo"], rows[f"ratio_{closure}_hi"] - ratio]
                ax.errorbar(
                    rows["block"] * (1.04 if k else 0.96),
                    ratio,
                    yerr=bars,
                    fmt="o" + style,
                    ms=4,
                    color=palette[n],
                    mfc=palette[n] if closure == "exact" else "white",
                    capsize=2,
                    label=f"N = {n}, {closure}",
                )
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("block b")
        ax.set_title(f"{kind} tokens (d = {int(compare['width'].iloc[0])})")
    axes[0].set_ylabel(r"measured / theory $J^{b,0}$")
    axes[-1].legend(frameon=False, fontsize=8)
    return fig


def _sample_mean(part: pd.DataFrame, by: str, columns: list[str]) -> pd.DataFrame:
    """Mean and std over samples of `columns`, per value of `by`."""
    stats = part.groupby(by)[columns].agg(["mean", "std"])
    stats.columns = [f"{c}_{s}" for c, s in stats.columns]
    return stats.reset_index()


def _ratio_spread(part: pd.DataFrame, by: str, theory: str = "apjn_theory") -> pd.DataFrame:
    """Per value of `by`: mean, min and max of measured/theory over the curves (each
    initialization and sample its own ratio), so that single curves' deviations stay visible
    where the means hide them."""
    ratio = (part["apjn"] / part[theory]).groupby(part[by]).agg(["mean", "min", "max"])
    return ratio.reset_index()


def _ratio_panel(ax, stats: pd.DataFrame, by: str, color, marker: str = "o") -> None:
    """Measured/theory on a log axis: the mean (line and dots) inside the range of the curves
    (band), and a reference line at 1."""
    ax.fill_between(stats[by], stats["min"], stats["max"], color=color, alpha=0.18, lw=0)
    ax.plot(stats[by], stats["mean"], color=color, marker=marker, ms=3, lw=1.0)
    ax.axhline(1.0, color="0.4", lw=0.8, ls=":")
    ax.set_yscale("log")
    plain = matplotlib_ticker().FuncFormatter(lambda value, _: f"{value:.3g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)


def plot_permsym(curves: pd.DataFrame) -> Figure:
    """A1: measured APJN (dots: mean over samples, bars: spread) against the theory (lines) on
    the permutation-symmetric input, backward J^{L,b} and forward J^{b,0}."""
    set_style()
    curves = curves[curves["input"] == "equiangular"]
    if curves.empty:
        raise ValueError("A1 needs equiangular-input rows; measured_curves.csv has none")
    variants = _variants(curves)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    fig = new_figure(figsize=(10, 7.2), layout="constrained")
    grid = fig.subplots(2, 2, sharex="col", sharey="row", height_ratios=(3, 2))
    axes = grid[0]
    for col, direction in enumerate(("backward", "forward")):
        ax = axes[col]
        for variant in variants:
            part = _select(curves, variant)
            part = part[part["direction"] == direction]
            stats = _sample_mean(part, "block", ["apjn", "apjn_theory"])
            color = colors[(variant.norm, variant.alpha)]
            _ratio_panel(grid[1, col], _ratio_spread(part, "block"), "block", color)
            ax.plot(
                stats["block"],
                stats["apjn_theory_mean"],
                color=color,
                ls=NORM_LINESTYLES[variant.norm],
                label=_label(variant),
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
        grid[1, col].set_xlabel("block b")
    depth = int(curves["depth"].iloc[0])
    axes[0].set_title(f"backward $J^{{L,b}}$ (L = {depth})")
    axes[1].set_title("forward $J^{b,0}$")
    axes[0].set_ylabel("APJN")
    grid[1, 0].set_ylabel("measured / theory\n(line: mean; band: range of the curves)")
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


def _images_panel(ax, rows: pd.DataFrame, color) -> None:
    """One variant and direction: the mean over images of the measured curve (dots) and of
    both closures (solid: (q, p), dashed: full Gram)."""
    means = rows.groupby("block")[["apjn", "apjn_theory", "apjn_theory_gram"]].mean()
    ax.plot(means.index, means["apjn_theory"], color=color, lw=1.2, label="(q, p) closure")
    ax.plot(means.index, means["apjn_theory_gram"], "--", color=color, lw=1.0, label="full Gram")
    ax.plot(means.index, means["apjn"], "o", color=color, ms=3, mfc="white", label="measured")
    ax.set_yscale("log")


def plot_images(curves: pd.DataFrame) -> Figure:
    """A2: on natural images, the mean over images of the measured curve against both closures
    (top of each pair of rows) and measured/theory per image (below: mean and range over the
    images, solid (q, p), dashed full Gram), backward J^{L,b} and forward from the source
    block."""
    set_style()
    curves = curves[curves["input"] == "images"]
    if curves.empty:
        raise ValueError("A2 needs image-input rows; measured_curves.csv has none")
    variants = _variants(curves)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    fig = new_figure(figsize=(3.0 * len(variants) + 1, 10.5), layout="constrained")
    axes = fig.subplots(
        4, len(variants), sharex="col", sharey="row", squeeze=False, height_ratios=(3, 2, 3, 2)
    )
    for col, variant in enumerate(variants):
        part, color = _select(curves, variant), colors[(variant.norm, variant.alpha)]
        for row, direction in ((0, "backward"), (2, "forward")):
            rows = part[part["direction"] == direction]
            _images_panel(axes[row, col], rows, color)
            _ratio_panel(axes[row + 1, col], _ratio_spread(rows, "block"), "block", color)
            gram = _ratio_spread(rows, "block", "apjn_theory_gram").dropna()
            axes[row + 1, col].plot(gram["block"], gram["mean"], "--", color=color, lw=1.0)
        axes[0, col].set_title(_label(variant))
        axes[3, col].set_xlabel("block b")
    source = int(curves.loc[curves["direction"] == "forward", "source_block"].iloc[0])
    axes[0, 0].set_ylabel("backward $J^{L,b}$")
    axes[2, 0].set_ylabel(f"forward $J^{{b,{source}}}$")
    for row in (1, 3):
        axes[row, 0].set_ylabel("measured / theory")
    axes[0, 0].legend(frameon=False, fontsize=7)
    fig.suptitle(
        "natural images: mean over images (dots: measured; solid: theory seeded with each "
        "image's (q, p); dashed: full-Gram closure);\nbelow each: measured / theory per image "
        "(line: mean, band: range over images and initializations)"
    )
    return fig


REGIONS = (EARLY, "shallow", "middle", "deep")


def plot_gmfe(agreement: pd.DataFrame) -> Figure:
    """A3: GMFE of measured vs theory by depth region, one dot per (sample, model)."""
    set_style()
    sns = seaborn()
    full = agreement[agreement["gmfe_gram"].notna()].assign(input="images, full-Gram")
    table = pd.concat([agreement, full.assign(gmfe=full["gmfe_gram"])], ignore_index=True)
    table["model"] = [
        variant_label(n, None if pd.isna(a) else float(a))
        for n, a in zip(table["norm"], table["alpha"], strict=True)
    ]
    order = [_label(v) for v in _variants(table)]
    colors = variant_colors([(v.norm, v.alpha) for v in _variants(table)])
    palette = {_label(v): colors[(v.norm, v.alpha)] for v in _variants(table)}
    kinds = ("equiangular", "images", "images, full-Gram")
    inputs = [i for i in kinds if i in set(table["input"])]
    fig = new_figure(figsize=(5.0 * len(inputs) + 1, 7), layout="constrained")
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
                order=[r for r in REGIONS if r in set(part["region"])],
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


WIDTH_REGION_COLORS = {EARLY: "0.6", "shallow": "#9ecae1", "middle": "#3182bd", "deep": "#08306b"}


def _closure(excess: pd.DataFrame, region: str, closure: str) -> pd.DataFrame:
    rows = excess[(excess["region"] == region) & (excess["closure"] == closure)]
    return rows.sort_values("width")


def _slope_label(slopes: pd.DataFrame, region: str) -> str:
    """'deep: slope -0.71 [-0.93, -0.52]' from the fitted full-Gram slope and its bootstrap
    interval; the region alone without a fit."""
    fit = slopes[(slopes["region"] == region) & (slopes["closure"] == "gram")]
    if fit.empty or fit["slope"].isna().all():
        return region
    row = fit.iloc[0]
    return f"{region}: slope {row['slope']:.2f} [{row['slope_lo']:.2f}, {row['slope_hi']:.2f}]"


def plot_width_scan(excess: pd.DataFrame, slopes: pd.DataFrame) -> Figure:
    """A9: GMFE - 1 of the image curves against model width per depth region, full-Gram closure
    (solid, with the fitted slope of width_slopes.csv and its interval in the legend) and (q, p)
    closure (dashed), a 1/d guide through the compared blocks' first width."""
    set_style()
    variants = _variants(excess)
    fig = new_figure(figsize=(10, 3.6 * len(variants) + 0.6), layout="constrained")
    axes = fig.subplots(len(variants), 2, sharex=True, squeeze=False)
    widths = np.sort(excess["width"].unique())
    for row, variant in enumerate(variants):
        for col, direction in enumerate(("backward", "forward")):
            ax = axes[row, col]
            part = _select(excess, variant)
            part = part[part["direction"] == direction]
            fits = _select(slopes, variant)
            fits = fits[fits["direction"] == direction]
            for region in [r for r in REGIONS if r in set(part["region"])]:
                full, color = _closure(part, region, "gram"), WIDTH_REGION_COLORS[region]
                plain = _closure(part, region, "qp")
                ax.errorbar(
                    full["width"],
                    full["excess_mean"],
                    yerr=[full["excess_mean"] - full["excess_min"],
                          full["excess_max"] - full["excess_mean"]],
                    color=color, marker="o", ms=4, capsize=2, label=_slope_label(fits, region),
                )  # fmt: skip
                ax.plot(plain["width"], plain["excess_mean"], "--", color=color, marker="x", ms=4)
            compared = _closure(part, COMPARED, "gram")
            anchor = compared["excess_mean"]
            if anchor.notna().any() and anchor.max() > 0:
                at = compared["width"].to_numpy(dtype=float)
                ax.plot(at, anchor.iloc[0] * at[0] / at, ":", color="black", lw=1, label="∝ 1/d")
            ax.axhline(0.05, color="grey", ls="--", lw=0.8)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(widths, [str(w) for w in widths])
            ax.xaxis.set_minor_locator(matplotlib_ticker().NullLocator())
            ax.set_title(f"{_label(variant)}, {direction}")
            ax.set_ylabel("GMFE − 1 (measured vs theory)")
            ax.legend(frameon=False, fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("model width d")
    fig.suptitle(
        "natural images: agreement against width (solid: full-Gram closure, bars: spread of "
        "the initializations; dashed: (q, p) closure; grey dashed: GMFE = 1.05)",
        fontsize=10,
    )
    return fig


def _ratio_bars(ax, points: pd.DataFrame, by: str, color) -> None:
    """The bootstrap interval of the mean measured/theory at each point (sensitivity_ratios.csv)."""
    bars = [points["ratio"] - points["ratio_lo"], points["ratio_hi"] - points["ratio"]]
    ax.errorbar(points[by], points["ratio"], yerr=bars, fmt="none", color=color, capsize=3)


def plot_sensitivity(table: pd.DataFrame, ratios: pd.DataFrame) -> Figure:
    """A5: end-to-end J^{L,0} against alpha_0 and against the init multipliers: theory seeded
    with the measured input statistics (lines) and measurement (dots, mean over samples); below,
    measured/theory with the range of the single curves and the bootstrap interval of the
    mean."""
    set_style()
    sweeps = [
        ("alpha", r"$\alpha_0$"),
        ("attn_mult", "attn_mult (mlp_mult = 1)"),
        ("mlp_mult", "mlp_mult (attn_mult = 1)"),
    ]
    fig = new_figure(figsize=(14, 7.0), layout="constrained")
    grid = fig.subplots(2, 3, sharex="col", sharey="row", height_ratios=(3, 2))
    axes = grid[0]
    for col, (sweep, xlabel) in enumerate(sweeps):
        ax = axes[col]
        part = table[table["sweep"] == sweep]
        norms = ["derf", "dyt"] if sweep == "alpha" else ["ln", "derf"]
        for norm in norms:
            rows = part[part["norm"] == norm]
            if rows.empty:
                continue  # a norm this table does not sweep: its panel draws the others
            x = "alpha" if sweep == "alpha" else sweep
            stats = _sample_mean(rows, x, ["apjn", "apjn_theory"])
            if sweep == "alpha":
                color, label = NORM_COLORS[norm], NORM_LABELS[norm]
            else:
                alpha = rows["alpha"].iloc[0]
                variant = Variant(norm, None if pd.isna(alpha) else float(alpha))
                color, label = NORM_COLORS[norm], _label(variant)
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
            _ratio_panel(grid[1, col], _ratio_spread(rows, x), x, color)
            points = ratios[(ratios["sweep"] == sweep) & (ratios["norm"] == norm)]
            _ratio_bars(grid[1, col], points.sort_values(x), x, color)
        ax.set_xscale("log")
        ax.set_yscale("log")
        values = sorted(part["alpha" if sweep == "alpha" else sweep].dropna().unique())
        ax.set_xticks(values, [f"{v:g}" for v in values])
        ax.xaxis.set_minor_locator(matplotlib_ticker().NullLocator())
        grid[1, col].set_xlabel(xlabel)
        ax.legend(frameon=False, fontsize=8)
    axes[0].set_ylabel("end-to-end APJN $J^{L,0}$")
    grid[1, 0].set_ylabel("measured / theory\n(line: mean; bars: 95 % CI; band: range)")
    depth, width = int(table["depth"].iloc[0]), int(table["width"].iloc[0])
    fig.suptitle(f"sensitivity of the end-to-end APJN to init (d = {width}, L = {depth})")
    return fig


def _init_band(part: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per block: the min and max over initializations of the per-initialization mean."""
    per_init = part.groupby(["block", "init_seed"])[column].mean()
    return per_init.groupby("block").agg(["min", "max"]).reset_index()


def plot_token_stats(curves: pd.DataFrame) -> Figure:
    """A6: token statistics q_b and p_b / q_b along depth: theory (lines; thin dashed: with the
    attention self-term) vs measured (dots: mean over initializations and inputs; band: range
    of the per-initialization means), for the permutation-symmetric input and for images."""
    set_style()
    curves = curves[curves["direction"] == "backward"]
    if curves.empty:
        raise ValueError("A6 needs backward-direction rows; measured_curves.csv has none")
    variants = _variants(curves)
    colors = variant_colors([(v.norm, v.alpha) for v in variants])
    inputs = [i for i in ("equiangular", "images") if i in set(curves["input"])]
    fig = new_figure(figsize=(10, 3.8 * len(inputs)), layout="constrained")
    axes = fig.subplots(len(inputs), 2, sharex=True, squeeze=False)
    for row, kind in enumerate(inputs):
        part = curves[curves["input"] == kind].assign(
            rho=lambda t: t["p"] / t["q"],
            rho_theory=lambda t: t["p_theory"] / t["q_theory"],
            rho_theory_self=lambda t: t["p_theory_self"] / t["q_theory_self"],
            rho_theory_gram=lambda t: t["p_theory_gram"] / t["q_theory_gram"],
        )
        for variant in variants:
            rows = _select(part, variant)
            names = [f"{s}{t}" for s in ("q", "rho") for t in ("", "_theory", "_theory_self",
                                                                    "_theory_gram")]  # fmt: skip
            stats = _sample_mean(rows, "block", names)
            color = colors[(variant.norm, variant.alpha)]
            for col, name in enumerate(("q", "rho")):
                ax = axes[row, col]
                ax.plot(
                    stats["block"],
                    stats[f"{name}_theory_mean"],
                    color=color,
                    ls=NORM_LINESTYLES[variant.norm],
                    label=_label(variant),
                )
                ax.plot(
                    stats["block"], stats[f"{name}_theory_self_mean"], "--", color=color, lw=0.7
                )
                ax.plot(stats["block"], stats[f"{name}_theory_gram_mean"], ":", color=color, lw=1.2)
                band = _init_band(rows, name)
                ax.fill_between(band["block"], band["min"], band["max"], color=color, alpha=0.2)
                ax.plot(stats["block"], stats[f"{name}_mean"], "o", color=color, ms=3, mfc="white")
        axes[row, 0].set_yscale("log")
        axes[row, 0].set_ylabel(f"{kind}: $q_b$")
        axes[row, 1].set_ylabel(f"{kind}: $p_b / q_b$")
    for ax in axes[-1]:
        ax.set_xlabel("block b")
    axes[0, 1].legend(
        frameon=False,
        fontsize=8,
        title="lines: theory (dashed: + self-term, dotted: full-Gram)\n"
        "dots: measured, band: initializations",
        title_fontsize=8,
    )
    fig.suptitle("token statistics along depth (CLS excluded)")
    return fig


_WINDOW_ROWS = (
    ("best_loss", "best final loss over rates"),
    ("window_rates", "rates within tolerance of the best"),
    ("events", "instability events (all runs)"),
)
_MULT_STYLES = ("-", "--", ":", "-.")


def _window_panel(ax, rows: pd.DataFrame, column: str) -> None:
    """One depth's configurations: Derf and DyT against α₀ (one line per init multiplier),
    pre-LN as a horizontal line per multiplier."""
    mults = sorted(rows["attn_mult"].unique())
    for norm, part in rows.groupby("norm"):
        for k, mult in enumerate(mults):
            line = part[part["attn_mult"] == mult].sort_values("alpha")
            style = {"color": NORM_COLORS[norm], "ls": _MULT_STYLES[k % len(_MULT_STYLES)]}
            if norm == "ln":
                ax.axhline(line[column].iloc[0], lw=1.2, **style)
            else:
                ax.plot(line["alpha"], line[column], marker=NORM_MARKERS[norm], ms=4, **style)
    ax.set_xscale("log")


def plot_trainability(windows: pd.DataFrame) -> Figure:
    """A7: per depth (columns), the best final loss over rates, the window of rates near it
    and the instability events of every configuration, against α₀ (pre-LN: horizontal)."""
    set_style()
    windows = windows.assign(events=windows[["diverged", "loss_spikes", "grad_blowups"]].sum(1))
    depths = sorted(windows["depth"].unique())
    fig = new_figure(figsize=(3.6 * len(depths) + 1, 8), layout="constrained")
    axes = fig.subplots(len(_WINDOW_ROWS), len(depths), squeeze=False, sharex=True, sharey="row")
    finite = windows["best_loss"].replace(np.inf, np.nan)
    for j, depth in enumerate(depths):
        rows = windows[windows["depth"] == depth].assign(best_loss=finite)
        for i, (column, label) in enumerate(_WINDOW_ROWS):
            _window_panel(axes[i, j], rows, column)
            axes[i, 0].set_ylabel(label)
        axes[0, j].set_title(f"L = {depth}", fontsize=10)
        axes[-1, j].set_xlabel(r"$\alpha_0$")
    mults = sorted(windows["attn_mult"].unique())
    handles = [legend_line(color=NORM_COLORS[n], marker=NORM_MARKERS[n], label=NORM_LABELS[n])
               for n in NORM_ORDER if n in set(windows["norm"])]  # fmt: skip
    handles += [legend_line(color="0.3", ls=_MULT_STYLES[k % len(_MULT_STYLES)],
                       label=f"init mult {m:g}") for k, m in enumerate(mults)]  # fmt: skip
    axes[0, -1].legend(handles=handles, frameon=False, fontsize=8)
    fig.suptitle("tuning windows: best loss over peak rates, the rates near it, instability")
    return fig


def _log10_axis(axis) -> None:
    axis.set_major_formatter(lambda v, _: f"$10^{{{v:g}}}$")


def plot_trainability_theory(
    windows: pd.DataFrame, pairs: pd.DataFrame, table: pd.DataFrame
) -> Figure:
    """A8: every configuration's best loss and window against the theory's J^{L,0} of its
    models at init, J-matched pairs joined by grey lines (left, middle); the theory against
    the Hutchinson estimate of J^{L,0}, one dot per built model (right)."""
    set_style()
    fig = new_figure(figsize=(15, 4.4), layout="constrained")
    axes = fig.subplots(1, 3)
    log10 = np.log(10)
    for ax, (column, label) in zip(axes, _WINDOW_ROWS[:2], strict=False):
        first, second = pairs[f"{column}_first"], pairs[f"{column}_second"]
        for row in pairs.assign(a=first, b=second).itertuples(index=False):
            ax.plot([row.log_apjn_first / log10, row.log_apjn_second / log10], [row.a, row.b],
                    color="0.7", lw=0.6, zorder=1)  # fmt: skip
        for (norm, mult), part in windows.groupby(["norm", "attn_mult"]):
            filled = mult == windows["attn_mult"].min()
            color = NORM_COLORS[norm]
            ax.scatter(part["log_apjn"] / log10, part[column].replace(np.inf, np.nan),
                       marker=NORM_MARKERS[norm], s=18 + 4 * part["depth"], zorder=2,
                       facecolors=color if filled else "none", edgecolors=color)  # fmt: skip
        ax.set_xlabel(r"theory $J^{L,0}$ at init")
        _log10_axis(ax.xaxis)
        ax.set_ylabel(label)
    models = table.drop_duplicates(["norm", "alpha", "attn_mult", "depth", "train_seed"])
    theory, measured = models["theory_log_apjn"] / log10, models["measured_log_apjn"] / log10
    for norm, part in models.groupby("norm"):
        axes[2].scatter(theory[part.index], measured[part.index], marker=NORM_MARKERS[norm],
                        color=NORM_COLORS[norm], s=22, label=NORM_LABELS[norm])  # fmt: skip
    span = [min(theory.min(), measured.min()), max(theory.max(), measured.max())]
    axes[2].plot(span, span, color="0.5", lw=0.8, ls="--", label="measured = theory")
    axes[2].set_xlabel(r"theory $J^{L,0}$")
    axes[2].set_ylabel(r"measured $J^{L,0}$ (Hutchinson, CLS included)")
    _log10_axis(axes[2].xaxis)
    _log10_axis(axes[2].yaxis)
    axes[2].legend(frameon=False, fontsize=8)
    fig.suptitle(
        "trainability against the theory's end-to-end APJN (filled: init mult "
        f"{windows['attn_mult'].min():g}, open: larger; size: depth; grey: J-matched pairs)"
    )
    return fig


# --- the registry's declarations of Study A's figures (see transformer_stability/registry.py) ---


def _variant_list(variants: list[dict]) -> str:
    """Config variants as a report label: 'pre-LN, Derf α=1, DyT α=1'."""
    return ", ".join(variant_label(v["norm"], v.get("alpha")) for v in variants)


def _models(config: dict) -> str:
    return _variant_list(config["apjn"]["variants"])


def _labels(code: str, quantity: str, input_kind: str | Callable[[dict], str], models=_models):
    """The report labels of a figure; `input_kind` is a label or a function of the config."""
    return lambda config: {
        "figure": code,
        "quantity": quantity,
        "models": models(config),
        "input": input_kind(config) if callable(input_kind) else input_kind,
    }


def _task(config: dict) -> str:
    return f"{config['apjn']['train']['data']['source']} task"


def _trained(config: dict) -> str:
    train = config["apjn"]["train"]
    norms = ", ".join(NORM_LABELS[norm] for norm in train["norms"])
    return f"pre-LN, {norms} (α₀ = {', '.join(f'{a:g}' for a in train['alphas'])})"


FIGURES = (
    FigureSpec(
        name="apjn_theory_curves",
        code="A1-theory",
        study="apjn",
        tables={"curves": "results/apjn/theory_curves.csv"},
        plot=plot_theory_curves,
        caption="""\
A1 (theory). Mean-field (infinite-width) APJN at initialization for a ViT of depth
{{ config["apjn"]["model"]["depth"] }} with
permutation-symmetric input (q0 = {{ config["apjn"]["input"]["q0"] }}, p0 =
{{ config["apjn"]["input"]["p0"] }}). Left: backward curve J^{L,b} (sensitivity of the last
block output to block b); right: forward curve J^{b,0}. Pre-LN (black) grows as a power law; the
saturating maps Derf (viridis, by alpha) and DyT (orange, dashed) grow as stretched exponentials
whose rate rises with alpha. Data: results/apjn/theory_curves.csv.
""",
        labels=_labels("A1-theory", "APJN vs block (mean-field theory)", "permutation-symmetric"),
    ),
    FigureSpec(
        name="apjn_permsym",
        code="A1",
        study="apjn",
        tables={"curves": "results/apjn/measured_curves.csv"},
        plot=plot_permsym,
        caption="""\
{% set model = config["apjn"]["model"] -%}
{% set heads = config["apjn"]["measure"]["equiangular_heads"] -%}
{% set width = model["width"] if heads is none else heads * (model["width"] // model["heads"]) -%}
A1. APJN of random-init timm ViTs (width {{ width }}, depth
{{ config["apjn"]["model"]["depth"] }}, ReLU MLPs, eval mode, block weights drawn with
init_std = {{ config["apjn"]["model"]["init_std"] }}: ViT-B's mean-field constants when
"vit_b") on permutation-symmetric input written into block 0 (q0 =
{{ config["apjn"]["input"]["q0"] }}, p0 = {{ config["apjn"]["input"]["p0"] }}). Dots:
Hutchinson estimates (mean over {{ config["apjn"]["measure"]["inits"] }} initializations and
their input samples, bars: the spread over all of them); lines: the infinite-width recursion
seeded with the measured (q, p) at the source block and the mean-field constants read off the
built weights. Left: backward J^{L,b}, right: forward J^{b,0}. Bottom: measured / theory of
each curve (one per initialization and sample); line: their mean, band: their range, dotted: 1.
Data: results/apjn/measured_curves.csv (input = equiangular).
""",
        labels=_labels("A1", "APJN vs block", "permutation-symmetric"),
    ),
    FigureSpec(
        name="apjn_images",
        code="A2",
        study="apjn",
        tables={"curves": "results/apjn/measured_curves.csv"},
        plot=plot_images,
        caption="""\
A2. Per-image APJN curves for natural images ({{ config["apjn"]["images"]["source"] }} source,
{{ config["apjn"]["images"]["count"] }} images per initialization,
{{ config["apjn"]["measure"]["inits"] }} initializations) fed through the patch embedding.
First and third rows: the mean over images and initializations of the measured curves (dots),
of the theory seeded with each image's own token statistics (q, p) at the source block (solid)
and of the full-Gram closure seeded with its whole token Gram matrix (dashed; CLS included;
pre-LN and Derf only, tanh has no closed pair kernel). Second and fourth rows: measured / theory
of each image's curve; line: the mean, band: the range over images and initializations (the
(q, p) closure), dashed: the mean for the full-Gram closure; dotted: 1. Top pair: backward
J^{L,b}; bottom pair: forward from block
{{ config["apjn"]["images"]["forward_source_block"] }}. The theory and measurement part in the
first blocks of the backward curves: the CLS token (cls_token drawn with std 1e-6 plus the
position embedding) has a tiny variance q, so its normalization Jacobian (~1/sqrt(q)) is huge,
and the per-token q of an image varies so much that mean(1/q_i) is several times 1/mean(q_i),
which the (q, p) closure replaces it with; the full-Gram closure keeps every token's own
variance and removes most of this. As the authors do, the agreement (A3) is measured
from block {{ config["apjn"]["images"]["compare_from_block"] }} backward and from the source
block forward; the earlier backward blocks are reported apart ("early"). Data:
results/apjn/measured_curves.csv (input = images).
""",
        labels=_labels("A2", "per-image APJN vs block", "natural images"),
    ),
    FigureSpec(
        name="apjn_gmfe",
        code="A3",
        study="apjn",
        tables={"agreement": "results/apjn/agreement.csv"},
        plot=plot_gmfe,
        caption="""\
A3. Agreement between measured and theoretical APJN curves: geometric mean fold error GMFE =
exp(mean of abs(ln(measured / theory))) over the blocks of each third of the compared depth
(shallow, middle, deep), one dot per (initialization, sample, model), for both input kinds and
both directions. On images the backward comparison starts at block
{{ config["apjn"]["images"]["compare_from_block"] }}; the blocks before it, where the CLS token's
tiny variance breaks the (q, p) closure (A2), are shown apart as "early". The right column
repeats the image comparison with the full-Gram closure (pre-LN and Derf). The dashed line marks
1.05. Data: results/apjn/agreement.csv (columns gmfe, gmfe_gram).
""",
        labels=_labels("A3", "GMFE by depth region", "both"),
    ),
    FigureSpec(
        name="apjn_depth_scaling",
        code="A4",
        study="apjn",
        tables={
            "depth": "results/apjn/theory_depth.csv",
            "asymptotics": "results/apjn/asymptotics.csv",
            "laws": "results/apjn/depth_laws.csv",
            "measured": "results/apjn/end_to_end.csv",
            "tokens": "results/apjn/preln_tokens.csv",
            "crossovers": "results/apjn/preln_crossovers.csv",
        },
        plot=plot_depth_scaling,
        caption="""\
A4. End-to-end APJN J^{L,0} against depth L from the mean-field recursion (up to
{{ config["apjn"]["theory"]["max_depth"] }} blocks). Top left, log-log: pre-LN at the model's
own N. Its (J, K) recursion, linearised at token correlation 1, has two power laws,
ζ₋ = m/(m + 2a) and ζ₊ = 1 + a/(N(a + m/2)) in the authors' closure (ζ₊ = 1 in the exact
one, results/apjn/preln_crossovers.csv); the start (J, K) = (1, 0) puts weight 1/(N + 1) on
ζ₊ in both, so J grows between L^ζ₋ and L^ζ₊, as L^ζ₋ only far below the crossover. The legend
gives the exponent fitted one decade below the depth where ζ₊ carries 10 % of J, the same fit of
the two-mode closed form, and ζ₋. Bottom left: pre-LN's local exponent against L / N^3 for
N = {{ config["apjn"]["theory"]["token_counts"] | join(", ") }} tokens and the model's own
(solid: the authors' closure; dash-dotted: uniform attention taken exactly; both from
q0 = {{ config["apjn"]["input"]["q0"] }}, p0 = {{ config["apjn"]["input"]["p0"] }}, to
{{ config["apjn"]["theory"]["token_max_depth"] }} blocks). Dotted lines: ζ₋ (grey) and each N's
ζ₊ in the authors' closure, labelled; dash-dotted black: the exact closure's ζ₊. x: the
generic-input crossover, the first depth after the plateau where the local exponent reaches
(ζ₋ + ζ₊)/2; the legend lists it per closure beside the ρ = 1 formula's (none: the plateau
already lies above the midpoint, or the crossover is beyond the computed depth). Which closure
the measurement supports: A10. Middle:
ln J against sqrt(L) for Derf and DyT, a straight line (stretched exponential, subcritical
growth) whose slope is proportional to alpha (dashed: closed-form slope), and its local slope.
Right: J^{L,0} measured in timm ViTs of depth {{ config["apjn"]["depth_scaling"]["max_depth"] }}
at every depth L (the first L blocks of the deep model are an L-block model at init; dots: mean
over {{ config["apjn"]["measure"]["inits"] }} initializations and their inputs, bars: spread)
with the theory seeded by each input's statistics (lines). Data: results/apjn/theory_depth.csv,
asymptotics.csv, preln_tokens.csv, preln_crossovers.csv and end_to_end.csv (sweep "depth").
""",
        labels=_labels("A4", "end-to-end APJN vs depth", "permutation-symmetric"),
    ),
    FigureSpec(
        name="apjn_sensitivity",
        code="A5",
        study="apjn",
        tables={
            "table": "results/apjn/end_to_end.csv",
            "ratios": "results/apjn/sensitivity_ratios.csv",
        },
        plot=plot_sensitivity,
        caption="""\
A5. End-to-end APJN J^{L,0} of the depth-{{ config["apjn"]["model"]["depth"] }} model on
permutation-symmetric input, against the saturating map's alpha_0 (Derf, DyT; left) and against
the init multipliers of the attention (middle) and MLP (right) weights for pre-LN and Derf.
Lines: theory seeded with the measured input statistics; dots: measured (mean over samples and
the {{ config["apjn"]["sensitivity"]["inits"] }} initialization(s) of each point, each
with {{ config["apjn"]["measure"]["probes"] }} Hutchinson probes). Bottom: measured / theory of
each initialization and sample; line: the mean, band: the range, bars: the 95 % bootstrap
interval of the mean (initializations, then samples within each, drawn with replacement),
dotted: 1. Claim A.5 of results/claims.csv compares the spread over the multipliers of Derf with
pre-LN's and reads the ratios. Data: results/apjn/end_to_end.csv (sweeps alpha, attn_mult,
mlp_mult) and results/apjn/sensitivity_ratios.csv.
""",
        labels=_labels(
            "A5",
            "end-to-end APJN vs α₀ and init multipliers",
            "permutation-symmetric",
            models=lambda config: "Derf, DyT (α₀ sweep); pre-LN, Derf (multipliers)",
        ),
    ),
    FigureSpec(
        name="apjn_token_stats",
        code="A6",
        study="apjn",
        tables={"curves": "results/apjn/measured_curves.csv"},
        plot=plot_token_stats,
        caption="""\
A6. Token statistics along depth: the per-token variance q_b and the cross-token correlation
p_b/q_b (CLS excluded), theory (lines: the authors' recursion, which the other figures use; thin
dashed: with the attention self-term, uniform attention averaging each token's own value vector
too, + a (q~ - p~)/N_tot; dotted, images: the full-Gram closure) against measurement (dots:
mean over {{ config["apjn"]["measure"]["inits"] }} initializations and their inputs; band:
range of the per-initialization means, the seed-to-seed spread), for the permutation-symmetric
input (top) and natural images (bottom). Data: results/apjn/measured_curves.csv (columns q,
p, q_theory, p_theory, q_theory_self, p_theory_self, q_theory_gram, p_theory_gram).
""",
        labels=_labels("A6", "token statistics q, p/q vs block", "both"),
    ),
    FigureSpec(
        name="apjn_trainability",
        code="A7",
        study="apjn",
        tables={"windows": "results/apjn/tuning_windows.csv"},
        plot=plot_trainability,
        caption="""\
A7. Tuning windows with the authors' recipe (AdamW, betas (0.9, 0.999), weight decay
{{ config["apjn"]["train"]["weight_decay"] }} on weight matrices only, linear warm-up over
{{ config["apjn"]["train"]["warmup_fraction"] }} of {{ config["apjn"]["train"]["steps"] }} steps
then a constant rate, batch {{ config["apjn"]["train"]["batch_size"] }}) of ViTs of width
{{ config["apjn"]["train"]["model"]["width"] }} with {{ config["apjn"]["train"]["activation"] }}
MLPs, init std {{ config["apjn"]["train"]["model"]["init_std"] }}, on the
{{ config["apjn"]["train"]["data"]["source"] }} task, each configuration (norm, α₀, init
multiplier = attn_mult = mlp_mult, depth) trained at the peak rates
{{ config["apjn"]["train"]["lrs"] | join(", ") }} with
{{ config["apjn"]["train"]["seeds"] }} seeds. Top: the best over rates of the final training
loss (mean over the last 10 % of steps and over seeds; a rate at which a seed diverged counts as
never trained); middle: the number of rates whose loss is within 10 % of that best (the tuning
window); bottom: instability events over all its runs (non-finite loss or gradient, loss spikes
above 1.5 x the lowest smoothed loss so far, gradient norms above 10 x their running mean).
Columns: depth; lines: Derf and DyT against α₀, one style per init multiplier; pre-LN:
horizontal lines. Data: results/apjn/tuning_windows.csv (rule apjn_tuning, from
trainability.csv).
""",
        labels=_labels(
            "A7",
            "best loss over rates, tuning window and instability vs α₀, multiplier, depth",
            _task,
            models=_trained,
        ),
    ),
    FigureSpec(
        name="apjn_trainability_theory",
        code="A8",
        study="apjn",
        tables={
            "windows": "results/apjn/tuning_windows.csv",
            "pairs": "results/apjn/matched_pairs.csv",
            "table": "results/apjn/trainability.csv",
        },
        plot=plot_trainability_theory,
        caption="""\
A8. Every configuration of A7 against the end-to-end APJN J^{L,0} that the mean-field theory
gives for its models at init: the built model's (a, m) read off its weights and (q0, p0) of its
patch embedding of training images (exact at init for ReLU MLPs), mean over seeds. Left: best
final training loss over rates; middle: the tuning window (rates within 10 % of the best);
marker: norm, filled: init multiplier 1, open: larger, size: depth; grey lines join the J-matched
pairs (ln J^{L,0} within 0.1 of each other, different α₀, multiplier or depth). If J^{L,0}
decided trainability, outcomes would order by it and matched pairs would lie flat. Right: the
theory against the Hutchinson estimate of the same J^{L,0} at init (16 training images, every
token); pre-LN's measured value lies far above the theory because the CLS token (std 1e-6 plus
the position embedding) has a tiny variance, so its LayerNorm Jacobian is huge, and the theory
has no CLS channel. Data: results/apjn/tuning_windows.csv, matched_pairs.csv, trainability.csv.
""",
        labels=_labels(
            "A8",
            "best loss and tuning window vs the theory's end-to-end APJN",
            _task,
            models=_trained,
        ),
    ),
    FigureSpec(
        name="apjn_width_scan",
        code="A9",
        study="apjn",
        tables={
            "excess": "results/apjn/width_excess.csv",
            "slopes": "results/apjn/width_slopes.csv",
        },
        plot=plot_width_scan,
        caption="""\
{% set head_dim = config["apjn"]["model"]["width"] // config["apjn"]["model"]["heads"] -%}
A9. What limits the agreement on natural images: the measurement of A2/A3 repeated at model
widths d = {% for h in config["apjn"]["width_scan"]["heads"] %}{{ h * head_dim }}{{ ", " if not
loop.last }}{% endfor %} (head dimension {{ head_dim }}, block weights
drawn with init_std = {{ config["apjn"]["model"]["init_std"] }}, so ViT-B's mean-field constants
at every width when "vit_b"; {{ config["apjn"]["width_scan"]["inits"] }} initializations of
{{ config["apjn"]["images"]["count"] }} images each; the configured width reproduces A3's
models). GMFE - 1 per depth region (compared from block
{{ config["apjn"]["images"]["compare_from_block"] }} backward and from the source block
{{ config["apjn"]["images"]["forward_source_block"] }} forward; "early": the blocks before),
mean over initializations and images, log-log. Solid: full-Gram closure, with the fitted slope
of ln(GMFE - 1) against ln d in the legend and its 95 % bootstrap interval (the
initializations of each width drawn again), and bars spanning the per-initialization means;
dashed: (q, p) closure; dotted: a 1/d guide; grey dashed: GMFE = 1.05. A mismatch that falls
as a power of d (slope -1/2 for the sample-to-sample fluctuations of one finite model, -1 for
the finite-width bias of their mean) vanishes at infinite width, where the theory holds; one
that stays flat is the closure's own error, as in the early blocks, where the CLS token breaks
it (A2). Data: results/apjn/width_excess.csv and width_slopes.csv (rule apjn_width_fit, from
width_agreement.csv).
""",
        labels=_labels(
            "A9",
            "image-input GMFE − 1 vs model width",
            "natural images",
            models=lambda config: _variant_list(config["apjn"]["width_scan"]["variants"]),
        ),
    ),
    FigureSpec(
        name="apjn_finite_n",
        code="A10",
        study="apjn",
        tables={"compare": "results/apjn/finite_n_compare.csv"},
        plot=plot_finite_n,
        caption="""\
A10. Which closure of uniform attention holds at few tokens: J^{b,0} measured in pre-LN timm ViTs
of width {{ config["apjn"]["finite_n"]["width"] }} and depth
{{ config["apjn"]["finite_n"]["depth"] }} (built {{ config["apjn"]["finite_n"]["chunk_blocks"] }}
blocks at a time), over the theory's, for N = {{ config["apjn"]["finite_n"]["token_counts"] |
join(", ") }} tokens (CLS excluded; N + 1 attend). Open markers, solid: the authors' closure
(cross-token term a chi_p, self-term a chi_q / N); filled, dash-dotted: uniform attention taken
exactly (a chi_p N/(N + 1), a chi_q/(N + 1), and the statistics' self-term). Left: identical
tokens (p0 = q0), where uniform attention is exact at any weights; right: the generic input
(p0 = {{ config["apjn"]["input"]["p0"] }}). Mean over {{ config["apjn"]["finite_n"]["inits"] }}
initializations ({{ config["apjn"]["finite_n"]["probes"] }} probes each), each against the
theory with its own (a, m); bars: 95 % bootstrap intervals over initializations. A closure
fits where its bar covers 1 (column verdict). Data: results/apjn/finite_n_compare.csv (from
finite_n.csv).
""",
        labels=_labels(
            "A10",
            "measured / theory APJN at few tokens, both closures",
            "identical and generic tokens",
            models=lambda config: "pre-LN",
        ),
    ),
)
