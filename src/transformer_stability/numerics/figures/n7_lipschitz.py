"""N7: self-attention's local Lipschitz constant against length, with its bounds."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.numerics.figures._labels import synthetic_labels
from transformer_stability.numerics.tables import Lipschitz
from transformer_stability.plotting import FigureSpec, set_style, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def lipschitz_figure(table: pd.DataFrame) -> Figure:
    """N7: Lipschitz constants of self-attention at random inputs and the worst found over the
    R-ball, with the bounds over the ball, against length n; every weight draw shown (its
    weights serve every n), and the bound's margin over the worst found per draw."""
    set_style()
    fig, axes = subplots(1, 3, figsize=(11, 3.6))
    titles = {
        "inf": ("token-wise ∞-norm", "bound ω_OV(1 + 2ω_KQ R²) over the ball"),
        "frobenius": ("Euclidean (Frobenius) norm", "classical bound ∝ √n over the ball"),
    }
    for ax, (norm, (title, bound_label)) in zip(axes, titles.items(), strict=False):
        data = table[table.norm == norm]
        if data.empty:  # a log axis cannot hold an empty line: leave this norm's panel blank
            ax.set_title(f"{title}: not in this table")
            continue
        for column, style, color, label in [
            ("estimate", "o-", "tab:blue", "random input"),
            ("worst", "^-", "tab:orange", "worst found (ascent)"),
            ("ball_bound", "s--", "tab:red", bound_label),
        ]:
            _draw_spread(ax, data.dropna(subset=[column]), column, style, color, label)
        ax.set(xscale="log", yscale="log", xlabel="sequence length n", title=title)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("local Lipschitz constant")
    fig.suptitle("median over the weight draws; band: their min to max", fontsize=9)
    inf = table[(table.norm == "inf")].dropna(subset=["bound_over_worst"])
    for draw, run in inf.groupby("draw"):
        run = run.sort_values("seq_len")
        axes[2].plot(run.seq_len, run.bound_over_worst, "o-", ms=3, label=f"draw {draw}")
    axes[2].set(xscale="log", yscale="log", xlabel="sequence length n", ylim=(1, None))
    axes[2].set_title("∞-norm: bound over the ball / worst found")
    if not inf.empty:
        axes[2].legend(fontsize=7, title="weights", title_fontsize=7)
    for ax in axes:
        ax.title.set_fontsize(10)
    return fig


FIGURE = FigureSpec(
    name="numerics_lipschitz",
    code="N7",
    study="numerics",
    tables={"table": Lipschitz},
    plot=lipschitz_figure,
    caption="""\
{% set n = config["numerics"] %}
N7. Local Lipschitz constant of single-head self-attention (width {{ n["lipschitz"]["dim"] }},
weights N(0, 1/d), inputs in the ball max abs(x) <= R = {{ n["lipschitz"]["radius"] }}) against the
sequence length n, for {{ n["lipschitz"]["draws"] }} weight draws, each draw's weights used at
every n (dots: draws; line: median; band: min to max over the draws). Blue: at one input uniform
in [-R, R] per draw and n. Orange: the worst found by projected Adam ascent on the exact
Jacobian row sums ({{ n["lipschitz"]["search"]["restarts"] }} starts of
{{ n["lipschitz"]["search"]["steps"] }} steps per draw and n), a lower bound of the supremum
over the ball. Left: token-wise max-norm, computed exactly (the largest absolute row sum of the
Jacobian, from its closed form), with the bound omega_OV (1 + 2 omega_KQ R^2) over the ball,
which does not depend on n. Middle: Euclidean norm at the random input (power iteration on J^T
J, not searched) with the classical bound over the ball, which grows as sqrt(n). Right: the
max-norm bound over the worst found, per draw. Columns: bound_over_worst, worst_over_estimate.
""",
    labels=synthetic_labels(
        "N7", "attention Lipschitz constant vs length", lambda config: "float64"
    ),
)


def _draw_spread(ax, data: pd.DataFrame, column: str, style: str, color: str, label: str) -> None:
    """Median over the weight draws per n as a line, their min-max as a band, draws as dots."""
    if data.empty:
        return
    stats = data.groupby("seq_len")[column].agg(["median", "min", "max"]).reset_index()
    ax.plot(data.seq_len, data[column], ".", color=color, alpha=0.4)
    ax.plot(stats.seq_len, stats["median"], style, color=color, ms=4, label=label)
    ax.fill_between(stats.seq_len, stats["min"], stats["max"], color=color, alpha=0.15, lw=0)
