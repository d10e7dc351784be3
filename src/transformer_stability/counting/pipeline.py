"""Study C as the pipeline sees it: the parameter cost of counting with one attention layer
(docs/counting.md)."""

from transformer_stability.counting import checks, tables
from transformer_stability.counting.claims import CLAIMS
from transformer_stability.counting.costs import train_work
from transformer_stability.counting.items import theory_items, train_items
from transformer_stability.counting.tables import (
    BminTheory,
    ConstructionPrecision,
    EmpiricalBmin,
    Exponents,
    Geometry,
    Precision,
    Rates,
    ReferenceSlopes,
    Residual,
    Success,
    Training,
    Walls,
)
from transformer_stability.plotting import figures_in
from transformer_stability.study import Study
from transformer_stability.sweeps import Sweep

_THEORY = tuple(
    f"counting.theory.{key}"
    for key in (
        "widths",
        "lengths",
        "classification_max_length",
        "margin_lp_max_length",
        "margin",
    )
)

SWEEPS = (
    # LPs and float64 grid checks: the theory never uses the GPU
    Sweep(
        "counting_theory",
        theory_items,
        {
            "theory": BminTheory,
            "walls": Walls,
            "precision": ConstructionPrecision,
        },
        settings=("seed", *_THEORY),
        gpu=False,
    ),
    Sweep(
        "counting_training",
        train_items,
        {"table": Training},
        work=train_work,
        settings=("device", "seed", "counting.training"),
    ),
)

# The config keys (settings.py) of the tables not gathered from a sweep; a derived table also
# records those of the tables it is computed from.
_FIRST_WIDTH = ("seed", "counting.theory.widths")
SETTINGS = {
    Geometry: (*_FIRST_WIDTH, "counting.geometry_length", "counting.theory.margin"),
    Residual: (*_FIRST_WIDTH, "counting.residual"),
    ReferenceSlopes: ("seed",),
    Success: ("seed",),
    Precision: ("seed",),
    EmpiricalBmin: ("seed", "counting.theory.fit_points"),
    Rates: ("seed", "counting.theory.fit_points"),
    Exponents: ("seed",),
}

STUDY = Study(
    name="counting",
    category="Study C: counting",
    figures=figures_in("transformer_stability.counting.figures"),
    sweeps=SWEEPS,
    tables=tables.TABLES,
    settings=SETTINGS,
    config_errors=checks.config_errors,
    input_errors=checks.input_errors,
    claims=CLAIMS,
)
