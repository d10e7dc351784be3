"""N.3 and N.4, on the softmax experiment: how the evaluation's error and its bound respond to
where the logits lie, a sink's tail mass (N.3, on synthetic rows and on a trained model's own
attention rows) and a common offset, shifted or not (N.4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability import verdicts
from transformer_stability.claims import ClaimSpec, Finding
from transformer_stability.numerics.claims._common import (
    FACTOR,
    SINK_ROWS,
    SOFTMAX,
    UNITS,
    Tables,
    _by_label,
    _cell_medians,
    _cells,
    _g,
    _ratio_median,
    _slope,
)
from transformer_stability.numerics.spec import SINK_TIGHT
from transformer_stability.resampling import drawn_units, percentile_bounds
from transformer_stability.verdicts import Estimate, Term, at_least, at_most, within

SLOPE_TOLERANCE = 0.2  # a log-log slope within ±0.2 of its theory
SENSITIVITY_GROWTH = 4.0  # the offsets must grow the unshifted condition number this much
DECADES = 2.0  # the real rows' tail masses must span this many decades to measure a slope


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


def _real_row_estimates(rows: pd.DataFrame) -> dict[str, Estimate]:
    """Over `rows` (a trained model's rows in one format): the least-squares slope of log bound
    against log tail mass, and the median bound/error over the rows with an error; each with
    its interval over resamples of the held-out sequences, a sequence keeping all its rows.

    `verdicts.bootstrap` with the same draws (`drawn_units`), computed from weights instead of
    copies: a resample is how often it drew each sequence, the slope then follows from
    per-sequence sums and the median is a weighted median of the ratios sorted once."""
    codes, labels = pd.factorize(rows.sequence, sort=True)
    count = len(labels)
    drawn = drawn_units([0] * count, [count] * count, verdicts.RESAMPLES, seed=0)
    weights = np.vstack([np.ones(count), [np.bincount(d, minlength=count) for d in drawn]])
    x, y = np.log(rows.tail_mass.to_numpy()), np.log(rows.bound.to_numpy())
    moments = [np.ones_like(x), x, y, x * x, x * y]
    sums = np.stack([np.bincount(codes, m, count) for m in moments], axis=1)  # per sequence
    n, sx, sy, sxx, sxy = (weights @ sums).T
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    if not np.isfinite(y).all():  # an infinite bound: no power law is measured
        slope[:] = np.nan
    some = rows.measured.to_numpy() > 0
    ratio = rows.bound.to_numpy()[some] / rows.measured.to_numpy()[some]
    order = np.argsort(ratio)
    # rows by ratio, resamples across: a cumulative sum down the rows is fast in that layout
    cumulative = np.cumsum(weights.T.astype(np.int32)[codes[some][order]], axis=0)
    total = cumulative[-1]
    low = np.argmax(cumulative > (total - 1) // 2, axis=0)
    high = np.argmax(cumulative > total // 2, axis=0)
    median = (ratio[order][low] + ratio[order][high]) / 2
    found = {}
    for name, values in (("bound slope", slope), ("median bound/error", median)):
        lo, hi = percentile_bounds(values[1:])
        basis = "bootstrap over sequences"
        found[name] = Estimate(float(values[0]), float(lo), float(hi), basis, count, "sequences")
    return found


def _real_rows(table: pd.DataFrame) -> tuple[str, list[Term]]:
    """N.3 on the Bigram-Backcopy model's own attention rows after training, in each emulated
    format: the rows with 0 < 1 - p_max <= u (a sink's), bootstrapped over the held-out
    sequences where their tail masses span `DECADES` decades; the median bound at the
    initialization (spread rows) beside them."""
    emulated = table[table.format.str.fullmatch(r"m\d+")]
    start, end = emulated.step.min(), emulated.step.max()
    parts, terms = [], []
    slope = within(1 - SLOPE_TOLERANCE, 1 + SLOPE_TOLERANCE)
    for bits, run in sorted(emulated.groupby("mantissa_bits")):
        name, trained = f"m{bits}", run[run.step == end]
        rows = trained[(trained.tail_mass > 0) & (trained.tail_mass <= 2.0 ** -(bits + 1))]
        if rows.empty or np.log10(rows.tail_mass.max() / rows.tail_mass.min()) < DECADES:
            parts.append(f"{name}: no sink rows spanning {DECADES:g} decades")
            continue
        found = _real_row_estimates(rows)
        initial = run[run.step == start]
        parts.append(
            f"{name}: {len(rows)} rows, 1 - p_max {_g(rows.tail_mass.min())} .. "
            f"{_g(rows.tail_mass.max())}, bound slope {found['bound slope'].text()}, median "
            f"bound/error {found['median bound/error'].text()}, median bound "
            f"{_g(rows.bound.median())} (at initialization {_g(initial.bound.median())}, "
            f"1 - p_max {_g(initial.tail_mass.median())})"
        )
        terms.append(Term(f"real rows, bound slope, {name}", found["bound slope"], slope))
        terms.append(
            Term(
                f"real rows, median bound/error, {name}",
                found["median bound/error"],
                at_most(SINK_TIGHT),
            )
        )
    return f"{table.model.iloc[0]}'s own rows after training, " + "; ".join(parts), terms


def sink_bound(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.3: in the emulated format (float64's exponent range: no underflow) and the strong-sink
    regime 1 - p_max <= u the bound (and the error) should fall in proportion to 1 - p_max and
    stay within 10x of the error: slopes of medians over the samples, bootstrapped over the
    samples of each p_max. The torch casts' bound/error there is reported: their subnormals
    put a floor of about n times half the subnormal spacing under both. The same slope and
    ratio on the trained Bigram-Backcopy model's own attention rows (`_real_rows`)."""
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
    real_value, real_terms = _real_rows(tables[SINK_ROWS])
    slope = within(1 - SLOPE_TOLERANCE, 1 + SLOPE_TOLERANCE)
    terms = [Term(f"bound slope, {mode}", found[f"bound slope, {mode}"], slope) for mode in modes]
    terms.append(Term("median bound/error", found["median bound/error"], at_most(SINK_TIGHT)))
    return Finding(
        "log-log slope of the evaluation bound vs 1 - p_max for 1 - p_max <= u; bound/error; "
        "on synthetic sinks and on a trained model's attention rows",
        f"synthetic rows, {value}. {real_value}",
        (*terms, *real_terms),
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


N3 = ClaimSpec(
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
    f"not tested. The same slope and ratio on the trained Bigram-Backcopy model's own late "
    f"attention rows with 0 < 1 - p_max <= u in each emulated format whose rows span "
    f">= {DECADES:g} decades, bootstrapped over held-out sequences",
    figure="N6, N11",
    tables=(SOFTMAX, SINK_ROWS),
    test=sink_bound,
    units={SOFTMAX: UNITS[SOFTMAX], SINK_ROWS: UNITS[SINK_ROWS]},
)

N4 = ClaimSpec(
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
)
