"""Rule numerics_bounds: one synthetic bound experiment (norms, softmax, lipschitz) -> CSV."""

import torch

from transformer_stability.numerics import synthetic
from transformer_stability.numerics.tables import Lipschitz, Norms, Softmax
from transformer_stability.table_jobs import table_job

EXPERIMENTS = {
    "norms": (synthetic.norms_table, Norms),
    "softmax": (synthetic.softmax_table, Softmax),
    "lipschitz": (synthetic.lipschitz_table, Lipschitz),
}
experiment = snakemake.wildcards.experiment
experiment_table, model = EXPERIMENTS[experiment]


def compute(tables, settings):
    return experiment_table(settings["numerics"][experiment], settings["seed"])


torch.set_num_threads(snakemake.threads)
table_job(snakemake, compute, model)
