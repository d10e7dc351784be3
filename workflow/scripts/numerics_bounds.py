"""Rule numerics_bounds: one synthetic bound experiment (norms, softmax, lipschitz) -> CSV."""

import torch

from transformer_stability.io import write_table
from transformer_stability.logs import setup_logging
from transformer_stability.numerics import synthetic
from transformer_stability.numerics.tables import Lipschitz, Norms, Softmax
from transformer_stability.provenance import with_provenance

EXPERIMENTS = {
    "norms": (synthetic.norms_table, Norms),
    "softmax": (synthetic.softmax_table, Softmax),
    "lipschitz": (synthetic.lipschitz_table, Lipschitz),
}

setup_logging(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
settings = snakemake.params.settings
experiment = snakemake.wildcards.experiment
compute, model = EXPERIMENTS[experiment]
table = compute(settings["numerics"][experiment], settings["seed"])
write_table(
    with_provenance(table, seed=settings["seed"], device="cpu", dtype="float64"),
    snakemake.output[0],
    model,
    settings,
)
