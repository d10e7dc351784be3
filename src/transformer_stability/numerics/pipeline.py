"""Study N as the pipeline sees it: numerical stability of mixed-precision inference
(docs/numerics.md)."""

from transformer_stability.numerics import checks, tables
from transformer_stability.numerics.claims import CLAIMS
from transformer_stability.numerics.items import SETTINGS, SWEEPS
from transformer_stability.plotting import figures_in
from transformer_stability.study import Study

STUDY = Study(
    name="numerics",
    category="Study N: numerics",
    figures=figures_in("transformer_stability.numerics.figures"),
    sweeps=SWEEPS,
    tables=tables.TABLES,
    settings=SETTINGS,
    config_errors=checks.config_errors,
    input_errors=checks.input_errors,
    claims=CLAIMS,
)
