"""Study N figures N1–N8: one function per figure, each reading one tidy table."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from transformer_stability.numerics.items import format_unit_roundoff
from transformer_stability.numerics.spec import numerics_model_name
from transformer_stability.numerics.style import (
    ALPHA_CMAP,
    NUMERICS_NORM_COLORS,
    OMEGA_LABELS,
    SOFTMAX_FORMAT_COLORS,
    SOFTMAX_MODE_COLORS,
    SOURCE_COLORS,
    TAB10,
)
from transformer_stability.plotting import FigureSpec, legend_line, set_style, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _alpha_colors(alphas) -> dict:
    """One discrete colour per residual scaling α (few values: a legend, not a colour bar)."""
    alphas = sorted(set(alphas))
    from matplotlib import colormaps

    cmap = colormaps[ALPHA_CMAP]
    spots = [0.5] if len(alphas) == 1 else [0.9 * i / (len(alphas) - 1) for i in range(len(alphas))]
    return {a: cmap(x) for a, x in zip(alphas, spots, strict=True)}


def _alpha_legend(fig: Figure, colors: dict) -> None:
    handles = [legend_line(color=c, lw=2, label=f"α = {a:g}") for a, c in colors.items()]
    fig.legend(handles=handles, loc="outside right center", fontsize=8, title="residual scaling")


def _grid(rows: list, cols: list, width: float = 3.6, height: float = 3.0, sharey="row"):
    fig, axes = subplots(
        len(rows),
        len(cols),
        figsize=(width * len(cols), height * len(rows)),
        squeeze=False,
        sharex=True,
        sharey=sharey,
    )
    return fig, axes


def errors_figure(table: pd.DataFrame, metric: str = "rel_linf") -> Figure:
    """N1: relative error along the residual adds in units of each format's own u; p50 line,
    p25–p75 and p01–p99 bands."""
    set_style()
    data = table[table.metric == metric]
    models, precisions = sorted(data.model.unique()), list(dict.fromkeys(data.precision))
    colors = _alpha_colors(data.alpha)
    fig, axes = _grid(models, precisions)
    for (r, model), (c, precision) in _pairs(models, precisions):
        ax = axes[r, c]
        u = format_unit_roundoff(precision)
        for alpha, run in data[(data.model == model) & (data.precision == precision)].groupby(
            "alpha"
        ):
            run = run.sort_values("checkpoint")
            k = run.checkpoint
            ax.fill_between(k, run.p01 / u, run.p99 / u, color=colors[alpha], alpha=0.08, lw=0)
            ax.fill_between(k, run.p25 / u, run.p75 / u, color=colors[alpha], alpha=0.25, lw=0)
            ax.plot(k, run.p50 / u, color=colors[alpha], lw=1.3)
        ax.set_yscale("log")
        ax.set_title(f"{model}, {precision} (u = 2^{math.log2(u):.0f})", fontsize=9)
        if r == len(models) - 1:
            ax.set_xlabel("residual add (attn, mlp, ...)")
        if c == 0:
            label = "‖Δ_t‖∞ / ‖h_t‖∞" if metric == "rel_linf" else metric
            ax.set_ylabel(f"{label}  [units of u]")
    _alpha_legend(fig, colors)
    return fig


def _pairs(rows: list, cols: list):
    return [((r, a), (c, b)) for r, a in enumerate(rows) for c, b in enumerate(cols)]


def stream_figure(table: pd.DataFrame) -> Figure:
    """N2: residual-stream size (median over tokens, min over tokens) along depth, per α."""
    set_style()
    data = table[table.metric.isin(["stream_median_l2", "stream_min_l2"])]
    data = data[data.precision == data.precision.iloc[0]]  # the reference holds the stream
    models = sorted(data.model.unique())
    colors = _alpha_colors(data.alpha)
    fig, axes = _grid(models, ["stream_median_l2", "stream_min_l2"], width=4.2)
    for (r, model), (c, metric) in _pairs(models, ["stream_median_l2", "stream_min_l2"]):
        ax = axes[r, c]
        subset = data[(data.model == model) & (data.metric == metric)]
        for alpha, run in subset.groupby("alpha"):
            run = run.sort_values("checkpoint")
            ax.plot(run.checkpoint, run.p50, color=colors[alpha], marker=".", ms=3)
        ax.set_yscale("log")
        label = "median_t" if metric == "stream_median_l2" else "min_t"
        ax.set_title(f"{model}\n{label} ‖h_t‖₂, median over sequences", fontsize=8)
        ax.set_xlabel("residual add")
    axes[0, 0].set_ylabel("stream size ‖h_t‖₂")
    _alpha_legend(fig, colors)
    return fig


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


def weights_figure(table: pd.DataFrame) -> Figure:
    """N4: ω_OV, ω_UD (and ω_KQ) per block, one line per model."""
    set_style()
    quantities = ["omega_ov", "omega_ud", "omega_kq"]
    fig, axes = subplots(1, 3, figsize=(12, 3.4))
    for ax, quantity in zip(axes, quantities, strict=True):
        values = table[table.quantity == quantity]
        for model, run in values.groupby("model"):
            ax.plot(run.block, run.value, marker="o", ms=3, label=model)
        ax.set(xlabel="block", title=OMEGA_LABELS[quantity])
        # within a decade: a linear axis from 0, so a few percent of seed noise looks small;
        # across decades (random next to trained weights): log
        if values.value.max() > 10 * values.value.min():
            ax.set_yscale("log")
        else:
            ax.set_ylim(0, 1.1 * values.value.max())
        ax.legend(fontsize=8)
    return fig


def norms_figure(table: pd.DataFrame) -> Figure:
    """N5: LayerNorm vs RMSNorm against the outlier size M: conditions, errors and bounds."""
    set_style()
    med = table.groupby(["norm", "mantissa_bits", "outlier", "metric"]).value.median()
    med = med.unstack("metric").reset_index()
    if not (med.outlier > 0).any():
        raise ValueError(
            "N5 needs a positive outlier magnitude M (log x axis); norms.csv has only M = 0"
        )
    med["outlier_plot"] = med.outlier.where(med.outlier > 0, med.outlier[med.outlier > 0].min() / 3)
    panels = [
        ("kappa_bulk", "kappa_normwise", "condition: bulk κ / spread (dotted: normwise κ)"),
        ("err_normwise", "bound_normwise", "normwise error ‖ŷ−y‖₂/‖y‖₂"),
        ("err_comp_median", "bound_comp_median", "bulk coords: median |ŷ_i−y_i|/|y_i|"),
        ("err_bulk", "bound_bulk", "bulk coords: max |ŷ_i−y_i| / bulk spread"),
    ]
    bits = sorted(med.mantissa_bits.unique())
    fig, axes = subplots(
        len(bits),
        len(panels),
        figsize=(15, 3.2 * len(bits)),
        squeeze=False,
        sharex=True,
    )
    for r, b in enumerate(bits):
        for c, (ax, (first, second, title)) in enumerate(zip(axes[r], panels, strict=True)):
            for norm, run in med[med.mantissa_bits == b].groupby("norm"):
                run = run.sort_values("outlier")
                color = NUMERICS_NORM_COLORS[norm]
                kind = ("", ":") if c == 0 else (" measured", "--")
                ax.plot(
                    run.outlier_plot,
                    run[first],
                    marker="o",
                    ms=3,
                    color=color,
                    label=f"{norm}{kind[0]}",
                )
                ax.plot(
                    run.outlier_plot,
                    run[second],
                    ls=kind[1],
                    color=color,
                    label=None if c == 0 else f"{norm} bound",
                )
            ax.set(xscale="log", yscale="log")
            ax.set_title(f"{title}  (m = {b})", fontsize=9)
        axes[r, 1].legend(fontsize=7)
        axes[r, 0].legend(fontsize=7)
    fig.supxlabel("outlier magnitude M of x = M·e₀ + z (M = 0 drawn at the left edge)")
    return fig


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


def _draw_spread(ax, data: pd.DataFrame, column: str, style: str, color: str, label: str) -> None:
    """Median over the weight draws per n as a line, their min-max as a band, draws as dots."""
    if data.empty:
        return
    stats = data.groupby("seq_len")[column].agg(["median", "min", "max"]).reset_index()
    ax.plot(data.seq_len, data[column], ".", color=color, alpha=0.4)
    ax.plot(stats.seq_len, stats["median"], style, color=color, ms=4, label=label)
    ax.fill_between(stats.seq_len, stats["min"], stats["max"], color=color, alpha=0.15, lw=0)


def recursion_figure(table: pd.DataFrame, isolated: pd.DataFrame) -> Figure:
    """N8 at page width, one row of four panels per model. Per rounding source alone: the
    typical estimate over the measured error (2-norm, the same norm) and the worst-case bound
    over the measured error (∞-norm), at every add; for the test formats at every α: the
    typical estimate over the measured error; the per-step amplification α·ω_k·Lip_k."""
    set_style()
    models = sorted(table.model.unique())
    colors = _alpha_colors(table.alpha)
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


def sinks_figure(table: pd.DataFrame, softmax: pd.DataFrame) -> Figure:
    """N9: per head, the tail mass 1 - p_max and the first token's weight of the late attention
    rows (median, p25-p75), against the block, one colour per model; the synthetic softmax
    rows' sink grid (N6) drawn across the first panel."""
    set_style()
    fig, axes = subplots(1, 2, figsize=(10, 3.6))
    models = list(dict.fromkeys(table.model))
    for k, model in enumerate(models):
        rows = table[table.model == model]
        heads = rows["head"].max() + 1
        for ax, statistic in zip(axes, ("p_max", "first_token"), strict=True):
            run = rows[rows.statistic == statistic]
            # heads side by side within a block, models side by side within a head
            x = run.block + 0.8 * (run["head"] + (k + 0.5) / len(models)) / heads - 0.4
            low, mid, high = (run[q] for q in ("p25", "p50", "p75"))
            if statistic == "p_max":  # the tail mass: its quantiles are the p_max's reversed
                low, mid, high = 1 - high, 1 - mid, 1 - low
            ax.errorbar(
                x,
                mid,
                yerr=[mid - low, high - mid],
                fmt="o",
                ms=3,
                lw=0.8,
                color=TAB10[k],
                label=model,
            )
    grid = sorted(set(1 - softmax[softmax.sweep == "sink"].p_max) - {0})
    for tail in grid:
        axes[0].axhline(tail, color="grey", lw=0.6, ls=":")
    axes[0].set(
        yscale="log",
        xlabel="block (one point per head)",
        ylabel="1 - p_max (late rows)",
        title="tail mass; dotted: N6's synthetic sink rows",
    )
    axes[1].set(
        yscale="log",
        xlabel="block (one point per head)",
        ylabel="weight on the first token",
        title="the first token's weight (late rows)",
    )
    for ax in axes:
        ax.set_xticks(sorted(table.block.unique()))
    axes[0].legend(fontsize=8)
    return fig


# --- the registry's declarations of Study N's figures (see transformer_stability/registry.py) ---


def _gpt2_labels(code: str, quantity: str, precision: str | None = None):
    """Labels of a GPT-2 figure: the configured models and test formats (or `precision`, for a
    figure drawn from a table that does not depend on them)."""
    return lambda config: {
        "figure": code,
        "quantity": quantity,
        "models": ", ".join(
            numerics_model_name(m["weights"], m["size"]) for m in config["numerics"]["models"]
        ),
        "precision": (precision or ", ".join(config["numerics"]["precisions"])),
    }


def _synthetic_labels(code: str, quantity: str, precision):
    return lambda config: {
        "figure": code,
        "quantity": quantity,
        "models": "synthetic",
        "precision": precision(config),
    }


FIGURES = (
    FigureSpec(
        name="numerics_errors",
        code="N1",
        study="numerics",
        tables={"table": "results/numerics/gpt2_errors.csv"},
        plot=errors_figure,
        caption="""\
{% set n = config["numerics"] %}
N1. Relative error rel_linf = max-norm of (test - reference) over the max-norm of the float64
reference stream, per token, in units of each format's own unit roundoff u (fp32 2^-24, bf16
2^-8, m<bits> 2^-(bits+1)), after every residual add of GPT-2 ({{ n["inputs"]["sequences"] }}
sequences of {{ n["inputs"]["seq_len"] }} tokens: synthetic for random weights, held-out text for
weights trained by the pipeline). Line: median over tokens and
sequences; bands: p25-p75 and p01-p99. One panel per model and test format (fp32/bf16/fp16 are
torch dtypes; m<bits> rounds every linear/matmul output to that many mantissa bits), one colour
per residual scaling alpha (legend). The reference holds exactly the numbers the test format
stores. For alpha large enough that the stream is residual-dominated the curves coincide; for
small alpha the stream is embedding-dominated and the error falls. Data:
results/numerics/gpt2_errors.csv.
""",
        labels=_gpt2_labels("N1", "relative error vs residual add"),
    ),
    FigureSpec(
        name="numerics_stream",
        code="N2",
        study="numerics",
        tables={"table": "results/numerics/gpt2_errors.csv"},
        plot=stream_figure,
        caption="""\
{% set n = config["numerics"] %}
N2. Residual-stream size along depth per alpha: median over tokens (left) and minimum over
tokens (right) of the token 2-norm, median over sequences (float64 reference). Small alpha: flat
at the embedding's size (embedding-dominated); large alpha: proportional to alpha
(residual-dominated). Data: results/numerics/gpt2_errors.csv (metrics stream_median_l2,
stream_min_l2).
""",
        labels=_gpt2_labels("N2", "residual-stream size vs residual add"),
    ),
    FigureSpec(
        name="numerics_alpha",
        code="N3",
        study="numerics",
        tables={"table": "results/numerics/gpt2_errors.csv"},
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
emulated m<bits> formats add in float32 and show no bump. Data: results/numerics/gpt2_errors.csv.
""",
        labels=_gpt2_labels("N3", "output error vs residual scaling"),
    ),
    FigureSpec(
        name="numerics_weights",
        code="N4",
        study="numerics",
        tables={"table": "results/numerics/gpt2_weights.csv"},
        plot=weights_figure,
        caption="""\
{% set n = config["numerics"] %}
N4. Weight magnitudes per block: omega_OV = max-row-sum(W_O) x max-row-sum(W_V), omega_UD (MLP
up and down projections) and omega_KQ = (2/sqrt(d_h)) max over heads of the product of the
2-norms of the absolute row sums of W_K and W_Q, at alpha = 1. Data:
results/numerics/gpt2_weights.csv.
""",
        labels=_gpt2_labels("N4", "weight magnitudes per block", "weights only"),
    ),
    FigureSpec(
        name="numerics_norms",
        code="N5",
        study="numerics",
        tables={"table": "results/numerics/norms.csv"},
        plot=norms_figure,
        caption="""\
{% set n = config["numerics"] %}
N5. LayerNorm vs RMSNorm (epsilon = 0) on x = M e_0 + z, z ~ N(0, I), d =
{{ n["norms"]["dim"] }}, evaluated with every operation rounded to m mantissa bits (pairwise
sums), against float64 on the same (exactly representable) input. Solid: measured (median over
{{ n["norms"]["samples"] }} vectors); dashed: a rigorous running error bound that follows the
evaluation step by step. Left: the bulk condition number (sensitivity of the non-outlier outputs
relative to their spread) is the same for both norms, yet LayerNorm's bulk error grows with M
(right): its centred values x_i - mean are of size M/d and are rounded at that size, while
RMSNorm never subtracts. LayerNorm's disadvantage is thus an instability of the algorithm
(centring rounds at size M/d), not of the problem: the two conditionings are equal. Data:
results/numerics/norms.csv.
""",
        labels=_synthetic_labels(
            "N5",
            "LayerNorm vs RMSNorm under an outlier",
            lambda config: ", ".join(f"m{b}" for b in config["numerics"]["norms"]["mantissa_bits"]),
        ),
    ),
    FigureSpec(
        name="numerics_softmax",
        code="N6",
        study="numerics",
        tables={"table": "results/numerics/softmax.csv"},
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
logit exceeds ln 65504 (the bound is then infinite). Data: results/numerics/softmax.csv.
""",
        labels=_synthetic_labels(
            "N6",
            "softmax error vs sink mass and offset",
            lambda config: f"m{config['numerics']['softmax']['mantissa_bits']}",
        ),
    ),
    FigureSpec(
        name="numerics_lipschitz",
        code="N7",
        study="numerics",
        tables={"table": "results/numerics/lipschitz.csv"},
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
max-norm bound over the worst found, per draw. Data: results/numerics/lipschitz.csv (columns
bound_over_worst, worst_over_estimate).
""",
        labels=_synthetic_labels(
            "N7", "attention Lipschitz constant vs length", lambda config: "float64"
        ),
    ),
    FigureSpec(
        name="numerics_recursion",
        code="N8",
        study="numerics",
        tables={
            "table": "results/numerics/gpt2_recursion.csv",
            "isolated": "results/numerics/recursion_sources.csv",
        },
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
(its vacuity) and how close the typical estimate comes: claim N.6 in results/claims.csv. Data:
results/numerics/gpt2_recursion.csv, results/numerics/recursion_sources.csv.
""",
        labels=_gpt2_labels("N8", "error recursion bound vs measured"),
    ),
    FigureSpec(
        name="numerics_sinks",
        code="N9",
        study="numerics",
        tables={
            "table": "results/numerics/attention_sinks.csv",
            "softmax": "results/numerics/softmax.csv",
        },
        plot=sinks_figure,
        caption="""\
{% set n = config["numerics"] %}
N9. Does training grow attention sinks? Every head's attention rows of the queries in the second
half of each sequence ({{ n["inputs"]["sequences"] }} sequences of {{ n["inputs"]["seq_len"] }}
tokens; float32, alpha = 1; a spread row there has p_max below 2/T), one point per head (median
over the rows, bar p25-p75), one colour per model: random models read synthetic tokens, trained
ones (weights: trained, trained by the pipeline on WordNet's glosses) the held-out glosses. Left:
the tail mass 1 - p_max, with the sink strengths of N6's synthetic softmax rows dotted across
(where the softmax bound of claim N.3 tightens as the tail mass falls). Right: the weight on the
first token, where sinks of trained language models sit. The comparison is claim N.9 in
results/claims.csv. Data: results/numerics/attention_sinks.csv, results/numerics/softmax.csv.
""",
        labels=_gpt2_labels("N9", "attention sinks per head", "float32"),
    ),
)
