"""A6: token statistics q and p/q along depth, theory against measured."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.apjn.figures._common import _label, _sample_mean, _variants
from transformer_stability.apjn.figures._labels import _labels
from transformer_stability.apjn.style import NORM_LINESTYLES, variant_colors
from transformer_stability.apjn.tables import MeasuredCurves
from transformer_stability.plotting import FigureSpec, new_figure, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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
            rows = variant.rows(part)
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


FIGURE = FigureSpec(
    name="apjn_token_stats",
    code="A6",
    study="apjn",
    tables={"curves": MeasuredCurves},
    plot=plot_token_stats,
    caption="""\
A6. Token statistics along depth: the per-token variance q_b and the cross-token correlation
p_b/q_b (CLS excluded), theory (lines: the authors' recursion, which the other figures use; thin
dashed: with the attention self-term, uniform attention averaging each token's own value vector
too, + a (q~ - p~)/N_tot; dotted, images: the full-Gram closure) against measurement (dots:
mean over {{ config["apjn"]["measure"]["inits"] }} initializations and their inputs; band:
range of the per-initialization means, the seed-to-seed spread), for the permutation-symmetric
input (top) and natural images (bottom). Columns: q, p, q_theory, p_theory, q_theory_self,
p_theory_self, q_theory_gram, p_theory_gram.
""",
    labels=_labels("A6", "token statistics q, p/q vs block", "both"),
)
