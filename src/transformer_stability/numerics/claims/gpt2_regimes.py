"""GPT-2's residual stream per scaling alpha: which alphas are residual- or embedding-
dominated, and a quantity's plateau over the residual-dominated ones, which the worst-case
(N.6) and the relative-error (N.7, N.8) claims both test."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from transformer_stability import verdicts
from transformer_stability.numerics.claims._common import FACTOR, _g
from transformer_stability.numerics.items import FORMAT_MANTISSA_BITS
from transformer_stability.verdicts import Estimate, Term, at_most

RESIDUAL_DOMINATED, EMBEDDING_DOMINATED = 2.0, 10.0  # stream / its alpha-proportional share
GROUP = ["weights", "model", "precision"]
GPT2_EXACT = "exact on the run's inputs (quantiles over their tokens; no units to resample)"


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
