"""Rule apjn_theory_curves: mean-field backward/forward APJN curves -> tidy CSV."""

from transformer_stability.apjn.tables import TheoryCurves
from transformer_stability.apjn.theory_tables import ApjnStudy, theory_curves
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    return theory_curves(ApjnStudy.from_config(settings["apjn"]))


table_job(snakemake, compute, TheoryCurves)
