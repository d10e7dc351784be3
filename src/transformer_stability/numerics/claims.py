"""Study N's claims (docs/numerics.md, "Claims"), each tested on the run's tables: bounds that
hold and are not loose where they are claimed tight, LayerNorm against RMSNorm under an
outlier, the softmax bound under a sink, shifted evaluation, the length-free attention bound,
the worst-case recursion and GPT-2's relative error across residual scalings. Every decisive
statistic is a verdicts.Term: the sampled ones (medians over the rounding experiments'
samples, over the heads of a model) carry a bootstrap interval over their replication units;
counts, per-draw slopes and the GPT-2 tables' quantiles (which hold no replication units) are
exact. Torch-free, like the tables: the claims rule reads tables only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability import verdicts
from transformer_stability.claims import ClaimSpec, Finding
from transformer_stability.numerics.items import FORMAT_MANTISSA_BITS, format_unit_roundoff
from transformer_stability.numerics.tables import (
    AttentionSinks,
    Gpt2Errors,
    Gpt2Recursion,
    Lipschitz,
    Norms,
    RecursionSources,
    Softmax,
)
from transformer_stability.tables import meta
from transformer_stability.verdicts import (
    Estimate,
    Term,
    at_least,
    at_most,
    below,
    within,
)

NORMS, SOFTMAX, LIPSCHITZ = (meta(m)["path"] for m in (Norms, Softmax, Lipschitz))
ERRORS, RECURSION = meta(Gpt2Errors)["path"], meta(Gpt2Recursion)["path"]
SOURCES = meta(RecursionSources)["path"]
SINKS = meta(AttentionSinks)["path"]
UNITS = {
    NORMS: ("sample",),  # an input vector, the same for both norms at one outlier and format
    SOFTMAX: ("sample",),  # a logit vector, the same for every format and mode at one setting
    LIPSCHITZ: ("draw",),  # a weight draw, the same weights at every n
    SINKS: ("block", "head"),  # a head of one model
}
"""The replication units of the sampled tables; the GPT-2 tables hold quantiles over the run's
tokens, with no unit to resample, and their statistics are exact on the run's inputs."""

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
COUNTED = "exact count over every sample"
GPT2_EXACT = "exact on the run's inputs (quantiles over their tokens; no units to resample)"

Tables = Mapping[str, pd.DataFrame]


def _g(x: float) -> str:
    return f"{x:.3g}"


def _slope(x: pd.Series, y: pd.Series) -> float:
    """Least-squares slope of log y against log x; NaN where a value is not positive and
    finite (then no power law is measured)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if not (np.isfinite(y).all() and (y > 0).all()):
        return np.nan
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _ratio_median(bound: pd.Series, measured: pd.Series) -> float:
    """Median of bound/measured over the pairs with a measured error (an exact result has
    nothing to be tight against)."""
    bound, measured = np.asarray(bound, float), np.asarray(measured, float)
    some = measured > 0
    return float(np.nanmedian(bound[some] / measured[some]))


def _cells(
    frame: pd.DataFrame, keys: list[str], columns: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The `columns` of `frame` with `cell`, the number of its combination of `keys`, and the
    combinations in cell order: a resample's medians per combination are then one numpy pass
    (a claim's bootstrap recomputes them on every resample)."""
    cells = frame.groupby(keys, sort=True).ngroup()
    labels = frame.assign(cell=cells).drop_duplicates("cell").sort_values("cell")[keys]
    return frame[columns].assign(cell=cells), labels.reset_index(drop=True)


def _cell_medians(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The median of `column` in each cell (`_cells`), NaN left out (NaN in a cell without a
    value)."""
    codes, values = frame.cell.to_numpy(), frame[column].to_numpy(float)
    codes, values = codes[~np.isnan(values)], values[~np.isnan(values)]
    order = np.lexsort((values, codes))
    counts = np.bincount(codes, minlength=int(frame.cell.max()) + 1)
    starts = np.cumsum(counts) - counts
    lo = np.minimum(starts + (counts - 1) // 2, len(values) - 1)
    hi = np.minimum(starts + counts // 2, len(values) - 1)
    ordered = values[order]
    return np.where(counts > 0, (ordered[lo] + ordered[hi]) / 2, np.nan)


def _by_label(frame: pd.DataFrame, labels: pd.DataFrame, column: str) -> dict[tuple, float]:
    """The cell medians of `column` by their combination of keys."""
    keys = zip(*(labels[key].tolist() for key in labels.columns), strict=True)
    return dict(zip(keys, _cell_medians(frame, column), strict=True))


def _none_above(name: str, count: int) -> Term:
    """No measured value above its bound: a count over every sample, without sampling noise."""
    return Term(name, Estimate.exact(count, COUNTED), at_most(0))


# --- N.1: every measured error below its bound; rounding bounds within 10^2 of the errors ----


def _norm_pairs(norms: pd.DataFrame) -> pd.DataFrame:
    """One row per (norm, format, outlier, sample, quantity): err_X against bound_X."""
    keys = ["norm", "mantissa_bits", "outlier", "sample"]
    wide = norms.set_index([*keys, "metric"]).value.unstack("metric")
    kinds = [m.removeprefix("err_") for m in wide.columns if m.startswith("err_")]
    pairs = pd.concat(
        pd.DataFrame({"measured": wide[f"err_{k}"], "bound": wide[f"bound_{k}"]}) for k in kinds
    )
    return pairs.reset_index()


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


def _tightness_frame(norm_pairs: pd.DataFrame, evaluation: pd.DataFrame) -> pd.DataFrame:
    """bound/measured of every pair with a measured error, by part (norms, softmax), with the
    setting whose samples are drawn together (`condition`) and the sample."""

    def part(pairs: pd.DataFrame, name: str, setting: list[str]) -> pd.DataFrame:
        some = pairs[pairs.measured > 0]
        condition = some[setting].astype(str).agg(" ".join, axis=1)
        ratio = some.bound / some.measured
        return pd.DataFrame(
            {"part": name, "condition": condition, "sample": some["sample"], "ratio": ratio}
        )

    return pd.concat(
        [
            part(norm_pairs, "norms", ["mantissa_bits", "outlier"]),
            part(evaluation, "softmax", ["sweep", "p_max", "offset"]),
        ],
        ignore_index=True,
    )


def _part_medians(ratios: pd.DataFrame) -> pd.Series:
    """The median bound/error of each part, pooled over its settings."""
    parts, values = ratios.part.to_numpy(), ratios.ratio.to_numpy(float)
    return pd.Series({name: np.nanmedian(values[parts == name]) for name in ("norms", "softmax")})


def bounds_hold(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.1: every measured error and Lipschitz estimate against its bound (exact counts); how
    far the rounding-error bounds (norms, softmax evaluation) lie above the errors they bound
    (medians, bootstrapped over the samples of each setting)."""
    softmax = tables[SOFTMAX].dropna(subset=["bound"])
    norm_pairs = _norm_pairs(tables[NORMS])
    parts = {
        "norms": norm_pairs,
        "softmax": softmax[["measured", "bound"]],
        "attention": _lipschitz_pairs(tables[LIPSCHITZ]),
    }
    counts = {name: _violations(pairs) for name, pairs in parts.items()}
    ratios = _tightness_frame(norm_pairs, softmax[softmax["mode"] != "propagation"])
    tight = verdicts.bootstrap(ratios, _part_medians, "sample", "samples", ["part", "condition"])
    above = sum(v for v, _ in counts.values())
    value = (
        f"{above} of {sum(n for _, n in counts.values())} above their bound ("
        + ", ".join(f"{name} {v}/{n}" for name, (v, n) in counts.items())
        + "); median bound/error: "
        + ", ".join(f"{name} {e.text()}" for name, e in tight.items())
    )
    terms = [_none_above(f"values above bound, {name}", v) for name, (v, _) in counts.items()]
    terms += [Term(f"median bound/error, {name}", e, at_most(TIGHT)) for name, e in tight.items()]
    return Finding("measured values above their bound; median bound/error", value, tuple(terms))


# --- N.2: LayerNorm against RMSNorm under a massive outlier ----------------------------------


def _ln_over_rms(at: pd.DataFrame, labels: pd.DataFrame) -> pd.Series:
    """LayerNorm's median over RMSNorm's, per metric and format ('err_bulk m7'); `at` has
    cells over (metric, mantissa_bits, norm)."""
    med = _by_label(at, labels, "value")
    pairs = labels[["metric", "mantissa_bits"]].drop_duplicates().itertuples(index=False)
    return pd.Series(
        {
            f"{metric} m{bits}": med[metric, bits, "layernorm"] / med[metric, bits, "rmsnorm"]
            for metric, bits in pairs
        }
    )


def norms_under_outlier(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.2: at the largest outlier M, LayerNorm's bulk error against RMSNorm's, and their bulk
    condition numbers, per format: ratios of medians over the samples (the same inputs for
    both norms), bootstrapped over the samples."""
    norms = tables[NORMS]
    largest = float(norms.outlier.max())
    dim = section["norms"]["dim"]
    if largest / dim < MASSIVE:
        return None
    at = norms[(norms.outlier == largest) & norms.metric.isin(["err_bulk", "kappa_bulk"])]
    at, labels = _cells(
        at, ["metric", "mantissa_bits", "norm"], ["mantissa_bits", "sample", "value"]
    )
    ratios = verdicts.bootstrap(
        at, lambda f: _ln_over_rms(f, labels), "sample", "samples", ["mantissa_bits"]
    )
    formats = sorted(at.mantissa_bits.unique())
    value = f"M/d = {_g(largest / dim)}; " + "; ".join(
        f"m{bits}: bulk error LN/RMS {ratios[f'err_bulk m{bits}'].text()}, bulk kappa LN/RMS "
        f"{ratios[f'kappa_bulk m{bits}'].text()}"
        for bits in formats
    )
    terms = [
        term
        for bits in formats
        for term in (
            Term(
                f"bulk error LN/RMS, m{bits}", ratios[f"err_bulk m{bits}"], at_least(CLEARLY_WORSE)
            ),
            Term(
                f"bulk kappa LN/RMS, m{bits}",
                ratios[f"kappa_bulk m{bits}"],
                within(1 / FACTOR, FACTOR),
            ),
        )
    ]
    return Finding(
        "bulk error and bulk condition, LayerNorm / RMSNorm, at the largest M", value, tuple(terms)
    )


# --- N.3: the softmax evaluation bound falls with the sink's tail mass -----------------------


def _sink_slopes(strong: pd.DataFrame, labels: pd.DataFrame) -> pd.Series:
    """Per mode, the log-log slopes of the median bound and error against 1 - p_max; the
    median bound/error over every pair. `strong` has cells over (mode, tail_mass)."""
    bound, error = _cell_medians(strong, "bound"), _cell_medians(strong, "measured")
    found = {}
    for mode in labels["mode"].unique():
        at = (labels["mode"] == mode).to_numpy()
        tails = labels.tail_mass.to_numpy()[at]
        found[f"bound slope, {mode}"] = _slope(tails, bound[at])
        found[f"error slope, {mode}"] = _slope(tails, error[at])
    found["median bound/error"] = _ratio_median(strong.bound, strong.measured)
    return pd.Series(found)


def sink_bound(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.3: in the emulated format (float64's exponent range: no underflow) and the strong-sink
    regime 1 - p_max <= u the bound (and the error) should fall in proportion to 1 - p_max and
    stay within 10x of the error: slopes of medians over the samples, bootstrapped over the
    samples of each p_max. The torch casts' bound/error there is reported: their subnormals
    put a floor of about n times half the subnormal spacing under both."""
    softmax = tables[SOFTMAX]
    sinks = softmax[(softmax.sweep == "sink") & (softmax.metric == "l1_abs")]
    sinks = sinks.assign(tail_mass=1 - sinks.p_max)
    emulated = sinks.format.str.fullmatch(r"m\d+")
    rows = sinks[emulated]
    u = 2.0 ** -(rows.mantissa_bits.max() + 1)
    strong = rows[(rows.tail_mass > 0) & (rows.tail_mass <= u)]  # p_max = 1: no tail, no error
    if strong.tail_mass.nunique() < 2 or strong.tail_mass.max() / strong.tail_mass.min() < 10:
        return None
    cells, labels = _cells(strong, ["mode", "tail_mass"], ["p_max", "sample", "measured", "bound"])
    found = verdicts.bootstrap(
        cells, lambda f: _sink_slopes(f, labels), "sample", "samples", ["p_max"]
    )
    modes = sorted(labels["mode"].unique())
    casts = sinks[~emulated & np.isfinite(sinks.bound)]
    casts = casts[casts.tail_mass <= 2.0 ** -(casts.mantissa_bits + 1)]
    reported = [
        f"{name} {_g(_ratio_median(run.bound, run.measured))}"
        for name, run in casts.groupby("format")
    ]
    value = (
        f"{strong.format.iloc[0]}: "
        + "; ".join(
            f"{mode}: bound slope {found[f'bound slope, {mode}'].text()}, error slope "
            f"{found[f'error slope, {mode}'].text()}"
            for mode in modes
        )
        + f" (theory 1); median bound/error {found['median bound/error'].text()}"
        + (f"; torch casts, median bound/error: {', '.join(reported)}" if reported else "")
    )
    slope = within(1 - SLOPE_TOLERANCE, 1 + SLOPE_TOLERANCE)
    terms = [Term(f"bound slope, {mode}", found[f"bound slope, {mode}"], slope) for mode in modes]
    terms.append(Term("median bound/error", found["median bound/error"], at_most(SINK_TIGHT)))
    return Finding(
        "log-log slope of the evaluation bound vs 1 - p_max for 1 - p_max <= u; bound/error",
        value,
        tuple(terms),
    )


# --- N.4: shifted evaluation removes the offset's sensitivity --------------------------------


def _offset_growth(rows: pd.DataFrame, labels: pd.DataFrame) -> pd.Series:
    """From the smallest to the largest offset, of the medians over the samples: the growth of
    each mode's condition number, the exponent of the unshifted error's growth in its
    condition number, and the shifted error's growth. `rows` has cells over (mode, metric,
    offset)."""
    med = _by_label(rows, labels, "measured")
    low, high = labels.offset.min(), labels.offset.max()

    def growth(mode: str, metric: str) -> float:
        return med[mode, metric, high] / med[mode, metric, low]

    kappa = growth("unshifted", "kappa_max")
    with np.errstate(divide="ignore", invalid="ignore"):
        exponent = np.log(growth("unshifted", "max_rel")) / np.log(kappa)
    return pd.Series(
        {
            "kappa growth, unshifted": kappa,
            "kappa growth, shifted": growth("shifted", "kappa_max"),
            "error exponent, unshifted": exponent,
            "error growth, shifted": growth("shifted", "max_rel"),
        }
    )


def shifted_evaluation(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.4: over the offset sweep, the unshifted error should grow with its condition number
    (error ~ kappa u) and the shifted error should not grow: growths of medians over the
    samples, bootstrapped over the samples of each offset. Not run where the offsets do not
    grow the unshifted condition number enough to measure an exponent."""
    softmax = tables[SOFTMAX]
    rows = softmax[(softmax.sweep == "offset") & softmax.metric.isin(["kappa_max", "max_rel"])]
    offsets = sorted(rows.offset.unique())
    if len(offsets) < 2:
        return None
    rows, labels = _cells(rows, ["mode", "metric", "offset"], ["offset", "sample", "measured"])
    if _offset_growth(rows, labels)["kappa growth, unshifted"] < SENSITIVITY_GROWTH:
        return None
    found = verdicts.bootstrap(
        rows, lambda f: _offset_growth(f, labels), "sample", "samples", ["offset"]
    )
    value = (
        f"offset {_g(offsets[0])} -> {_g(offsets[-1])}: unshifted kappa "
        f"x{found['kappa growth, unshifted'].text()}, error grows as "
        f"kappa^{found['error exponent, unshifted'].text()} (theory 1); shifted error "
        f"x{found['error growth, shifted'].text()}, kappa "
        f"x{found['kappa growth, shifted'].text()}"
    )
    terms = (
        Term("error exponent, unshifted", found["error exponent, unshifted"], at_least(0.5)),
        Term("error growth, shifted", found["error growth, shifted"], at_most(FACTOR)),
    )
    return Finding(
        "growth of the max relative error with the offset, unshifted vs shifted", value, terms
    )


# --- N.5: a Lipschitz bound of attention that does not grow with n ---------------------------


def length_free_lipschitz(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.5: per weight draw (the same weights at every n), the largest Lipschitz constant found
    (random input or ascent) relative to the n-free bound, against n; a constant growing like
    sqrt(n) would give slope 0.5. The claim is about every draw, so each draw's slope is a
    term of its own, exact: the draw fixes the weights, the seeded inputs and the ascent, and
    the table holds nothing within a draw to resample. The bound's margin over what was found,
    per n over the draws, is reported."""
    table = tables[LIPSCHITZ]
    lengths = sorted(table.seq_len.unique())
    if len(lengths) < 2 or lengths[-1] / lengths[0] < LENGTH_SPAN:
        return None
    inf = table[table.norm == "inf"]
    inf = inf.assign(found=np.fmax(inf.estimate, inf.worst))
    slopes = {
        draw: _slope(rows.seq_len, rows.found / rows.ball_bound)
        for draw, rows in inf.groupby("draw")
    }
    margin = (inf.ball_bound / inf.found).groupby(inf.seq_len).agg(["min", "max"])
    frob = table[table.norm == "frobenius"].groupby("seq_len").ball_bound.median()
    above, checked = _violations(_lipschitz_pairs(table))
    value = (
        f"slope of found/bound vs n per draw: {_g(min(slopes.values()))} to "
        f"{_g(max(slopes.values()))} ({len(slopes)} draws, n = {lengths[0]}..{lengths[-1]}); "
        "bound/found over the draws: "
        + ", ".join(f"n={n} {_g(row['min'])}-{_g(row['max'])}" for n, row in margin.iterrows())
        + f"; {above} of {checked} above their bound; Euclidean bound slope "
        f"{_g(_slope(pd.Series(frob.index), frob))} (sqrt n: 0.5)"
    )
    basis = "exact for this draw (its weights, inputs and ascent fixed)"
    terms = [_none_above("values above bound", above)]
    terms += [
        Term(
            f"slope found/bound vs n, draw {draw}", Estimate.exact(s, basis), below(SQRT_N_MIDPOINT)
        )
        for draw, s in slopes.items()
    ]
    return Finding(
        "per weight draw, log-log slope of the largest Lipschitz constant found / the n-free "
        "bound vs n; bound/found per n",
        value,
        tuple(terms),
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


def _gpt2_term(name: str, value: float, criterion: verdicts.Criterion) -> Term:
    return Term(name, Estimate.exact(value, GPT2_EXACT), criterion)


def _flat_terms(plateaus: list[Plateau], quantity: str) -> list[Term]:
    """Per group, the plateau's max/min over the residual-dominated alphas within a factor 2."""
    return [
        _gpt2_term(f"{quantity} max/min, {p.name}", p.spread, at_most(FACTOR)) for p in plateaus
    ]


# --- N.6: the worst-case recursion ------------------------------------------------------------


def _ratio_range(estimate: pd.Series, measured: pd.Series) -> tuple[float, float]:
    ratio = estimate[measured > 0] / measured[measured > 0]
    return float(ratio.min()), float(ratio.max())


def worst_case_recursion(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.6: the worst-case bound holds everywhere, each rounding source alone included; its
    per-step amplification alpha omega_k Lip_k, at the last attention and MLP add, is the same
    for every residual-dominated alpha and falls (with alpha / stream size) where the embedding
    dominates; per source, the typical estimate lies within 10x of the measured error (same
    norm) at every add. The bound's factor at the first add (its vacuity) is reported. Every
    term is exact on the run's inputs: the tables hold maxima and quantiles over tokens, no
    replication units."""
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
    terms = [Term("adds above the bound", Estimate.exact(above, GPT2_EXACT), at_most(0))]
    terms += _flat_terms(plateaus, "amplification")
    terms += [
        _gpt2_term(f"amplification off/plateau, {p.name}", max(p.off), at_most(1 / FACTOR))
        for p in plateaus
        if p.off
    ]
    terms += [
        _gpt2_term("typical/measured per source, lowest", typical[0], at_least(1 / TYPICAL_WINDOW)),
        _gpt2_term("typical/measured per source, highest", typical[1], at_most(TYPICAL_WINDOW)),
    ]
    return Finding(
        "bound violations; spread of alpha omega_k Lip_k over alpha per regime; the bound's "
        "factor at the first add; typical estimate / measured",
        value,
        tuple(terms),
    )


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
    it where the embedding dominates (N.7, N.8), exact on the run's inputs: the table holds
    quantiles over its tokens, no replication units. None without two residual-dominated
    alphas."""
    if errors.empty:
        return None
    regimes = stream_regimes(errors)
    rel = _last(errors[errors.metric == "rel_linf"]).merge(regimes, on=[*GROUP, "alpha"])
    plateaus = _plateaus(rel, "p50", GROUP)
    if not plateaus:
        return None
    value = _describe(plateaus, regimes, "median rel_linf at the last add", per_group=True)
    terms = _flat_terms(plateaus, "rel_linf")
    terms += [  # off the plateau by more than 2x either way: its departure factor >= 2
        _gpt2_term(
            f"rel_linf departure from plateau, {p.name}",
            min(max(x, 1 / x) for x in p.off),
            at_least(FACTOR),
        )
        for p in plateaus
        if p.emulated and p.off
    ]
    return Finding("spread of the relative error over alpha per stream regime", value, tuple(terms))


# --- N.9: attention sinks grow in training ---------------------------------------------------


def _head_medians(sinks: pd.DataFrame, statistic: str) -> pd.Series:
    """Per (weights, model): the median over heads of each head's median over rows."""
    rows = sinks[sinks.statistic == statistic]
    return rows.groupby(["weights", "model"]).p50.median()


def _concentration(rows: pd.DataFrame, labels: pd.DataFrame) -> pd.Series:
    """The least concentrated trained model's median over heads of p_max over the most
    concentrated random model's; `rows` has cells over (weights, model)."""
    p_max, trained = _cell_medians(rows, "p50"), (labels.weights == "trained").to_numpy()
    return pd.Series({"trained/random": p_max[trained].min() / p_max[~trained].max()})


def attention_sinks(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.9: every trained model has sink heads (median late-row p_max >= 1/2) where no random
    model has one (exact counts over each model's heads), and its attention is more
    concentrated overall: the median over heads of the heads' median p_max at least 2x every
    random model's, one contrast bootstrapped over the heads of each model. Reported beside
    it: the first token's weight, and the heads whose top 1% of rows reach the strong-sink
    regime of N.3 in bf16 (1 - p_max <= 2^-8)."""
    sinks = tables[SINKS]
    p_max, first = _head_medians(sinks, "p_max"), _head_medians(sinks, "first_token")
    if "trained" not in p_max.index or "random" not in p_max.index:
        return None
    rows = sinks[(sinks.statistic == "p_max") & sinks.weights.isin(["trained", "random"])]
    heads = rows.groupby(["weights", "model"]).agg(
        sinks=("p50", lambda x: int((x >= SINK_ROW).sum())),
        strong=("p99", lambda x: int((x >= 1 - format_unit_roundoff("bf16")).sum())),
        heads=("p50", "size"),
    )
    cells, labels = _cells(rows, ["weights", "model"], ["weights", "model", "block", "head", "p50"])
    ratio = verdicts.bootstrap(
        cells, lambda f: _concentration(f, labels), ["block", "head"], "heads", ["weights", "model"]
    )["trained/random"]
    value = (
        "; ".join(
            f"{model}: median p_max {_g(p_max[weights, model])}, first-token weight "
            f"{_g(first[weights, model])}, {heads.sinks[weights, model]} of "
            f"{heads.heads[weights, model]} heads with median p_max >= {SINK_ROW:g}, "
            f"{heads.strong[weights, model]} with p99 of p_max >= 1 - 2^-8"
            for weights, model in heads.index
        )
        + f"; median p_max trained/random {ratio.text()}"
    )
    counted = "exact count over the model's heads"
    terms = [Term("median p_max, trained/random", ratio, at_least(FACTOR))]
    terms += [
        Term(
            f"sink heads, {model}",
            Estimate.exact(count, counted),
            at_least(1) if weights == "trained" else at_most(0),
        )
        for (weights, model), count in heads.sinks.items()
    ]
    return Finding(
        "median over heads of the late rows' median p_max, trained vs random; sink heads; "
        "first-token weight",
        value,
        tuple(terms),
    )


CLAIMS: tuple[ClaimSpec, ...] = (
    ClaimSpec(
        id="N.1",
        statement="The parts of a transformer (LayerNorm, RMSNorm, softmax, self-attention) have "
        "condition numbers and forward-error bounds that bound the measured errors.",
        criterion=f"no measured error or Lipschitz estimate above its bound (an exact count over "
        f"every sample: the softmax per entry, in the emulated format and through real "
        f"fp16/bf16 casts, subnormals included), and the rounding-error bounds of the norms "
        f"and the softmax not loose by orders of magnitude: the median bound/error <= "
        f"{TIGHT:g} for each over its whole bootstrap interval (samples of each setting); the "
        f"attention bound is a worst case over the ball and not claimed tight",
        figure="N5, N6, N7",
        tables=(NORMS, SOFTMAX, LIPSCHITZ),
        test=bounds_hold,
        units={NORMS: UNITS[NORMS], SOFTMAX: UNITS[SOFTMAX], LIPSCHITZ: UNITS[LIPSCHITZ]},
    ),
    ClaimSpec(
        id="N.2",
        statement="Under a massive outlier coordinate LayerNorm loses accuracy that RMSNorm "
        "keeps, while both have the same bulk condition number: the difference lies in the "
        "algorithm (centring), not in the problem.",
        criterion=f"at the largest outlier M (needs M/d >= {MASSIVE:g}), for every format, over "
        f"the whole bootstrap interval (samples, the same inputs for both norms): LayerNorm's "
        f"median bulk error / RMSNorm's >= {CLEARLY_WORSE:g}, and their median bulk condition "
        f"numbers' ratio within a factor {FACTOR:g}",
        figure="N5",
        tables=(NORMS,),
        test=norms_under_outlier,
        units={NORMS: UNITS[NORMS]},
    ),
    ClaimSpec(
        id="N.3",
        statement="An attention sink (p_max -> 1) tightens the softmax error bound: the bound "
        "falls with the tail mass 1 - p_max, as the error does (in a format whose exponent "
        "range holds the tails: below fp16's normal range, at about e^-10, subnormals set a "
        "floor).",
        criterion=f"in the emulated format (float64's exponent range), for sinks with 1 - p_max "
        f"<= u (needs two such p_max a decade apart), over the whole bootstrap interval "
        f"(samples of each p_max): the log-log slope of the median evaluation bound against "
        f"1 - p_max within {SLOPE_TOLERANCE:g} of 1 (a bound blind to the sink's correlation "
        f"stays flat: slope 0), shifted and unshifted, and the median bound/error <= "
        f"{SINK_TIGHT:g}; the torch casts' (fp16, bf16) median bound/error there is reported, "
        f"not tested",
        figure="N6",
        tables=(SOFTMAX,),
        test=sink_bound,
        units={SOFTMAX: UNITS[SOFTMAX]},
    ),
    ClaimSpec(
        id="N.4",
        statement="Shifted evaluation of the softmax (subtracting the row maximum) changes its "
        "sensitivity from |z| to |z - max z|: a common logit offset raises the unshifted error "
        "and leaves the shifted one unchanged.",
        criterion=f"over the offset sweep (needs the unshifted median condition number to grow "
        f">= {SENSITIVITY_GROWTH:g}x), over the whole bootstrap interval (samples of each "
        f"offset): the unshifted median max relative error grows at least as kappa^0.5 "
        f"(theory kappa^1) and the shifted one by at most {FACTOR:g}x",
        figure="N6",
        tables=(SOFTMAX,),
        test=shifted_evaluation,
        units={SOFTMAX: UNITS[SOFTMAX]},
    ),
    ClaimSpec(
        id="N.5",
        statement="Self-attention's local Lipschitz constant has a bound independent of the "
        "sequence length.",
        criterion=f"no estimate or worst found above its bound (an exact count), and for every "
        f"weight draw (the same weights at every n; each draw's slope exact, its weights, "
        f"inputs and ascent fixed) the log-log slope of the largest constant found (exact at "
        f"a random input, or by Adam ascent on the exact Jacobian over the ball) over the "
        f"n-free bound against n below {SQRT_N_MIDPOINT:g} (0: length-free; 0.5: growing as "
        f"sqrt(n) like the Euclidean bound); needs lengths spanning a factor {LENGTH_SPAN}",
        figure="N7",
        tables=(LIPSCHITZ,),
        test=length_free_lipschitz,
        units={LIPSCHITZ: UNITS[LIPSCHITZ]},
    ),
    ClaimSpec(
        id="N.6",
        statement="The worst-case error bound along GPT-2's residual adds shows stability set by "
        "the weight magnitudes and the growth of the residual stream: the per-step "
        "amplification alpha omega_k Lip_k depends on alpha only through the stream's size.",
        criterion=f"exact on the run's inputs (the tables hold maxima and quantiles over tokens, "
        f"no replication units): no measured error above the worst-case bound (each rounding "
        f"source alone included); per model, format and add kind, the amplification at the "
        f"last attention and MLP add within a factor {FACTOR:g} over the alphas where the "
        f"stream is residual-dominated (stream <= {RESIDUAL_DOMINATED:g}x its "
        f"alpha-proportional share), and more than {FACTOR:g}x below that plateau where it is "
        f"embedding-dominated (>= {EMBEDDING_DOMINATED:g}x); per rounding source the typical "
        f"estimate within {TYPICAL_WINDOW:g}x of the measured error at every add (the bound's "
        f"factor at the first add and the test formats' typical/measured are reported)",
        figure="N8",
        tables=(RECURSION, ERRORS, SOURCES),
        test=worst_case_recursion,
    ),
    ClaimSpec(
        id="N.7",
        statement="In GPT-2, scaling the residual projections by alpha leaves the relative "
        "rounding error unchanged, unless the scaling flips the residual stream into the "
        "embedding-dominated regime.",
        criterion=f"exact on the run's inputs (the table holds quantiles over tokens, no "
        f"replication units): per model and format, the median rel_linf at the last add "
        f"within a factor {FACTOR:g} over the residual-dominated alphas (stream <= "
        f"{RESIDUAL_DOMINATED:g}x its alpha-proportional share; needs two), and for the "
        f"emulated m<bits> formats off that plateau by more than {FACTOR:g}x at every "
        f"embedding-dominated alpha (>= {EMBEDDING_DOMINATED:g}x); formats that round the "
        f"stream itself (bf16, fp16, fp32) are reported there, not tested",
        figure="N1, N2, N3",
        tables=(ERRORS,),
        test=alpha_invariance,
    ),
    ClaimSpec(
        id="N.8",
        statement="The alpha-invariance of N.7 and its transition hold on trained weights too "
        "(a small GPT-2 trained offline on natural English, read on held-out text), not only "
        "on random weights.",
        criterion=f"N.7's criterion on the weights: trained rows alone, exact on the run's "
        f"inputs: per format, the median rel_linf at the last add within a factor {FACTOR:g} "
        f"over the residual-dominated alphas (needs two), and the emulated formats off that "
        f"plateau by more than {FACTOR:g}x at every embedding-dominated alpha; which alphas "
        f"are residual- and embedding-dominated is reported",
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
        f"{SINK_ROW:g}) and no random model has one (exact counts over each model's heads), "
        f"and the median over heads of each head's median p_max, least concentrated trained "
        f"model over most concentrated random model, >= {FACTOR:g} over its whole bootstrap "
        f"interval (heads of each model); the first token's weight and the heads reaching "
        f"1 - p_max <= 2^-8 are reported",
        figure="N9",
        tables=(SINKS,),
        test=attention_sinks,
        units={SINKS: UNITS[SINKS]},
    ),
)
