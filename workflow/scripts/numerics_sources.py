"""Rule numerics_sources: one chunk of Study N's models -> the recursion per rounding source
(N8), rows tagged with their item."""

from transformer_stability.numerics.gpt2_tables import sources_rows
from transformer_stability.numerics.tables import RecursionSources
from transformer_stability.sweep_jobs import chunk_job

chunk_job(snakemake, sources_rows, RecursionSources)
