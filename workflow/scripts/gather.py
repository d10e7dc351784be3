"""Rule gather: the chunk tables of one sweep -> one tidy table, rows in the sweep's item order,
whatever the chunking was; it records the sweep's settings."""

from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.registry import table_model
from transformer_stability.sweeps import gather_items

setup_logging(snakemake.log[0])
model = table_model(snakemake.output[0])
chunks = [read_table(path, model, chunk=True) for path in snakemake.input.chunks]
table = gather_items(chunks, snakemake.params.order)
write_table(table, snakemake.output[0], model, snakemake.params.settings)
