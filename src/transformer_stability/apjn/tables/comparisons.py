"""The agreement tables: the GMFE of measured against theory curves per depth region, its
means with bootstrap intervals, and how its excess falls with width."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandera.pandas as pa
from pandera.typing import Series

from transformer_stability.apjn.tables._common import _alpha, _norm
from transformer_stability.tables import INF, Table

REGIONS = ("early", "shallow", "middle", "deep")


def _early_regions(images: Mapping[str, Any]) -> int:
    """Rows of region "early" per image: one per curve (backward, forward) with blocks (source
    excluded) before images.compare_from_block."""
    start, b0 = images["compare_from_block"], images["forward_source_block"]
    return int(start > 0) + int(b0 + 1 < start)


class Agreement(Table):
    """GMFE of measured against theory curves per sample and depth region."""

    norm: Series[str] = _norm()
    alpha: Series[float] = _alpha()
    input: Series[str] = pa.Field(isin=("equiangular", "images"), description="the input kind")
    init_seed: Series[int] = pa.Field(ge=0, description="the initialization's seed")
    sample: Series[int] = pa.Field(ge=0, description="the sample index")
    region: Series[str] = pa.Field(
        isin=REGIONS,
        description="thirds of the compared blocks, or early (image blocks before "
        "images.compare_from_block)",
    )
    gmfe: Series[float] = pa.Field(
        ge=1,
        nullable=True,
        metadata=INF,
        description=">= 1; NaN: a region without a block; inf: a measured APJN overflowed",
    )
    direction: Series[str] = pa.Field(isin=("backward", "forward"), description="the curve")
    gmfe_gram: Series[float] = pa.Field(
        ge=1, nullable=True, metadata=INF, description="the full-Gram closure's; NaN: not computed"
    )

    class Config:
        metadata = {"path": "apjn/agreement.csv", "rule": "apjn_agreement"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        """Three regions per curve (two per sample), plus "early" on each image curve with
        blocks (source excluded) before images.compare_from_block."""
        apjn = config["apjn"]
        inits = apjn["measure"]["inits"]
        samples, images = inits * apjn["measure"]["samples"], inits * apjn["images"]["count"]
        early = _early_regions(apjn["images"])
        return len(apjn["variants"]) * ((samples + images) * 2 * 3 + images * early)


def _gmfe(description: str) -> Any:
    """A GMFE (>= 1) or a bound of its interval; NaN where not computed, inf on overflow."""
    return pa.Field(ge=1, nullable=True, metadata=INF, description=description)


LO, HI = "its bootstrap interval's lower end", "its bootstrap interval's upper end"


class AgreementMeans(Table):
    """The GMFE of agreement.csv per variant, input, direction and region, with 95 % bootstrap
    intervals over initializations and the inputs within each (apjn/agreement_intervals.py)."""

    norm: Series[str] = _norm()
    alpha: Series[float] = _alpha()
    input: Series[str] = pa.Field(isin=("equiangular", "images"), description="the input kind")
    direction: Series[str] = pa.Field(isin=("backward", "forward"), description="the curve")
    region: Series[str] = pa.Field(
        isin=(*REGIONS, "compared"),
        description="a region of agreement.csv, or compared: every block but the early ones "
        "(per curve the mean of the three regions' GMFE)",
    )
    gmfe: Series[float] = _gmfe("mean per-curve GMFE, (q, p) closure")
    gmfe_lo: Series[float] = _gmfe(LO)
    gmfe_hi: Series[float] = _gmfe(HI)
    gmfe_gram: Series[float] = _gmfe("mean per-curve GMFE, full-Gram closure; NaN: not computed")
    gmfe_gram_lo: Series[float] = _gmfe(LO)
    gmfe_gram_hi: Series[float] = _gmfe(HI)
    gmfe_averaged: Series[float] = _gmfe("GMFE of the averaged curve, (q, p) closure")
    gmfe_averaged_lo: Series[float] = _gmfe(LO)
    gmfe_averaged_hi: Series[float] = _gmfe(HI)

    class Config:
        metadata = {"path": "apjn/agreement_means.csv", "rule": "apjn_agreement"}


class WidthAgreement(Agreement):
    """The image rows of agreement.csv for every model of the width scan that the curve sweep
    does not measure (the width fit takes those at the configured width from agreement.csv)."""

    width: Series[int] = pa.Field(ge=1, description="the model width")

    class Config:
        metadata = {"path": "apjn/width_agreement.csv", "rule": "gather"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> None:
        return None  # gathered: every item contributes its rows (sweeps.gather_items)


class WidthFitIds(Table):
    """A variant, a curve direction, a depth region and a closure of the width scan."""

    norm: Series[str] = _norm()
    alpha: Series[float] = _alpha()
    direction: Series[str] = pa.Field(isin=("backward", "forward"), description="the curve")
    region: Series[str] = pa.Field(
        isin=(*REGIONS, "compared"),
        description="a depth region, or compared: every block but the early ones",
    )
    closure: Series[str] = pa.Field(
        isin=("gram", "qp"), description="gram: the full-Gram closure; qp: the (q, p) closure"
    )


class WidthExcess(WidthFitIds):
    """GMFE - 1 of the width scan's image curves at each width (apjn/width_fit.py)."""

    width: Series[int] = pa.Field(ge=1, description="the model width")
    excess_mean: Series[float] = pa.Field(
        ge=0, nullable=True, metadata=INF, description="GMFE - 1 of the mean over inits and images"
    )
    excess_min: Series[float] = pa.Field(
        ge=0, nullable=True, metadata=INF, description="the smallest per-initialization GMFE - 1"
    )
    excess_max: Series[float] = pa.Field(
        ge=0, nullable=True, metadata=INF, description="the largest per-initialization GMFE - 1"
    )

    class Config:
        metadata = {"path": "apjn/width_excess.csv", "rule": "apjn_width_fit"}


class WidthSlopes(WidthFitIds):
    """The slope of ln(GMFE - 1) against ln(width) (apjn/width_fit.py)."""

    slope: Series[float] = pa.Field(
        nullable=True,
        description="-1/2 to -1: finite width; 0: the closure's own error; NaN: "
        "fewer than two widths with a positive excess",
    )
    slope_lo: Series[float] = pa.Field(
        nullable=True,
        description="its 95 % bootstrap interval's lower end (initializations of each width "
        "drawn with replacement); NaN: no resample had two widths with a positive excess",
    )
    slope_hi: Series[float] = pa.Field(nullable=True, description="the interval's upper end")
    points: Series[int] = pa.Field(ge=0, description="the widths fitted")

    class Config:
        metadata = {"path": "apjn/width_slopes.csv", "rule": "apjn_width_fit"}
