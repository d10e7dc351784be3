"""Rule counting_rates: empirical B_min of the training bisection and fitted exponents of every
B_min(L) curve (theory and training) and of the classification margins."""

from transformer_stability.counting.rates import empirical_bmin, rates_table
from transformer_stability.counting.tables import (
    BminTheory,
    EmpiricalBmin,
    Precision,
    Rates,
    Training,
)
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
config = snakemake.config
empirical = empirical_bmin(read_table(snakemake.input.training, Training, config))
theory = read_table(snakemake.input.theory, BminTheory, config)
precision = read_table(snakemake.input.precision, Precision, config)
rates = rates_table(theory, empirical, precision, snakemake.params.fit_points)
outputs = (
    (empirical, snakemake.output.empirical, EmpiricalBmin),
    (rates, snakemake.output.rates, Rates),
)
for table, path, model in outputs:
    write_table(
        with_provenance(table, seed=snakemake.params.seed, device="cpu", dtype="float64"),
        path,
        model,
        config,
    )
