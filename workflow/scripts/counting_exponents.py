"""Rule counting_exponents: C5's table, one row per (placement, read-out), exponents per source,
and the bare pre-norm wall in place of a rate."""

from transformer_stability.counting.derived_tables import exponent_table
from transformer_stability.counting.tables import Exponents, Rates, Walls
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    return exponent_table(tables["rates"], tables["walls"])


table_job(snakemake, compute, Exponents, {"rates": Rates, "walls": Walls})
