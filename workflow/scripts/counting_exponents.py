"""Rule counting_exponents: C5's table, one row per (placement, read-out), exponents per source,
and the bare pre-norm wall in place of a rate."""

from transformer_stability.counting.derived_tables import exponent_table
from transformer_stability.counting.tables import Exponents, Rates, Walls
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import with_provenance
from transformer_stability.settings import derived_settings

setup_logging(snakemake.log[0])
inputs = snakemake.input
settings = derived_settings(snakemake.params.settings, [inputs.rates, inputs.walls])
table = exponent_table(read_table(inputs.rates, Rates), read_table(inputs.walls, Walls))
write_table(
    with_provenance(table, seed=settings["seed"], device="cpu", dtype="float64"),
    snakemake.output[0],
    Exponents,
    settings,
)
