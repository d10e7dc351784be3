"""Rule counting_exponents: C5's table, one row per (placement, read-out), exponents per source,
and the bare pre-norm wall in place of a rate."""

from transformer_stability.counting.rates import exponent_table
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging

setup_logging(snakemake.log[0])
table = exponent_table(read_table(snakemake.input.rates), read_table(snakemake.input.walls))
write_table(table, snakemake.output[0])
