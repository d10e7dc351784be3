"""Rule counting_rates: merge the training sweeps, empirical B_min and fitted exponents."""

import pandas as pd

from transformer_stability.counting.study import empirical_bmin, rates_table
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
training = pd.concat([read_table(path) for path in snakemake.input.training], ignore_index=True)
write_table(training, snakemake.output.training)  # provenance columns carried over
empirical = empirical_bmin(training)
rates = rates_table(read_table(snakemake.input.theory), empirical, snakemake.params.fit_points)
for table, path in ((empirical, snakemake.output.empirical), (rates, snakemake.output.rates)):
    write_table(
        with_provenance(table, seed=snakemake.params.seed, device="cpu", dtype="float64"), path
    )
