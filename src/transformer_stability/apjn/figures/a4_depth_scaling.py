"""A4: end-to-end APJN against depth, its laws and the measured points."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.apjn.figures._common import (
    CLOSURE_STYLES,
    _label,
    _sample_mean,
    _variants,
)
from transformer_stability.apjn.figures._labels import _labels
from transformer_stability.apjn.items import Variant
from transformer_stability.apjn.style import variant_colors
from transformer_stability.apjn.tables import (
    Asymptotics,
    DepthLaws,
    EndToEnd,
    PrelnCrossovers,
    PrelnTokens,
    TheoryDepth,
)
from transformer_stability.plotting import FigureSpec, new_figure, sequential_colors, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _fit(asymptotics: pd.DataFrame, variant: Variant, quantity: str) -> pd.Series:
    rows = variant.rows(asymptotics)
    return rows[rows["quantity"] == quantity].iloc[0]


def _preln_power_panel(ax, depth: pd.DataFrame, asymptotics, laws, color) -> None:
    """Pre-LN's J^{L,0} at the model's own N on log-log axes with the zeta_- fit and law."""
    variant = Variant("ln")
    part = variant.rows(depth).sort_values("depth")
    if part.empty:
        return
    rows = variant.rows(asymptotics)
    n = part["n_tokens"].iloc[0]
    fit = rows[(rows["n_tokens"] == n) & (rows["quantity"] == "zeta_minus")].iloc[0]
    law = variant.rows(laws).sort_values("depth")
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
    palette = dict(zip(counts, sequential_colors(len(counts)), strict=True))
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
        stats = _sample_mean(variant.rows(measured), "depth", ["apjn", "apjn_theory"])
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
        part = variant.rows(depth).sort_values("depth")
        law = variant.rows(laws).sort_values("depth")
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


FIGURE = FigureSpec(
    name="apjn_depth_scaling",
    code="A4",
    study="apjn",
    tables={
        "depth": TheoryDepth,
        "asymptotics": Asymptotics,
        "laws": DepthLaws,
        "measured": EndToEnd,
        "tokens": PrelnTokens,
        "crossovers": PrelnCrossovers,
    },
    plot=plot_depth_scaling,
    caption="""\
A4. End-to-end APJN J^{L,0} against depth L from the mean-field recursion (up to
{{ config["apjn"]["theory"]["max_depth"] }} blocks). Top left, log-log: pre-LN at the model's
own N. Its (J, K) recursion, linearised at token correlation 1, has two power laws,
ζ₋ = m/(m + 2a) and ζ₊ = 1 + a/(N(a + m/2)) in the authors' closure (ζ₊ = 1 in the exact
one, the crossovers table); the start (J, K) = (1, 0) puts weight 1/(N + 1) on
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
with the theory seeded by each input's statistics (lines). Measured rows: sweep "depth" of
end_to_end.csv.
""",
    labels=_labels("A4", "end-to-end APJN vs depth", "permutation-symmetric"),
)
