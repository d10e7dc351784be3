"""Study A as the pipeline sees it: signal propagation at initialization (docs/apjn.md)."""

from transformer_stability.apjn import checks, tables
from transformer_stability.apjn.claims import CLAIMS
from transformer_stability.apjn.figures import FIGURES
from transformer_stability.apjn.items import SETTINGS, SWEEPS
from transformer_stability.study import Study

STUDY = Study(
    name="apjn",
    category="Study A: signal propagation",
    figures=FIGURES,
    sweeps=SWEEPS,
    tables=tables.TABLES,
    settings=SETTINGS,
    config_errors=checks.config_errors,
    input_errors=checks.input_errors,
    claims=CLAIMS,
)
