"""Rule apjn_finite_n_compare: the finite-N measurement against both closures -> tidy CSV."""

from transformer_stability.apjn.closures import finite_n_comparison
from transformer_stability.apjn.tables import FiniteN, FiniteNCompare
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    return {"table": finite_n_comparison(tables["table"], seed=settings["seed"])}


table_job(snakemake, compute, {"table": FiniteNCompare}, {"table": FiniteN}, carry="table")
