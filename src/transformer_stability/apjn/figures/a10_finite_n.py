"""A10: which closure of uniform attention holds at few tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from transformer_stability.apjn.figures._common import CLOSURE_STYLES
from transformer_stability.apjn.figures._labels import _labels
from transformer_stability.apjn.tables import FiniteNCompare
from transformer_stability.plotting import FigureSpec, new_figure, sequential_colors, set_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_finite_n(compare: pd.DataFrame) -> Figure:
    """A10: measured/theory J^{b,0} of deep pre-LN models at few tokens for both closures, one
    panel per input; mean over initializations with bootstrap bars."""
    set_style()
    inputs = list(dict.fromkeys(compare["input"]))
    counts = sorted(compare["n_tokens"].unique())
    palette = dict(zip(counts, sequential_colors(len(counts)), strict=True))
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


FIGURE = FigureSpec(
    name="apjn_finite_n",
    code="A10",
    study="apjn",
    tables={"compare": FiniteNCompare},
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
fits where its bar covers 1 (column verdict).
""",
    labels=_labels(
        "A10",
        "measured / theory APJN at few tokens, both closures",
        "identical and generic tokens",
        models=lambda config: "pre-LN",
    ),
)
