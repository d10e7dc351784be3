"""Rule counting_training: batched (L, B, seed) training sweep of one read-out -> tidy CSV."""

import torch

from transformer_stability.counting.study import CountingStudy, training_table
from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
params = snakemake.params
study = CountingStudy.from_config(params.counting, params.seed, params.device)
table = training_table(study, snakemake.wildcards.readout)
write_table(
    with_provenance(
        table,
        seed=snakemake.params.seed,
        device=study.train.device,
        dtype=str(study.train.dtype).removeprefix("torch."),
    ),
    snakemake.output[0],
)
