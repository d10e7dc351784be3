"""Rule counting_rates: success fractions of the training's bound grid, the empirical B_min
read from them, and fitted exponents of every B_min(L) curve (theory and training) and of the
classification margins."""

from transformer_stability.counting.derived_tables import empirical_bmin, rates_table, success_table
from transformer_stability.counting.tables import (
    BminTheory,
    EmpiricalBmin,
    Precision,
    Rates,
    Success,
    Training,
)
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    success = success_table(tables["training"])
    empirical = empirical_bmin(tables["training"], success)
    fit_points = settings["counting"]["theory"]["fit_points"]
    rates = rates_table(tables["theory"], empirical, success, tables["precision"], fit_points)
    return {"success": success, "empirical": empirical, "rates": rates}


table_job(
    snakemake,
    compute,
    {"success": Success, "empirical": EmpiricalBmin, "rates": Rates},
    {"theory": BminTheory, "training": Training, "precision": Precision},
)
