"""Study A as the pipeline sees it: signal propagation at initialization (docs/apjn.md)."""

from transformer_stability.apjn import checks, tables
from transformer_stability.apjn.claims import CLAIMS
from transformer_stability.apjn.costs import (
    curve_work,
    end_to_end_work,
    finite_n_work,
    train_work,
    width_work,
)
from transformer_stability.apjn.items import (
    curve_items,
    end_to_end_items,
    finite_n_items,
    width_items,
)
from transformer_stability.apjn.tables import (
    Agreement,
    AgreementMeans,
    Asymptotics,
    DepthLaws,
    EndToEnd,
    FiniteN,
    FiniteNCompare,
    MatchedPairs,
    MeasuredCurves,
    PrelnCrossovers,
    PrelnTokens,
    SensitivityRatios,
    TheoryCurves,
    TheoryDepth,
    Trainability,
    TuningWindows,
    WidthAgreement,
    WidthExcess,
    WidthSlopes,
)
from transformer_stability.apjn.train_items import train_items
from transformer_stability.plotting import figures_in
from transformer_stability.study import Study
from transformer_stability.sweeps import Sweep

# The config keys (settings.py) each sweep's items and each theory table are built from.
_MODEL = ("seed", "apjn.model", "apjn.attn_mult", "apjn.mlp_mult", "apjn.input")
_MEASURE = tuple(
    f"apjn.measure.{key}" for key in ("samples", "probes", "chunk_size", "chunk_blocks", "dtype")
)
_IMAGES = tuple(f"apjn.images.{key}" for key in ("source", "cifar_root", "count"))
_CURVES = (*_MODEL, *_MEASURE, *_IMAGES, "apjn.images.forward_source_block")
_THEORY = (*_MODEL, "apjn.variants", "apjn.theory")

SWEEPS = (
    Sweep(
        "apjn_curves",
        curve_items,
        {"table": MeasuredCurves},
        work=curve_work,
        # compare_from_block: A2's caption, drawn from this table, states A3's regions
        settings=(
            "device",
            *_CURVES,
            "apjn.variants",
            "apjn.measure.inits",
            "apjn.measure.equiangular_heads",
            "apjn.images.compare_from_block",
        ),
    ),
    Sweep(
        "apjn_width",
        width_items,
        {"table": WidthAgreement},
        work=width_work,
        # variants and inits: which of its models the curve sweep measures (items.width_items)
        settings=(
            "device",
            *_CURVES,
            "apjn.width_scan",
            "apjn.images.compare_from_block",
            "apjn.variants",
            "apjn.measure.inits",
        ),
    ),
    Sweep(
        "apjn_end_to_end",
        end_to_end_items,
        {"table": EndToEnd},
        work=end_to_end_work,
        settings=(
            "device",
            *_MODEL,
            *_MEASURE,
            "apjn.variants",
            "apjn.measure.inits",
            "apjn.measure.sweep_samples",
            "apjn.sensitivity",
            "apjn.depth_scaling",
        ),
    ),
    Sweep(
        "apjn_finite_n",
        finite_n_items,
        {"table": FiniteN},
        work=finite_n_work,
        settings=("device", *_MODEL, "apjn.measure.dtype", "apjn.finite_n"),
    ),
    Sweep(
        "apjn_train",
        train_items,
        {"table": Trainability},
        work=train_work,
        settings=("device", "seed", "apjn.train"),
    ),
)

SETTINGS = {
    **dict.fromkeys(
        (TheoryCurves, TheoryDepth, Asymptotics, DepthLaws, PrelnTokens, PrelnCrossovers), _THEORY
    ),
    Agreement: ("apjn.images.compare_from_block",),
    AgreementMeans: ("apjn.images.compare_from_block", "seed"),
    SensitivityRatios: ("seed",),
    FiniteNCompare: ("seed",),
    WidthExcess: (),
    WidthSlopes: ("seed",),
    TuningWindows: (),
    MatchedPairs: (),
}

STUDY = Study(
    name="apjn",
    category="Study A: signal propagation",
    figures=figures_in("transformer_stability.apjn.figures"),
    sweeps=SWEEPS,
    tables=tables.TABLES,
    settings=SETTINGS,
    config_errors=checks.config_errors,
    input_errors=checks.input_errors,
    claims=CLAIMS,
)
