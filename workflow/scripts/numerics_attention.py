"""Rule numerics_attention: one chunk of Study N's models -> the sink statistics of their
attention rows, rows tagged with their item."""

from transformer_stability.numerics.gpt2_tables import attention_rows
from transformer_stability.numerics.tables import AttentionSinks
from transformer_stability.sweep_jobs import chunk_job

chunk_job(snakemake, attention_rows, AttentionSinks)
