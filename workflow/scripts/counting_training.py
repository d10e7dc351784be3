"""Rule counting_training: batched (L, B, seed) training sweep of one read-out -> tidy CSV.
Each finished length is checkpointed beside the output, so a rerun after a kill resumes."""

import torch

from transformer_stability.checkpoint import Checkpoint
from transformer_stability.counting.study import CountingStudy, training_table
from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
params = snakemake.params
study = CountingStudy.from_config(params.counting, params.seed, params.device)
readout = snakemake.wildcards.readout
checkpoint = Checkpoint.beside(
    snakemake.output[0],
    counting=params.counting,
    readout=readout,
    seed=params.seed,
    device=study.train.device,
)
table = training_table(study, readout, checkpoint)
write_table(
    with_provenance(
        table,
        seed=params.seed,
        device=study.train.device,
        dtype=str(study.train.dtype).removeprefix("torch."),
    ),
    snakemake.output[0],
)
checkpoint.clear()
