"""Rule numerics_sinks: the Bigram-Backcopy model trained (float32, on the CPU), its heads and
held-out loss measured at every checkpoint (claim N.9, figure N10), and the softmax evaluated on
its attention rows at the initialization and after training (claim N.3, figure N11); the trained
model saved with its held-out sequences for the GPT-2 sweeps."""

from pathlib import Path

import torch

from transformer_stability.numerics.backcopy import sink_emergence
from transformer_stability.numerics.tables import SinkEmergence, SinkSoftmax, SinkTraining
from transformer_stability.table_jobs import table_job

TABLES = {"emergence": SinkEmergence, "training": SinkTraining, "softmax": SinkSoftmax}


def compute(tables, settings):
    model = Path(snakemake.output.model)
    found = sink_emergence(settings["numerics"]["sinks"], settings["seed"], model)
    return dict(zip(TABLES, found, strict=True))


torch.set_num_threads(snakemake.threads)
table_job(snakemake, compute, TABLES, dtype="float32", trains=True)
