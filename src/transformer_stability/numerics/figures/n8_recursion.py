"""N8: the error recursion's bound and typical estimate against the measured error."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.numerics.figures._common import alpha_colors
from transformer_stability.numerics.figures._labels import gpt2_labels
from transformer_stability.numerics.style import SOURCE_COLORS
from transformer_stability.numerics.tables import Gpt2Recursion, RecursionSources
from transformer_stability.plotting import FigureSpec, legend_line, set_style, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def recursion_figure(table: pd.DataFrame, isolated: pd.DataFrame) -> Figure:
    """N8 at page width, one row of four panels per model. Per rounding source alone: the
    typical estimate over the measured error (2-norm, the same norm) and the worst-case bound
    over the measured error (∞-norm), at every add; for the test formats at every α: the
    typical estimate over the measured error; the per-step amplification α·ω_k·Lip_k."""
    set_style()
    models = sorted(table.model.unique())
    colors = alpha_colors(table.alpha)
    fig, axes = subplots(
        len(models),
        4,
        figsize=(7.5, 2.4 * len(models) + 0.9),
        squeeze=False,
    )
    for r, model in enumerate(models):
        runs, alone = table[table.model == model], isolated[isolated.model == model]
        ratio_panels = (
            (axes[r, 0], "typical_rel_l2", "measured_rel_l2", "typical / measured\n(2-norm)"),
            (axes[r, 1], "bound_rel", "measured_rel", "worst-case bound /\nmeasured (∞-norm)"),
        )
        for ax, estimate, measured, title in ratio_panels:
            _source_ratios(ax, alone, estimate, measured)
            ax.set_title(f"each source alone:\n{title}", fontsize=7)
        axes[r, 0].set_ylabel(model, fontsize=8)
        axes[r, 0].axhspan(0.1, 10, color="0.9", zorder=0)
        _format_ratios(axes[r, 2], runs, colors)
        _amplification_panel(axes[r, 3], runs[runs.precision == runs.precision.iloc[0]], colors)
    handles = [legend_line(color=SOURCE_COLORS[s], lw=1.5, label=s) for s in SOURCE_COLORS]
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=6,
        fontsize=6,
        title_fontsize=6,
        title="rounding source (alone; all: every source)",
    )
    handles = [legend_line(color=c, lw=1.5, label=f"α = {a:g}") for a, c in colors.items()]
    axes[0, 3].legend(handles=handles, fontsize=6, loc="best")
    return fig


FIGURE = FigureSpec(
    name="numerics_recursion",
    code="N8",
    study="numerics",
    tables={"table": Gpt2Recursion, "isolated": RecursionSources},
    plot=recursion_figure,
    caption="""\
{% set n = config["numerics"] %}
{% set s = n["sources"] %}
N8. The error recursion along the residual adds, carried relative to the stream size, checked
per rounding source. First two panels: each source alone (each matmul family, the softmax,
LayerNorm, GELU, the residual add; black: all together), computed in float64 with only that
operation's outputs rounded to {{ s["mantissa_bits"] }} mantissa bits (alpha = {{ s["alpha"] }},
{{ s["sequences"] }} sequence(s) of {{ s["seq_len"] }} tokens): its typical-case estimate over
the measured error, both max over tokens of the 2-norm error over the 2-norm of h_t (the
estimate run token by token; grey band: within 10x), and its worst-case bound over the measured
error, both in the max-norm, at every add. Third panel: the typical estimate over the measured
error for every test format and alpha (one colour per alpha). Right: the per-step amplification
alpha omega_k Lip_k of the worst-case recursion e_k <= (1 + alpha omega_k Lip_k) e_(k-1) + u_s
max abs(h_k) + l_k (a bound, first order in u), whose attention constant includes the score path
through omega_KQ; Lip_k carries LayerNorm's 1/sigma(h_(k-1)), so the curves collapse once the
stream is residual-dominated. How far the bound lies above the measured error at the first add
(its vacuity) and how close the typical estimate comes: claim N.6 in results/claims.csv.
""",
    labels=gpt2_labels("N8", "error recursion bound vs measured"),
)


def _source_ratios(ax, isolated: pd.DataFrame, estimate: str, measured: str) -> None:
    for source, run in isolated.groupby("source"):
        run = run.sort_values("checkpoint")
        ax.plot(run.checkpoint, run[estimate] / run[measured], color=SOURCE_COLORS[source], lw=1)
    ax.set(yscale="log", xlabel="residual add")


def _format_ratios(ax, runs: pd.DataFrame, colors: dict) -> None:
    """One line per (format, α): the typical estimate over the measured error (2-norm)."""
    for (_, alpha), run in runs.groupby(["precision", "alpha"]):
        run = run.sort_values("checkpoint")
        ratio = run.typical_rel_l2 / run.measured_rel_l2
        ax.plot(run.checkpoint, ratio, color=colors[alpha], lw=0.8, alpha=0.7)
    ax.axhspan(0.1, 10, color="0.9", zorder=0)
    ax.set(yscale="log", xlabel="residual add")
    ax.set_title("test formats, every α:\ntypical / measured (2-norm)", fontsize=7)


def _amplification_panel(ax, runs: pd.DataFrame, colors: dict) -> None:
    """Attention adds (solid) and MLP adds (dotted) apart: their constants differ by decades."""
    for alpha, run in runs.groupby("alpha"):
        for kind, style in (("attn", "-"), ("mlp", ":")):
            part = run[run.kind == kind].sort_values("checkpoint")
            ax.plot(part.checkpoint, part.amplification, style, color=colors[alpha], marker=".")
    ax.set(yscale="log", xlabel="residual add")
    ax.set_title("amplification α·ω_k·Lip_k\n(solid: attn, dotted: mlp)", fontsize=7)
