"""Schemas of the tidy tables under results/: columns, types, missing values, value ranges, the
row count the config implies, and the rule that builds each table. Torch-free.

`transformer_stability.io.write_table` checks a table against its schema before writing it (a
bug in the computing rule fails there, and nothing is written) and `read_table` checks it after
reading (a truncated or hand-edited table stops the reading job). A table is found by its path
below a `results/` folder (`results/apjn/measured_curves.csv` -> "apjn/measured_curves.csv"); a
sweep's chunk table (`results/<study>/items/...`) is checked as its gathered table with the
leading `item` column. A path without a schema (a test's temporary table) is not checked.

Ranges are deliberately loose: only what holds by construction (an APJN is positive, a GMFE is
at least 1, an accuracy lies in [0, 1], counts are non-negative); NaN or inf is allowed wherever
the computation can produce it (pre-LN's alpha, B = inf for an unconstrained run, B_min = inf
past the pre-norm wall, quantiles of an overflowing format, a fit with fewer than two points).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from transformer_stability.counting.names import PLACEMENTS, READOUTS
from transformer_stability.numerics.spec import GPT2Spec

ITEM_COLUMN = "item"  # a chunk table's first column: the item of each row (sweeps.py)
KINDS = ("int", "float", "str", "bool")


class TableError(ValueError):
    """A table does not match its schema: the message names the file, what is wrong and the
    rule that rebuilds it."""


@dataclass(frozen=True)
class Column:
    """One column: its kind (int, float, str, bool), whether missing values (NaN, an empty
    field) and +-inf are allowed, its range (`low` <= x, or < x with `low_open`; x <= `high`)
    and, for a str column, the values it may take."""

    name: str
    kind: str
    nan: bool = False
    inf: bool = False
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    values: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name}: unknown kind {self.kind!r}")


@dataclass(frozen=True)
class TableSchema:
    """A tidy table: its path below results/, its columns in order, the rule that writes it and,
    where the config fixes it without ambiguity, its row count as a function of the config."""

    name: str
    rule: str
    columns: tuple[Column, ...]
    rows: Callable[[Mapping[str, Any]], int] | None = field(default=None, compare=False)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


# --- column builders ----------------------------------------------------------------------


def _int(name: str, low: float | None = None, **kw: Any) -> Column:
    return Column(name, "int", low=low, **kw)


def _float(name: str, **kw: Any) -> Column:
    return Column(name, "float", **kw)


def _str(name: str, values: Sequence[str] | None = None, **kw: Any) -> Column:
    return Column(name, "str", values=None if values is None else tuple(values), **kw)


def _positive(name: str, inf: bool = True) -> Column:
    """> 0, e.g. an APJN (a mean squared Jacobian norm, or the exp of a log)."""
    return _float(name, low=0.0, low_open=True, inf=inf)


def _fraction(name: str, nan: bool = False) -> Column:
    return _float(name, low=0.0, high=1.0, nan=nan)


PROVENANCE = (_int("seed"), _str("device"), _str("dtype"), _str("versions"))

# --- Study A ------------------------------------------------------------------------------

NORMS = ("ln", "derf", "dyt")  # the config schema's apjn.variants[].norm
APJN_IDS = (
    _str("norm", NORMS),
    _float("alpha", nan=True, low=0.0, low_open=True),  # NaN: pre-LN has no alpha
    _float("attn_mult", low=0.0, low_open=True),
    _float("mlp_mult", low=0.0, low_open=True),
)
DIRECTION = _str("direction", ("backward", "forward"))
INPUT = _str("input", ("equiangular", "images"))
WIDTH_DEPTH = (_int("width", 1), _int("depth", 1))


def _apjn(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return config["apjn"]


def _theory_curve_rows(config: Mapping[str, Any]) -> int:
    apjn = _apjn(config)
    return len(apjn["variants"]) * 2 * (apjn["model"]["depth"] + 1)


def _measured_samples(apjn: Mapping[str, Any]) -> tuple[int, int]:
    """(equiangular samples, images) of every measured model, over its initializations."""
    inits = apjn["measure"]["inits"]
    return inits * apjn["measure"]["samples"], inits * apjn["images"]["count"]


def _measured_curve_rows(config: Mapping[str, Any]) -> int:
    """Per variant: each equiangular sample has a backward and a forward curve over blocks
    0..L; each image a backward curve over 0..L and a forward one over b0..L."""
    apjn = _apjn(config)
    depth, b0 = apjn["model"]["depth"], apjn["images"]["forward_source_block"]
    samples, images = _measured_samples(apjn)
    per_variant = samples * 2 * (depth + 1) + images * (2 * depth + 2 - b0)
    return len(apjn["variants"]) * per_variant


def _early_regions(images: Mapping[str, Any]) -> int:
    """Rows of region "early" per image: one per curve (backward, forward) with blocks (source
    excluded) before images.compare_from_block."""
    start, b0 = images["compare_from_block"], images["forward_source_block"]
    return int(start > 0) + int(b0 + 1 < start)


def _agreement_rows(config: Mapping[str, Any]) -> int:
    """Three regions per curve (two per sample), plus "early" on each image curve with blocks
    (source excluded) before images.compare_from_block."""
    apjn = _apjn(config)
    samples, images = _measured_samples(apjn)
    early = _early_regions(apjn["images"])
    return len(apjn["variants"]) * ((samples + images) * 2 * 3 + images * early)


def _width_agreement_rows(config: Mapping[str, Any]) -> int:
    """The image rows of agreement.csv for every (variant, width) of the scan."""
    apjn = _apjn(config)
    scan, images = apjn["width_scan"], apjn["images"]
    curves = scan["inits"] * images["count"]
    per_image = 2 * 3 + _early_regions(images)
    return len(scan["variants"]) * len(scan["heads"]) * curves * per_image


def _sweep_samples(apjn: Mapping[str, Any]) -> int:
    """Samples of one end-to-end model over its initializations."""
    return apjn["measure"]["inits"] * apjn["measure"]["sweep_samples"]


def _sensitivity_rows(config: Mapping[str, Any]) -> int:
    """alpha sweep of Derf and DyT, attn_mult and mlp_mult sweeps of pre-LN and Derf."""
    apjn = _apjn(config)
    sweep = apjn["sensitivity"]
    models = 2 * len(sweep["alphas"]) + 2 * 2 * len(sweep["mults"])
    return models * sweep["inits"] * apjn["measure"]["sweep_samples"]


def _depth_measured_rows(config: Mapping[str, Any]) -> int:
    apjn = _apjn(config)
    max_depth = apjn["depth_scaling"]["max_depth"]
    return len(apjn["variants"]) * max_depth * _sweep_samples(apjn)


def _trainability_rows(config: Mapping[str, Any]) -> int:
    """Every lr at the largest depth, depth_lr at the others; pre-LN and every (norm, α₀)."""
    train = _apjn(config)["train"]
    variants = 1 + len(train["norms"]) * len(train["alphas"])
    runs = len(train["lrs"]) + len(set(train["depths"])) - 1
    return train["seeds"] * variants * len(train["mults"]) * runs


def _preln_token_counts(config: Mapping[str, Any]) -> int:
    """The configured token counts plus the model's own N (patches, CLS excluded)."""
    apjn = _apjn(config)
    own = (apjn["model"]["img_size"] // apjn["model"]["patch_size"]) ** 2
    return len({*apjn["theory"]["token_counts"], own})


def _asymptotic_rows(config: Mapping[str, Any]) -> int:
    """pre-LN: zeta_- and zeta_+ per token count; a saturating map: the sqrt-depth slope and
    the stretch exponent."""
    saturating = sum(v["norm"] != "ln" for v in _apjn(config)["variants"])
    return 2 * _preln_token_counts(config) + 2 * saturating


END_TO_END = (
    *APJN_IDS,
    *WIDTH_DEPTH,
    _int("init_seed", 0),
    _int("sample", 0),
    _positive("apjn"),
    _positive("apjn_theory"),
)

AGREEMENT = (
    _str("norm", NORMS),
    _float("alpha", nan=True, low=0.0, low_open=True),
    INPUT,
    _int("init_seed", 0),
    _int("sample", 0),
    _str("region", ("early", "shallow", "middle", "deep")),
    # >= 1 by definition; NaN where a depth region holds no block (a forward curve of fewer
    # than three blocks), inf where a measured APJN overflowed
    _float("gmfe", low=1.0, nan=True, inf=True),
    DIRECTION,
    _float("gmfe_gram", low=1.0, nan=True, inf=True),  # NaN: not computed
)

APJN_TABLES = (
    TableSchema(
        "apjn/theory_curves.csv",
        "apjn_theory_curves",
        (
            *APJN_IDS,
            *WIDTH_DEPTH,
            DIRECTION,
            _int("source_block", 0),
            _int("block", 0),
            _positive("apjn"),
            _float("q", low=0.0),
            _float("p"),
        ),
        _theory_curve_rows,
    ),
    TableSchema(
        "apjn/theory_depth.csv",
        "apjn_theory_depth",
        (
            *APJN_IDS,
            _int("width", 1),
            _int("n_tokens", 1),
            _int("depth", 1),
            _positive("apjn"),  # exp(log_apjn) may overflow at depth 1e5
            _float("log_apjn"),
            _float("local_slope"),
        ),
    ),
    TableSchema(
        "apjn/asymptotics.csv",
        "apjn_theory_depth",
        (
            *APJN_IDS,
            _int("n_tokens", 1),
            _str("quantity", ("zeta_minus", "zeta_plus", "sqrt_depth_slope", "stretch_exponent")),
            _float("fitted", nan=True),  # NaN: the window lies beyond the computed depth
            _float("predicted"),
            _float("two_mode_fit", nan=True),  # NaN for the saturating maps
            _float("fit_intercept", nan=True),
            # a pre-LN window that cannot exist (the other mode never drops below its share
            # that early) ends before it starts, possibly at 0
            _int("fit_min_depth", 0),
            _int("fit_max_depth", 0),
        ),
        _asymptotic_rows,
    ),
    TableSchema(
        "apjn/depth_laws.csv",
        "apjn_theory_depth",
        (
            *APJN_IDS,
            _str("quantity", ("zeta_minus", "sqrt_depth_slope")),
            _float("depth", low=1.0),
            _float("fitted_log_apjn"),
            _float("predicted_log_apjn"),
        ),
    ),
    TableSchema(
        "apjn/preln_tokens.csv",
        "apjn_theory_depth",
        (
            _int("n_tokens", 1),
            _int("depth", 1),
            _positive("scaled_depth", inf=False),
            _float("local_slope"),
            _float("two_mode_slope"),
            _float("zeta_minus"),
            _float("zeta_plus"),
            _float("crossover_depth", low=0.0),
        ),
    ),
    TableSchema(
        "apjn/measured_curves.csv",
        "gather",
        (
            *APJN_IDS,
            *WIDTH_DEPTH,
            INPUT,
            _int("init_seed", 0),
            _int("sample", 0),
            DIRECTION,
            _int("source_block", 0),
            _int("block", 0),
            _positive("apjn"),
            _positive("apjn_theory"),
            _float("q", low=0.0),
            _float("p"),
            _float("q_theory", low=0.0),
            _float("p_theory"),
            _float("q_theory_self", low=0.0),  # with the attention self-term
            _float("p_theory_self"),
            # the full-Gram closure: images with pre-LN or Derf only, else NaN
            _float("apjn_theory_gram", nan=True, inf=True, low=0.0, low_open=True),
            _float("q_theory_gram", nan=True, low=0.0),
            _float("p_theory_gram", nan=True),
        ),
        _measured_curve_rows,
    ),
    TableSchema(
        "apjn/sensitivity.csv",
        "gather",
        (_str("sweep", ("alpha", "attn_mult", "mlp_mult")), *END_TO_END),
        _sensitivity_rows,
    ),
    TableSchema(
        "apjn/depth_measured.csv",
        "gather",
        (_str("sweep", ("depth",)), *END_TO_END),
        _depth_measured_rows,
    ),
    TableSchema(
        "apjn/trainability.csv",
        "gather",
        (
            *APJN_IDS,
            *WIDTH_DEPTH,
            _float("init_std", low=0.0, low_open=True),
            _float("lr", low=0.0, low_open=True),
            _str("dataset", ("textures", "cifar100")),
            _int("train_seed", 0),
            _int("steps", 0),  # a diverged run: the step its loss turned non-finite
            # NaN: a diverged run
            _float("final_loss", nan=True, low=0.0),
            _fraction("train_accuracy", nan=True),
            _fraction("test_accuracy", nan=True),
            Column("diverged", "bool"),
            _float("theory_log_apjn"),  # ln J^{L,0} of the built model at init
            _float("measured_log_apjn"),  # its Hutchinson estimate
        ),
        _trainability_rows,
    ),
    TableSchema("apjn/agreement.csv", "apjn_agreement", AGREEMENT, _agreement_rows),
    TableSchema(
        "apjn/width_agreement.csv",
        "gather",
        (*AGREEMENT, _int("width", 1)),
        _width_agreement_rows,
    ),
)

# --- Study N ------------------------------------------------------------------------------

RUN = (
    _str("weights", ("random", "pretrained")),
    _str("model"),
    _str("precision"),
    _float("alpha", low=0.0, low_open=True),
    _int("checkpoint", 1),
    _str("kind", ("attn", "mlp")),
)
ERROR_METRICS = ("rel_linf", "rel_comp", "abs_linf", "stream_min_l2", "stream_median_l2")
QUANTILES = ("p01", "p25", "p50", "p75", "p99")


def _numerics(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return config["numerics"]


def _layers(config: Mapping[str, Any]) -> int:
    """Blocks of every configured model, summed."""
    models = _numerics(config)["models"]
    return sum(GPT2Spec.from_config(dict(m), key=f"numerics.models[{i}]").shape()[0]
               for i, m in enumerate(models))  # fmt: skip


def _recursion_rows(config: Mapping[str, Any]) -> int:
    """A row per residual add (two per block), alpha and test format."""
    numerics = _numerics(config)
    return 2 * _layers(config) * len(numerics["alphas"]) * len(numerics["precisions"])


def _norms_rows(config: Mapping[str, Any]) -> int:
    norms = _numerics(config)["norms"]
    cells = len(norms["mantissa_bits"]) * len(norms["outliers"]) * 2  # layernorm, rmsnorm
    return cells * norms["samples"] * 11  # metrics per (norm, sample): numerics/norms.py


def _softmax_rows(config: Mapping[str, Any]) -> int:
    """Per sample: a sink setting has 2 propagation + 2 x 3 evaluation metrics, an offset
    setting the 6 evaluation metrics."""
    softmax = _numerics(config)["softmax"]
    return (8 * len(softmax["p_max"]) + 6 * len(softmax["offsets"])) * softmax["samples"]


def _lipschitz_rows(config: Mapping[str, Any]) -> int:
    lipschitz = _numerics(config)["lipschitz"]
    return len(lipschitz["seq_lens"]) * lipschitz["samples"] * 2  # inf, frobenius


NUMERICS_TABLES = (
    TableSchema(
        "numerics/gpt2_errors.csv",
        "gather",
        (
            *RUN,
            _str("metric", ERROR_METRICS),
            # an overflowing format gives inf errors; 0/0 gives NaN
            *(_float(q, low=0.0, nan=True, inf=True) for q in QUANTILES),
        ),
        lambda config: _recursion_rows(config) * len(ERROR_METRICS),
    ),
    TableSchema(
        "numerics/gpt2_recursion.csv",
        "gather",
        (
            *RUN,
            _float("unit_roundoff", low=0.0),
            _float("measured", low=0.0, inf=True),
            _float("bound", low=0.0, inf=True),
            _float("measured_rel", low=0.0, inf=True),
            _float("bound_rel", low=0.0, inf=True),
            _float("measured_rel_l2", low=0.0, inf=True),
            _float("typical_rel_l2", low=0.0, inf=True),
            _float("amplification", low=0.0, inf=True),
            _float("amplification_l2", low=0.0, inf=True),
        ),
        _recursion_rows,
    ),
    TableSchema(
        "numerics/gpt2_weights.csv",
        "gather",
        (
            _str("weights", ("random", "pretrained")),
            _str("model"),
            _int("block", 0),
            _str("quantity", ("omega_ov", "omega_ud", "omega_kq")),
            _float("value", low=0.0),
        ),
        lambda config: 3 * _layers(config),
    ),
    TableSchema(
        "numerics/norms.csv",
        "numerics_bounds",
        (
            _str("norm", ("layernorm", "rmsnorm")),
            _int("mantissa_bits", 1),
            _float("outlier", low=0.0),
            _int("sample", 0),
            _str("metric"),
            # a bound is inf once the computed sigma may vanish
            _float("value", low=0.0, nan=True, inf=True),
        ),
        _norms_rows,
    ),
    TableSchema(
        "numerics/softmax.csv",
        "numerics_bounds",
        (
            _str("sweep", ("sink", "offset")),
            _float("p_max", low=0.0, high=1.0, low_open=True),
            _float("offset"),
            _int("mantissa_bits", 1),
            _str("mode", ("propagation", "unshifted", "shifted")),
            _str("metric", ("l1_gain", "jacobian_abs_sum", "max_rel", "l1_abs", "kappa_max")),
            _int("sample", 0),
            _float("measured", low=0.0, nan=True, inf=True),
            _float("bound", low=0.0, nan=True, inf=True),  # NaN: kappa_max has no bound
        ),
        _softmax_rows,
    ),
    TableSchema(
        "numerics/lipschitz.csv",
        "numerics_bounds",
        (
            _int("seq_len", 1),
            _int("sample", 0),
            _str("norm", ("inf", "frobenius")),
            _float("estimate", low=0.0, inf=True),
            _float("worst", low=0.0, nan=True, inf=True),  # NaN: draws not searched
            _float("bound", low=0.0, inf=True),
            _float("ball_bound", low=0.0, inf=True),
            _float("worst_over_estimate", low=0.0, nan=True, inf=True),
            _float("worst_over_bound", low=0.0, nan=True, inf=True),
            _fraction("p_max_min"),
        ),
        _lipschitz_rows,
    ),
)

# --- Study C ------------------------------------------------------------------------------

PLACEMENT = _str("placement", PLACEMENTS)
READOUT = _str("readout", READOUTS)
REGRESSION_RATE_PLACEMENTS = 4  # counting/rates.py: every placement but bare pre-norm
REFERENCE_PLACEMENTS = 3  # counting/rates.py: none, post_bare, post_learned


def _counting(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return config["counting"]


def _classified(theory: Mapping[str, Any]) -> int:
    """Theory lengths with a classification construction."""
    return sum(length <= theory["classification_max_length"] for length in theory["lengths"])


def _theory_rows(config: Mapping[str, Any]) -> int:
    """Per width, placement and L: the regression lower bound and construction, the
    classification construction up to its maximum length; linear attention once per L."""
    theory = _counting(config)["theory"]
    lengths = len(theory["lengths"])
    per_width = len(PLACEMENTS) * (2 * lengths + _classified(theory)) + lengths
    return len(theory["widths"]) * per_width


def _empirical_rows(config: Mapping[str, Any]) -> int:
    """One row per bisected (read-out, L)."""
    training = _counting(config)["training"]
    return sum(len(set(training[r]["lengths"])) for r in READOUTS)


def _rate_rows(config: Mapping[str, Any]) -> int:
    """Regression: lower bound and construction of every placement with a rate; classification:
    the construction's norm and relative margin of every placement (if any length has one);
    training: one per read-out."""
    theory = _counting(config)["theory"]
    classification = len(PLACEMENTS) if _classified(theory) else 0
    return 2 * REGRESSION_RATE_PLACEMENTS + 2 * classification + len(READOUTS)


def _reference_rows(config: Mapping[str, Any]) -> int:
    theory = _counting(config)["theory"]
    return len(theory["widths"]) * REFERENCE_PLACEMENTS * len(set(theory["lengths"]))


COUNTING_TABLES = (
    TableSchema(
        "counting/bmin_theory.csv",
        "gather",
        (
            PLACEMENT,
            _str("attention", ("softmax", "linear")),
            READOUT,
            _int("d", 1),
            _int("L", 1),
            _str("bound", ("lower_bound", "construction")),
            _float("bmin", low=0.0, inf=True),  # inf past the pre-norm wall
        ),
        _theory_rows,
    ),
    TableSchema(
        "counting/walls.csv",
        "gather",
        (PLACEMENT, READOUT, _int("d", 1), _int("max_length", 0)),
        lambda config: len(_counting(config)["theory"]["widths"]),
    ),
    TableSchema(
        "counting/residual.csv",
        "counting_residual",
        (
            PLACEMENT,
            _str("attention", ("softmax", "linear")),
            _int("d", 1),
            _int("L", 1),
            _str("source", ("lower_bound", "construction")),
            _float("target_error", low=0.0, high=0.5),
            _positive("B", inf=False),
            _float("max_error", low=0.0),  # measured on the grid (construction)
        ),
        lambda config: 6 * len(set(_counting(config)["residual"]["errors"])) + 1,
    ),
    TableSchema(
        "counting/precision.csv",
        "gather",
        (
            PLACEMENT,
            READOUT,
            _int("d", 1),
            _int("L", 1),
            _int("parameters", 1),
            _positive("max_norm", inf=False),
            _str("format", ("float32", "float64")),  # the float format evaluated
            _fraction("accuracy"),
            _float("margin"),  # gap to the rounding threshold; negative: some point wrong
            _float("output_scale", low=0.0),
            _float("relative_margin", nan=True, low=0.0),  # NaN: not exact in this format
        ),
        # no row count: bare pre-norm has no regression construction past its wall
    ),
    TableSchema(
        "counting/training.csv",
        "gather",
        (
            PLACEMENT,
            READOUT,
            _int("d", 1),
            _int("L", 1),
            _positive("B"),  # inf: the unconstrained run
            _int("seed"),
            _int("round", 0),  # 0: the unconstrained run; 1, 2, ...: bisection rounds
            _float("bracket_low", nan=True, low=0.0, low_open=True),  # NaN: unconstrained
            _float("bracket_high", nan=True, low=0.0, low_open=True),
            _int("steps", 0),
            _fraction("accuracy"),
            _fraction("balanced_accuracy"),
            _float("first_failing_count", nan=True, low=0.0),  # NaN: every count correct
            _float("max_vector_norm", low=0.0, nan=True, inf=True),
            _float("max_error", low=0.0, nan=True, inf=True),  # NaN: classification, diverged
            _float("logit_margin", nan=True, inf=True),  # NaN: regression, diverged
            _float("relative_margin", nan=True, low=0.0, inf=True),  # NaN: not exact
            *PROVENANCE[1:],  # the rows carry their own seeds
        ),
        # no row count: the bisection stops a seed once its bracket is resolved
    ),
    TableSchema(
        "counting/geometry.csv",
        "counting_geometry",
        (
            PLACEMENT,
            READOUT,
            _int("d", 1),
            _int("L", 1),
            _int("c", 0),
            _float("x"),
            _float("y"),
            _float("radius", low=0.0),
        ),
    ),
    TableSchema(
        "counting/empirical_bmin.csv",
        "counting_rates",
        (
            PLACEMENT,
            READOUT,
            _int("d", 1),
            _int("L", 1),
            _positive("bmin"),  # inf: training failed at the upper bracket for every seed
            _positive("bmin_low"),  # the largest B known to fail below bmin (or the bracket's low)
            _float("lower_bound", nan=True, low=0.0, low_open=True),  # NaN: classification
            _float("ratio", nan=True, inf=True, low=0.0),  # bmin / lower_bound
            _positive("bracket_high"),
            Column("reached", "bool"),
            _int("seeds_reached", 0),
            _int("runs", 1),
            _int("rounds", 1),
        ),
        _empirical_rows,
    ),
    TableSchema(
        "counting/rates.csv",
        "counting_rates",
        (
            PLACEMENT,
            READOUT,
            # margin: the classification constructions' relative logit margin (precision.csv)
            _str("source", ("lower_bound", "construction", "training", "margin")),
            _float("fitted_exponent", nan=True, inf=True),  # NaN: fewer than 2 finite points
            _float("predicted_exponent", nan=True),  # NaN: margin rows, no prediction
            _int("fit_from", 0),  # the fit's first and last length (0: no finite point)
            _int("fit_to", 0),
            _int("fit_points", 0),
        ),
        _rate_rows,
    ),
    TableSchema(
        "counting/exponents.csv",
        "counting_exponents",
        (
            PLACEMENT,
            READOUT,
            # NaN: the wall row, and sources without a rate
            *(
                _float(s, nan=True, inf=True)
                for s in ("predicted", "lower_bound", "construction", "training")
            ),
            # each fit's window, "16-64, 3 pts"; empty: no fit
            *(_str(f"{s}_window", nan=True) for s in ("lower_bound", "construction", "training")),
            _str("note", nan=True),
        ),  # fmt: skip
        # no row count: pivoting the rates drops a (placement, read-out) whose every fitted
        # exponent is NaN (e.g. classification constructions at a single length)
    ),
    TableSchema(
        "counting/reference_slopes.csv",
        "counting_references",
        (
            PLACEMENT,
            READOUT,
            _int("d", 1),
            _float("exponent"),
            _int("L", 1),
            _positive("bmin"),
        ),
        _reference_rows,
    ),
)


def _with_provenance(schema: TableSchema) -> TableSchema:
    if schema.names[-3:] == ["device", "dtype", "versions"]:
        return schema
    return TableSchema(schema.name, schema.rule, (*schema.columns, *PROVENANCE), schema.rows)


SCHEMAS: dict[str, TableSchema] = {
    s.name: s for s in map(_with_provenance, (*APJN_TABLES, *NUMERICS_TABLES, *COUNTING_TABLES))
}
"""Every tidy table of results/, by its path below results/."""

# Chunk tables of the sweeps (workflow/rules/<study>.smk, `sweep(...)`): pattern of the path
# below results/ -> (the gathered table, the chunk rule).
CHUNKS: tuple[tuple[re.Pattern[str], str, str], ...] = tuple(
    (re.compile(pattern), table, rule)
    for pattern, table, rule in (
        (r"apjn/items/curves/[^/]+\.csv", "apjn/measured_curves.csv", "apjn_curves"),
        (r"apjn/items/width/[^/]+\.csv", "apjn/width_agreement.csv", "apjn_width"),
        (r"apjn/items/sensitivity/[^/]+\.csv", "apjn/sensitivity.csv", "apjn_sensitivity"),
        (r"apjn/items/depth/[^/]+\.csv", "apjn/depth_measured.csv", "apjn_depth_points"),
        (r"apjn/items/train/[^/]+\.csv", "apjn/trainability.csv", "apjn_train"),
        (r"counting/items/theory/[^/]+\.csv", "counting/bmin_theory.csv", "counting_theory"),
        (r"counting/items/walls/[^/]+\.csv", "counting/walls.csv", "counting_theory"),
        (r"counting/items/precision/[^/]+\.csv", "counting/precision.csv", "counting_theory"),
        (r"counting/items/training/[^/]+\.csv", "counting/training.csv", "counting_training"),
        (r"numerics/items/gpt2/[^/]+_errors\.csv", "numerics/gpt2_errors.csv", "numerics_gpt2"),
        (
            r"numerics/items/gpt2/[^/]+_recursion\.csv",
            "numerics/gpt2_recursion.csv",
            "numerics_gpt2",
        ),
        (r"numerics/items/weights/[^/]+\.csv", "numerics/gpt2_weights.csv", "numerics_weights"),
    )
)


def _chunk_schema(key: str) -> TableSchema | None:
    for pattern, table, rule in CHUNKS:
        if pattern.fullmatch(key):
            gathered = SCHEMAS[table]
            return TableSchema(key, rule, (_str(ITEM_COLUMN), *gathered.columns))
    return None


def schema_for(path: str | Path) -> TableSchema | None:
    """The schema of the table at `path`, found by its path below the last `results/` folder
    (any table format: .csv or .parquet); None for a path without one."""
    parts = Path(path).with_suffix(".csv").parts
    for k in reversed(range(len(parts))):
        if parts[k] == "results":
            key = "/".join(parts[k + 1 :])
            return SCHEMAS.get(key) or _chunk_schema(key)
    return None


def read_dtypes(schema: TableSchema) -> dict[str, type]:
    """What `read_table` passes to pandas: str columns stay strings (a number-like text such
    as '1' would otherwise be read as a number)."""
    return {c.name: str for c in schema.columns if c.kind == "str"}


# --- checking -----------------------------------------------------------------------------

MAX_PROBLEMS = 8


def _rows_text(index: np.ndarray, offset: int | None) -> str:
    """'row 93 (line 95 of the file)' of the first offending row, with the count."""
    first = int(index[0])
    where = f"row {first}" + (f" (line {first + offset} of the file)" if offset else "")
    return f"{len(index)} row{'s' if len(index) > 1 else ''}, first at {where}"


def _kind_problem(column: Column, series: pd.Series) -> str | None:
    dtype = series.dtype
    if column.kind == "str":
        if pd.api.types.is_string_dtype(dtype) or pd.api.types.is_object_dtype(dtype):
            values = series.dropna()
            if all(isinstance(v, str) for v in values):
                return None
        elif series.isna().all():
            return None
        return f"column '{column.name}' should hold text, found {dtype}"
    present = series.dropna()
    if column.kind == "bool":
        # a missing value makes pandas read True/False as objects: the NaN check reports it
        if pd.api.types.is_bool_dtype(dtype) or all(
            isinstance(v, (bool, np.bool_)) for v in present
        ):
            return None
        return f"column '{column.name}' should hold True/False, found {dtype}"
    numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
    if column.kind == "int":
        if pd.api.types.is_integer_dtype(dtype) and numeric:
            return None
        # a missing value makes pandas read integers as floats: the NaN check reports it
        if pd.api.types.is_float_dtype(dtype) and len(present) < len(series):
            values = present.to_numpy()
            if np.all(np.isfinite(values) & (values == np.round(values))):
                return None
        return f"column '{column.name}' should hold integers, found {dtype}"
    if numeric:
        return None
    return f"column '{column.name}' should hold numbers, found {dtype}"


def _value_problems(column: Column, series: pd.Series, offset: int | None) -> list[str]:
    problems = []
    missing = series.isna().to_numpy()
    if column.kind == "str":  # an empty text is written as an empty field, read back as NaN
        missing = missing | (series == "").fillna(False).to_numpy(dtype=bool)
    if missing.any() and not column.nan:
        problems.append(
            f"column '{column.name}' has missing values (empty or NaN): "
            f"{_rows_text(np.flatnonzero(missing), offset)}"
        )
    if column.kind == "str":
        if column.values is not None:
            bad = ~missing & ~series.isin(column.values).to_numpy()
            if bad.any():
                first = series.to_numpy()[np.flatnonzero(bad)[0]]
                problems.append(
                    f"column '{column.name}' holds {first!r}, not one of {list(column.values)}: "
                    f"{_rows_text(np.flatnonzero(bad), offset)}"
                )
        return problems
    if column.kind == "bool":
        return problems
    values = series.to_numpy(dtype=float, na_value=np.nan)
    infinite = np.isinf(values)
    if infinite.any() and not column.inf:
        problems.append(
            f"column '{column.name}' has infinite values: "
            f"{_rows_text(np.flatnonzero(infinite), offset)}"
        )
    checks = []
    if column.low is not None:
        below = values <= column.low if column.low_open else values < column.low
        checks.append((below, f"{'<=' if column.low_open else '<'} {column.low:g}"))
    if column.high is not None:
        checks.append((values > column.high, f"> {column.high:g}"))
    for bad, what in checks:
        bad = bad & ~np.isnan(values)
        if bad.any():
            first = values[np.flatnonzero(bad)[0]]
            problems.append(
                f"column '{column.name}' has values {what} (e.g. {first:g}): "
                f"{_rows_text(np.flatnonzero(bad), offset)}"
            )
    return problems


def table_problems(
    table: pd.DataFrame,
    schema: TableSchema,
    config: Mapping[str, Any] | None = None,
    line_offset: int | None = None,
) -> list[str]:
    """Everything in `table` that its schema refuses (an empty list: the table is valid).
    `line_offset` turns a row index into a file line in the messages (2 for a CSV with a
    header); with `config`, the row count is checked against the one the config implies."""
    found, wanted = list(table.columns), schema.names
    if found != wanted:
        missing = [c for c in wanted if c not in found]
        extra = [c for c in found if c not in wanted]
        if missing or extra:
            text = []
            if missing:
                text.append(f"missing column{'s' if len(missing) > 1 else ''} {missing}")
            if extra:
                text.append(f"unexpected column{'s' if len(extra) > 1 else ''} {extra}")
            return [" and ".join(text) + f" (expected {wanted})"]
        return [f"columns out of order: {found}, expected {wanted}"]
    if table.columns.duplicated().any():
        return [f"duplicate columns: {found}"]
    problems = []
    expected = None if config is None or schema.rows is None else schema.rows(config)
    if expected is not None and len(table) != expected:
        short = "fewer" if len(table) < expected else "more"
        problems.append(f"{len(table)} rows, {short} than the {expected} the config implies")
    elif len(table) == 0 and expected is None:
        problems.append("no rows (only a header)")
    if len(table) == 0:
        return problems
    for column in schema.columns:
        series = table[column.name]
        kind = _kind_problem(column, series)
        if kind is not None:
            problems.append(kind)
            continue
        problems += _value_problems(column, series, line_offset)
    return problems


def remedy(schema: TableSchema) -> str:
    """What to do about an invalid table. Deleting it alone is not enough: Snakemake does not
    rebuild a missing intermediate table whose consumers are up to date, while `--forcerun`
    rebuilds it and reruns every job that reads it."""
    return (
        f"rebuild it and everything that reads it with `snakemake --forcerun "
        f"results/{schema.name}` (plus your usual --configfile/--profile options); "
        f"rule {schema.rule} rebuilds it"
    )


def error_text(path: str | Path, schema: TableSchema, problems: list[str], writing: bool) -> str:
    """The one message a TableError carries: the file, every problem (at most MAX_PROBLEMS),
    and what to do."""
    shown = problems[:MAX_PROBLEMS]
    if len(problems) > len(shown):
        shown.append(f"... and {len(problems) - len(shown)} more")
    listed = "\n".join(f"  - {p}" for p in shown)
    if writing:
        return (
            f"refusing to write table {path}: rule {schema.rule} computed a table that does not "
            f"match its schema ('{schema.name}' in transformer_stability/table_schemas.py); "
            f"nothing was written:\n{listed}"
        )
    return (
        f"table {path} is not valid (schema '{schema.name}' in "
        f"transformer_stability/table_schemas.py):\n{listed}\n"
        f"It was truncated, edited by hand or made under another config: {remedy(schema)}."
    )


def check_table(
    table: pd.DataFrame,
    path: str | Path,
    config: Mapping[str, Any] | None = None,
    *,
    writing: bool = False,
    line_offset: int | None = None,
    extra_problems: Sequence[str] = (),
) -> None:
    """Raise TableError if the table at `path` (about to be written, or just read) does not
    match the schema of its path; a path without a schema is not checked."""
    schema = schema_for(path)
    if schema is None:
        return
    problems = [*extra_problems, *table_problems(table, schema, config, line_offset)]
    if problems:
        raise TableError(error_text(path, schema, problems, writing))


def csv_problems(path: Path) -> list[str]:
    """What a CSV's bytes tell before pandas reads it: an empty file, or a last line without
    its newline (every table is written whole, so that file was cut short)."""
    size = path.stat().st_size
    if size == 0:
        return ["the file is empty (0 bytes)"]
    with open(path, "rb") as handle:
        handle.seek(size - 1)
        if handle.read(1) != b"\n":
            return ["the file ends mid-row (no newline after its last line): it was cut short"]
    return []


__all__ = [
    "CHUNKS",
    "SCHEMAS",
    "Column",
    "TableError",
    "TableSchema",
    "check_table",
    "csv_problems",
    "error_text",
    "read_dtypes",
    "schema_for",
    "table_problems",
]
