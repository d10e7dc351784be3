"""The fields and the leading columns that Study A's tables share."""

from __future__ import annotations

from typing import Any

import pandera.pandas as pa
from pandera.typing import Series

from transformer_stability.apjn.names import NORMS
from transformer_stability.tables import INF, Table


def _norm() -> Any:
    return pa.Field(isin=NORMS, description="the normalization: pre-LN, Derf or DyT")


def _alpha() -> Any:
    return pa.Field(gt=0, nullable=True, description="the map's alpha_0; NaN: pre-LN has none")


def _positive(description: str, inf: bool = True) -> Any:
    """> 0, e.g. an APJN (a mean squared Jacobian norm, or the exp of a log)."""
    return pa.Field(gt=0, metadata=INF if inf else None, description=description)


class Ids(Table):
    """The columns every Study A table of a model starts with (items.Variant.ids)."""

    norm: Series[str] = _norm()
    alpha: Series[float] = _alpha()
    attn_mult: Series[float] = pa.Field(gt=0, description="the attention branch's multiplier")
    mlp_mult: Series[float] = pa.Field(gt=0, description="the MLP branch's multiplier")
