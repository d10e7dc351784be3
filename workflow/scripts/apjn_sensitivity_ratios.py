"""Rule apjn_sensitivity_ratios: measured/theory J^{L,0} at every point of the sensitivity
sweeps, with a bootstrap interval over initializations and samples."""

from transformer_stability.apjn.agreement import sensitivity_ratios
from transformer_stability.apjn.tables import EndToEnd, SensitivityRatios
from transformer_stability.derived import derived_job


def derive(measured, settings):
    return {"table": sensitivity_ratios(measured, seed=settings["seed"])}


derived_job(snakemake, EndToEnd, derive, {"table": SensitivityRatios})
