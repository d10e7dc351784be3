"""Rule counting_training: one chunk of Study C's training sweep (a read-out at one length L, all
its (B, seed) runs in one batched training) -> one chunk table, rows tagged with their item."""

from transformer_stability.counting.tables import Training
from transformer_stability.counting.training_tables import training_table
from transformer_stability.sweep_jobs import chunk_job

chunk_job(snakemake, training_table, Training, trains=True)
