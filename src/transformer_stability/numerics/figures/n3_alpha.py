"""N3: the error at GPT-2's output against the residual scaling α, per test format."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.numerics.figures._labels import gpt2_labels
from transformer_stability.numerics.tables import Gpt2Errors
from transformer_stability.plotting import FigureSpec, set_style, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def alpha_figure(table: pd.DataFrame, metric: str = "rel_linf") -> Figure:
    """N3: error at the last residual add against α, one line per precision (log–log)."""
    set_style()
    data = table[table.metric == metric]
    last = data[data.checkpoint == data.groupby("model").checkpoint.transform("max")]
    models = sorted(last.model.unique())
    fig, axes = subplots(1, len(models), figsize=(4.8 * len(models), 3.6), squeeze=False)
    for ax, model in zip(axes[0], models, strict=True):
        for precision, run in last[last.model == model].groupby("precision", sort=False):
            run = run.sort_values("alpha")
            (line,) = ax.plot(run.alpha, run.p50, marker="o", ms=4, label=precision)
            ax.fill_between(run.alpha, run.p25, run.p75, color=line.get_color(), alpha=0.2, lw=0)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="residual scaling α",
            title=f"{model}: last residual add (p50, p25–p75)",
        )
        ax.set_ylabel(f"{metric} at the output")
        ax.legend(title="precision", fontsize=8)
    return fig


FIGURE = FigureSpec(
    name="numerics_alpha",
    code="N3",
    study="numerics",
    tables={"table": Gpt2Errors},
    plot=alpha_figure,
    caption="""\
{% set n = config["numerics"] %}
N3. Relative error at the last residual add against alpha (log-log), one line per test format
(median, band p25-p75): a plateau where the stream is residual-dominated, falling once it is
embedding-dominated. A format that also rounds the stream at every add (bf16, fp16) can rise
above its plateau at small alpha: there the branch updates are a few ulps of the
embedding-sized stream, so each of the 2L adds errs by about u times the stream, and these
errors pile up (as the square root of the number of adds) on a stream that no longer grows; at
large alpha the stream grows with depth and dilutes the earlier roundings, and at still smaller
alpha the updates fall below half an ulp, so an add errs by at most the (tiny) update. The
emulated m<bits> formats add in float32 and show no bump.
""",
    labels=gpt2_labels("N3", "output error vs residual scaling"),
)
