"""Rule numerics_gpt2: one chunk of Study N's GPT-2 runs (a model, an α, the test formats of one
storage group) -> the chunk's errors and recursion tables, rows tagged with their item."""

from transformer_stability.numerics.gpt2_tables import group_tables
from transformer_stability.numerics.tables import Gpt2Errors, Gpt2Recursion
from transformer_stability.sweep_jobs import chunk_job

chunk_job(snakemake, group_tables, {"errors": Gpt2Errors, "recursion": Gpt2Recursion})
