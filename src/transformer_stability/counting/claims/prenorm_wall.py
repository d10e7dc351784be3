"""C.4: bare pre-normalization has a wall, a length past which no norm lets it count, and a
learned gain removes it. Decided by counting the theory lengths on each side of every width's
wall (exact counts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.claims import ClaimSpec, Finding, Tables
from transformer_stability.counting.claims._common import THEORY, WALLS, no_violations
from transformer_stability.verdicts import Term


def _counts(rows: pd.DataFrame, placement: str, lengths: np.ndarray) -> int:
    """At how many of `lengths` both B_min curves of `placement` are finite (it counts there)."""
    part = rows[(rows["placement"] == placement) & rows["L"].isin(lengths)]
    finite = part.groupby("L")["bmin"].apply(lambda b: bool(np.isfinite(b).all()))
    return int(finite.sum())


def _wall_counts(rows: pd.DataFrame, wall: int) -> dict[str, int]:
    """Lengths up to and past the wall, and where bare and learned pre-norm count."""
    lengths = np.sort(rows["L"].unique())
    up_to, past = lengths[lengths <= wall], lengths[lengths > wall]
    return {
        "below": len(up_to),
        "past": len(past),
        "bare_below": _counts(rows, "pre_bare", up_to),
        "bare_past": _counts(rows, "pre_bare", past),
        "learned_past": _counts(rows, "pre_learned", past),
    }


def _wall_terms(d: int, c: Mapping[str, int]) -> list[Term]:
    """The three counts of one width that a wall allows none of."""
    return [
        no_violations(
            f"d = {d}: lengths up to the wall where bare pre-norm fails",
            c["below"] - c["bare_below"],
        ),
        no_violations(f"d = {d}: lengths past the wall where bare pre-norm counts", c["bare_past"]),
        no_violations(
            f"d = {d}: lengths past the wall where a learned gain fails",
            c["past"] - c["learned_past"],
        ),
    ]


def prenorm_has_a_wall(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Bare pre-norm counts up to a finite wall and at no length past it; a learned gain counts
    past it."""
    theory = tables[THEORY]
    rows = theory[(theory["attention"] == "softmax") & (theory["readout"] == "regression")]
    counts = {
        (int(w.d), int(w.max_length)): _wall_counts(rows[rows["d"] == w.d], int(w.max_length))
        for w in tables[WALLS].itertuples()
    }
    if not any(c["past"] for c in counts.values()):
        return None
    value = "; ".join(
        f"d = {d}: wall L = {wall}, bare pre-norm counts at {c['bare_below']}/{c['below']} "
        f"lengths up to it and {c['bare_past']}/{c['past']} past it, learned gain at "
        f"{c['learned_past']}/{c['past']} past it"
        for (d, wall), c in counts.items()
    )
    return Finding(
        statistic="the wall per width; theory lengths at which bare and learned pre-norm count",
        value=value,
        terms=tuple(t for (d, _), c in counts.items() for t in _wall_terms(d, c)),
    )


PRENORM_HAS_A_WALL = ClaimSpec(
    id="C.4",
    statement="Bare pre-normalization bounds the attention scores: beyond a finite length no "
    "norm suffices.",
    criterion="At every width bare pre-norm has a lower bound and a verified construction at "
    "every theory length up to its wall and none past it, while pre-norm with a learned "
    "gain counts at every length past it (exact counts); not run where no theory length "
    "passes a wall.",
    figure="C2",
    tables=(WALLS, THEORY),
    test=prenorm_has_a_wall,
)
