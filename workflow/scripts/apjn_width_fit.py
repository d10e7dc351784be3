"""Rule apjn_width_fit: the width scan's GMFE excess per width and its fitted width slope."""

from transformer_stability.apjn.width_fit import width_excess, width_slopes
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.provenance import PROVENANCE_COLUMNS

setup_logging(snakemake.log[0])
table = read_table(snakemake.input.table, snakemake.config)
provenance = table[PROVENANCE_COLUMNS].iloc[[0]].to_dict("records")[0]
excess = width_excess(table)
write_table(excess.assign(**provenance), snakemake.output.excess, snakemake.config)
write_table(width_slopes(excess).assign(**provenance), snakemake.output.slopes, snakemake.config)
