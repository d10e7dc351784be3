"""The mean-field theory's tables: APJN curves, J^{L,0} over depth, the asymptotic fits and
pre-LN's two modes (rules apjn_theory_curves and apjn_theory_depth)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandera.pandas as pa
from pandera.typing import Series

from transformer_stability.apjn.tables._common import Ids, _positive
from transformer_stability.tables import Table

CLOSURES = ("released", "exact")


class TheoryCurves(Ids):
    """Mean-field backward and forward APJN curves of every variant."""

    width: Series[int] = pa.Field(ge=1, description="the model width")
    depth: Series[int] = pa.Field(ge=1, description="the number of blocks L")
    direction: Series[str] = pa.Field(
        isin=("backward", "forward"),
        description="backward: J^{L,b} (source_block = L); forward: J^{b,b0} (source_block = b0)",
    )
    source_block: Series[int] = pa.Field(ge=0, description="the curve's fixed end block")
    block: Series[int] = pa.Field(ge=0, description="the block b")
    apjn: Series[float] = _positive("the APJN")
    q: Series[float] = pa.Field(ge=0, description="the theory's q at block")
    p: Series[float] = pa.Field(description="the theory's p at block")

    class Config:
        metadata = {"path": "apjn/theory_curves.csv", "rule": "apjn_theory_curves"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        apjn = config["apjn"]
        return len(apjn["variants"]) * 2 * (apjn["model"]["depth"] + 1)


class TheoryDepth(Ids):
    """End-to-end J^{L,0} at log-spaced depths L with the local slope of ln J."""

    width: Series[int] = pa.Field(ge=1, description="the model width")
    n_tokens: Series[int] = pa.Field(ge=1, description="the token count N")
    depth: Series[int] = pa.Field(ge=1, description="the depth L")
    apjn: Series[float] = _positive("J^{L,0}; exp(log_apjn) may overflow at depth 1e5")
    log_apjn: Series[float] = pa.Field(description="ln J^{L,0}")
    local_slope: Series[float] = pa.Field(
        description="d ln J / d ln L (pre-LN) or d ln J / d sqrt(L) (Derf, DyT)"
    )

    class Config:
        metadata = {"path": "apjn/theory_depth.csv", "rule": "apjn_theory_depth"}


def _preln_token_counts(apjn: Mapping[str, Any]) -> int:
    """The configured token counts plus the model's own N (patches, CLS excluded)."""
    own = (apjn["model"]["img_size"] // apjn["model"]["patch_size"]) ** 2
    return len({*apjn["theory"]["token_counts"], own})


class Asymptotics(Ids):
    """The asymptotic fits of every variant against the closed-form rates."""

    n_tokens: Series[int] = pa.Field(ge=1, description="the token count N")
    quantity: Series[str] = pa.Field(
        isin=("zeta_minus", "zeta_plus", "sqrt_depth_slope", "stretch_exponent"),
        description="zeta_minus, zeta_plus (pre-LN, per N); sqrt_depth_slope, stretch_exponent",
    )
    fitted: Series[float] = pa.Field(
        nullable=True, description="the fitted value; NaN: the window lies beyond the depth"
    )
    predicted: Series[float] = pa.Field(description="the closed-form value")
    two_mode_fit: Series[float] = pa.Field(
        nullable=True, description="the two-mode closed form's fit; NaN for saturating maps"
    )
    fit_intercept: Series[float] = pa.Field(nullable=True, description="the fit's intercept")
    fit_min_depth: Series[int] = pa.Field(
        ge=0, description="the fit window's first depth (a window that cannot exist may be 0)"
    )
    fit_max_depth: Series[int] = pa.Field(ge=0, description="the fit window's last depth")

    class Config:
        metadata = {"path": "apjn/asymptotics.csv", "rule": "apjn_theory_depth"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        """pre-LN: zeta_- and zeta_+ per token count; a saturating map: the sqrt-depth slope
        and the stretch exponent."""
        apjn = config["apjn"]
        saturating = sum(v["norm"] != "ln" for v in apjn["variants"])
        return 2 * _preln_token_counts(apjn) + 2 * saturating


class DepthLaws(Ids):
    """The fitted law and the closed-form rate over each fit window, as A4 draws them."""

    quantity: Series[str] = pa.Field(
        isin=("zeta_minus", "sqrt_depth_slope"), description="the law's fitted quantity"
    )
    depth: Series[float] = pa.Field(ge=1, description="the depth L")
    fitted_log_apjn: Series[float] = pa.Field(description="ln J of the fitted law")
    predicted_log_apjn: Series[float] = pa.Field(
        description="ln J of the closed-form rate through the curve at the window's start"
    )

    class Config:
        metadata = {"path": "apjn/depth_laws.csv", "rule": "apjn_theory_depth"}


def _closure() -> Any:
    return pa.Field(
        isin=CLOSURES,
        description="released: the authors' (J, K) recursion (cross-token term a chi_p, "
        "self-term a chi_q / N); exact: uniform attention over all N + 1 tokens taken exactly",
    )


class PrelnTokens(Table):
    """Pre-LN's local exponent for each token count N against L/N^3, in both closures."""

    closure: Series[str] = _closure()
    n_tokens: Series[int] = pa.Field(ge=1, description="the token count N")
    depth: Series[int] = pa.Field(ge=1, description="the depth L")
    scaled_depth: Series[float] = _positive("L / N^3", inf=False)
    local_slope: Series[float] = pa.Field(description="d ln J / d ln L of the recursion")
    two_mode_slope: Series[float] = pa.Field(description="the same of the two-mode closed form")
    zeta_minus: Series[float] = pa.Field(description="the slow mode's exponent")
    zeta_plus: Series[float] = pa.Field(description="the fast mode's exponent")
    crossover_depth: Series[float] = pa.Field(ge=0, description="where the modes cross")

    class Config:
        metadata = {"path": "apjn/preln_tokens.csv", "rule": "apjn_theory_depth"}


class PrelnCrossovers(Table):
    """Pre-LN's two modes and where the fast one takes over, per closure and token count N."""

    closure: Series[str] = _closure()
    n_tokens: Series[int] = pa.Field(ge=1, description="the token count N")
    zeta_minus: Series[float] = pa.Field(gt=0, description="the slow mode's exponent m/(m+2a)")
    zeta_plus: Series[float] = pa.Field(gt=0, description="the fast mode's exponent")
    weight_plus: Series[float] = pa.Field(
        gt=0, le=1, description="the fast mode's share of J at the source (J, K) = (1, 0)"
    )
    crossover_depth: Series[float] = pa.Field(
        ge=0, description="rho = 1 (identical tokens): the depth where the fast mode carries half"
    )
    generic_crossover_depth: Series[float] = pa.Field(
        gt=0,
        nullable=True,
        description="from the configured input (q0, p0): the first depth where the recursion's "
        "local exponent reaches (zeta_- + zeta_+)/2; NaN: beyond theory.token_max_depth",
    )
    generic_min_slope: Series[float] = pa.Field(
        description="from the configured input: the smallest local exponent past the transient "
        "(L >= 10 q0 / c), the plateau before the crossover"
    )

    class Config:
        metadata = {"path": "apjn/preln_crossovers.csv", "rule": "apjn_theory_depth"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        return len(CLOSURES) * _preln_token_counts(config["apjn"])
