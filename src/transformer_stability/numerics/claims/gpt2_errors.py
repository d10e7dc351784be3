"""N.7 and N.8: GPT-2's relative error across residual scalings alpha, on random and on
trained weights; one test, run on all rows and on the trained rows alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from transformer_stability.claims import ClaimSpec, Finding
from transformer_stability.numerics.claims._common import ERRORS, FACTOR, Tables
from transformer_stability.numerics.claims.gpt2_regimes import (
    EMBEDDING_DOMINATED,
    GROUP,
    RESIDUAL_DOMINATED,
    _describe,
    _flat_terms,
    _gpt2_term,
    _last,
    _plateaus,
    stream_regimes,
)
from transformer_stability.verdicts import at_least


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


N7 = ClaimSpec(
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
)

N8 = ClaimSpec(
    id="N.8",
    statement="The alpha-invariance of N.7 and its transition hold on trained weights too "
    "(a small GPT-2 trained offline on natural English, read on held-out text, and N.9's "
    "Bigram-Backcopy model with attention sinks, read on its held-out sequences), not only on "
    "random weights.",
    criterion=f"N.7's criterion on the weights: trained rows alone, exact on the run's "
    f"inputs: per format, the median rel_linf at the last add within a factor {FACTOR:g} "
    f"over the residual-dominated alphas (needs two), and the emulated formats off that "
    f"plateau by more than {FACTOR:g}x at every embedding-dominated alpha; which alphas "
    f"are residual- and embedding-dominated is reported",
    figure="N1, N2, N3",
    tables=(ERRORS,),
    test=trained_alpha_invariance,
)
