"""Study C as the pipeline sees it: the parameter cost of counting with one attention layer
(docs/counting.md)."""

from transformer_stability.counting import checks, tables
from transformer_stability.counting.claims import CLAIMS
from transformer_stability.counting.items import SETTINGS, SWEEPS
from transformer_stability.plotting import figures_in
from transformer_stability.study import Study

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
