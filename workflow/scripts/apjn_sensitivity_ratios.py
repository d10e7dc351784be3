"""Rule apjn_sensitivity_ratios: measured/theory J^{L,0} at every point of the sensitivity
sweeps, with a bootstrap interval over initializations and samples."""

from transformer_stability.apjn.agreement_intervals import sensitivity_ratios
from transformer_stability.apjn.tables import EndToEnd, SensitivityRatios
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    return {"table": sensitivity_ratios(tables["table"], seed=settings["seed"])}


table_job(snakemake, compute, {"table": SensitivityRatios}, {"table": EndToEnd}, carry="table")
