"""A.5: DyT and Derf are more sensitive to initialization (initialization.py) and need careful
tuning: each saturating norm contrasted with pre-LN on the trainability grid
(tuning_statistics.py)."""

from __future__ import annotations

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
)
from transformer_stability.apjn.claims.initialization import (
    SWEEP_COLUMNS,
    multiplier_spread,
    ratios_text,
    spread_contrast,
    spread_text,
)
from transformer_stability.apjn.style import NORM_LABELS
from transformer_stability.apjn.tables import TuningStatistics
from transformer_stability.apjn.tuning import MATCH, TOLERANCE
from transformer_stability.apjn.tuning_statistics import ALL_DEPTHS, BASELINE, SEEDS
from transformer_stability.claims import ClaimSpec, Finding, Tables
from transformer_stability.tables import meta
from transformer_stability.verdicts import Estimate, Term, above, below, bootstrap

STATISTICS = meta(TuningStatistics)["path"]

MIN_RATES = 3
"""The fewest learning rates from which a tuning window is worth reading."""

A5_STATISTIC = (
    "Derf's J^{{L,0}} at the largest over the smallest init multiplier (measured) over "
    "pre-LN's, per multiplier sweep, with its 95 % bootstrap interval over initializations; "
    "per saturating norm, its contrast with pre-LN (its value minus pre-LN's, mean over the "
    "depths {depths}) in sensitivity (range of the best loss over rates across init choices: "
    "α₀ x multiplier, pre-LN the multiplier), tuning cost (loss at α₀ 1, multiplier 1 and the "
    "median rate {median} minus the best), window (decades of log-rate over the {rates} rates, "
    "{low} to {high}, where the mean final loss, linear between rates, exceeds a choice's best "
    "by at most {tolerance} of the depth's lowest best loss, mean over choices) and instability "
    "(events per run), each with its 95 % bootstrap interval over training seeds; context: "
    "measured/theory J^{{L,0}} over the sensitivity sweeps, J-matched pairs, the partial "
    "correlation of the best loss with ln J^{{L,0}} given the design factors and how often the "
    "α₀ with J^{{L,0}} nearest 1 trains best"
)
"""What A.5's Finding says it computed, with its grid of depths and rates."""

DECISIVE = {"sensitivity": above(0), "tuning_cost": above(0), "window": below(0)}
"""The contrasts (saturating norm minus pre-LN) that decide A.5, and where they hold: more
sensitive to the init, costlier to leave untuned, a narrower window of rates."""
NAMES = {"sensitivity": "sensitivity", "tuning_cost": "tuning cost", "window": "window",
         "instability": "instability"}  # fmt: skip
UNITS = {"sensitivity": "", "tuning_cost": "", "window": " decades", "instability": " events/run"}


def _estimates(statistics: pd.DataFrame) -> dict[tuple, Estimate]:
    """The table's rows as Estimates, by (quantity, norm, depth, contrast)."""
    return {
        (r.quantity, r.norm, int(r.depth), bool(r.contrast)): Estimate(
            float(r.value), float(r.lo), float(r.hi), f"bootstrap over {SEEDS}", int(r.seeds),
            SEEDS,
        )
        for r in statistics.itertuples(index=False)
    }  # fmt: skip


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


def _contrast_text(estimates: Mapping[tuple, Estimate], norms: list[str]) -> str:
    """'Derf − pre-LN: sensitivity 0.3 [0.2, 0.4] (Derf 0.5, pre-LN 0.2), ...': every
    quantity's contrast over the depths, with both norms' own values."""
    parts = []
    for norm in norms:
        items = []
        for quantity, name in NAMES.items():
            contrast = estimates[(quantity, norm, ALL_DEPTHS, True)]
            own = estimates[(quantity, norm, ALL_DEPTHS, False)]
            base = estimates[(quantity, BASELINE, ALL_DEPTHS, False)]
            items.append(
                f"{name} {contrast.text()}{UNITS[quantity]} ({NORM_LABELS[norm]} {_g(own.point)}, "
                f"pre-LN {_g(base.point)})"
            )
        parts.append(f"{NORM_LABELS[norm]} − pre-LN: " + ", ".join(items))
    return "; ".join(parts)


def _link_text(estimates: Mapping[tuple, Estimate], norms: list[str]) -> str:
    """The partial correlation and J's pick of α₀, with their intervals."""
    picks = ", ".join(
        f"{NORM_LABELS[n]} {estimates[('j_picks_alpha', n, ALL_DEPTHS, False)].text()}"
        for n in norms
    )
    partial = estimates[("partial_r", "all", ALL_DEPTHS, False)]
    return (
        f"partial r {partial.text()}; the α₀ with J^{{L,0}} nearest 1 trains best at a fraction "
        f"{picks} of (depth, multiplier)"
    )


def _tuning_terms(estimates: Mapping[tuple, Estimate], norms: list[str]) -> tuple[Term, ...]:
    """Per saturating norm, each decisive contrast with pre-LN over the depths."""
    return tuple(
        Term(
            f"{NAMES[quantity]}, {NORM_LABELS[norm]} − pre-LN",
            estimates[(quantity, norm, ALL_DEPTHS, True)],
            criterion,
        )
        for norm in norms
        for quantity, criterion in DECISIVE.items()
    )


def _trained(windows: pd.DataFrame, estimates: Mapping[tuple, Estimate]) -> list[str]:
    """The saturating norms whose contrasts the grid supports (MIN_RATES rates, two
    multipliers, the default init trained), [] where it supports none."""
    norms = sorted(set(windows["norm"]) - {BASELINE})
    enough = windows["rates"].min() >= MIN_RATES and windows["attn_mult"].nunique() >= 2
    defaults = all(
        np.isfinite(estimates[("tuning_cost", n, ALL_DEPTHS, False)].point)
        for n in [BASELINE, *norms]
    )
    return norms if enough and defaults and BASELINE in set(windows["norm"]) else []


def init_and_tuning(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Initialization: Derf's spread of J^{L,0} over each init multiplier sweep over pre-LN's,
    bootstrapped over initializations. Tuning: per saturating norm, its contrasts with pre-LN
    in sensitivity, tuning cost and window (decisive) and instability (context), bootstrapped
    over training seeds (tuning_statistics.csv). Context: measured against theory over the
    sensitivity sweeps, J-matched pairs, the partial correlation of the best loss with
    ln J^{L,0} given the design factors and J's pick of α₀. Not run with fewer than MIN_RATES
    rates, one multiplier, no saturating map or the default init untrained."""
    ends, windows, train = tables[END_TO_END], tables[WINDOWS], tables[TRAINABILITY]
    spread = multiplier_spread(ends).set_index(["sweep", "norm"])
    swept = [(s, n) in spread.index for s in ("attn_mult", "mlp_mult") for n in ("ln", "derf")]
    estimates = _estimates(tables[STATISTICS])
    norms = _trained(windows, estimates)
    if not (all(swept) and norms):
        return None
    sweeps = ends.loc[ends["sweep"].isin(["attn_mult", "mlp_mult"]), SWEEP_COLUMNS]
    contrast = bootstrap(sweeps, spread_contrast, "init_seed", INITS)
    rates = np.sort(train["lr"].unique())
    depths = ", ".join(str(d) for d in sorted(windows["depth"].unique()))
    return Finding(
        statistic=A5_STATISTIC.format(
            depths=depths,
            median=_g(rates[(len(rates) - 1) // 2]),
            rates=len(rates),
            low=_g(rates[0]),
            high=_g(rates[-1]),
            tolerance=f"{TOLERANCE:.0%}",
        ),  # fmt: skip
        value=f"{spread_text(spread.reset_index())}; Derf's spread over pre-LN's "
        + ", ".join(f"{s} {e.text()}" for s, e in contrast.items())
        + f"; {ratios_text(tables[RATIOS])}; {_contrast_text(estimates, norms)}; "
        f"{_link_text(estimates, norms)}; {_pairs_text(tables[PAIRS], windows)}; "
        f"diverged runs {int(windows['diverged'].sum())}, loss spikes "
        f"{int(windows['loss_spikes'].sum())}, gradient blow-ups "
        f"{int(windows['grad_blowups'].sum())} in {int(windows['runs'].sum())} runs",
        terms=tuple(
            Term(f"Derf's J spread over pre-LN's, {s}", e, above(1)) for s, e in contrast.items()
        )
        + _tuning_terms(estimates, norms),
    )


CLAIM = ClaimSpec(
    id="A.5",
    statement="DyT and Derf are more sensitive to initialization and optimization and "
    "need careful tuning.",
    criterion="over its whole bootstrap interval (initializations), Derf's spread of "
    "J^{L,0} over each init multiplier sweep above pre-LN's (one ratio per sweep); and for "
    "every trained saturating map, its contrast with pre-LN (mean over the depths) over its "
    "whole bootstrap interval (training seeds): sensitivity (range of the best loss over init "
    "choices) above 0, tuning cost (untuned default minus the tuned best) above 0 and window "
    "(decades of rates near a choice's best) below 0; any of these reversed over its whole "
    "interval contradicts it. Instability per run, the partial correlation with ln J^{L,0} "
    "(whether the theory's APJN carries the effect beyond the design factors), J's pick of "
    "α₀ and measured/theory over the sensitivity sweeps are context",
    figure="A5, A7, A11",
    tables=(END_TO_END, RATIOS, TRAINABILITY, WINDOWS, PAIRS, STATISTICS),
    test=init_and_tuning,
    units={END_TO_END: ("init_seed",), TRAINABILITY: ("train_seed",)},
)
