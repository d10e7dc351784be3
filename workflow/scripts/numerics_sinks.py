"""Rule numerics_sinks: the Bigram-Backcopy model trained (float32, on the CPU), its heads and
held-out loss measured at every checkpoint (claim N.9, figure N10)."""

import torch

from transformer_stability.numerics.backcopy import sink_emergence
from transformer_stability.numerics.tables import SinkEmergence, SinkTraining
from transformer_stability.table_jobs import table_job


def compute(tables, settings):
    emergence, training = sink_emergence(settings["numerics"]["sinks"], settings["seed"])
    return {"emergence": emergence, "training": training}


torch.set_num_threads(snakemake.threads)
table_job(
    snakemake, compute, {"emergence": SinkEmergence, "training": SinkTraining}, dtype="float32"
)
