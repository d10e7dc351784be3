"""Rule apjn_train: one chunk of trainability runs (a model, task and seed each) -> one chunk
table, one row per run, tagged with its item."""

from transformer_stability.apjn.tables import Trainability
from transformer_stability.apjn.train import train_table
from transformer_stability.jobs import chunk_job

chunk_job(snakemake, train_table, Trainability)
