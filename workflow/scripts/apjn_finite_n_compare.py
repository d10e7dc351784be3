"""Rule apjn_finite_n_compare: the finite-N measurement against both closures -> tidy CSV."""

from transformer_stability.apjn.closures import finite_n_comparison
from transformer_stability.apjn.tables import FiniteN, FiniteNCompare
from transformer_stability.derived import derived_job


def derive(measured, settings):
    return {"table": finite_n_comparison(measured, seed=settings["seed"])}


derived_job(snakemake, FiniteN, derive, {"table": FiniteNCompare})
