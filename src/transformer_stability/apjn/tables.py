"""Study A's tables under results/apjn/: one model per table (columns in order, dtypes, ranges,
NaN and inf where the computation makes them), the row count where the config fixes it.
Torch-free: the workflow's gather and figure jobs check tables without the study's code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandera.pandas as pa
from pandera.typing import Series

from transformer_stability.apjn.names import NORMS, SATURATING
from transformer_stability.tables import INF, Table

REGIONS = ("early", "shallow", "middle", "deep")
CLOSURES = ("released", "exact")
FINITE_N_INPUTS = ("identical", "generic")
"""Identical tokens (p0 = q0: uniform attention is exact, whatever the query and key weights)
and the configured generic input (p0 < q0)."""


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
    attn_mult, mlp_mult of end_to_end.csv; apjn/agreement.py): per initialization the mean over
    its samples, then the mean over initializations with a 95 % bootstrap interval over them."""

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


class Trainability(Ids):
    """One row per training run."""

    width: Series[int] = pa.Field(ge=1, description="the model width")
    depth: Series[int] = pa.Field(ge=1, description="the depth L")
    init_std: Series[float] = pa.Field(gt=0, description="the weights' initial std")
    lr: Series[float] = pa.Field(gt=0, description="the learning rate")
    dataset: Series[str] = pa.Field(isin=("textures", "cifar100"), description="the data")
    train_seed: Series[int] = pa.Field(ge=0, description="the run's seed")
    steps: Series[int] = pa.Field(
        ge=0, description="steps run; diverged: the step its loss or gradient turned non-finite"
    )
    final_loss: Series[float] = pa.Field(ge=0, nullable=True, description="NaN: diverged")
    train_accuracy: Series[float] = pa.Field(ge=0, le=1, nullable=True, description="NaN: diverged")
    test_accuracy: Series[float] = pa.Field(ge=0, le=1, nullable=True, description="NaN: diverged")
    diverged: Series[bool] = pa.Field(description="whether the loss or gradient turned non-finite")
    loss_spikes: Series[int] = pa.Field(
        ge=0, description="times the smoothed loss rose above 1.5 x its lowest value so far"
    )
    grad_blowups: Series[int] = pa.Field(
        ge=0, description="steps whose gradient norm exceeded 10 x its running mean"
    )
    theory_log_apjn: Series[float] = pa.Field(description="ln J^{L,0} of the model at init")
    measured_log_apjn: Series[float] = pa.Field(description="its Hutchinson estimate")

    class Config:
        metadata = {"path": "apjn/trainability.csv", "rule": "gather"}


class TuningWindows(Table):
    """One row per trained configuration: the best loss over rates and its window
    (apjn/tuning.py)."""

    norm: Series[str] = _norm()
    alpha: Series[float] = _alpha()
    attn_mult: Series[float] = pa.Field(gt=0, description="the init multiplier (= mlp_mult)")
    depth: Series[int] = pa.Field(ge=1, description="the depth L")
    log_apjn: Series[float] = pa.Field(description="theory ln J^{L,0} at init, mean over seeds")
    best_loss: Series[float] = pa.Field(
        ge=0, metadata=INF, description="lowest mean final loss over rates; inf: none trained"
    )
    best_lr: Series[float] = pa.Field(gt=0, nullable=True, description="its rate; NaN: none")
    window_rates: Series[int] = pa.Field(
        ge=0, description="rates whose mean final loss is within 10 % of the best"
    )
    window_decades: Series[float] = pa.Field(ge=0, description="log10 of their largest/smallest")
    rates: Series[int] = pa.Field(ge=1, description="rates trained")
    runs: Series[int] = pa.Field(ge=1, description="runs (rates x seeds)")
    diverged: Series[int] = pa.Field(ge=0, description="runs with a non-finite loss or gradient")
    loss_spikes: Series[int] = pa.Field(ge=0, description="loss spikes over all runs")
    grad_blowups: Series[int] = pa.Field(ge=0, description="gradient-norm blow-ups over all runs")

    class Config:
        metadata = {"path": "apjn/tuning_windows.csv", "rule": "apjn_tuning"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        """Every (norm, α₀) of the grid, pre-LN once, at every multiplier and depth."""
        train = config["apjn"]["train"]
        variants = 1 + len(train["norms"]) * len(train["alphas"])
        return variants * len(train["mults"]) * len(set(train["depths"]))


class MatchedPairs(Table):
    """Pairs of configurations with ln J^{L,0} within 0.1 of each other (apjn/tuning.py)."""

    first: Series[str] = pa.Field(description="one configuration: norm, alpha, mult, depth")
    second: Series[str] = pa.Field(description="the other")
    log_apjn_first: Series[float] = pa.Field(description="its theory ln J^{L,0}")
    log_apjn_second: Series[float] = pa.Field(description="the other's")
    best_loss_first: Series[float] = pa.Field(ge=0, metadata=INF, description="its best loss")
    best_loss_second: Series[float] = pa.Field(ge=0, metadata=INF, description="the other's")
    window_rates_first: Series[int] = pa.Field(ge=0, description="its window (rates)")
    window_rates_second: Series[int] = pa.Field(ge=0, description="the other's")

    class Config:
        metadata = {"path": "apjn/matched_pairs.csv", "rule": "apjn_tuning"}


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
    intervals over initializations and the inputs within each (apjn/agreement.py)."""

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
    """The image rows of agreement.csv for every model of the width scan."""

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


TABLES = (
    TheoryCurves,
    TheoryDepth,
    Asymptotics,
    DepthLaws,
    PrelnTokens,
    PrelnCrossovers,
    MeasuredCurves,
    EndToEnd,
    SensitivityRatios,
    FiniteN,
    FiniteNCompare,
    Trainability,
    TuningWindows,
    MatchedPairs,
    Agreement,
    AgreementMeans,
    WidthAgreement,
    WidthExcess,
    WidthSlopes,
)
