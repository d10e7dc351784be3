"""Rule apjn_finite_n: one chunk of finite-N measurements (one deep pre-LN initialization
each, at every token count) -> one chunk table, rows tagged with their item."""

from transformer_stability.apjn.measured_tables import finite_n_table
from transformer_stability.apjn.tables import FiniteN
from transformer_stability.sweep_jobs import chunk_job

chunk_job(snakemake, finite_n_table, FiniteN)
