"""Rule apjn_width_fit: the width scan's GMFE excess per width and its fitted width slope, with
a bootstrap interval."""

from transformer_stability.apjn.tables import WidthAgreement, WidthExcess, WidthSlopes
from transformer_stability.apjn.width_fit import width_excess, width_slopes
from transformer_stability.io import read_table, write_table
from transformer_stability.logs import setup_logging
from transformer_stability.settings import derived_settings
from transformer_stability.tables import Provenance, columns_of

setup_logging(snakemake.log[0])
settings = derived_settings(snakemake.params.settings, [snakemake.input.table])
table = read_table(snakemake.input.table, WidthAgreement)
provenance = table[columns_of(Provenance)].iloc[[0]].to_dict("records")[0]
excess = width_excess(table).assign(**provenance)
write_table(excess, snakemake.output.excess, WidthExcess, settings)
slopes = width_slopes(table, settings["seed"]).assign(**provenance)
write_table(slopes, snakemake.output.slopes, WidthSlopes, settings)
