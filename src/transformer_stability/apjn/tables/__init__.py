"""Study A's tables under results/apjn/: one model per table (columns in order, dtypes, ranges,
NaN and inf where the computation makes them), the row count where the config fixes it.
Torch-free: the workflow's gather and figure jobs check tables without the study's code. One
module per group (theory, measured, training, agreement); TABLES keeps the order docs/tables.md
shows them in."""

from transformer_stability.apjn.tables.comparisons import (
    Agreement,
    AgreementMeans,
    WidthAgreement,
    WidthExcess,
    WidthFitIds,
    WidthSlopes,
)
from transformer_stability.apjn.tables.mean_field import (
    CLOSURES,
    Asymptotics,
    DepthLaws,
    PrelnCrossovers,
    PrelnTokens,
    TheoryCurves,
    TheoryDepth,
)
from transformer_stability.apjn.tables.measured import (
    FINITE_N_INPUTS,
    EndToEnd,
    FiniteN,
    FiniteNCompare,
    MeasuredCurves,
    SensitivityRatios,
)
from transformer_stability.apjn.tables.trainability import (
    MatchedPairs,
    Trainability,
    TuningStatistics,
    TuningWindows,
)

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
    TuningStatistics,
    MatchedPairs,
    Agreement,
    AgreementMeans,
    WidthAgreement,
    WidthExcess,
    WidthSlopes,
)

__all__ = [
    "Agreement",
    "AgreementMeans",
    "Asymptotics",
    "CLOSURES",
    "DepthLaws",
    "EndToEnd",
    "FINITE_N_INPUTS",
    "FiniteN",
    "FiniteNCompare",
    "MatchedPairs",
    "MeasuredCurves",
    "PrelnCrossovers",
    "PrelnTokens",
    "SensitivityRatios",
    "TheoryCurves",
    "TheoryDepth",
    "Trainability",
    "TuningStatistics",
    "TuningWindows",
    "WidthAgreement",
    "WidthExcess",
    "WidthFitIds",
    "WidthSlopes",
    "TABLES",
]
