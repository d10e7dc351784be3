"""Study C's tables under results/counting/: one model per table (columns in order, dtypes,
ranges, NaN and inf where the computation makes them), the row count where the config fixes
it. Torch-free: the workflow's gather and figure jobs check tables without the study's code."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandera.pandas as pa
from pandera.typing import Series

from transformer_stability.counting.names import PLACEMENTS, READOUTS
from transformer_stability.tables import INF, Table

REGRESSION_RATE_PLACEMENTS = 4  # counting/derived_tables.py: every placement but bare pre-norm
REFERENCE_PLACEMENTS = 3  # counting/derived_tables.py: none, post_bare, post_learned
QUORUM = 0.5  # trained B_min: the smallest grid bound with at least this fraction of seeds exact
BRACKET_ENDS = ("first passing", "last failing", "none")  # success.csv's bracket column
SOURCES = ("lower_bound", "construction", "training", "training_bound")
MARGIN_SOURCES = ("margin", "trained_margin", "head_margin")  # classification margins' rates


def _positive(description: str, inf: bool = True) -> Any:
    return pa.Field(gt=0, metadata=INF if inf else None, description=description)


def _free(description: str) -> Any:
    """A float that may be NaN or +-inf."""
    return pa.Field(nullable=True, metadata=INF, description=description)


def _classified(theory: Mapping[str, Any]) -> int:
    """Theory lengths with a classification construction."""
    return sum(length <= theory["classification_max_length"] for length in theory["lengths"])


class Construction(Table):
    """The columns that name a construction: where its norm sits, how it reads out."""

    placement: Series[str] = pa.Field(isin=PLACEMENTS, description="where the norm sits")
    readout: Series[str] = pa.Field(isin=READOUTS, description="regression or classification")


class BminTheory(Table):
    """Lower bounds and grid-verified constructions of B_min(L) per width."""

    placement: Series[str] = pa.Field(isin=PLACEMENTS, description="where the norm sits")
    attention: Series[str] = pa.Field(isin=("softmax", "linear"), description="the attention")
    readout: Series[str] = pa.Field(isin=READOUTS, description="regression or classification")
    d: Series[int] = pa.Field(ge=1, description="the width")
    L: Series[int] = pa.Field(ge=1, description="the sequence length")
    bound: Series[str] = pa.Field(isin=("lower_bound", "construction"), description="the source")
    bmin: Series[float] = pa.Field(ge=0, metadata=INF, description="B_min; inf past the wall")

    class Config:
        metadata = {"path": "counting/bmin_theory.csv", "rule": "gather"}


class Walls(Construction):
    """The bare pre-norm wall per width: the longest length it can count."""

    d: Series[int] = pa.Field(ge=1, description="the width")
    max_length: Series[int] = pa.Field(ge=0, description="the wall")

    class Config:
        metadata = {"path": "counting/walls.csv", "rule": "gather"}


class Residual(Table):
    """C7: the best attainable max |y - c| against B at one L."""

    placement: Series[str] = pa.Field(isin=PLACEMENTS, description="where the norm sits")
    attention: Series[str] = pa.Field(isin=("softmax", "linear"), description="the attention")
    d: Series[int] = pa.Field(ge=1, description="the width")
    L: Series[int] = pa.Field(ge=1, description="the sequence length")
    source: Series[str] = pa.Field(isin=("lower_bound", "construction"), description="the source")
    target_error: Series[float] = pa.Field(ge=0, le=0.5, description="the error aimed at")
    B: Series[float] = _positive("the norm budget", inf=False)
    max_error: Series[float] = pa.Field(ge=0, description="measured on the grid (construction)")

    class Config:
        metadata = {"path": "counting/residual.csv", "rule": "counting_residual"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        return 6 * len(set(config["counting"]["residual"]["errors"])) + 1


class ConstructionPrecision(Construction):
    """The constructions evaluated in float32 and float64."""

    d: Series[int] = pa.Field(ge=1, description="the width")
    L: Series[int] = pa.Field(ge=1, description="the sequence length")
    parameters: Series[int] = pa.Field(ge=1, description="the parameter count")
    max_norm: Series[float] = _positive("the largest norm", inf=False)
    best_head_margin: Series[float] = pa.Field(
        ge=0,
        nullable=True,
        description="the best head's relative margin on this representation (LP on m = 0); "
        "NaN: regression or past margin_lp_max_length",
    )
    format: Series[str] = pa.Field(isin=("float32", "float64"), description="the format")
    accuracy: Series[float] = pa.Field(ge=0, le=1, description="the accuracy on the grid")
    margin: Series[float] = pa.Field(
        description="gap to the rounding threshold; negative: some point wrong"
    )
    output_scale: Series[float] = pa.Field(ge=0, description="the output's scale")
    relative_margin: Series[float] = pa.Field(
        ge=0, nullable=True, description="NaN: not exact in this format"
    )

    class Config:
        metadata = {"path": "counting/construction_precision.csv", "rule": "gather"}


class Precision(Construction):
    """Storage and precision of every construction and every trained model, side by side: the
    relative margin in float64, the best head's on the same representation, and exactness in
    float64 and float32."""

    source: Series[str] = pa.Field(
        isin=("construction", "training"), description="an explicit construction or a run"
    )
    d: Series[int] = pa.Field(ge=1, description="the width")
    L: Series[int] = pa.Field(ge=1, description="the sequence length")
    B: Series[float] = _positive("the run's bound (inf: unconstrained); a construction's norm")
    seed: Series[float] = pa.Field(nullable=True, description="the run's seed; NaN: construction")
    parameters: Series[int] = pa.Field(ge=1, description="the parameter count")
    max_norm: Series[float] = pa.Field(
        ge=0, nullable=True, metadata=INF, description="the largest vector norm"
    )
    accuracy: Series[float] = pa.Field(ge=0, le=1, description="the accuracy in float64")
    accuracy_float32: Series[float] = pa.Field(ge=0, le=1, description="the same in float32")
    relative_margin: Series[float] = pa.Field(
        ge=0, nullable=True, metadata=INF, description="float64; NaN: not exact"
    )
    best_head_margin: Series[float] = pa.Field(
        ge=0, nullable=True, description="the best head's on the representation; NaN: not run"
    )

    class Config:
        metadata = {"path": "counting/precision.csv", "rule": "counting_precision"}


class Training(Construction):
    """Every training run: each (B, seed) of the bound grid and the unconstrained runs; the rows
    carry their own seeds."""

    d: Series[int] = pa.Field(ge=1, description="the width")
    L: Series[int] = pa.Field(ge=1, description="the sequence length")
    B: Series[float] = _positive("the norm budget; inf: an unconstrained run")
    lower_bound: Series[float] = pa.Field(
        gt=0, nullable=True, description="the theory's lower bound at L; NaN: no ratio"
    )
    ratio: Series[float] = pa.Field(
        gt=0, nullable=True, description="B / lower_bound; NaN: classification, unconstrained"
    )
    seed: Series[int] = pa.Field(description="the run's seed")
    steps: Series[int] = pa.Field(ge=0, description="the steps run")
    train_points: Series[str] = pa.Field(
        isin=("grid", "edges"), description="trained on the whole grid or on m = 0, c + m = L"
    )
    accuracy: Series[float] = pa.Field(ge=0, le=1, description="the accuracy on the whole grid")
    balanced_accuracy: Series[float] = pa.Field(ge=0, le=1, description="the balanced accuracy")
    first_failing_count: Series[float] = pa.Field(
        ge=0, nullable=True, description="NaN: every count correct"
    )
    max_vector_norm: Series[float] = pa.Field(
        ge=0, nullable=True, metadata=INF, description="the largest vector norm"
    )
    max_error: Series[float] = pa.Field(
        ge=0, nullable=True, metadata=INF, description="NaN: classification, diverged"
    )
    adam_max_error: Series[float] = pa.Field(
        ge=0,
        nullable=True,
        metadata=INF,
        description="the largest error after Adam, before the minimax polish; NaN: not polished",
    )
    logit_margin: Series[float] = _free("NaN: regression, diverged")
    adam_logit_margin: Series[float] = _free(
        "the smallest logit margin of Adam's head, before the head's refit; NaN: not refitted"
    )
    relative_margin: Series[float] = pa.Field(
        ge=0, nullable=True, metadata=INF, description="NaN: not exact"
    )
    accuracy_float32: Series[float] = pa.Field(
        ge=0, le=1, description="the accuracy with parameters and forward in float32"
    )
    best_head_margin: Series[float] = pa.Field(
        ge=0,
        nullable=True,
        description="the best head's relative margin on the run's "
        "representation (LP on m = 0); NaN: regression",
    )

    class Config:
        metadata = {"path": "counting/training.csv", "rule": "gather"}


class Geometry(Construction):
    """C1: the constructions' outputs at Q on their best 2-plane."""

    d: Series[int] = pa.Field(ge=1, description="the width")
    L: Series[int] = pa.Field(ge=1, description="the sequence length")
    c: Series[int] = pa.Field(ge=0, description="the count")
    x: Series[float] = pa.Field(description="the first coordinate")
    y: Series[float] = pa.Field(description="the second coordinate")
    radius: Series[float] = pa.Field(ge=0, description="the distance from the origin")

    class Config:
        metadata = {"path": "counting/geometry.csv", "rule": "counting_geometry"}


class Success(Construction):
    """Per (read-out, L, B) of the bound grid: the seeds that count the whole grid exactly."""

    d: Series[int] = pa.Field(ge=1, description="the width")
    L: Series[int] = pa.Field(ge=1, description="the sequence length")
    B: Series[float] = _positive("the norm budget", inf=False)
    lower_bound: Series[float] = pa.Field(
        gt=0, nullable=True, description="the theory's lower bound; NaN: classification"
    )
    ratio: Series[float] = pa.Field(gt=0, nullable=True, description="B / lower_bound")
    seeds: Series[int] = pa.Field(ge=1, description="the seeds trained at this B")
    exact: Series[int] = pa.Field(ge=0, description="the seeds exact on the whole grid")
    fraction: Series[float] = pa.Field(ge=0, le=1, description="exact / seeds")
    bracket: Series[str] = pa.Field(
        isin=BRACKET_ENDS,
        description="regression: the ends of B_min's bracket, 'first passing' (the smallest B "
        "with at least QUORUM of the seeds exact: B_min) and 'last failing' (the B tried just "
        "under it); 'none' elsewhere",
    )

    class Config:
        metadata = {"path": "counting/success.csv", "rule": "counting_rates"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int | None:
        """One row per constrained (read-out, L, grid bound): unknown where the regression
        search has later rounds (their ratios depend on the first round's outcome)."""
        training = config["counting"]["training"]
        if training["regression"]["rounds"] > 1:
            return None
        grids = {"regression": "ratios", "classification": "bounds"}
        return sum(
            len(set(training[r]["lengths"])) * len(set(training[r][grids[r]])) for r in READOUTS
        )


class EmpiricalBmin(Construction):
    """Trained regression B_min per L: the smallest grid bound where at least half the seeds
    are exact."""

    d: Series[int] = pa.Field(ge=1, description="the width")
    L: Series[int] = pa.Field(ge=1, description="the sequence length")
    lower_bound: Series[float] = _positive("the theory's lower bound", inf=False)
    bmin: Series[float] = _positive("inf: no grid bound reaches the quorum")
    ratio: Series[float] = _positive("bmin / lower_bound")
    fraction: Series[float] = pa.Field(
        ge=0, le=1, nullable=True, description="the exact fraction at bmin; NaN: none"
    )
    seed_bmin_low: Series[float] = _positive("the smallest of the seeds' own smallest exact B")
    seed_bmin_high: Series[float] = _positive("the largest of them; inf: a seed never exact")
    exact_below_bound: Series[int] = pa.Field(
        ge=0, description="exact runs below the lower bound (impossible: a bug if not 0)"
    )
    bounds: Series[int] = pa.Field(ge=1, description="the grid's bounds")
    seeds: Series[int] = pa.Field(ge=1, description="the seeds per bound")

    class Config:
        metadata = {"path": "counting/empirical_bmin.csv", "rule": "counting_rates"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        """One row per constrained regression length."""
        return len(set(config["counting"]["training"]["regression"]["lengths"]))


class Rates(Construction):
    """Fitted exponents of every B_min(L) curve and of the classification margins."""

    source: Series[str] = pa.Field(
        isin=(*SOURCES, *MARGIN_SOURCES),
        description="margin: the classification constructions' relative logit margin; "
        "trained_margin: the trained classifiers' at the smallest bound trained (median over "
        "seeds, NaN at a length where fewer than half count exactly); head_margin: the best "
        "head's on their representations (median over seeds); training_bound: the lower bound "
        "on the training fit's lengths",
    )
    fitted_exponent: Series[float] = _free("NaN: fewer than 2 finite points")
    predicted_exponent: Series[float] = pa.Field(
        nullable=True, description="NaN: margin rows, no prediction"
    )
    fit_from: Series[int] = pa.Field(ge=0, description="the fit's first length (0: no point)")
    fit_to: Series[int] = pa.Field(ge=0, description="the fit's last length")
    fit_points: Series[int] = pa.Field(ge=0, description="the fit's points")
    exponent_low: Series[float] = pa.Field(
        nullable=True,
        metadata=INF,
        description="training: the least slope that B_min anywhere in its brackets on the "
        "bound grid allows over the fit's lengths; NaN: other sources (no bracket)",
    )
    exponent_high: Series[float] = pa.Field(
        nullable=True,
        metadata=INF,
        description="training: the largest such slope (inf: a bracket open above)",
    )

    class Config:
        metadata = {"path": "counting/rates.csv", "rule": "counting_rates"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        """Regression: lower bound and construction of every placement with a rate;
        classification: the construction's norm and relative margin of every placement (if any
        length has one); the trained regression B_min and the lower bound on its window; the
        trained classifiers' margin and their best head's, where any is trained at a bound."""
        theory = config["counting"]["theory"]
        classification = len(PLACEMENTS) if _classified(theory) else 0
        trained = config["counting"]["training"]["classification"]
        bounded = any(math.isfinite(b) for b in trained["bounds"]) and trained["lengths"]
        return 2 * REGRESSION_RATE_PLACEMENTS + 2 * classification + 2 + (2 if bounded else 0)


class Exponents(Construction):
    """C5: exponents per source, one row per (placement, read-out), the wall in place of a rate
    (NaN: the wall row, and sources without a rate)."""

    predicted: Series[float] = _free("the predicted exponent")
    lower_bound: Series[float] = _free("the lower bound's fitted exponent")
    construction: Series[float] = _free("the construction's fitted exponent")
    training: Series[float] = _free("training's fitted exponent")
    training_bound: Series[float] = _free("the lower bound's, on the training fit's lengths")
    lower_bound_window: Series[str] = pa.Field(
        nullable=True, description="the fit's window, '16-64, 3 pts'; empty: no fit"
    )
    construction_window: Series[str] = pa.Field(nullable=True, description="the same")
    training_window: Series[str] = pa.Field(nullable=True, description="the same")
    training_bound_window: Series[str] = pa.Field(nullable=True, description="the same")
    note: Series[str] = pa.Field(nullable=True, description="the wall's note")

    class Config:
        metadata = {"path": "counting/exponents.csv", "rule": "counting_exponents"}


class ReferenceSlopes(Construction):
    """The predicted power laws that C2 draws over the theory, anchored at the constructions."""

    d: Series[int] = pa.Field(ge=1, description="the width")
    exponent: Series[float] = pa.Field(description="the predicted exponent")
    L: Series[int] = pa.Field(ge=1, description="the sequence length")
    bmin: Series[float] = _positive("the line's B_min")

    class Config:
        metadata = {"path": "counting/reference_slopes.csv", "rule": "counting_references"}

    @classmethod
    def rows(cls, config: Mapping[str, Any]) -> int:
        theory = config["counting"]["theory"]
        return len(theory["widths"]) * REFERENCE_PLACEMENTS * len(set(theory["lengths"]))


TABLES = (
    BminTheory,
    Walls,
    Residual,
    ConstructionPrecision,
    Training,
    Precision,
    Geometry,
    Success,
    EmpiricalBmin,
    Rates,
    Exponents,
    ReferenceSlopes,
)
