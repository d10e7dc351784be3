"""A.5: DyT and Derf are more sensitive to initialization (initialization.py) and to the design
factors of training, and need careful tuning of the learning rate."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.apjn.claims._common import (
    END_TO_END,
    INITS,
    PAIRS,
    RATIOS,
    TRAINABILITY,
    WINDOWS,
    _g,
    _label,
    grid_means,
    labelled,
)
from transformer_stability.apjn.claims.initialization import (
    SWEEP_COLUMNS,
    multiplier_spread,
    ratios_text,
    spread_contrast,
    spread_text,
)
from transformer_stability.apjn.tuning import (
    CONFIG,
    MATCH,
    TOLERANCE,
    partial_correlation,
)
from transformer_stability.claims import ClaimSpec, Finding, Tables
from transformer_stability.verdicts import Estimate, Term, above, at_least, at_most, bootstrap

MIN_RATES = 3
"""The fewest learning rates from which a tuning window is worth reading."""

A5_STATISTIC = (
    "Derf's J^{{L,0}} at the largest over the smallest init multiplier (measured) over "
    "pre-LN's, per multiplier sweep, with its 95 % bootstrap interval over initializations; "
    "per norm and design factor (α₀, init multiplier, depth), from its smallest to its largest "
    "level at equal other factors, the mean change of the window (rates of {rates}, {low} to "
    "{high}, whose mean final loss over seeds is within {tolerance} of the best) and of the "
    "best loss, with 95 % bootstrap intervals over training seeds; context: measured/theory "
    "J^{{L,0}} over the sensitivity sweeps, J-matched pairs, the partial correlation of the best "
    "loss with ln J^{{L,0}} given the design factors"
)
"""What A.5's Finding says it computed, with its grid of rates."""

SEEDS = "training seeds"
FACTOR_NAMES = {"alpha": "α₀", "attn_mult": "multiplier", "depth": "depth"}

TRAIN_COLUMNS = [*CONFIG, "lr", "train_seed", "final_loss", "diverged"]
"""The columns the bootstrap of the tuning effects reads (fewer columns, faster resamples)."""


def _pairs_text(pairs: pd.DataFrame, windows: pd.DataFrame) -> str:
    """The matched pairs' median |difference of best loss| against all pairs'."""
    finite = windows.loc[np.isfinite(windows["best_loss"]), "best_loss"].to_numpy()
    every = np.abs(finite[:, None] - finite[None, :])[np.triu_indices(len(finite), 1)]
    matched = (pairs["best_loss_first"] - pairs["best_loss_second"]).abs()
    matched = matched[np.isfinite(matched)]
    if not len(matched) or not len(every):
        return f"{len(pairs)} J-matched pairs"
    return (
        f"{len(pairs)} J-matched pairs (|Δ ln J| ≤ {MATCH:g}): median |Δ best loss| "
        f"{_g(float(np.median(matched)))} against {_g(float(np.median(every)))} over all pairs"
    )


def factor_levels(train: pd.DataFrame) -> dict[tuple[str, str], tuple[float, float]]:
    """Per norm and design factor with two levels or more: its smallest and largest level."""
    out = {}
    for norm, part in train.groupby("norm"):
        for factor in FACTOR_NAMES:
            levels = part[factor].dropna()
            if levels.nunique() >= 2:
                out[(norm, factor)] = (levels.min(), levels.max())
    return out


def _factor_effect(
    window: np.ndarray, best: np.ndarray, present: np.ndarray, axis: int, levels: pd.Index
) -> tuple[float, float] | None:
    """(window change, relative best-loss change) of one norm's configurations (arrays over
    its factors' grid) from the smallest to the largest trained level along `axis`, mean over
    the other factors' configurations trained at both; None with fewer than two levels."""
    trained_at = np.moveaxis(present, axis, 0).reshape(len(levels), -1).any(axis=1)
    trained = np.flatnonzero(trained_at & levels.notna())
    if len(trained) < 2:
        return None
    low, high = trained[0], trained[-1]
    both = np.take(present, low, axis) & np.take(present, high, axis)

    def change(value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.take(value, high, axis)[both], np.take(value, low, axis)[both]

    (window_high, window_low), (best_high, best_low) = change(window), change(best)
    with np.errstate(invalid="ignore"):  # inf / inf: neither level ever trained
        return float(np.mean(window_high - window_low)), float(np.mean(best_high / best_low - 1))


def tuning_effects(train: pd.DataFrame) -> pd.Series:
    """Per norm and design factor with two levels or more, from trainability rows: the mean
    change of the window (rates whose mean final loss over seeds is within TOLERANCE of the
    configuration's best; a diverged seed counts as an infinite loss) and the mean relative
    change of the best loss from the factor's smallest to its largest level at equal other
    factors, and their sensitivity max(-window change, best change / TOLERANCE), which is
    >= 1 exactly when the factor narrows the window by a rate or more or raises the best loss
    by TOLERANCE or more (tuning.rate_windows and factor_effects, on a grid for the
    bootstrap). Indexed (quantity, norm, factor)."""
    loss = train["final_loss"].where(~train["diverged"], np.inf)
    levels, means = grid_means(train.assign(loss=loss), [*CONFIG, "lr"], ["loss"])
    losses = means["loss"]
    present = (~np.isnan(losses)).any(axis=-1)
    best = np.where(np.isnan(losses), np.inf, losses).min(axis=-1)
    window = ((losses <= best[..., None] * (1 + TOLERANCE)) & np.isfinite(best)[..., None]).sum(-1)
    out = {}
    for (n, norm), (axis, factor) in itertools.product(enumerate(levels[0]), enumerate(CONFIG[1:])):
        effect = _factor_effect(window[n], best[n], present[n], axis, levels[axis + 1])
        if effect is not None:
            out[("window", norm, factor)], out[("best", norm, factor)] = effect
            out[("sensitivity", norm, factor)] = float(np.fmax(-effect[0], effect[1] / TOLERANCE))
    return labelled(out)


def _effect_text(effects: Mapping[Any, Estimate], levels: Mapping[tuple[str, str], tuple]) -> str:
    """'derf alpha 0.1→4: window -2.3 [-3, -1.7] rates, best +0.41 [0.3, 0.5]'."""
    return "; ".join(
        f"{norm} {factor} {low:g}→{high:g}: window {effects[('window', norm, factor)].text()} "
        f"rates, best {effects[('best', norm, factor)].text()}"
        for (norm, factor), (low, high) in levels.items()
    )


def _tuning_terms(
    effects: Mapping[Any, Estimate], levels: Mapping[tuple[str, str], tuple]
) -> tuple[Term, ...]:
    """A saturating norm's factor must make training sensitive (window narrowed by a rate or
    best loss raised by TOLERANCE); pre-LN's must do neither."""
    terms = []
    for norm, factor in levels:
        where = f"{_label(norm, np.nan)} {FACTOR_NAMES[factor]}"
        window, best, either = (
            effects[(q, norm, factor)] for q in ("window", "best", "sensitivity")
        )
        if norm == "ln":
            terms.append(Term(f"window change, {where}", window, above(-1)))
            terms.append(Term(f"best-loss change, {where}", best, at_most(TOLERANCE)))
        else:
            terms.append(Term(f"sensitivity, {where}", either, at_least(1)))
    return tuple(terms)


def init_and_tuning(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Initialization: Derf's spread of J^{L,0} over each init multiplier sweep over pre-LN's,
    bootstrapped over initializations. Tuning: per norm and design factor, how the window of
    rates and the best loss change from the factor's smallest to its largest level,
    bootstrapped over training seeds. Context: measured against theory over the sensitivity
    sweeps, J-matched pairs and the partial correlation of the best loss with ln J^{L,0} given
    the design factors. Not run with fewer than MIN_RATES rates, one multiplier, one depth or
    no saturating map."""
    ends, windows, train = tables[END_TO_END], tables[WINDOWS], tables[TRAINABILITY]
    spread = multiplier_spread(ends).set_index(["sweep", "norm"])
    swept = [(s, n) in spread.index for s in ("attn_mult", "mlp_mult") for n in ("ln", "derf")]
    trained = (
        windows["rates"].min() >= MIN_RATES
        and windows["attn_mult"].nunique() >= 2
        and windows["depth"].nunique() >= 2
    )
    if not (all(swept) and trained and set(windows["norm"]) > {"ln"}):
        return None
    sweeps = ends.loc[ends["sweep"].isin(["attn_mult", "mlp_mult"]), SWEEP_COLUMNS]
    contrast = bootstrap(sweeps, spread_contrast, "init_seed", INITS)
    levels = factor_levels(train)
    effects = bootstrap(train[TRAIN_COLUMNS], tuning_effects, "train_seed", SEEDS)
    rates = np.sort(train["lr"].unique())
    return Finding(
        statistic=A5_STATISTIC.format(
            rates=len(rates), low=_g(rates[0]), high=_g(rates[-1]), tolerance=f"{TOLERANCE:.0%}"
        ),
        value=f"{spread_text(spread.reset_index())}; Derf's spread over pre-LN's "
        + ", ".join(f"{s} {e.text()}" for s, e in contrast.items())
        + f"; {ratios_text(tables[RATIOS])}; {_effect_text(effects, levels)}; "
        f"{_pairs_text(tables[PAIRS], windows)}; partial r {_g(partial_correlation(windows))}; "
        f"diverged runs {int(windows['diverged'].sum())}, loss spikes "
        f"{int(windows['loss_spikes'].sum())}, gradient blow-ups "
        f"{int(windows['grad_blowups'].sum())} in {int(windows['runs'].sum())} runs",
        terms=tuple(
            Term(f"Derf's J spread over pre-LN's, {s}", e, above(1)) for s, e in contrast.items()
        )
        + _tuning_terms(effects, levels),
    )


CLAIM = ClaimSpec(
    id="A.5",
    statement="DyT and Derf are more sensitive to initialization and optimization and "
    "need careful tuning.",
    criterion="over its whole bootstrap interval (initializations), Derf's spread of "
    "J^{L,0} over each init multiplier sweep above pre-LN's (one ratio per sweep); for the "
    "trained saturating maps each of α₀, init multiplier and depth, from its smallest to "
    "its largest level, narrowing the window of rates within "
    f"{TOLERANCE:.0%} of the best by at least one rate or raising the best loss by at "
    f"least {TOLERANCE:.0%} (max(-window change, best change / {TOLERANCE:g}) >= 1), and "
    "for pre-LN neither multiplier nor depth doing either (window change above -1, best "
    f"change at most {TOLERANCE:.0%}), each over its whole bootstrap interval (training "
    "seeds); any of these reversed over its whole interval contradicts it. The partial "
    "correlation with ln J^{L,0} says whether the theory's APJN carries the effect beyond "
    "the design factors, and measured/theory over the sensitivity sweeps whether the "
    "theory describes the spread (context)",
    figure="A5, A7",
    tables=(END_TO_END, RATIOS, TRAINABILITY, WINDOWS, PAIRS),
    test=init_and_tuning,
    units={END_TO_END: ("init_seed",), TRAINABILITY: ("train_seed",)},
)
