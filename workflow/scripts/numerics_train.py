"""Rule numerics_train: the tokenizer and text -> every `weights: trained` model, trained and
saved with save_pretrained, and their loss curves."""

from pathlib import Path

import torch

from transformer_stability.cpu_numerics import pin_cpu_numerics
from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.numerics.tables import Gpt2Training
from transformer_stability.numerics.training import train_models
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
pin_cpu_numerics()
torch.set_num_threads(snakemake.threads)
settings = snakemake.params.settings
table = train_models(
    settings["numerics"],
    settings["seed"],
    Path(snakemake.input.tokenizer),
    [Path(snakemake.input.train), Path(snakemake.input.heldout)],
    Path(snakemake.output.models),
)
write_table(
    with_provenance(table, seed=settings["seed"], device="cpu", dtype="float32"),
    snakemake.output.table,
    Gpt2Training,
    settings,
)
