"""Study A as the pipeline sees it: signal propagation at initialization (docs/apjn.md)."""

from transformer_stability.apjn import checks, tables
from transformer_stability.apjn.claims import CLAIMS
from transformer_stability.apjn.items import SETTINGS, SWEEPS
from transformer_stability.plotting import figures_in
from transformer_stability.study import Study

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
