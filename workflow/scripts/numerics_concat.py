"""Rule numerics_gpt2_tables: stack the per-model GPT-2 tables into one table each."""

import pandas as pd

from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging

setup_logging(snakemake.log[0])
for name in ("errors", "recursion", "weights"):
    tables = [read_table(path) for path in snakemake.input[name]]
    write_table(pd.concat(tables, ignore_index=True), snakemake.output[name])
