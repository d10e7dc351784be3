"""A.3: the theory (the full-Gram closure) matches the APJN curves measured in deep ViTs on
natural images, and its remaining error falls with width."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from transformer_stability.apjn.claims._common import (
    AGREEMENT,
    AGREES,
    NESTED,
    WIDTH_EXCESS,
    WIDTH_SLOPES,
    _carried,
    _compared_means,
    _g,
    _labelled,
    _terms,
    _where,
    _worst,
)
from transformer_stability.claims import ClaimSpec, Finding, Tables
from transformer_stability.verdicts import Estimate, at_most, below

A3_STATISTIC = (
    "GMFE of the image curves over the compared blocks, mean over "
    "initializations and images (per curve the mean of the three depth regions), per "
    "variant and direction, with its 95 % bootstrap interval (initializations, then images "
    "within each): full-Gram closure, and the (q, p) closure for context; slope of "
    "ln(GMFE - 1) against ln(width) (full-Gram, width scan) with its bootstrap interval "
    "over the initializations of each width, and the full-Gram GMFE at the scan's widest "
    "model"
)
"""What A.3's Finding says it computed."""


def _widest(excess: pd.DataFrame) -> str:
    """'d = 768: 1.03 (Derf α=1.5, forward)': the worst full-Gram GMFE over the compared blocks
    at the widest model of the width scan, for context."""
    rows = excess[(excess["region"] == "compared") & (excess["closure"] == "gram")]
    width = rows["width"].max()
    rows = _labelled(rows[rows["width"] == width])
    gmfe_mean = rows.set_index(["model", "direction"])["excess_mean"] + 1.0
    return f"d = {int(width)}: {_g(gmfe_mean.max())} ({_where(gmfe_mean.idxmax())})"


def image_agreement(tables: Tables, section: Mapping[str, Any]) -> Finding | None:
    """Full-Gram GMFE of the image curves over the compared blocks (early blocks apart), mean
    over initializations and images per variant and direction, and the slope of its excess
    against width, each with the bootstrap interval its table carries. Not run without a
    full-Gram curve or a width slope (fewer than two widths with a mismatch)."""
    means = _compared_means(tables, "images")
    full = means.dropna(subset="gmfe_gram")
    slopes = tables[WIDTH_SLOPES]
    slopes = slopes[(slopes["region"] == "compared") & (slopes["closure"] == "gram")]
    slopes = _labelled(slopes).dropna(subset="slope")
    if full.empty or slopes.empty:
        return None

    def carried(rows: pd.DataFrame, column: str) -> dict[Any, Estimate]:
        return _carried(rows, column, NESTED.format("images"), section["measure"]["inits"])

    gram, qp = carried(full, "gmfe_gram"), carried(means, "gmfe")
    scan = _carried(slopes, "slope", "bootstrap over the initializations of each width",
                    section["width_scan"]["inits"])  # fmt: skip
    return Finding(
        statistic=A3_STATISTIC,
        value=f"(q, p) worst {_worst(qp)}; full-Gram worst {_worst(gram)}; "
        f"width slope largest {_worst(scan)}; full-Gram at {_widest(tables[WIDTH_EXCESS])}",
        terms=_terms("full-Gram GMFE", gram, at_most(AGREES))
        + _terms("width slope", scan, below(0)),
    )


CLAIM = ClaimSpec(
    id="A.3",
    statement="The theory matches the APJNs measured in deep ViTs on natural images.",
    criterion="every variant and direction (pre-LN and Derf: DyT has no full-Gram "
    f"closure): full-Gram GMFE over the compared blocks at most {AGREES:g} over its whole "
    "bootstrap interval (initializations, with their images), and its excess falling with "
    "width: the slope of ln(GMFE - 1) against ln(width) negative over its whole bootstrap "
    "interval (initializations of each width); either beyond its bound over its whole "
    "interval contradicts it",
    figure="A3",
    tables=(AGREEMENT, WIDTH_EXCESS, WIDTH_SLOPES),
    test=image_agreement,
)
