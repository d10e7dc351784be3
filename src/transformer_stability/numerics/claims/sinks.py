"""N.9: training grows attention sinks, on the attention statistics of trained and random
GPT-2 models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from transformer_stability import verdicts
from transformer_stability.claims import ClaimSpec, Finding
from transformer_stability.numerics.claims._common import (
    FACTOR,
    SINKS,
    UNITS,
    Tables,
    _cell_medians,
    _cells,
    _g,
)
from transformer_stability.numerics.items import format_unit_roundoff
from transformer_stability.verdicts import Estimate, Term, at_least, at_most

SINK_ROW = 0.5  # a row with p_max >= 1/2 gives one token most of its attention


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


N9 = ClaimSpec(
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
)
