"""Rule numerics_weights: one chunk of Study N's models -> their weight magnitudes per block,
rows tagged with their item."""

from transformer_stability.numerics.gpt2_tables import weights_rows
from transformer_stability.numerics.tables import Gpt2Weights
from transformer_stability.sweep_jobs import chunk_job

chunk_job(snakemake, weights_rows, Gpt2Weights)
