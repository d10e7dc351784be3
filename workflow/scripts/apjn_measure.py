"""Rules apjn_measured_curves / apjn_sensitivity / apjn_depth_measured / apjn_trainability:
run one Study A measurement of the package -> tidy CSV with provenance. Finished items of the
loop are checkpointed beside the output, so a rerun after a kill resumes."""

import torch

from transformer_stability.apjn import experiment, train
from transformer_stability.checkpoint import Checkpoint
from transformer_stability.device import resolve_device
from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

MEASUREMENTS = {
    "measured_curves": experiment.measured_curves,
    "sensitivity": experiment.sensitivity,
    "depth_points": experiment.depth_points,
    "trainability": train.trainability,
}

setup_logging(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
params = snakemake.params
device = str(resolve_device(params.device))
checkpoint = Checkpoint.beside(
    snakemake.output[0],
    measurement=params.measurement,
    apjn=params.apjn,
    seed=params.seed,
    device=device,
    dtype=params.dtype,
)
table = MEASUREMENTS[params.measurement](params.apjn, params.device, params.seed, checkpoint)
write_table(
    with_provenance(table, seed=params.seed, device=device, dtype=params.dtype),
    snakemake.output[0],
)
checkpoint.clear()
