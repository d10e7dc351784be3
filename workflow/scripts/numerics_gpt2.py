"""Rule numerics_gpt2: one model's residual-scaling runs -> errors, recursion, weights tables.
Each finished (alpha, storage) group is checkpointed beside the output, so a rerun after a kill
resumes."""

import torch

from transformer_stability.checkpoint import Checkpoint
from transformer_stability.device import resolve_device
from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.numerics.study import gpt2_tables
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
params = snakemake.params
model = snakemake.wildcards.model
device = resolve_device(params.device)
checkpoint = Checkpoint.beside(
    snakemake.output.errors,
    numerics=params.numerics,
    model=model,
    seed=params.seed,
    device=str(device),
)
tables = gpt2_tables(params.numerics, model, params.seed, device, checkpoint)
for name, table in tables.items():
    stamped = with_provenance(table, seed=params.seed, device=str(device), dtype="float64")
    write_table(stamped, snakemake.output[name])
checkpoint.clear()
