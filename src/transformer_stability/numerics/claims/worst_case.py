"""N.6: the worst-case error recursion along GPT-2's residual adds holds, and its per-step
amplification depends on alpha only through the stream's size."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from transformer_stability.claims import ClaimSpec, Finding
from transformer_stability.numerics.claims._common import (
    ERRORS,
    FACTOR,
    RECURSION,
    SOURCES,
    Tables,
    _g,
)
from transformer_stability.numerics.claims.gpt2_regimes import (
    EMBEDDING_DOMINATED,
    GPT2_EXACT,
    GROUP,
    RESIDUAL_DOMINATED,
    _describe,
    _flat_terms,
    _gpt2_term,
    _plateaus,
    stream_regimes,
)
from transformer_stability.verdicts import Estimate, Term, at_least, at_most

TYPICAL_WINDOW = 10.0  # the typical estimate within this factor of the measured error


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


N6 = ClaimSpec(
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
)
