"""Rule counting_residual: C7's table, the best attainable max |y - c| against B at one L."""

from transformer_stability.counting.items import residual_item
from transformer_stability.counting.tables import Residual
from transformer_stability.counting.theory_tables import residual_table
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    return residual_table(residual_item(settings["counting"], settings["seed"]))


table_job(snakemake, compute, Residual)
