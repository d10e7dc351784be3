"""N6: the softmax's error against sink mass and logit offset, emulated and through torch casts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.numerics.figures._labels import synthetic_labels
from transformer_stability.numerics.style import SOFTMAX_FORMAT_COLORS, SOFTMAX_MODE_COLORS
from transformer_stability.numerics.tables import Softmax
from transformer_stability.plotting import FigureSpec, set_style, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def softmax_figure(table: pd.DataFrame) -> Figure:
    """N6: propagated logit error and evaluation error vs sink mass; error vs logit offset (the
    emulated format); the sink rows through real torch casts, subnormals included."""
    set_style()
    emulated = table.format.str.fullmatch(r"m\d+") | (table["mode"] == "propagation")
    med = table[emulated].groupby(["sweep", "mode", "metric", "p_max", "offset"])
    med = med[["measured", "bound"]].median().reset_index()
    sink, offset = med[med.sweep == "sink"], med[med.sweep == "offset"]
    if sink.empty or offset.empty:
        missing = " and ".join(
            name for name, rows in (("sink", sink), ("offset", offset)) if rows.empty
        )
        raise ValueError(
            f"N6 needs rows of both sweeps (sink, offset); softmax.csv has no {missing} rows"
        )
    fig, axes = subplots(1, 4, figsize=(15, 3.8))
    prop = sink[sink["mode"] == "propagation"].sort_values("p_max")
    gain = prop[prop.metric == "l1_gain"]
    exact = prop[prop.metric == "jacobian_abs_sum"]
    ax = axes[0]
    ax.plot(1 - gain.p_max, gain.measured, "o", color="tab:green", label="‖Δp‖₁/η measured")
    ax.plot(1 - exact.p_max, exact.measured, "-", color="black", label="Σ|J_ij| = 2(1−Σp²)")
    ax.plot(1 - gain.p_max, gain.bound, "--", color="tab:gray", label="bound 2(1−p_max²)")
    ax.set(xlabel="1 − p_max", title="logit errors carried through")
    if prop.empty:  # a log axis cannot hold an empty line: leave the panel blank
        ax.set_title("logit errors carried through: none in this table")
    else:
        ax.set(xscale="log", yscale="log")
    for ax, data, x, xlabel, metric, title in [
        (axes[1], sink, "p_max", "1 − p_max", "l1_abs", "evaluation: ‖p̂ − p‖₁"),
        (axes[2], offset, "offset", "logit offset c", "max_rel", "evaluation: max_i |p̂_i−p_i|/p_i"),
    ]:
        for mode in ("unshifted", "shifted"):
            run = data[(data["mode"] == mode) & (data.metric == metric)].sort_values(x)
            xs = 1 - run[x] if x == "p_max" else run[x]
            ax.plot(xs, run.measured, "o-", color=SOFTMAX_MODE_COLORS[mode], ms=4, label=f"{mode}")
            ax.plot(xs, run.bound, "--", color=SOFTMAX_MODE_COLORS[mode], label=f"{mode} bound")
        ax.set(yscale="log", xlabel=xlabel, title=title)
        if x == "p_max":
            ax.set_xscale("log")
    _casts_panel(axes[3], table)
    for ax in axes:
        ax.legend(fontsize=7)
        ax.title.set_fontsize(10)
    bits = int(table[table.format.str.fullmatch(r"m\d+")].mantissa_bits.iloc[0])
    fig.suptitle(
        f"softmax evaluated with m = {bits} mantissa bits, float64's exponent range, and through "
        "real torch casts (median over rows)",
        fontsize=10,
    )
    return fig


FIGURE = FigureSpec(
    name="numerics_softmax",
    code="N6",
    study="numerics",
    tables={"table": Softmax},
    plot=softmax_figure,
    caption="""\
{% set n = config["numerics"] %}
N6. Softmax rows of length {{ n["softmax"]["n"] }} with a sink of mass p_max. First panel: logit
errors of size eta carried to the probabilities, the 1-norm gain against 1 - p_max with the exact
sum of absolute Jacobian entries 2(1 - sum p^2) and the bound 2(1 - p_max^2): a sink silences
logit errors. Second: 1-norm error of the evaluation with m = {{ n["softmax"]["mantissa_bits"] }}
bits in float64's exponent range, unshifted vs shifted (exp of z - max z), with the rigorous
bounds (dashed), which keep the correlation of the sink's rounded exponential in numerator and
sum and so fall with 1 - p_max like the error (a few times above it). Third: the largest
componentwise relative error against a common logit offset at p_max =
{{ n["softmax"]["offset_p_max"] }}: unshifted grows with the offset (sensitivity abs(z)),
shifted does not (abs(z - max z)). Right: the same sink rows evaluated through real torch casts
({{ n["softmax"]["formats"] | join(", ") }}; shifted), whose bound also models gradual
underflow: below the normal range (fp16: 2^-14, reached by tails of about e^-10 relative to the
sink) a rounding errs by up to half the subnormal spacing, not relatively, which puts a floor
under the error and the bound as the tail mass falls. Unshifted fp16 overflows once the sink
logit exceeds ln 65504 (the bound is then infinite).
""",
    labels=synthetic_labels(
        "N6",
        "softmax error vs sink mass and offset",
        lambda config: f"m{config['numerics']['softmax']['mantissa_bits']}",
    ),
)


def _casts_panel(ax, table: pd.DataFrame) -> None:
    """The shifted evaluation's 1-norm error vs sink mass per torch cast, with its bound."""
    rows = table[
        (table.sweep == "sink")
        & table.format.isin(list(SOFTMAX_FORMAT_COLORS))
        & (table["mode"] == "shifted")
        & (table.metric == "l1_abs")
    ]
    med = rows.groupby(["format", "p_max"])[["measured", "bound"]].median().reset_index()
    for name, run in med.groupby("format"):
        color = SOFTMAX_FORMAT_COLORS[name]
        ax.plot(1 - run.p_max, run.measured, "o-", color=color, ms=4, label=name)
        ax.plot(1 - run.p_max, run.bound, "--", color=color, label=f"{name} bound")
    ax.set(xlabel="1 − p_max", title="torch casts, shifted: ‖p̂ − p‖₁")
    if med.empty:  # a log axis cannot hold an empty line: leave the panel blank
        ax.set_title("torch casts: none in this table")
    else:
        ax.set(xscale="log", yscale="log")
