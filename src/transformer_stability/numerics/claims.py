"""Study N's claims (docs/numerics.md, "Claims"), each tested on the run's tables: bounds that
hold and are not loose where they are claimed tight, LayerNorm against RMSNorm under an
outlier, the softmax bound under a sink, shifted evaluation, the length-free attention bound,
the worst-case recursion and GPT-2's relative error across residual scalings. Torch-free, like
the tables: the claims rule reads tables only."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.claims import ClaimSpec, Finding
from transformer_stability.numerics.items import FORMAT_MANTISSA_BITS, format_unit_roundoff

NORMS, SOFTMAX, LIPSCHITZ = "numerics/norms.csv", "numerics/softmax.csv", "numerics/lipschitz.csv"
ERRORS, RECURSION = "numerics/gpt2_errors.csv", "numerics/gpt2_recursion.csv"
SOURCES = "numerics/recursion_sources.csv"
SINKS = "numerics/attention_sinks.csv"

TIGHT = 100.0  # "not loose by orders of magnitude": a median bound/error of at most 10^2
SINK_TIGHT = 10.0  # the sink-aware softmax bound: within one order of magnitude
SLOPE_TOLERANCE = 0.2  # a log-log slope within ±0.2 of its theory
SQRT_N_MIDPOINT = 0.25  # growth in n: halfway between length-free (0) and the sqrt(n) bound (0.5)
FACTOR = 2.0  # "the same" / "separated": within, or beyond, a factor 2
CLEARLY_WORSE = 3.0  # LayerNorm's bulk error over RMSNorm's at the largest outlier
MASSIVE = 10.0  # outlier/dim: LayerNorm's centred values exceed the bulk's spread 10-fold
SENSITIVITY_GROWTH = 4.0  # the offsets must grow the unshifted condition number this much
LENGTH_SPAN = 4  # the sequence lengths must span this factor
RESIDUAL_DOMINATED, EMBEDDING_DOMINATED = 2.0, 10.0  # stream / its alpha-proportional share
TYPICAL_WINDOW = 10.0  # the typical estimate within this factor of the measured error
SINK_ROW = 0.5  # a row with p_max >= 1/2 gives one token most of its attention
GROUP = ["weights", "model", "precision"]

Tables = Mapping[str, pd.DataFrame]


def _g(x: float) -> str:
    return f"{x:.3g}"


def _slope(x: pd.Series, y: pd.Series) -> float:
    """Least-squares slope of log y against log x; NaN where a value is not positive and
    finite (then no power law is measured)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if not (np.isfinite(y).all() and (y > 0).all()):
        return math.nan
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _ratio_median(bound: pd.Series, measured: pd.Series) -> float:
    """Median of bound/measured over the pairs with a measured error (an exact result has
    nothing to be tight against)."""
    some = measured > 0
    return float((bound[some] / measured[some]).median())


# --- N.1: every measured error below its bound; rounding bounds within 10^2 of the errors ----


def _norm_pairs(norms: pd.DataFrame) -> pd.DataFrame:
    """One row per (norm, format, outlier, sample, quantity): err_X against bound_X."""
    wide = norms.set_index(["norm", "mantissa_bits", "outlier", "sample", "metric"]).value
    wide = wide.unstack("metric")
    kinds = [m.removeprefix("err_") for m in wide.columns if m.startswith("err_")]
    return pd.concat(
        pd.DataFrame({"measured": wide[f"err_{k}"], "bound": wide[f"bound_{k}"]}) for k in kinds
    )


def _lipschitz_pairs(lipschitz: pd.DataFrame) -> pd.DataFrame:
    """The random-input estimate against the bound at that input, the worst found against the
    bound over the ball."""
    at_input = lipschitz.rename(columns={"estimate": "measured"})[["measured", "bound"]]
    found = lipschitz.dropna(subset=["worst"])
    over_ball = pd.DataFrame({"measured": found.worst, "bound": found.ball_bound})
    return pd.concat([at_input, over_ball])


def _violations(pairs: pd.DataFrame) -> tuple[int, int]:
    """(measured errors above their bound, pairs with a measured value)."""
    checked = pairs.dropna(subset=["measured"])
    return int((checked.measured > checked.bound).sum()), len(checked)


def bounds_hold(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.1: every measured error and Lipschitz estimate against its bound; how far the
    rounding-error bounds (norms, softmax evaluation) lie above the errors they bound."""
    softmax = tables[SOFTMAX].dropna(subset=["bound"])
    parts = {
        "norms": _norm_pairs(tables[NORMS]),
        "softmax": softmax[["measured", "bound"]],
        "attention": _lipschitz_pairs(tables[LIPSCHITZ]),
    }
    counts = {name: _violations(pairs) for name, pairs in parts.items()}
    evaluation = softmax[softmax["mode"] != "propagation"]
    tight = {
        "norms": _ratio_median(parts["norms"].bound, parts["norms"].measured),
        "softmax": _ratio_median(evaluation.bound, evaluation.measured),
    }
    above = sum(v for v, _ in counts.values())
    loose = ", ".join(f"{n} {_g(r)}" for n, r in tight.items())
    value = (
        f"{above} of {sum(n for _, n in counts.values())} above their bound ("
        + ", ".join(f"{name} {v}/{n}" for name, (v, n) in counts.items())
        + f"); median bound/error: {loose}"
    )
    holds = above == 0 and all(r <= TIGHT for r in tight.values())
    return Finding("measured values above their bound; median bound/error", value, holds)


# --- N.2: LayerNorm against RMSNorm under a massive outlier ----------------------------------


def norms_under_outlier(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.2: at the largest outlier M, LayerNorm's bulk error against RMSNorm's, and their bulk
    condition numbers, per format."""
    norms = tables[NORMS]
    largest = float(norms.outlier.max())
    dim = section["norms"]["dim"]
    if largest / dim < MASSIVE:
        return None
    at = norms[norms.outlier == largest]
    med = at.groupby(["mantissa_bits", "metric", "norm"]).value.median().unstack("norm")
    error = med.xs("err_bulk", level="metric")
    kappa = med.xs("kappa_bulk", level="metric")
    error_ratio = error.layernorm / error.rmsnorm
    kappa_ratio = kappa.layernorm / kappa.rmsnorm
    value = f"M/d = {_g(largest / dim)}; " + "; ".join(
        f"m{bits}: bulk error LN/RMS {_g(error_ratio[bits])}, bulk kappa LN/RMS "
        f"{_g(kappa_ratio[bits])}"
        for bits in error.index
    )
    holds = bool(
        (error_ratio >= CLEARLY_WORSE).all() and kappa_ratio.between(1 / FACTOR, FACTOR).all()
    )
    return Finding(
        "bulk error and bulk condition, LayerNorm / RMSNorm, at the largest M", value, holds
    )


# --- N.3: the softmax evaluation bound falls with the sink's tail mass -----------------------


def sink_bound(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.3: in the emulated format (float64's exponent range: no underflow) and the strong-sink
    regime 1 - p_max <= u the bound (and the error) should fall in proportion to 1 - p_max and
    stay within 10x of the error. The torch casts' bound/error there is reported: their
    subnormals put a floor of about n times half the subnormal spacing under both."""
    softmax = tables[SOFTMAX]
    sinks = softmax[(softmax.sweep == "sink") & (softmax.metric == "l1_abs")]
    sinks = sinks.assign(tail_mass=1 - sinks.p_max)
    emulated = sinks.format.str.fullmatch(r"m\d+")
    rows = sinks[emulated]
    u = 2.0 ** -(rows.mantissa_bits.max() + 1)
    strong = rows[(rows.tail_mass > 0) & (rows.tail_mass <= u)]  # p_max = 1: no tail, no error
    if strong.tail_mass.nunique() < 2 or strong.tail_mass.max() / strong.tail_mass.min() < 10:
        return None
    med = strong.groupby(["mode", "tail_mass"])[["measured", "bound"]].median().reset_index()
    slopes = {
        mode: (_slope(run.tail_mass, run.bound), _slope(run.tail_mass, run.measured))
        for mode, run in med.groupby("mode")
    }
    ratio = _ratio_median(strong.bound, strong.measured)
    casts = sinks[~emulated & np.isfinite(sinks.bound)]
    casts = casts[casts.tail_mass <= 2.0 ** -(casts.mantissa_bits + 1)]
    reported = [
        f"{name} {_g(_ratio_median(run.bound, run.measured))}"
        for name, run in casts.groupby("format")
    ]
    value = (
        f"{strong.format.iloc[0]}: "
        + "; ".join(
            f"{mode}: bound slope {_g(b)}, error slope {_g(e)}" for mode, (b, e) in slopes.items()
        )
        + f" (theory 1); median bound/error {_g(ratio)}"
        + (f"; torch casts, median bound/error: {', '.join(reported)}" if reported else "")
    )
    holds = all(abs(b - 1) <= SLOPE_TOLERANCE for b, _ in slopes.values()) and ratio <= SINK_TIGHT
    return Finding(
        "log-log slope of the evaluation bound vs 1 - p_max for 1 - p_max <= u; bound/error",
        value,
        holds,
    )


# --- N.4: shifted evaluation removes the offset's sensitivity --------------------------------


def shifted_evaluation(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.4: over the offset sweep, the unshifted error should grow with its condition number
    (error ~ kappa u) and the shifted error should not grow."""
    softmax = tables[SOFTMAX]
    rows = softmax[softmax.sweep == "offset"]
    med = rows.groupby(["mode", "metric", "offset"]).measured.median()
    offsets = sorted(rows.offset.unique())
    if len(offsets) < 2:
        return None
    low, high = offsets[0], offsets[-1]
    kappa, error = med.xs("kappa_max", level="metric"), med.xs("max_rel", level="metric")
    kappa_growth = kappa["unshifted", high] / kappa["unshifted", low]
    if kappa_growth < SENSITIVITY_GROWTH:
        return None
    exponent = math.log(error["unshifted", high] / error["unshifted", low]) / math.log(kappa_growth)
    shifted = error["shifted", high] / error["shifted", low]
    value = (
        f"offset {_g(low)} -> {_g(high)}: unshifted kappa x{_g(kappa_growth)}, error grows as "
        f"kappa^{_g(exponent)} (theory 1); shifted error x{_g(shifted)}, kappa "
        f"x{_g(kappa['shifted', high] / kappa['shifted', low])}"
    )
    holds = exponent >= 0.5 and shifted <= FACTOR
    return Finding(
        "growth of the max relative error with the offset, unshifted vs shifted", value, holds
    )


# --- N.5: a Lipschitz bound of attention that does not grow with n ---------------------------


def length_free_lipschitz(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.5: per weight draw (the same weights at every n), the largest Lipschitz constant found
    (random input or ascent) relative to the n-free bound, against n; a constant growing like
    sqrt(n) would give slope 0.5. The bound's margin over what was found, per n over the draws,
    is reported."""
    table = tables[LIPSCHITZ]
    lengths = sorted(table.seq_len.unique())
    if len(lengths) < 2 or lengths[-1] / lengths[0] < LENGTH_SPAN:
        return None
    inf = table[table.norm == "inf"]
    inf = inf.assign(found=np.fmax(inf.estimate, inf.worst))
    slopes = [_slope(draw.seq_len, draw.found / draw.ball_bound) for _, draw in inf.groupby("draw")]
    margin = (inf.ball_bound / inf.found).groupby(inf.seq_len).agg(["min", "max"])
    frob = table[table.norm == "frobenius"].groupby("seq_len").ball_bound.median()
    above, checked = _violations(_lipschitz_pairs(table))
    value = (
        f"slope of found/bound vs n per draw: {_g(min(slopes))} to {_g(max(slopes))} "
        f"({len(slopes)} draws, n = {lengths[0]}..{lengths[-1]}); bound/found over the draws: "
        + ", ".join(f"n={n} {_g(row['min'])}-{_g(row['max'])}" for n, row in margin.iterrows())
        + f"; {above} of {checked} above their bound; Euclidean bound slope "
        f"{_g(_slope(pd.Series(frob.index), frob))} (sqrt n: 0.5)"
    )
    holds = max(slopes) < SQRT_N_MIDPOINT and above == 0
    return Finding(
        "per weight draw, log-log slope of the largest Lipschitz constant found / the n-free "
        "bound vs n; bound/found per n",
        value,
        holds,
    )


# --- GPT-2: the stream's regime per residual scaling alpha -----------------------------------


def _last(table: pd.DataFrame) -> pd.DataFrame:
    """The rows at each model's last residual add (models differ in depth)."""
    return table[
        table.checkpoint == table.groupby(["weights", "model"]).checkpoint.transform("max")
    ]


def stream_regimes(errors: pd.DataFrame) -> pd.DataFrame:
    """Per (weights, model, precision, alpha): the stream at the last add over its
    alpha-proportional share (its size per alpha at the largest alpha). About 1: residual-
    dominated (the stream is proportional to alpha); large: embedding-dominated."""
    stream = _last(errors[errors.metric == "stream_median_l2"])[[*GROUP, "alpha", "p50"]]
    stream = stream.reset_index(drop=True)  # idxmax below picks rows by label
    stream = stream.assign(per_alpha=stream.p50 / stream.alpha)
    top = stream.loc[stream.groupby(GROUP).alpha.idxmax(), [*GROUP, "per_alpha"]]
    share = stream.merge(top, on=GROUP, suffixes=("", "_top"))
    share = share.assign(share=share.per_alpha / share.per_alpha_top)[[*GROUP, "alpha", "share"]]
    share["regime"] = np.select(
        [share.share <= RESIDUAL_DOMINATED, share.share >= EMBEDDING_DOMINATED],
        ["residual", "embedding"],
        "transition",
    )
    return share


@dataclass(frozen=True)
class Plateau:
    """One group's values over alpha: `spread` is max/min over the residual-dominated alphas,
    `off` each embedding-dominated alpha's value over the plateau's median."""

    name: str  # the group's model, format (and add kind)
    emulated: bool  # an m<bits> format: its stream is held in float32, finer than its u
    spread: float
    off: tuple[float, ...]


def _plateaus(values: pd.DataFrame, column: str, keys: list[str]) -> list[Plateau]:
    """A Plateau per group of `keys` (weights, model, precision, ...) with at least two
    residual-dominated alphas."""
    found = []
    for key, group in values.groupby(keys):
        flat = group[group.regime == "residual"][column]
        if len(flat) < 2:
            continue
        off = group[group.regime == "embedding"][column] / flat.median()
        name, emulated = " ".join(map(str, key[1:])), key[2] not in FORMAT_MANTISSA_BITS
        found.append(Plateau(name, emulated, float(flat.max() / flat.min()), tuple(off)))
    return found


def _describe(
    plateaus: list[Plateau], regimes: pd.DataFrame, quantity: str, per_group: bool
) -> str:
    """The widest plateau (and its group), and the embedding-dominated values per group or as
    a range."""
    widest = max(plateaus, key=lambda p: p.spread)
    alphas = regimes.groupby("regime").alpha.unique()

    def listed(regime: str) -> str:
        return ", ".join(_g(a) for a in sorted(alphas.get(regime, [])))

    offs = [x for p in plateaus for x in p.off]
    if not offs:
        off = "none"
    elif per_group:
        off = ", ".join(f"{p.name} {'/'.join(map(_g, p.off))}" for p in plateaus) + "x the plateau"
    else:
        off = f"{_g(min(offs))}-{_g(max(offs))}x the plateau"
    return (
        f"{quantity}: max/min over residual-dominated alpha ({listed('residual')}) at most "
        f"{_g(widest.spread)} ({widest.name}); embedding-dominated alpha "
        f"({listed('embedding')}): {off}"
    )


# --- N.6: the worst-case recursion ------------------------------------------------------------


def _ratio_range(estimate: pd.Series, measured: pd.Series) -> tuple[float, float]:
    ratio = estimate[measured > 0] / measured[measured > 0]
    return float(ratio.min()), float(ratio.max())


def worst_case_recursion(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.6: the worst-case bound holds everywhere, each rounding source alone included; its
    per-step amplification alpha omega_k Lip_k, at the last attention and MLP add, is the same
    for every residual-dominated alpha and falls (with alpha / stream size) where the embedding
    dominates; per source, the typical estimate lies within 10x of the measured error (same
    norm) at every add. The bound's factor at the first add (its vacuity) is reported."""
    recursion, regimes, sources = tables[RECURSION], stream_regimes(tables[ERRORS]), tables[SOURCES]
    both = pd.concat([recursion, sources])
    above = int(((both.measured > both.bound) | (both.measured_rel > both.bound_rel)).sum())
    last = recursion[
        recursion.checkpoint
        == recursion.groupby([*GROUP, "alpha", "kind"]).checkpoint.transform("max")
    ].merge(regimes, on=[*GROUP, "alpha"])
    plateaus = _plateaus(last, "amplification", [*GROUP, "kind"])
    if not plateaus:
        return None
    first = sources[sources.checkpoint == sources.checkpoint.min()]
    vacuity = _ratio_range(first.bound, first.measured)
    typical = _ratio_range(sources.typical_rel_l2, sources.measured_rel_l2)
    per_model = [
        f"{model} {_g(low)}-{_g(high)}"
        for model, rows in sources.groupby("model")
        for low, high in [_ratio_range(rows.typical_rel_l2, rows.measured_rel_l2)]
    ]
    formats = _ratio_range(recursion.typical_rel_l2, recursion.measured_rel_l2)
    value = (
        f"{above} of {len(both)} adds above the bound; "
        + _describe(plateaus, regimes, "amplification at the last attn/mlp add", per_group=False)
        + f"; bound/measured at the first add, per source: {_g(vacuity[0])}-{_g(vacuity[1])}; "
        f"typical/measured at every add: per source {_g(typical[0])}-{_g(typical[1])} "
        f"({', '.join(per_model)}), test formats {_g(formats[0])}-{_g(formats[1])}"
    )
    falls = all(x <= 1 / FACTOR for p in plateaus for x in p.off)
    close = typical[0] >= 1 / TYPICAL_WINDOW and typical[1] <= TYPICAL_WINDOW
    holds = above == 0 and _flat(plateaus) and falls and close
    return Finding(
        "bound violations; spread of alpha omega_k Lip_k over alpha per regime; the bound's "
        "factor at the first add; typical estimate / measured",
        value,
        holds,
    )


def _flat(plateaus: list[Plateau]) -> bool:
    return all(p.spread <= FACTOR for p in plateaus)


# --- N.7: GPT-2's relative error across residual scalings ------------------------------------


def alpha_invariance(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.7: the median relative error at the last add is the same for every residual-dominated
    alpha; where the embedding dominates, the emulated formats' error leaves that plateau (their
    stream, held in float32, rounds far below their u, so the branch roundings that shrink
    with alpha dominate). A format that rounds the stream itself at its u (bf16, fp16, fp32)
    may stay near the plateau there: reported, not tested."""
    return _alpha_finding(tables[ERRORS])


def trained_alpha_invariance(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.8: N.7's test on the trained models alone (None where the run has none)."""
    errors = tables[ERRORS]
    return _alpha_finding(errors[errors.weights == "trained"])


def _alpha_finding(errors: pd.DataFrame) -> Finding | None:
    """The plateau over the residual-dominated alphas and the emulated formats' departure from
    it where the embedding dominates (N.7, N.8); None without two residual-dominated alphas."""
    if errors.empty:
        return None
    regimes = stream_regimes(errors)
    rel = _last(errors[errors.metric == "rel_linf"]).merge(regimes, on=[*GROUP, "alpha"])
    plateaus = _plateaus(rel, "p50", GROUP)
    if not plateaus:
        return None
    value = _describe(plateaus, regimes, "median rel_linf at the last add", per_group=True)
    apart = all(not FACTOR**-1 < x < FACTOR for p in plateaus if p.emulated for x in p.off)
    return Finding(
        "spread of the relative error over alpha per stream regime",
        value,
        _flat(plateaus) and apart,
    )


# --- N.9: attention sinks grow in training ---------------------------------------------------


def _head_medians(sinks: pd.DataFrame, statistic: str) -> pd.Series:
    """Per (weights, model): the median over heads of each head's median over rows."""
    rows = sinks[sinks.statistic == statistic]
    return rows.groupby(["weights", "model"]).p50.median()


def attention_sinks(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.9: every trained model has sink heads (median late-row p_max >= 1/2) where no random
    model has one, and its attention is more concentrated overall (the median over heads of the
    heads' median p_max at least 2x every random model's); reported beside it: the first
    token's weight, and the heads whose top 1% of rows reach the strong-sink regime of N.3 in
    bf16 (1 - p_max <= 2^-8)."""
    sinks = tables[SINKS]
    p_max, first = _head_medians(sinks, "p_max"), _head_medians(sinks, "first_token")
    if "trained" not in p_max.index or "random" not in p_max.index:
        return None
    rows = sinks[sinks.statistic == "p_max"]
    heads = rows.groupby(["weights", "model"]).agg(
        sinks=("p50", lambda x: int((x >= SINK_ROW).sum())),
        strong=("p99", lambda x: int((x >= 1 - format_unit_roundoff("bf16")).sum())),
        heads=("p50", "size"),
    )
    value = "; ".join(
        f"{model}: median p_max {_g(p_max[weights, model])}, first-token weight "
        f"{_g(first[weights, model])}, {heads.sinks[weights, model]} of "
        f"{heads.heads[weights, model]} heads with median p_max >= {SINK_ROW:g}, "
        f"{heads.strong[weights, model]} with p99 of p_max >= 1 - 2^-8"
        for weights, model in p_max.index
    )
    concentrated = p_max["trained"].min() >= FACTOR * p_max["random"].max()
    grown = heads.sinks["trained"].min() > 0 and heads.sinks["random"].max() == 0
    holds = bool(concentrated and grown)
    return Finding(
        "median over heads of the late rows' median p_max, trained vs random; sink heads; "
        "first-token weight",
        value,
        holds,
    )


CLAIMS: tuple[ClaimSpec, ...] = (
    ClaimSpec(
        id="N.1",
        statement="The parts of a transformer (LayerNorm, RMSNorm, softmax, self-attention) have "
        "condition numbers and forward-error bounds that bound the measured errors.",
        criterion=f"no measured error or Lipschitz estimate above its bound (the softmax per "
        f"entry, in the emulated format and through real fp16/bf16 casts, subnormals "
        f"included), and the rounding-"
        f"error bounds of the norms and the softmax not loose by orders of magnitude: median "
        f"bound/error <= {TIGHT:g} for each (the attention bound is a worst case over the ball "
        f"and not claimed tight)",
        figure="N5, N6, N7",
        tables=(NORMS, SOFTMAX, LIPSCHITZ),
        test=bounds_hold,
    ),
    ClaimSpec(
        id="N.2",
        statement="Under a massive outlier coordinate LayerNorm loses accuracy that RMSNorm "
        "keeps, while both have the same bulk condition number: the difference lies in the "
        "algorithm (centring), not in the problem.",
        criterion=f"at the largest outlier M (needs M/d >= {MASSIVE:g}), for every format, "
        f"LayerNorm's median bulk error >= {CLEARLY_WORSE:g}x RMSNorm's and the bulk "
        f"condition numbers within a factor {FACTOR:g} of each other",
        figure="N5",
        tables=(NORMS,),
        test=norms_under_outlier,
    ),
    ClaimSpec(
        id="N.3",
        statement="An attention sink (p_max -> 1) tightens the softmax error bound: the bound "
        "falls with the tail mass 1 - p_max, as the error does (in a format whose exponent "
        "range holds the tails: below fp16's normal range, at about e^-10, subnormals set a "
        "floor).",
        criterion=f"in the emulated format (float64's exponent range), for sinks with 1 - p_max "
        f"<= u (needs two such p_max a decade apart), the "
        f"log-log slope of the median evaluation bound against 1 - p_max within "
        f"{SLOPE_TOLERANCE:g} of 1 (a bound blind to the sink's correlation stays flat: slope "
        f"0), shifted and unshifted, and the median bound/error <= {SINK_TIGHT:g}; the torch "
        f"casts' (fp16, bf16) median bound/error there is reported, not tested",
        figure="N6",
        tables=(SOFTMAX,),
        test=sink_bound,
    ),
    ClaimSpec(
        id="N.4",
        statement="Shifted evaluation of the softmax (subtracting the row maximum) changes its "
        "sensitivity from |z| to |z - max z|: a common logit offset raises the unshifted error "
        "and leaves the shifted one unchanged.",
        criterion=f"over the offset sweep (needs the unshifted condition number to grow >= "
        f"{SENSITIVITY_GROWTH:g}x), the unshifted max relative error grows at least as "
        f"kappa^0.5 (theory kappa^1) and the shifted one by at most {FACTOR:g}x",
        figure="N6",
        tables=(SOFTMAX,),
        test=shifted_evaluation,
    ),
    ClaimSpec(
        id="N.5",
        statement="Self-attention's local Lipschitz constant has a bound independent of the "
        "sequence length.",
        criterion=f"no estimate or worst found above its bound, and for every weight draw (the "
        f"same weights at every n) the log-log slope of the largest constant found (exact at a "
        f"random input, or by Adam ascent on the exact Jacobian over the ball) over the n-free "
        f"bound against n below {SQRT_N_MIDPOINT:g} (0: length-free; 0.5: growing as sqrt(n) "
        f"like the Euclidean bound); needs lengths spanning a factor {LENGTH_SPAN}",
        figure="N7",
        tables=(LIPSCHITZ,),
        test=length_free_lipschitz,
    ),
    ClaimSpec(
        id="N.6",
        statement="The worst-case error bound along GPT-2's residual adds shows stability set by "
        "the weight magnitudes and the growth of the residual stream: the per-step "
        "amplification alpha omega_k Lip_k depends on alpha only through the stream's size.",
        criterion=f"no measured error above the worst-case bound (each rounding source alone "
        f"included); the amplification at the last attention and MLP add within a factor "
        f"{FACTOR:g} over the alphas where the stream is residual-dominated (stream <= "
        f"{RESIDUAL_DOMINATED:g}x its alpha-proportional share), and more than {FACTOR:g}x "
        f"below that plateau where it is embedding-dominated (>= {EMBEDDING_DOMINATED:g}x); per "
        f"rounding source the typical estimate within {TYPICAL_WINDOW:g}x of the measured "
        f"error at every add (the bound's factor at the first add and the test formats' "
        f"typical/measured are reported)",
        figure="N8",
        tables=(RECURSION, ERRORS, SOURCES),
        test=worst_case_recursion,
    ),
    ClaimSpec(
        id="N.7",
        statement="In GPT-2, scaling the residual projections by alpha leaves the relative "
        "rounding error unchanged, unless the scaling flips the residual stream into the "
        "embedding-dominated regime.",
        criterion=f"per model and format, the median rel_linf at the last add within a factor "
        f"{FACTOR:g} over the residual-dominated alphas (stream <= {RESIDUAL_DOMINATED:g}x its "
        f"alpha-proportional share; needs two), and for the emulated m<bits> formats off that "
        f"plateau by more than {FACTOR:g}x at every embedding-dominated alpha (>= "
        f"{EMBEDDING_DOMINATED:g}x); formats that round the stream itself (bf16, fp16, fp32) "
        f"are reported there, not tested",
        figure="N1, N2, N3",
        tables=(ERRORS,),
        test=alpha_invariance,
    ),
    ClaimSpec(
        id="N.8",
        statement="The alpha-invariance of N.7 and its transition hold on trained weights too "
        "(a small GPT-2 trained offline on natural English, read on held-out text), not only "
        "on random weights.",
        criterion=f"N.7's criterion on the weights: trained rows alone: per format, the median "
        f"rel_linf at the last add within a factor {FACTOR:g} over the residual-dominated "
        f"alphas (needs two), and the emulated formats off that plateau by more than "
        f"{FACTOR:g}x at every embedding-dominated alpha; which alphas are residual- and "
        f"embedding-dominated is reported",
        figure="N1, N2, N3",
        tables=(ERRORS,),
        test=trained_alpha_invariance,
    ),
    ClaimSpec(
        id="N.9",
        statement="Training grows attention sinks: a trained model's attention rows concentrate "
        "on one token (p_max -> 1, the regime where N.3's softmax bound tightens), while "
        "random-weight attention stays spread.",
        criterion=f"over the rows of the second half of each sequence (where a spread row has "
        f"p_max < 2/T): every trained model has a sink head (its median p_max >= "
        f"{SINK_ROW:g}) and no random model has one, and the median over heads of each head's "
        f"median p_max is at least {FACTOR:g}x larger for every trained model than for any "
        f"random model; the first token's weight and the heads reaching 1 - p_max <= 2^-8 are "
        f"reported",
        figure="N9",
        tables=(SINKS,),
        test=attention_sinks,
    ),
)
