"""The tables of the built ViTs' measured APJNs: the curves, the end-to-end J^{L,0} of the
sweeps and the few-token models, and their comparisons with the theory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandera.pandas as pa
from pandera.typing import Series

from transformer_stability.apjn.names import SATURATING
from transformer_stability.apjn.tables._common import Ids, _positive
from transformer_stability.tables import INF, Table

FINITE_N_INPUTS = ("identical", "generic")
"""Identical tokens (p0 = q0: uniform attention is exact, whatever the query and key weights)
and the configured generic input (p0 < q0)."""


class MeasuredCurves(Ids):
    """Measured APJN curves per initialization and sample, the closures' theory beside."""

    width: Series[int] = pa.Field(ge=1, description="the model width")
    depth: Series[int] = pa.Field(ge=1, description="the number of blocks L")
    input: Series[str] = pa.Field(isin=("equiangular", "images"), description="the input kind")
    init_seed: Series[int] = pa.Field(ge=0, description="the initialization's seed")
    sample: Series[int] = pa.Field(ge=0, description="the sample (input) index")
    direction: Series[str] = pa.Field(
        isin=("backward", "forward"), description="backward: J^{L,b}; forward: J^{b,b0}"
    )
    source_block: Series[int] = pa.Field(ge=0, description="the curve's fixed end block")
    block: Series[int] = pa.Field(ge=0, description="the block b")
    apjn: Series[float] = _positive("the measured APJN")
    apjn_theory: Series[float] = _positive("the theory's APJN from the measured (q, p)")
    q: Series[float] = pa.Field(ge=0, description="q measured at block (CLS excluded)")
    p: Series[float] = pa.Field(description="p measured at block (CLS excluded)")
    q_theory: Series[float] = pa.Field(ge=0, description="the theory's q")
    p_theory: Series[float] = pa.Field(description="the theory's p")
    q_theory_self: Series[float] = pa.Field(ge=0, description="q with the attention self-term")
    p_theory_self: Series[float] = pa.Field(description="p with the attention self-term")
    apjn_theory_gram: Series[float] = pa.Field(
        gt=0,
        nullable=True,
        metadata=INF,
        description="the full-Gram closure's APJN: images with pre-LN or Derf only, else NaN",
    )
    q_theory_gram: Series[float] = pa.Field(
        ge=0, nullable=True, description="the full-Gram closure's q"
    )
    p_theory_gram: Series[float] = pa.Field(nullable=True, description="its p")

    class Config:
        metadata = {"path": "apjn/measured_curves.csv", "rule": "gather"}


class SweepName(Table):
    """The column an end-to-end table starts with (before the ids: see EndToEnd)."""

    sweep: Series[str] = pa.Field(
        isin=("alpha", "attn_mult", "mlp_mult", "depth"), description="the swept parameter"
    )


class EndToEnd(Ids, SweepName):
    """End-to-end J^{L,0} per equiangular sample with its theory: the sensitivity sweeps (alpha
    of Derf and DyT, attn_mult and mlp_mult of pre-LN and Derf) and every variant at every depth
    up to depth_scaling.max_depth (sweep "depth"). Pandera orders inherited columns from the
    last base to the first: sweep, then the ids."""

    width: Series[int] = pa.Field(ge=1, description="the model width")
    depth: Series[int] = pa.Field(ge=1, description="the depth L")
    init_seed: Series[int] = pa.Field(ge=0, description="the initialization's seed")
    sample: Series[int] = pa.Field(ge=0, description="the sample index")
    apjn: Series[float] = _positive("the measured J^{L,0}")
    apjn_theory: Series[float] = _positive("the theory's J^{L,0}")

    class Config:
        metadata = {"path": "apjn/end_to_end.csv", "rule": "gather"}


class SensitivityRatios(Ids, SweepName):
    """Measured/theory J^{L,0} at every point of the sensitivity sweeps (sweeps alpha,
    attn_mult, mlp_mult of end_to_end.csv; apjn/agreement_intervals.py): per initialization the
    mean over its samples, then the mean over initializations with a 95 % bootstrap interval
    over them."""

    width: Series[int] = pa.Field(ge=1, description="the model width")
    depth: Series[int] = pa.Field(ge=1, description="the depth L")
    inits: Series[int] = pa.Field(ge=1, description="the initializations averaged")
    apjn: Series[float] = _positive("the measured J^{L,0}, mean over initializations")
    apjn_theory: Series[float] = _positive("the theory's J^{L,0}, mean over initializations")
    ratio: Series[float] = _positive("measured / theory, mean over initializations")
    ratio_lo: Series[float] = _positive(
        "its bootstrap interval's lower end (initializations drawn with replacement)"
    )
    ratio_hi: Series[float] = _positive("its bootstrap interval's upper end")

    class Config:
        metadata = {"path": "apjn/sensitivity_ratios.csv", "rule": "apjn_sensitivity_ratios"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        """Derf and DyT at every alpha; pre-LN and Derf at every multiplier of both sweeps."""
        sensitivity = config["apjn"]["sensitivity"]
        multiplied = 2 * 2  # (pre-LN, Derf) x (attn_mult, mlp_mult)
        return len(SATURATING) * len(sensitivity["alphas"]) + multiplied * len(sensitivity["mults"])


class FiniteN(Table):
    """J^{b,0} of deep pre-LN models at few tokens, per initialization (mean over probes), for
    identical tokens and the generic input (apjn/measured_tables.py, finite_n_table)."""

    width: Series[int] = pa.Field(ge=1, description="the model width")
    depth: Series[int] = pa.Field(ge=1, description="the number of blocks L")
    n_tokens: Series[int] = pa.Field(ge=1, description="the token count N (N + 1 attend)")
    input: Series[str] = pa.Field(
        isin=FINITE_N_INPUTS, description="identical: p0 = q0; generic: the configured p0"
    )
    q0: Series[float] = pa.Field(gt=0, description="the input's q")
    p0: Series[float] = pa.Field(ge=0, description="the input's p")
    init_seed: Series[int] = pa.Field(ge=0, description="the initialization's seed")
    a: Series[float] = pa.Field(gt=0, description="the built model's attention gain")
    m: Series[float] = pa.Field(gt=0, description="the built model's MLP gain")
    block: Series[int] = pa.Field(ge=0, description="the block b")
    apjn: Series[float] = _positive("the measured J^{b,0}")

    class Config:
        metadata = {"path": "apjn/finite_n.csv", "rule": "gather"}


class FiniteNCompare(Table):
    """The finite-N measurement against both closures at log-spaced blocks (apjn/closures.py):
    ratios measured/theory, mean over initializations with bootstrap confidence intervals."""

    width: Series[int] = pa.Field(ge=1, description="the model width")
    n_tokens: Series[int] = pa.Field(ge=1, description="the token count N (N + 1 attend)")
    input: Series[str] = pa.Field(isin=FINITE_N_INPUTS, description="the input kind")
    block: Series[int] = pa.Field(ge=1, description="the block b of J^{b,0}")
    inits: Series[int] = pa.Field(ge=1, description="the initializations averaged")
    apjn_mean: Series[float] = _positive("the measured J^{b,0}, mean over initializations")
    apjn_released: Series[float] = _positive("the released closure's J^{b,0}")
    apjn_exact: Series[float] = _positive("the exact closure's J^{b,0}")
    ratio_released: Series[float] = _positive("measured / released, mean over initializations")
    ratio_released_lo: Series[float] = _positive("its bootstrap CI's lower end")
    ratio_released_hi: Series[float] = _positive("its bootstrap CI's upper end")
    ratio_exact: Series[float] = _positive("measured / exact, mean over initializations")
    ratio_exact_lo: Series[float] = _positive("its bootstrap CI's lower end")
    ratio_exact_hi: Series[float] = _positive("its bootstrap CI's upper end")
    verdict: Series[str] = pa.Field(
        isin=("exact", "released", "both", "neither"),
        description="the closures whose ratio CI contains 1 (neither: none does)",
    )

    class Config:
        metadata = {"path": "apjn/finite_n_compare.csv", "rule": "apjn_finite_n_compare"}
