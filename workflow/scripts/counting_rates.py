"""Rule counting_rates: empirical B_min of the training bisection and fitted exponents of every
B_min(L) curve (theory and training) and of the classification margins."""

from transformer_stability.counting.rates import empirical_bmin, rates_table
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance

setup_logging(snakemake.log[0])
config = snakemake.config
empirical = empirical_bmin(read_table(snakemake.input.training, config))
theory = read_table(snakemake.input.theory, config)
precision = read_table(snakemake.input.precision, config)
rates = rates_table(theory, empirical, precision, snakemake.params.fit_points)
for table, path in ((empirical, snakemake.output.empirical), (rates, snakemake.output.rates)):
    write_table(
        with_provenance(table, seed=snakemake.params.seed, device="cpu", dtype="float64"),
        path,
        config,
    )
