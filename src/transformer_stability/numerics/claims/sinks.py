"""N.9: training grows attention sinks, on the Bigram-Backcopy model's heads from its random
initialization to the end of training, with the GPT-2 models' concentrated heads beside it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability import verdicts
from transformer_stability.claims import ClaimSpec, Finding
from transformer_stability.numerics.claims._common import (
    EMERGENCE,
    SINKS,
    UNITS,
    Tables,
    _cell_medians,
    _cells,
    _g,
)
from transformer_stability.numerics.items import format_unit_roundoff
from transformer_stability.numerics.spec import SINK_MODEL, SINK_WEIGHT
from transformer_stability.resampling import cell_means
from transformer_stability.verdicts import Term, at_least, below

FALL = 10.0  # the sink head's tail mass falls at least tenfold from its initialization


def _head_medians(sinks: pd.DataFrame, statistic: str) -> pd.Series:
    """Per (weights, model, block, head): the head's median over rows."""
    rows = sinks[sinks.statistic == statistic]
    return rows.set_index(["weights", "model", "block", "head"]).p50


def _first_token_means(frame: pd.DataFrame) -> pd.Series:
    """Per (step, block, head): the head's mean first-token weight over the sequences."""
    return frame.groupby(["step", "block", "head"]).first_token.mean()


def _emergence(frame: pd.DataFrame, labels: pd.DataFrame, last: int) -> pd.Series:
    """At initialization (step 0) and after training (`last`): the largest mean first-token
    weight over the heads; the sink head's (the largest after training) median tail mass after
    training, and its fall from step 0. `frame` has cells over (step, block, head) (`_cells`)."""
    first = {"first": frame.first_token.to_numpy(float)}
    means = cell_means(first, frame.cell.to_numpy(), [labels.index])["first"]
    tails = _cell_medians(frame, "tail_mass")
    step, head = labels.step.to_numpy(), labels[["block", "head"]].to_numpy()
    initial, trained = step == 0, step == last
    sink = np.flatnonzero(trained)[np.nanargmax(means[trained])]  # first of equal maxima
    at_start = np.flatnonzero(initial & (head == head[sink]).all(axis=1))[0]
    tail = tails[sink]
    return pd.Series(
        {
            "initialization": np.nanmax(means[initial]),
            "trained": np.nanmax(means[trained]),
            "fall": tails[at_start] / tail if tail > 0 else np.inf,
            "tail": tail,
        }
    )


def _delimiters(sinks: pd.DataFrame) -> str:
    """The text-trained models' concentrated heads (median p_max >= 1/2) with their first-token
    weight: a head that concentrates elsewhere than the first token is no sink."""
    p_max, first = _head_medians(sinks, "p_max"), _head_medians(sinks, "first_token")
    parts = []
    for model, heads in p_max.groupby(level="model", sort=False):
        found = heads[heads >= SINK_WEIGHT]
        weights_on_first = ", ".join(_g(first[key]) for key in found.index)
        parts.append(
            f"{model}: {len(found)} of {len(heads)} heads with median p_max >= {SINK_WEIGHT:g}"
            + (f" (first-token weight {weights_on_first})" if len(found) else "")
        )
    return "; ".join(parts)


def attention_sinks(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """N.9 on the Bigram-Backcopy model (numerics/backcopy.py): after training some head puts
    at least half its late rows' weight on the first token, at initialization none does (the
    same model, sequences and T), and the sink head's tail mass falls at least `FALL`-fold;
    each a bootstrap over the held-out sequences. The GPT-2 models' concentrated heads are
    reported beside it with their first-token weight."""
    emergence = tables[EMERGENCE]
    last = int(emergence.step.max())
    frame = emergence[emergence.step.isin([0, last])]
    cells, labels = _cells(
        frame, ["step", "block", "head"], ["sequence", "first_token", "tail_mass"]
    )
    found = verdicts.bootstrap(
        cells, lambda f: _emergence(f, labels, last), "sequence", "sequences"
    )
    means = _first_token_means(frame)[last]
    value = (
        f"{SINK_MODEL}, step {last}: largest first-token weight {found['trained'].text()} "
        f"(step 0: {found['initialization'].text()}), {int((means >= SINK_WEIGHT).sum())} of "
        f"{len(means)} heads at >= {SINK_WEIGHT:g}; sink head's tail mass fell "
        f"{found['fall'].text()}-fold to {found['tail'].text()} (bf16's 2^-8: "
        f"{_g(format_unit_roundoff('bf16'))}); " + _delimiters(tables[SINKS])
    )
    terms = (
        Term("largest first-token weight, trained", found["trained"], at_least(SINK_WEIGHT)),
        Term(
            "largest first-token weight, initialization",
            found["initialization"],
            below(SINK_WEIGHT),
        ),
        Term("sink head's tail mass, initialization / trained", found["fall"], at_least(FALL)),
    )
    return Finding(
        "the heads' first-token weight and the sink head's tail mass of the late attention "
        "rows, trained vs the same model at initialization",
        value,
        terms,
    )


N9 = ClaimSpec(
    id="N.9",
    statement="Training grows attention sinks: a trained model's attention rows concentrate "
    "on one token (p_max -> 1, the regime where N.3's softmax bound tightens), while "
    "random-weight attention stays spread.",
    criterion=f"on a GPT-2 trained on the Bigram-Backcopy task (BOS first), over the rows of "
    f"the second half of held-out sequences: after training some head's mean weight on the "
    f"first token >= {SINK_WEIGHT:g} (a sink head), at initialization every head's "
    f"< {SINK_WEIGHT:g} (the same model, sequences and T), and the sink head's median tail "
    f"mass 1 - p_max falls >= {FALL:g}-fold; each over its whole bootstrap interval (held-out "
    f"sequences). The GPT-2 models' heads with median p_max >= {SINK_WEIGHT:g} are reported "
    f"with their first-token weight (a head concentrated elsewhere, e.g. on a delimiter, is no "
    f"sink)",
    figure="N10",
    tables=(EMERGENCE, SINKS),
    test=attention_sinks,
    units={EMERGENCE: UNITS[EMERGENCE], SINKS: UNITS[SINKS]},
)
