"""N.3 and N.4, on the softmax experiment: how the evaluation's error and its bound respond to
where the logits lie, a sink's tail mass (N.3) and a common offset, shifted or not (N.4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability import verdicts
from transformer_stability.claims import ClaimSpec, Finding
from transformer_stability.numerics.claims._common import (
    FACTOR,
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
from transformer_stability.verdicts import Term, at_least, at_most, within

SINK_TIGHT = 10.0  # the sink-aware softmax bound: within one order of magnitude
SLOPE_TOLERANCE = 0.2  # a log-log slope within ±0.2 of its theory
SENSITIVITY_GROWTH = 4.0  # the offsets must grow the unshifted condition number this much


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
    f"not tested",
    figure="N6",
    tables=(SOFTMAX,),
    test=sink_bound,
    units={SOFTMAX: UNITS[SOFTMAX]},
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
